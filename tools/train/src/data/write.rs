//! Writing a drawn batch: its items' contents and late-interaction sides, the attract and repel edges between them as
//! compressed sparse rows, the outlier pictures and choice items after them, and the JSON `uform-train batches`
//! prints.

use std::collections::{HashMap, HashSet};
use std::error::Error;

use serde_json::{json, Value};
use uform::{LateInteractionSide, Modality};

use super::load::{Data, Group, Split};
use super::sample::{BatchRecipe, Picked, Random};

/// Compressed sparse rows of weighted edges, as `uform_edges_t` takes them.
#[derive(Default)]
pub struct Rows {
    /// One per item plus one.
    pub offsets: Vec<usize>,
    /// Neighbours.
    pub ids: Vec<usize>,
    /// Per-edge weights.
    pub weights: Vec<f32>,
}

impl Rows {
    /// The rows as a step takes them.
    pub fn edges(&self) -> uform::Edges<'_> {
        uform::Edges {
            offsets: &self.offsets,
            ids: &self.ids,
            weights: &self.weights,
        }
    }

    /// Rows from per-item neighbour lists, each sorted by neighbour.
    fn from_lists(lists: Vec<Vec<(usize, f32)>>) -> Self {
        let mut rows = Self {
            offsets: vec![0],
            ..Self::default()
        };
        for mut list in lists {
            list.sort_by_key(|&(id, _)| id);
            for (id, weight) in list {
                rows.ids.push(id);
                rows.weights.push(weight);
            }
            rows.offsets.push(rows.ids.len());
        }
        rows
    }

    /// `{"offsets": [...], "ids": [...], "weights": [...]}`.
    fn to_json(&self) -> Value {
        json!({"offsets": self.offsets, "ids": self.ids, "weights": self.weights})
    }
}

/// One step's items and what the trainer needs to know about them.
#[derive(Default)]
pub struct Batch {
    /// Each item's modality.
    pub modalities: Vec<Modality>,
    /// Each item's text, or its media file's path.
    pub contents: Vec<String>,
    /// Each item's bag.
    pub bags: Vec<usize>,
    /// Each item's late-interaction side: lemmas query, glosses are documents.
    pub sides: Vec<LateInteractionSide>,
    /// Graded positives.
    pub attract: Rows,
    /// Hard negatives.
    pub repel: Rows,
    /// The legal bytes' tape: data, then offsets (one per item plus one).
    pub choices: (Vec<u8>, Vec<usize>),
    /// The targets' tape, shaped as `choices`.
    pub targets: (Vec<f32>, Vec<usize>),
    /// The teacher's row of each item, row-major, `teacher_width` values each (all zeros for an item without one);
    /// empty when the data has no teacher rows loaded.
    pub teacher: Vec<f32>,
    /// Columns of a teacher row; zero without rows.
    pub teacher_width: usize,
}

impl Batch {
    /// The batch as JSON: per item its modality, content, bag, side, legal bytes, targets and whether it has a
    /// teacher row, the edges as compressed sparse rows, and the teacher's width.
    pub fn to_json(&self) -> Value {
        let modality = |m: &Modality| match m {
            Modality::Text => "text",
            Modality::Image => "image",
            Modality::Audio => "audio",
            _ => "video",
        };
        let side = |s: &LateInteractionSide| match s {
            LateInteractionSide::Query => "query",
            LateInteractionSide::Document => "document",
            _ => "none",
        };
        let tape = |t: &(Vec<u8>, Vec<usize>), i: usize| {
            String::from_utf8_lossy(&t.0[t.1[i]..t.1[i + 1]]).into_owned()
        };
        let items = self.bags.len();
        json!({
            "modalities": self.modalities.iter().map(modality).collect::<Vec<_>>(),
            "contents": self.contents,
            "bags": self.bags,
            "sides": self.sides.iter().map(side).collect::<Vec<_>>(),
            "attract": self.attract.to_json(),
            "repel": self.repel.to_json(),
            "choices": (0..items).map(|i| tape(&self.choices, i)).collect::<Vec<_>>(),
            "choice_targets": (0..items)
                .map(|i| self.targets.0[self.targets.1[i]..self.targets.1[i + 1]].to_vec())
                .collect::<Vec<_>>(),
            "teacher_width": self.teacher_width,
            "teacher": (0..items).map(|i| self.has_teacher(i)).collect::<Vec<_>>(),
        })
    }

