//! Reading a data directory (`groups.tsv`, `items.tsv`, `roles.tsv`, `edges.tsv`, `choices.tsv`, `outliers.tsv`;
//! docs/data.md) into memory, with the draw weights of its WordNet groups and its lemmas in rare senses marked; the
//! teacher's rows are `teacher.rs`'s.

use std::collections::HashMap;
use std::error::Error;
use std::path::{Path, PathBuf};

use uform::Modality;

use super::teacher::Teacher;

/// Where a group or a choice item belongs; `Calibration` holds choice items only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    /// Trained on.
    Train,
    /// The periodic validation loss.
    Validation,
    /// Held out for the evaluation.
    Test,
    /// Choice items held out for the temperature fit.
    Calibration,
}

impl Split {
    /// The split a file's field names.
    pub(super) fn parse(field: &str) -> Result<Self, Box<dyn Error>> {
        Ok(match field {
            "train" => Self::Train,
            "validation" => Self::Validation,
            "test" => Self::Test,
            "calibration" => Self::Calibration,
            _ => return Err(format!("unknown split {field:?}").into()),
        })
    }
}

/// A bag of `items.tsv`: a WordNet synset or a Fashion-MNIST class within a split.
pub(super) struct Group {
    /// Whether it is a Fashion-MNIST class (else a WordNet synset).
    pub(super) fashion: bool,
    /// Its first item.
    pub(super) first: usize,
    /// Its items, at least one.
    pub(super) count: usize,
    /// Its `groups.tsv` label: a synset's canonical lemma, or a class's name.
    pub(super) label: String,
    /// Whether it is a WordNet noun synset (`wn:n...`).
    pub(super) noun: bool,
    /// Whether it is a WordNet verb synset (`wn:v...`).
    pub(super) verb: bool,
    /// A noun or verb synset's lexicographer file (`groups.tsv`'s `lexname`, "noun.animal"), numbered in the order
    /// first seen; `None` for adjectives and adverbs (almost all adj.all or adv.all, too broad a kind) and classes.
    pub(super) lexname: Option<usize>,
}

/// A line of `items.tsv`.
pub(super) struct Item {
    /// Text, image or audio.
    pub(super) modality: Modality,
    /// Index into [`Data::role_names`].
    pub(super) role: usize,
    /// The text, or the media file's path relative to the data directory.
    pub(super) content: String,
    /// A lemma in a rare sense of its word, drawn at the recipe's `rare_senses` (`Data::mark_rare_senses`).
    pub(super) rare: bool,
    /// A lemma never tagged in this sense of a word tagged in another: rare by the lemma's own count, which the
    /// recipe's `rare_by_lemma` uses instead of `rare` ("cat" in "guy, hombre, cat, bozo").
    pub(super) rare_by_lemma: bool,
}

/// A line of `choices.tsv`.
pub(super) struct Choice {
    /// The legal bytes, `ABCD`.
    pub(super) legal: String,
    /// One probability per legal byte.
    pub(super) targets: Vec<f32>,
    /// The question, ending in `Answer:`.
    pub(super) text: String,
}

/// An `attract` or `repel` edge of `edges.tsv`, from the group it is listed under.
pub(super) struct Edge {
    /// The other group.
    pub(super) to: usize,
    /// Whether it attracts (else it repels).
    pub(super) attract: bool,
    /// Its weight.
    pub(super) weight: f32,
}

/// Everything the batches are drawn from, in memory.
pub struct Data {
    /// The data directory; media paths are relative to it.
    pub(super) root: PathBuf,
    /// `groups.tsv`.
    pub(super) groups: Vec<Group>,
    /// `items.tsv`.
    pub(super) items: Vec<Item>,
    /// The role names, in the order first seen.
    pub(super) role_names: Vec<String>,
    /// `roles.tsv` by role indices, both orders.
    pub(super) role_weights: HashMap<(usize, usize), f32>,
    /// `edges.tsv`'s attract and repel edges by their `from` group.
    pub(super) edges: HashMap<usize, Vec<Edge>>,
    /// `edges.tsv`'s hypernym links (no objective of their own) by their `from` group, the hyponym.
    pub(super) hypernyms: HashMap<usize, Vec<usize>>,
    /// `choices.tsv`, less the items longer than the row allows.
    pub(super) choices: Vec<Choice>,
    /// WordNet groups by split.
    pub(super) wordnet: HashMap<Split, Vec<usize>>,
    /// Per split, the running sums of the WordNet groups' draw weights: `[0]` for the groups (`Recipe::weight`), `[1]`
    /// for the vocabulary groups (`Recipe::vocabulary_weight`).
    pub(super) drawn: [HashMap<Split, Vec<f64>>; 2],
    /// WordNet groups with a spoken clip, by split.
    pub(super) spoken: HashMap<Split, Vec<usize>>,
    /// Fashion-MNIST class groups by split.
    pub(super) fashion: HashMap<Split, Vec<usize>>,
    /// `outliers.tsv`'s synthetic pictures, their paths joined to `root` (none in a data directory that predates
    /// them).
    pub(super) outlier_paths: Vec<String>,
    /// Outlier pictures (indices into `outlier_paths`) by split.
    pub(super) outliers: HashMap<Split, Vec<usize>>,
    /// Choice items by split.
    pub(super) choices_by_split: HashMap<Split, Vec<usize>>,
    /// Choice items dropped for their length.
    pub dropped_choices: usize,
    /// Texts cut to the row's length (at a character boundary).
    pub cut_texts: usize,
    /// The distillation teacher's rows, once `load_teacher` has read them.
    pub(super) teacher: Option<Teacher>,
}

