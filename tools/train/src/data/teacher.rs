//! The distillation teacher's rows (`tools/data/prepare.py --teacher`, docs/data.md "The teacher"):
//! `teacher/manifest.json` names the row width, `teacher/rows.f32` holds the rows (little-endian F32), and
//! `teacher/items.tsv` and `teacher/extra.tsv` say which row is each text item's and each other English text's, and
//! `teacher/families.tsv` (when present) groups sentences with their one-word variants.
//! A spoken clip takes the row of the text it speaks (its synset's canonical lemma or gloss); images, outliers and
//! choice items have none.

use std::error::Error;
use std::path::Path;

use uform::Modality;

use super::load::{cut, records, Data, Split};
use super::sample::FAMILY_MEMBERS;

/// The teacher's rows, and which of them each item and each other text takes.
pub struct Teacher {
    /// Columns of a row.
    pub width: usize,
    /// The store's rows, row-major.
    rows: Vec<f32>,
    /// Each item's row, `None` for an item without one.
    of_item: Vec<Option<usize>>,
    /// The other English texts that fit a row, as (text, its row), by split.
    pub(super) extras: Vec<(Split, String, usize)>,
    /// Other English texts longer than a row, left out (their row is of the whole text).
    pub dropped_extras: usize,
    /// The sentence families that fit a row, by split.
    pub(super) families: Vec<(Split, Family)>,
}

impl Teacher {
    /// Row `row` of the store.
    fn row(&self, row: usize) -> &[f32] {
        &self.rows[row * self.width..(row + 1) * self.width]
    }

    /// The rows of `sources` one after another, all zeros for `None`.
    pub(super) fn gather(&self, sources: &[Option<usize>]) -> Vec<f32> {
        let mut out = Vec::with_capacity(sources.len() * self.width);
        for source in sources {
            match source {
                Some(row) => out.extend_from_slice(self.row(*row)),
                None => out.resize(out.len() + self.width, 0.0),
            }
        }
        out
    }

    /// Item `item`'s row in the store, when it has one.
    pub(super) fn of_item(&self, item: usize) -> Option<usize> {
        self.of_item.get(item).copied().flatten()
    }
}

/// A sentence family: a sentence and its one-word variants, each as (text, its row).
pub(super) type Family = Vec<(String, usize)>;

/// A held-out pair of test texts (`teacher/pairs.tsv`) and the teacher's cosine between them.
pub struct TeacherPair {
    /// `synset`, `related` or `random`.
    pub kind: String,
    /// The first text, cut to the row's bytes as training cuts it.
    pub a: String,
    /// The second text, cut likewise.
    pub b: String,
    /// The teacher's cosine between the two whole texts.
    pub cosine: f32,
}

/// The held-out pairs of `<root>/teacher/pairs.tsv`, their texts cut to `max_bytes`; `None` when the data directory
/// has none.
pub fn read_pairs(
    root: &Path,
    max_bytes: usize,
) -> Result<Option<Vec<TeacherPair>>, Box<dyn Error>> {
    let path = root.join("teacher").join("pairs.tsv");
    if !path.exists() {
        return Ok(None);
    }
    let mut pairs = Vec::new();
    for record in records(&path, 7)? {
        let cosine: f32 = record[4].parse()?;
        if !cosine.is_finite() {
            return Err(format!(
                "teacher/pairs.tsv: pair {} has a cosine of {cosine}",
                record[0]
            )
            .into());
        }
        pairs.push(TeacherPair {
            kind: record[1].clone(),
            a: cut(&record[5], max_bytes).to_owned(),
            b: cut(&record[6], max_bytes).to_owned(),
            cosine,
        });
    }
    Ok(Some(pairs))
}

/// The `width` from `manifest.json`'s `teacher` object.
fn manifest_width(path: &Path) -> Result<usize, Box<dyn Error>> {
    let text =
        std::fs::read_to_string(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let manifest: serde_json::Value = serde_json::from_str(&text)?;
    let width = manifest["teacher"]["width"]
        .as_u64()
        .ok_or_else(|| format!("{}: no teacher.width", path.display()))?;
    if width == 0 || width > 65_536 {
        return Err(format!("{}: a teacher width of {width}", path.display()).into());
    }
    Ok(width as usize)
}

/// `rows.f32` as F32 values of whole rows of `width`, every one finite.
fn read_rows(path: &Path, width: usize) -> Result<Vec<f32>, Box<dyn Error>> {
    let bytes = std::fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    if bytes.len() % (4 * width) != 0 {
        return Err(format!(
            "{}: {} bytes are not whole rows of {width} F32",
            path.display(),
            bytes.len()
        )
        .into());
    }
    let rows: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    if let Some(at) = rows.iter().position(|value| !value.is_finite()) {
        return Err(format!(
            "{}: row {} holds a value that is not finite",
            path.display(),
            at / width
        )
        .into());
    }
    Ok(rows)
}

/// The sentence families of `teacher/families.tsv` (`family  member  split  row  content`, a family's members on
/// consecutive lines), those with a member longer than `max_bytes` left out; none when the file is absent (a store
/// made before families existed).
fn read_families(
    path: &Path,
    count: usize,
    max_bytes: usize,
) -> Result<Vec<(Split, Family)>, Box<dyn Error>> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let mut families: Vec<(usize, Split, Family)> = Vec::new();
    for record in records(path, 5)? {
        let family: usize = record[0].parse()?;
        let member = (
            record[4].clone(),
            row_index(&record[3], count, "families.tsv")?,
        );
        match families.last_mut() {
            Some((last, _, members)) if *last == family => members.push(member),
            _ => families.push((family, Split::parse(&record[2])?, vec![member])),
        }
    }
    if let Some((family, _, members)) = families.iter().find(|(_, _, m)| m.len() > FAMILY_MEMBERS) {
        return Err(format!(
            "{}: family {family} has {} members, more than {FAMILY_MEMBERS}",
            path.display(),
            members.len()
        )
        .into());
    }
    Ok(families
        .into_iter()
        .filter(|(_, _, members)| {
            members.len() >= 2 && members.iter().all(|(text, _)| text.len() <= max_bytes)
        })
        .map(|(_, split, members)| (split, members))
        .collect())
}