    /// Whether item `i` has a teacher row (one not all zeros).
    pub fn has_teacher(&self, i: usize) -> bool {
        let width = self.teacher_width;
        width > 0
            && self.teacher[i * width..(i + 1) * width]
                .iter()
                .any(|&v| v != 0.0)
    }
}

/// Per item, its attract and repel neighbours with their weights, before they become rows.
struct Lists {
    /// Graded positives.
    attract: Vec<Vec<(usize, f32)>>,
    /// Hard negatives.
    repel: Vec<Vec<(usize, f32)>>,
}

impl Data {
    /// The batch of the items `picked`: edges, contents and sides, then outlier pictures, other texts and choice
    /// items, each in a bag of its own, and the items' teacher rows when the data has them. Draws from `random` in
    /// that order, after the sampling's draws.
    pub(super) fn write_batch(
        &self,
        random: &mut Random,
        split: Split,
        recipe: &BatchRecipe,
        picked: &Picked,
    ) -> Result<Batch, Box<dyn Error>> {
        let mut lists = self.edge_lists(picked, recipe)?;
        if recipe.supersense > 0.0 {
            self.add_supersenses(picked, recipe.supersense, &mut lists);
        }
        let mut batch = Batch {
            bags: picked.bags.clone(),
            ..Batch::default()
        };
        self.write_items(random, recipe, picked, &mut batch);
        if recipe.outliers > 0 {
            self.add_outliers(random, split, recipe.outliers, &mut batch, &mut lists)?;
        }
        let mut sources: Vec<Option<usize>> = match &self.teacher {
            Some(teacher) => picked.members.iter().map(|&i| teacher.of_item(i)).collect(),
            None => Vec::new(),
        };
        sources.resize(batch.bags.len(), None);
        if recipe.extras > 0 {
            self.add_extras(
                random,
                split,
                recipe.extras,
                &mut batch,
                &mut lists,
                &mut sources,
            )?;
        }
        if recipe.families > 0 {
            self.add_families(
                random,
                split,
                recipe.families,
                &mut batch,
                &mut lists,
                &mut sources,
            )?;
        }
        self.add_choices(random, split, recipe.choices, &mut batch, &mut lists);
        sources.resize(batch.bags.len(), None);
        if let Some(teacher) = &self.teacher {
            batch.teacher = teacher.gather(&sources);
            batch.teacher_width = teacher.width;
        }
        batch.attract = Rows::from_lists(lists.attract);
        batch.repel = Rows::from_lists(lists.repel);
        Ok(batch)
    }

    /// Every member of up to `count` of the teacher's sentence families of `split`, each in a bag of its own with no
    /// edge, their rows in `sources`.
    fn add_families(
        &self,
        random: &mut Random,
        split: Split,
        count: usize,
        batch: &mut Batch,
        lists: &mut Lists,
        sources: &mut Vec<Option<usize>>,
    ) -> Result<(), Box<dyn Error>> {
        let teacher = self.teacher.as_ref().filter(|t| !t.families.is_empty()).ok_or(
            "the recipe's [batch] families are the teacher's sentence families: its distill_weight must be positive \
             and the data needs them (python3 tools/data/prepare.py --teacher)",
        )?;
        let pool: Vec<usize> = (0..teacher.families.len())
            .filter(|&f| teacher.families[f].0 == split)
            .collect();
        for f in random.sample(&pool, count) {
            for (text, row) in &teacher.families[f].1 {
                push_alone(batch, lists, text);
                sources.push(Some(*row));
            }
        }
        Ok(())
    }