/// A WordNet group's draw weight from its tag count, as a group and as a vocabulary group
/// (`BatchRecipe::weight`, `BatchRecipe::vocabulary_weight`).
pub type Weights<'a> = [&'a dyn Fn(f64) -> f64; 2];

/// A TSV file's records, its `#` header skipped, each split at tabs into at least `fields` fields.
pub(super) fn records(path: &Path, fields: usize) -> Result<Vec<Vec<String>>, Box<dyn Error>> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| format!("{}: {error} (run tools/data/prepare.py)", path.display()))?;
    let mut records = Vec::new();
    for (number, line) in text.lines().enumerate().skip(1) {
        let record: Vec<String> = line.split('\t').map(str::to_owned).collect();
        if record.len() < fields {
            return Err(
                format!("{}:{}: {} fields", path.display(), number + 1, record.len()).into(),
            );
        }
        records.push(record);
    }
    Ok(records)
}

/// `text` cut to at most `bytes` bytes, at a character boundary.
pub(super) fn cut(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Tag counts read beside the items and groups, which mark the lemmas in rare senses once all are read.
#[derive(Default)]
struct Uses {
    /// Each `items.tsv` line's sense's tag count.
    items: Vec<u64>,
    /// Each `groups.tsv` line's synset's tag count.
    groups: Vec<f64>,
}

impl Data {
    /// Reads a data directory. Texts longer than `max_bytes` are cut to it and choice items longer are dropped (a
    /// choice item's text plus its CHOOSE token must fit one row). `weights` are a WordNet group's draw weights.
    pub fn load(
        root: &Path,
        max_bytes: usize,
        weights: Weights<'_>,
    ) -> Result<Self, Box<dyn Error>> {
        let mut data = Self::empty(root);
        let mut roles = HashMap::new();
        let mut uses = Uses::default();
        data.read_items(max_bytes, &mut roles, &mut uses)?;
        data.read_groups(weights, &mut uses)?;
        data.mark_rare_senses(&uses.items, &uses.groups);
        data.read_roles(&mut roles)?;
        data.read_edges()?;
        data.read_choices(max_bytes)?;
        data.read_outliers()?;
        Ok(data)
    }

    /// Nothing read yet from `root`.
    fn empty(root: &Path) -> Self {
        Self {
            root: root.to_owned(),
            groups: Vec::new(),
            items: Vec::new(),
            role_names: Vec::new(),
            role_weights: HashMap::new(),
            edges: HashMap::new(),
            hypernyms: HashMap::new(),
            choices: Vec::new(),
            wordnet: HashMap::new(),
            drawn: [HashMap::new(), HashMap::new()],
            spoken: HashMap::new(),
            fashion: HashMap::new(),
            outlier_paths: Vec::new(),
            outliers: HashMap::new(),
            choices_by_split: HashMap::new(),
            dropped_choices: 0,
            cut_texts: 0,
            teacher: None,
        }
    }

    /// The index of role `name`, numbered in the order first seen.
    fn role(&mut self, roles: &mut HashMap<String, usize>, name: &str) -> usize {
        *roles.entry(name.to_owned()).or_insert_with(|| {
            self.role_names.push(name.to_owned());
            self.role_names.len() - 1
        })
    }

    /// `items.tsv`: each item's modality, role and content (a text cut to `max_bytes`), and its sense's tag count.
    fn read_items(
        &mut self,
        max_bytes: usize,
        roles: &mut HashMap<String, usize>,
        uses: &mut Uses,
    ) -> Result<(), Box<dyn Error>> {
        for record in records(&self.root.join("items.tsv"), 7)? {
            let modality = match record[3].as_str() {
                "text" => Modality::Text,
                "image" => Modality::Image,
                "audio" => Modality::Audio,
                other => return Err(format!("items.tsv: unknown modality {other:?}").into()),
            };
            let mut content = record[5].clone();
            if modality == Modality::Text && content.len() > max_bytes {
                content = cut(&content, max_bytes).to_owned();
                self.cut_texts += 1;
            }
            let role = self.role(roles, &record[4]);
            uses.items.push(record[6].parse::<u64>()?);
            self.items.push(Item {
                modality,
                role,
                content,
                rare: false,
                rare_by_lemma: false,
            });
        }
        Ok(())
    }

    /// `groups.tsv`: each group's items, split and kind, the running sums of the WordNet groups' draw weights, and
    /// the noun and verb lexicographer files, numbered in the order first seen.
    fn read_groups(&mut self, weights: Weights<'_>, uses: &mut Uses) -> Result<(), Box<dyn Error>> {
        let mut lexnames: HashMap<String, usize> = HashMap::new();
        for record in records(&self.root.join("groups.tsv"), 9)? {
            let (split, fashion) = (Split::parse(&record[1])?, record[2] == "fashion-mnist");
            let (first, count): (usize, usize) = (record[4].parse()?, record[5].parse()?);
            if count == 0 || first + count > self.items.len() {
                return Err(format!("groups.tsv: group {} leaves items.tsv", record[0]).into());
            }
            let group = self.groups.len();
            let by = if fashion {
                &mut self.fashion
            } else {
                &mut self.wordnet
            };
            by.entry(split).or_default().push(group);
            let items = &self.items[first..first + count];
            if !fashion && items.iter().any(|item| item.modality == Modality::Audio) {
                self.spoken.entry(split).or_default().push(group);
            }
            // The uses: how often the synset's senses were tagged in WordNet's concordances.
            let synset_uses: f64 = record[7].parse()?;
            uses.groups.push(synset_uses);
            if !fashion {
                for (drawn, weight) in self.drawn.iter_mut().zip(weights) {
                    let sums = drawn.entry(split).or_default();
                    sums.push(sums.last().copied().unwrap_or(0.0) + weight(synset_uses));
                }
            }
            let kind = record[8].starts_with("noun.") || record[8].starts_with("verb.");
            let known = lexnames.len();
            let lexname = kind.then(|| *lexnames.entry(record[8].clone()).or_insert(known));
            self.groups.push(Group {
                fashion,
                first,
                count,
                label: record[6].clone(),
                noun: record[3].starts_with("wn:n"),
                verb: record[3].starts_with("wn:v"),
                lexname,
            });
        }
        Ok(())
    }

    /// `roles.tsv`: the attract weight of two roles within a bag, both orders.
    fn read_roles(&mut self, roles: &mut HashMap<String, usize>) -> Result<(), Box<dyn Error>> {
        for record in records(&self.root.join("roles.tsv"), 3)? {
            let (a, b) = (self.role(roles, &record[0]), self.role(roles, &record[1]));
            let weight: f32 = record[2].parse()?;
            self.role_weights.insert((a, b), weight);
            self.role_weights.insert((b, a), weight);
        }
        Ok(())
    }

    /// `edges.tsv`: attract and repel edges by their `from` group, and the hypernym links.
    fn read_edges(&mut self) -> Result<(), Box<dyn Error>> {
        for record in records(&self.root.join("edges.tsv"), 5)? {
            let (from, to): (usize, usize) = (record[2].parse()?, record[3].parse()?);
            let attract = match (record[0].as_str(), record[1].as_str()) {
                ("attract", _) => true,
                ("repel", _) => false,
                (_, "hypernym") => {
                    self.hypernyms.entry(from).or_default().push(to);
                    continue;
                }
                _ => continue,
            };
            self.edges.entry(from).or_default().push(Edge {
                to,
                attract,
                weight: record[4].parse()?,
            });
        }
        Ok(())
    }

    /// `choices.tsv`: the choice items that fit `max_bytes`, by split.
    fn read_choices(&mut self, max_bytes: usize) -> Result<(), Box<dyn Error>> {
        for record in records(&self.root.join("choices.tsv"), 7)? {
            let text = record[6].clone();
            if text.len() > max_bytes {
                self.dropped_choices += 1;
                continue;
            }
            let targets = record[5]
                .split(' ')
                .map(str::parse)
                .collect::<Result<Vec<f32>, _>>()?;
            if targets.len() != record[4].len() {
                return Err(format!(
                    "choices.tsv: choice {} has a target per legal byte",
                    record[0]
                )
                .into());
            }
            self.choices_by_split
                .entry(Split::parse(&record[1])?)
                .or_default()
                .push(self.choices.len());
            self.choices.push(Choice {
                legal: record[4].clone(),
                targets,
                text,
            });
        }
        Ok(())
    }

    /// `outliers.tsv`, when the directory has one: the synthetic pictures' paths by split.
    fn read_outliers(&mut self) -> Result<(), Box<dyn Error>> {
        let outliers = self.root.join("outliers.tsv");
        if !outliers.exists() {
            return Ok(());
        }
        for record in records(&outliers, 3)? {
            let split = Split::parse(&record[2])?;
            self.outliers
                .entry(split)
                .or_default()
                .push(self.outlier_paths.len());
            self.outlier_paths
                .push(self.root.join(&record[0]).to_string_lossy().into_owned());
        }
        Ok(())
    }

    /// Marks the lemmas in a rare sense of their word: not the synset's canonical lemma, never tagged in this sense,
    /// and in a synset used less than the word's most used sense ("cat" in "Caterpillar, cat" or "big cat, cat", but
    /// not "start" in the common "begin, start"). Drawn, they would teach the word's spelling a sense few readers mean.
    /// By the lemma's own count, a lemma is rare when never tagged in this sense while tagged in another, whatever its
    /// synset's count ("cat" in "guy, hombre, cat, bozo", tagged 33 times, all of them "guy").
    /// `item_uses` and `group_uses` are the tag counts of `items.tsv` and `groups.tsv`, line by line.
    fn mark_rare_senses(&mut self, item_uses: &[u64], group_uses: &[f64]) {
        let Some(lemma) = self.role_names.iter().position(|name| name == "lemma") else {
            return;
        };
        let mut dominant: HashMap<String, u64> = HashMap::new();
        for (item, &uses) in self.items.iter().zip(item_uses) {
            if item.role == lemma {
                let most = dominant.entry(item.content.to_lowercase()).or_default();
                *most = (*most).max(uses);
            }
        }
        for (group, &uses) in self.groups.iter().zip(group_uses) {
            let others = group.first + 1..group.first + group.count;
            for (item, &sense) in self.items[others.clone()]
                .iter_mut()
                .zip(&item_uses[others])
            {
                let most = dominant
                    .get(&item.content.to_lowercase())
                    .copied()
                    .unwrap_or(0);
                item.rare = item.role == lemma && sense == 0 && uses < most as f64;
                item.rare_by_lemma = item.role == lemma && sense == 0 && most > 0;
            }
        }
    }

    /// Counts for the opening line: groups, items, attract and repel edges, choice items.
    pub fn counts(&self) -> (usize, usize, usize, usize) {
        let edges = self.edges.values().map(Vec::len).sum();
        (
            self.groups.len(),
            self.items.len(),
            edges,
            self.choices.len(),
        )
    }

    /// The WordNet groups of a split.
    pub fn wordnet_groups(&self, split: Split) -> usize {
        self.wordnet.get(&split).map_or(0, Vec::len)
    }

    /// The groups of a split, WordNet synsets or Fashion-MNIST classes, in file order.
    pub fn groups_in(&self, split: Split, fashion: bool) -> &[usize] {
        let by = if fashion {
            &self.fashion
        } else {
            &self.wordnet
        };
        by.get(&split).map_or(&[], Vec::as_slice)
    }

    /// A group's label: a synset's canonical lemma, or a class's name.
    pub fn label(&self, group: usize) -> &str {
        &self.groups[group].label
    }

    /// A group's items as `(role, modality, content)`, in file order (a synset's canonical lemma first); a media
    /// item's content is its path, joined to the data directory.
    pub fn members(&self, group: usize) -> impl Iterator<Item = (&str, Modality, String)> + '_ {
        let Group { first, count, .. } = self.groups[group];
        self.items[first..first + count].iter().map(|item| {
            let content = match item.modality {
                Modality::Text => item.content.clone(),
                _ => self.root.join(&item.content).to_string_lossy().into_owned(),
            };
            (self.role_names[item.role].as_str(), item.modality, content)
        })
    }

    /// The choice items of a split as `(text, legal bytes, targets)`, in file order.
    pub fn choice_items(&self, split: Split) -> impl Iterator<Item = (&str, &str, &[f32])> + '_ {
        let none: &[usize] = &[];
        let indices = self
            .choices_by_split
            .get(&split)
            .map_or(none, Vec::as_slice);
        indices.iter().map(|&c| {
            let choice = &self.choices[c];
            (
                choice.text.as_str(),
                choice.legal.as_str(),
                choice.targets.as_slice(),
            )
        })
    }
}