/// A row index from a record's field, checked against the store's `count` rows.
fn row_index(field: &str, count: usize, file: &str) -> Result<usize, Box<dyn Error>> {
    let row: usize = field.parse()?;
    if row >= count {
        return Err(format!("teacher/{file}: row {row} past the store's {count} rows (run tools/data/prepare.py --teacher again)").into());
    }
    Ok(row)
}

impl Data {
    /// Reads the teacher's rows from `<data>/teacher`; a directory without them is refused with what makes them.
    /// Other texts longer than `max_bytes` are left out, as their row is of the whole text.
    pub fn load_teacher(&mut self, max_bytes: usize) -> Result<(), Box<dyn Error>> {
        let store = self.root.join("teacher");
        let manifest = store.join("manifest.json");
        if !manifest.exists() {
            return Err(format!(
                "{} holds no teacher rows: run scripts/setup-teacher.sh, then python3 tools/data/prepare.py --teacher",
                store.display()
            )
            .into());
        }
        let width = manifest_width(&manifest)?;
        let rows = read_rows(&store.join("rows.f32"), width)?;
        let count = rows.len() / width;
        let mut of_item = vec![None; self.items.len()];
        for record in records(&store.join("items.tsv"), 2)? {
            let item: usize = record[0].parse()?;
            if item >= self.items.len() || self.items[item].modality != Modality::Text {
                return Err(
                    format!("teacher/items.tsv: item {item} is not a text of items.tsv").into(),
                );
            }
            of_item[item] = Some(row_index(&record[1], count, "items.tsv")?);
        }
        self.speak_rows(&mut of_item);
        let mut teacher = Teacher {
            width,
            rows,
            of_item,
            extras: Vec::new(),
            dropped_extras: 0,
            families: Vec::new(),
        };
        for record in records(&store.join("extra.tsv"), 5)? {
            let row = row_index(&record[3], count, "extra.tsv")?;
            if record[4].len() > max_bytes {
                teacher.dropped_extras += 1;
                continue;
            }
            teacher
                .extras
                .push((Split::parse(&record[2])?, record[4].clone(), row));
        }
        teacher.families = read_families(&store.join("families.tsv"), count, max_bytes)?;
        self.teacher = Some(teacher);
        Ok(())
    }

    /// Gives each spoken clip the row of the text it speaks: a `speech-lemma` clip its group's canonical lemma's, a
    /// `speech-gloss` clip its group's gloss's.
    fn speak_rows(&self, of_item: &mut [Option<usize>]) {
        let role = |name: &str| self.role_names.iter().position(|n| n == name);
        let (lemma, gloss) = (role("speech-lemma"), role("speech-gloss"));
        let text_gloss = role("gloss");
        for group in &self.groups {
            let members = group.first..group.first + group.count;
            let gloss_row = members
                .clone()
                .find(|&i| Some(self.items[i].role) == text_gloss)
                .and_then(|i| of_item[i]);
            for i in members {
                let spoken = Some(self.items[i].role);
                if self.items[i].modality != Modality::Audio {
                    continue;
                }
                if spoken == lemma {
                    of_item[i] = of_item[group.first];
                } else if spoken == gloss {
                    of_item[i] = gloss_row;
                }
            }
        }
    }

    /// The teacher's rows of `texts` one after another, each text found among the text items that have a row (a
    /// text's row is its content's, whichever item holds it); `None` without loaded rows or when a text has none.
    pub fn teacher_rows_of(&self, texts: &[String]) -> Option<Vec<f32>> {
        let teacher = self.teacher.as_ref()?;
        let mut row_of: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for (item, row) in teacher.of_item.iter().enumerate() {
            if let (Some(row), Modality::Text) = (row, self.items[item].modality) {
                row_of
                    .entry(self.items[item].content.as_str())
                    .or_insert(*row);
            }
        }
        let rows: Option<Vec<Option<usize>>> = texts
            .iter()
            .map(|text| row_of.get(text.as_str()).map(|&row| Some(row)))
            .collect();
        Some(teacher.gather(&rows?))
    }

    /// The teacher's row width, when its rows are loaded.
    pub fn teacher_width(&self) -> Option<usize> {
        self.teacher.as_ref().map(|teacher| teacher.width)
    }

    /// The loaded teacher's counts for the opening line: rows, items with a row, other texts kept and dropped,
    /// sentence families kept.
    pub fn teacher_counts(&self) -> Option<(usize, usize, usize, usize, usize)> {
        self.teacher.as_ref().map(|t| {
            let items = t.of_item.iter().filter(|row| row.is_some()).count();
            (
                t.rows.len() / t.width,
                items,
                t.extras.len(),
                t.dropped_extras,
                t.families.len(),
            )
        })
    }
}