    /// Up to `count` of the teacher's other English texts of `split`, each in a bag of its own with no edge, their
    /// rows in `sources`.
    fn add_extras(
        &self,
        random: &mut Random,
        split: Split,
        count: usize,
        batch: &mut Batch,
        lists: &mut Lists,
        sources: &mut Vec<Option<usize>>,
    ) -> Result<(), Box<dyn Error>> {
        let Some(teacher) = &self.teacher else {
            return Err("the recipe's [batch] extras are the teacher's texts: its distill_weight must be positive \
                        and the data needs them (python3 tools/data/prepare.py --teacher)"
                .into());
        };
        let pool: Vec<usize> = (0..teacher.extras.len())
            .filter(|&e| teacher.extras[e].0 == split)
            .collect();
        for e in random.sample(&pool, count) {
            let (_, text, row) = &teacher.extras[e];
            push_alone(batch, lists, text);
            sources.push(Some(*row));
        }
        Ok(())
    }

    /// Edges: within a bag by roles, between bags by edges.tsv and, when the recipe draws hypernyms, between a
    /// synset's items and its hypernym's (both ways).
    fn edge_lists(&self, picked: &Picked, recipe: &BatchRecipe) -> Result<Lists, Box<dyn Error>> {
        let Picked {
            members,
            bags,
            group_of,
        } = picked;
        let mut positions: HashMap<usize, Vec<usize>> = HashMap::new();
        for (p, &group) in group_of.iter().enumerate() {
            positions.entry(group).or_default().push(p);
        }
        let at = |group: &usize| positions.get(group).map_or(&[][..], Vec::as_slice);
        let mut lists = Lists {
            attract: vec![Vec::new(); members.len()],
            repel: vec![Vec::new(); members.len()],
        };
        for p in 0..members.len() {
            for q in 0..members.len() {
                if p != q && bags[p] == bags[q] {
                    lists.attract[p].push((q, self.role_weight(members[p], members[q])?));
                }
            }
            for edge in self.edges.get(&group_of[p]).map_or(&[][..], Vec::as_slice) {
                let to = if edge.attract {
                    &mut lists.attract
                } else {
                    &mut lists.repel
                };
                to[p].extend(at(&edge.to).iter().map(|&q| (q, edge.weight)));
            }
            if recipe.hypernyms > 0.0 {
                for parent in self
                    .hypernyms
                    .get(&group_of[p])
                    .map_or(&[][..], Vec::as_slice)
                {
                    for &q in at(parent) {
                        lists.attract[p].push((q, recipe.hypernym_weight));
                        lists.attract[q].push((p, recipe.hypernym_weight));
                    }
                }
            }
        }
        Ok(lists)
    }

    /// Attract edges at `weight` between the items of synsets of one lexicographer file that no edge joins yet.
    fn add_supersenses(&self, picked: &Picked, weight: f32, lists: &mut Lists) {
        let group_of = &picked.group_of;
        let mut kinds: HashMap<usize, Vec<usize>> = HashMap::new();
        for (p, &group) in group_of.iter().enumerate() {
            if let Some(kind) = self.groups[group].lexname {
                kinds.entry(kind).or_default().push(p);
            }
        }
        for (p, &group) in group_of.iter().enumerate() {
            let Some(mates) = self.groups[group].lexname.map(|kind| &kinds[&kind]) else {
                continue;
            };
            let joined: HashSet<usize> = lists.attract[p]
                .iter()
                .chain(&lists.repel[p])
                .map(|&(q, _)| q)
                .collect();
            for &q in mates {
                if group_of[q] != group && !joined.contains(&q) {
                    lists.attract[p].push((q, weight));
                }
            }
        }
    }

    /// Each item's modality, content (a lemma perhaps behind an article, a media item's path joined to the data
    /// directory) and side (a canonical lemma a document at the recipe's `lemma_documents`), item by item.
    fn write_items(
        &self,
        random: &mut Random,
        recipe: &BatchRecipe,
        picked: &Picked,
        batch: &mut Batch,
    ) {
        for (&i, &group) in picked.members.iter().zip(&picked.group_of) {
            let item = &self.items[i];
            let role = self.role_of(i);
            batch.modalities.push(item.modality);
            batch.contents.push(match item.modality {
                Modality::Text if role == "lemma" => {
                    self.lemma_read(&self.groups[group], &item.content, random, recipe.articles)
                }
                Modality::Text => item.content.clone(),
                _ => self.root.join(&item.content).to_string_lossy().into_owned(),
            });
            let canonical = i == self.groups[group].first;
            batch.sides.push(match role {
                "lemma"
                    if canonical
                        && recipe.lemma_documents > 0.0
                        && random.chance(recipe.lemma_documents) =>
                {
                    LateInteractionSide::Document
                }
                "lemma" => LateInteractionSide::Query,
                "gloss" => LateInteractionSide::Document,
                _ => LateInteractionSide::None,
            });
        }
    }

    /// `count` outlier pictures of `split`, each in a bag of its own with no edge: negatives alone.
    fn add_outliers(
        &self,
        random: &mut Random,
        split: Split,
        count: usize,
        batch: &mut Batch,
        lists: &mut Lists,
    ) -> Result<(), Box<dyn Error>> {
        let pool = self.outliers.get(&split).map_or(&[][..], Vec::as_slice);
        if pool.len() < count {
            return Err(format!(
                "{count} outlier pictures a batch, but the {split:?} split has {} (outliers.tsv: run \
                 tools/data/prepare.py again)",
                pool.len()
            )
            .into());
        }
        for i in random.sample(pool, count) {
            batch.modalities.push(Modality::Image);
            batch.contents.push(self.outlier_paths[i].clone());
            batch.bags.push(batch.bags.last().map_or(0, |bag| bag + 1));
            batch.sides.push(LateInteractionSide::None);
            lists.attract.push(Vec::new());
            lists.repel.push(Vec::new());
        }
        Ok(())
    }

    /// Up to `count` choice items of `split`, each in a bag of its own, with the only nonempty entries of the choice
    /// tapes.
    fn add_choices(
        &self,
        random: &mut Random,
        split: Split,
        count: usize,
        batch: &mut Batch,
        lists: &mut Lists,
    ) {
        batch.choices.1 = vec![0; batch.bags.len() + 1];
        batch.targets.1 = vec![0; batch.bags.len() + 1];
        let pool = self
            .choices_by_split
            .get(&split)
            .map_or(&[][..], Vec::as_slice);
        for c in random.sample(pool, count) {
            let choice = &self.choices[c];
            batch.modalities.push(Modality::Text);
            batch.contents.push(choice.text.clone());
            batch.bags.push(batch.bags.last().map_or(0, |bag| bag + 1));
            batch.sides.push(LateInteractionSide::None);
            lists.attract.push(Vec::new());
            lists.repel.push(Vec::new());
            batch.choices.0.extend_from_slice(choice.legal.as_bytes());
            batch.choices.1.push(batch.choices.0.len());
            batch.targets.0.extend_from_slice(&choice.targets);
            batch.targets.1.push(batch.targets.0.len());
        }
    }

    /// The attract weight of two items of one group, by their roles; an unlisted pair is an error of the data.
    fn role_weight(&self, a: usize, b: usize) -> Result<f32, Box<dyn Error>> {
        let (a, b) = (self.items[a].role, self.items[b].role);
        self.role_weights.get(&(a, b)).copied().ok_or_else(|| {
            let names = (&self.role_names[a], &self.role_names[b]);
            format!("roles.tsv has no weight for {} and {}", names.0, names.1).into()
        })
    }

    /// A lemma as a batch reads it: with probability `articles`, a lower-case noun behind its article ("a cat", "an
    /// owl") or a verb behind "to"; else as it is.
    fn lemma_read(&self, group: &Group, lemma: &str, random: &mut Random, articles: f64) -> String {
        let lower = lemma.starts_with(|c: char| c.is_ascii_lowercase());
        if !(lower && (group.noun || group.verb) && random.chance(articles)) {
            return lemma.to_owned();
        }
        let article = match (group.verb, lemma.starts_with(['a', 'e', 'i', 'o', 'u'])) {
            (true, _) => "to",
            (false, true) => "an",
            (false, false) => "a",
        };
        format!("{article} {lemma}")
    }
}

/// Appends a text in a bag of its own, with no edge and no late-interaction side: the distillation term alone trains it.
fn push_alone(batch: &mut Batch, lists: &mut Lists, text: &str) {
    batch.modalities.push(Modality::Text);
    batch.contents.push(text.to_owned());
    batch.bags.push(batch.bags.last().map_or(0, |bag| bag + 1));
    batch.sides.push(LateInteractionSide::None);
    lists.attract.push(Vec::new());
    lists.repel.push(Vec::new());
}
