//! The prepared data (`tools/data/prepare.py`, docs/data.md) and its batch recipe, after `tools/data/batches.py`:
//! WordNet groups as bags (with a hard negative drawn beside each at probability `hard`, and a hypernym at
//! `hypernyms`), Fashion-MNIST class groups, a share of groups with a spoken clip, attract edges weighted by
//! `roles.tsv` within a bag, by `edges.tsv` between bags, by `hypernym_weight` between a synset and its hypernym and
//! by `supersense` between noun or verb synsets of one lexicographer file, repel edges from `edges.tsv`, and choice
//! items with their legal bytes and one-hot targets.

use std::collections::HashMap;
use std::error::Error;
use std::path::{Path, PathBuf};

use uform::{LateInteractionSide, Modality};

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
    fn parse(field: &str) -> Result<Self, Box<dyn Error>> {
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
struct Group {
    /// Whether it is a Fashion-MNIST class (else a WordNet synset).
    fashion: bool,
    /// Its first item.
    first: usize,
    /// Its items, at least one.
    count: usize,
    /// Its `groups.tsv` label: a synset's canonical lemma, or a class's name.
    label: String,
    /// Whether it is a WordNet noun synset (`wn:n...`), else a verb (`wn:v...`) when `verb`.
    noun: bool,
    verb: bool,
    /// A noun or verb synset's lexicographer file (`groups.tsv`'s `lexname`, "noun.animal"), numbered in the order
    /// first seen; `None` for adjectives and adverbs (almost all adj.all or adv.all, too broad a kind) and classes.
    lexname: Option<usize>,
}

/// A line of `items.tsv`.
struct Item {
    /// Text, image or audio.
    modality: Modality,
    /// Index into [`Data::role_names`].
    role: usize,
    /// The text, or the media file's path relative to the data directory.
    content: String,
    /// A lemma in a rare sense of its word, drawn at the recipe's `rare_senses` (`Data::mark_rare_senses`).
    rare: bool,
    /// A lemma never tagged in this sense of a word tagged in another: rare by the lemma's own count, which the
    /// recipe's `rare_by_lemma` uses instead of `rare` ("cat" in "guy, hombre, cat, bozo").
    rare_by_lemma: bool,
}

/// A line of `choices.tsv`.
struct Choice {
    /// The legal bytes, `ABCD`.
    legal: String,
    /// One probability per legal byte.
    targets: Vec<f32>,
    /// The question, ending in `Answer:`.
    text: String,
}

/// An `attract` or `repel` edge of `edges.tsv`, from the group it is listed under.
struct Edge {
    /// The other group.
    to: usize,
    /// Whether it attracts (else it repels).
    attract: bool,
    /// Its weight.
    weight: f32,
}

/// Everything the batches are drawn from, in memory.
pub struct Data {
    /// The data directory; media paths are relative to it.
    root: PathBuf,
    /// `groups.tsv`.
    groups: Vec<Group>,
    /// `items.tsv`.
    items: Vec<Item>,
    /// The role names, in the order first seen.
    role_names: Vec<String>,
    /// `roles.tsv` by role indices, both orders.
    role_weights: HashMap<(usize, usize), f32>,
    /// `edges.tsv`'s attract and repel edges by their `from` group.
    edges: HashMap<usize, Vec<Edge>>,
    /// `edges.tsv`'s hypernym links (no objective of their own) by their `from` group, the hyponym.
    hypernyms: HashMap<usize, Vec<usize>>,
    /// `choices.tsv`, less the items longer than the row allows.
    choices: Vec<Choice>,
    /// WordNet groups by split.
    wordnet: HashMap<Split, Vec<usize>>,
    /// Per split, the running sums of the WordNet groups' draw weights: `[0]` for the groups (`Recipe::weight`), `[1]`
    /// for the vocabulary groups (`Recipe::vocabulary_weight`).
    drawn: [HashMap<Split, Vec<f64>>; 2],
    /// WordNet groups with a spoken clip, by split.
    spoken: HashMap<Split, Vec<usize>>,
    /// Fashion-MNIST class groups by split.
    fashion: HashMap<Split, Vec<usize>>,
    /// `outliers.tsv`'s synthetic pictures, their paths joined to `root` (none in a data directory that predates
    /// them).
    outlier_paths: Vec<String>,
    /// Outlier pictures (indices into `outlier_paths`) by split.
    outliers: HashMap<Split, Vec<usize>>,
    /// Choice items by split.
    choices_by_split: HashMap<Split, Vec<usize>>,
    /// Choice items dropped for their length.
    pub dropped_choices: usize,
    /// Texts cut to the row's length (at a character boundary).
    pub cut_texts: usize,
}

/// How a batch is drawn: the counts of `tools/data/batches.py`'s `Data.batch`, plus the spoken groups.
#[derive(Clone, Copy, Debug)]
pub struct Recipe {
    /// Groups (bags) in all, WordNet and Fashion-MNIST.
    pub groups: usize,
    /// Fashion-MNIST class groups among them.
    pub images: usize,
    /// WordNet groups with a spoken clip among them, the clip always taken.
    pub spoken: usize,
    /// Items taken per group at most.
    pub per_group: usize,
    /// Probability of drawing a repel partner beside a WordNet group.
    pub hard: f64,
    /// Choice items.
    pub choices: usize,
    /// A WordNet group is drawn with weight `floor + min(uses, cap)^common`, so everyday senses recur.
    pub common: f64,
    /// The draw weight's floor: an untagged synset's weight when `common` > 0.
    pub floor: f64,
    /// The tag count above which a synset is drawn no more often (infinite: no cap).
    pub cap: f64,
    /// Probability of drawing one of a WordNet group's hypernyms beside it (0: hypernyms play no part).
    pub hypernyms: f64,
    /// The attract weight between the items of a synset and those of its hypernym when both are in a batch (when
    /// `hypernyms` > 0).
    pub hypernym_weight: f32,
    /// Probability that a drawn noun lemma reads "a cat" (a verb's "to begin"), so an article does not move it.
    pub articles: f64,
    /// Images drawn beside a class group's caption.
    pub class_images: usize,
    /// Probability that a lemma in a rare sense of its word ("cat" in "Caterpillar, cat") may be drawn.
    pub rare_senses: f64,
    /// Whether a sense is rare by the lemma's own tag count (never tagged here, tagged in another synset) rather than
    /// by its synset's (`Data::mark_rare_senses`).
    pub rare_by_lemma: bool,
    /// Vocabulary groups beside the others: WordNet groups whose items are their lemmas alone (a hypernym beside one
    /// is a vocabulary group too), so short words meet short words as negatives.
    pub vocabulary: usize,
    /// The exponent `common` of the vocabulary groups' draw weights (`floor + min(uses, cap)^E`); `None`: `common`.
    pub vocabulary_common: Option<f64>,
    /// The attract weight between the items of two noun or verb synsets of one lexicographer file ("cat" and "feline"
    /// are noun.animal) that no other edge joins (0: none).
    pub supersense: f32,
    /// Probability that a group's canonical lemma is a late-interaction document rather than a query, so that its
    /// synonyms in the bag (queries) learn to find it by MaxSim as glosses are found (0: every lemma queries).
    pub lemma_documents: f64,
    /// Outlier pictures (`outliers.tsv`: synthetic patterns, no garment) beside the groups, each in a bag of its own
    /// with no edge, so they are every anchor's negatives and nobody's positive (0: none).
    pub outliers: usize,
}

impl Recipe {
    /// A WordNet group's draw weight from its tag count: `floor + min(uses, cap)^common`.
    pub fn weight(&self, uses: f64) -> f64 {
        self.floor + uses.min(self.cap).powf(self.common)
    }

    /// A vocabulary group's draw weight: `floor + min(uses, cap)^vocabulary_common`, `common` when that is `None`.
    pub fn vocabulary_weight(&self, uses: f64) -> f64 {
        Self {
            common: self.vocabulary_common.unwrap_or(self.common),
            ..*self
        }
        .weight(uses)
    }

    /// The most items a batch of this recipe can hold: `per_group` from each WordNet group (two from a spoken one,
    /// its canonical lemma and its clip, when `per_group` is one), vocabulary groups included, a caption and
    /// `class_images` from each class, and the choice items. Partners and hypernyms count among the groups.
    pub fn max_items(&self) -> usize {
        let text_groups = self.groups.saturating_sub(self.images) + self.vocabulary;
        text_groups * self.per_group.max(2)
            + self.images * (1 + self.class_images)
            + self.outliers
            + self.choices
    }
}

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
}

/// A SplitMix64 generator: small, seedable, the same on every platform.
pub struct Random(u64);

impl Random {
    /// The generator of one `(seed, stream)` pair, such as a run's seed and a step's index: a step's batch depends on
    /// them alone, so a resumed run draws what an uninterrupted one would.
    pub fn new(seed: u64, stream: u64) -> Self {
        let mut random = Self(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        random.next();
        random
    }

    /// The next 64 bits.
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (nonzero).
    fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    }

    /// A uniform number in `[0, 1)`.
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    fn chance(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Up to `count` distinct elements of `from`, in drawn order.
    pub fn sample<T: Copy>(&mut self, from: &[T], count: usize) -> Vec<T> {
        let mut pool = from.to_vec();
        let count = count.min(pool.len());
        for i in 0..count {
            let j = i + self.below(pool.len() - i);
            pool.swap(i, j);
        }
        pool.truncate(count);
        pool
    }
}

/// A TSV file's records, its `#` header skipped, each split at tabs into at least `fields` fields.
fn records(path: &Path, fields: usize) -> Result<Vec<Vec<String>>, Box<dyn Error>> {
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
fn cut(text: &str, bytes: usize) -> &str {
    let mut end = bytes.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

impl Data {
    /// Reads a data directory. Texts longer than `max_bytes` are cut to it and choice items longer are dropped (a
    /// choice item's text plus its CHOOSE token must fit one row).
    /// `weights` are a WordNet group's draw weights from its tag count, as a group and as a vocabulary group
    /// (`Recipe::weight`, `Recipe::vocabulary_weight`).
    pub fn load(
        root: &Path,
        max_bytes: usize,
        weights: [&dyn Fn(f64) -> f64; 2],
    ) -> Result<Self, Box<dyn Error>> {
        let mut data = Self {
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
        };
        let mut roles: HashMap<String, usize> = HashMap::new();
        // Tag counts of each item's sense (`items.tsv`) and of each group (`groups.tsv`), for the rare senses.
        let (mut item_uses, mut group_uses) = (Vec::new(), Vec::new());
        let mut role = |name: &str, names: &mut Vec<String>| {
            *roles.entry(name.to_owned()).or_insert_with(|| {
                names.push(name.to_owned());
                names.len() - 1
            })
        };
        for record in records(&root.join("items.tsv"), 7)? {
            let modality = match record[3].as_str() {
                "text" => Modality::Text,
                "image" => Modality::Image,
                "audio" => Modality::Audio,
                other => return Err(format!("items.tsv: unknown modality {other:?}").into()),
            };
            let mut content = record[5].clone();
            if modality == Modality::Text && content.len() > max_bytes {
                content = cut(&content, max_bytes).to_owned();
                data.cut_texts += 1;
            }
            let role = role(&record[4], &mut data.role_names);
            item_uses.push(record[6].parse::<u64>()?);
            data.items.push(Item {
                modality,
                role,
                content,
                rare: false,
                rare_by_lemma: false,
            });
        }
        // The noun and verb lexicographer files by name, numbered in the order first seen.
        let mut lexnames: HashMap<String, usize> = HashMap::new();
        for record in records(&root.join("groups.tsv"), 9)? {
            let (split, fashion) = (Split::parse(&record[1])?, record[2] == "fashion-mnist");
            let (first, count): (usize, usize) = (record[4].parse()?, record[5].parse()?);
            if count == 0 || first + count > data.items.len() {
                return Err(format!("groups.tsv: group {} leaves items.tsv", record[0]).into());
            }
            let group = data.groups.len();
            let by = if fashion {
                &mut data.fashion
            } else {
                &mut data.wordnet
            };
            by.entry(split).or_default().push(group);
            let items = &data.items[first..first + count];
            if !fashion && items.iter().any(|item| item.modality == Modality::Audio) {
                data.spoken.entry(split).or_default().push(group);
            }
            // The uses: how often the synset's senses were tagged in WordNet's concordances.
            let uses: f64 = record[7].parse()?;
            group_uses.push(uses);
            if !fashion {
                for (drawn, weight) in data.drawn.iter_mut().zip(weights) {
                    let sums = drawn.entry(split).or_default();
                    sums.push(sums.last().copied().unwrap_or(0.0) + weight(uses));
                }
            }
            let kind = record[8].starts_with("noun.") || record[8].starts_with("verb.");
            let known = lexnames.len();
            let lexname = kind.then(|| *lexnames.entry(record[8].clone()).or_insert(known));
            data.groups.push(Group {
                fashion,
                first,
                count,
                label: record[6].clone(),
                noun: record[3].starts_with("wn:n"),
                verb: record[3].starts_with("wn:v"),
                lexname,
            });
        }
        data.mark_rare_senses(&item_uses, &group_uses);
        for record in records(&root.join("roles.tsv"), 3)? {
            let (a, b) = (
                role(&record[0], &mut data.role_names),
                role(&record[1], &mut data.role_names),
            );
            let weight: f32 = record[2].parse()?;
            data.role_weights.insert((a, b), weight);
            data.role_weights.insert((b, a), weight);
        }
        for record in records(&root.join("edges.tsv"), 5)? {
            let (from, to): (usize, usize) = (record[2].parse()?, record[3].parse()?);
            let attract = match (record[0].as_str(), record[1].as_str()) {
                ("attract", _) => true,
                ("repel", _) => false,
                (_, "hypernym") => {
                    data.hypernyms.entry(from).or_default().push(to);
                    continue;
                }
                _ => continue,
            };
            data.edges.entry(from).or_default().push(Edge {
                to,
                attract,
                weight: record[4].parse()?,
            });
        }
        for record in records(&root.join("choices.tsv"), 7)? {
            let text = record[6].clone();
            if text.len() > max_bytes {
                data.dropped_choices += 1;
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
            data.choices_by_split
                .entry(Split::parse(&record[1])?)
                .or_default()
                .push(data.choices.len());
            data.choices.push(Choice {
                legal: record[4].clone(),
                targets,
                text,
            });
        }
        let outliers = root.join("outliers.tsv");
        if outliers.exists() {
            for record in records(&outliers, 3)? {
                let split = Split::parse(&record[2])?;
                data.outliers
                    .entry(split)
                    .or_default()
                    .push(data.outlier_paths.len());
                data.outlier_paths
                    .push(root.join(&record[0]).to_string_lossy().into_owned());
            }
        }
        Ok(data)
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

    /// Whether a drawn group may take item `i`: always, unless it is a lemma in a rare sense (by the recipe's rule),
    /// then at `rare_senses`.
    fn drawable(&self, i: usize, random: &mut Random, recipe: &Recipe) -> bool {
        let item = &self.items[i];
        let rare = if recipe.rare_by_lemma {
            item.rare_by_lemma
        } else {
            item.rare
        };
        !rare || random.chance(recipe.rare_senses)
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

    /// Draws WordNet groups of `split` by their weights (`vocabulary`: as vocabulary groups) into `chosen` until it
    /// holds `limit`, each possibly followed by a repel partner and, at the recipe's `hypernyms`, one of its
    /// hypernyms; `taken` are the groups the batch holds already.
    #[allow(clippy::too_many_arguments)]
    fn draw_groups(
        &self,
        random: &mut Random,
        split: Split,
        recipe: &Recipe,
        vocabulary: bool,
        limit: usize,
        chosen: &mut Vec<usize>,
        taken: &mut std::collections::HashSet<usize>,
    ) {
        let wordnet = self.wordnet.get(&split).map_or(&[][..], Vec::as_slice);
        let sums = self.drawn[usize::from(vocabulary)]
            .get(&split)
            .map_or(&[][..], Vec::as_slice);
        let total = sums.last().copied().unwrap_or(0.0);
        while chosen.len() < limit && taken.len() < wordnet.len() {
            let at = random.uniform() * total;
            let group = wordnet[sums
                .partition_point(|&sum| sum <= at)
                .min(wordnet.len() - 1)];
            if !taken.insert(group) {
                continue;
            }
            chosen.push(group);
            let partners: Vec<usize> = self.edges.get(&group).map_or(Vec::new(), |edges| {
                let repel = edges
                    .iter()
                    .filter(|edge| !edge.attract && !taken.contains(&edge.to));
                repel.map(|edge| edge.to).collect()
            });
            if !partners.is_empty() && random.chance(recipe.hard) && chosen.len() < limit {
                let partner = partners[random.below(partners.len())];
                taken.insert(partner);
                chosen.push(partner);
            }
            if recipe.hypernyms > 0.0 && chosen.len() < limit {
                let parents: Vec<usize> =
                    self.hypernyms.get(&group).map_or(Vec::new(), |parents| {
                        parents
                            .iter()
                            .copied()
                            .filter(|parent| !taken.contains(parent))
                            .collect()
                    });
                if !parents.is_empty() && random.chance(recipe.hypernyms) {
                    let parent = parents[random.below(parents.len())];
                    taken.insert(parent);
                    chosen.push(parent);
                }
            }
        }
    }

    /// Draws one batch of `split` after `recipe` (docs/data.md, "Sampling a batch").
    pub fn batch(
        &self,
        random: &mut Random,
        split: Split,
        recipe: &Recipe,
    ) -> Result<Batch, Box<dyn Error>> {
        let none = Vec::new();
        let spoken = self.spoken.get(&split).unwrap_or(&none);
        let fashion = self.fashion.get(&split).unwrap_or(&none);
        let text_groups = recipe.groups.saturating_sub(recipe.images);

        // Groups: the spoken ones first, then WordNet ones each possibly followed by a repel partner, then the
        // vocabulary groups (whose bags take lemmas alone), then classes.
        let mut chosen: Vec<usize> = random.sample(spoken, recipe.spoken.min(text_groups));
        let mut taken: std::collections::HashSet<usize> = chosen.iter().copied().collect();
        let spoken_bags = chosen.len();
        self.draw_groups(
            random,
            split,
            recipe,
            false,
            text_groups,
            &mut chosen,
            &mut taken,
        );
        let start = chosen.len();
        let limit = start + recipe.vocabulary;
        self.draw_groups(random, split, recipe, true, limit, &mut chosen, &mut taken);
        let vocabulary = start..chosen.len();
        chosen.extend(random.sample(fashion, recipe.images));

        // Items: a WordNet group's canonical lemma and others at random (a spoken group's clip always among them),
        // a class group's caption and images.
        let (mut members, mut group_of): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        let mut batch = Batch::default();
        for (bag, &group) in chosen.iter().enumerate() {
            let Group {
                fashion,
                first,
                count,
                ..
            } = self.groups[group];
            let ids: Vec<usize> = (first..first + count).collect();
            let role_of = |i: &usize| self.role_names[self.items[*i].role].as_str();
            let pick = if fashion {
                let captions: Vec<usize> = ids
                    .iter()
                    .copied()
                    .filter(|i| role_of(i) == "caption")
                    .collect();
                let images: Vec<usize> = ids
                    .iter()
                    .copied()
                    .filter(|i| role_of(i) == "image")
                    .collect();
                let mut pick = random.sample(&captions, 1);
                pick.extend(random.sample(&images, recipe.class_images));
                pick
            } else if bag < spoken_bags {
                let clips: Vec<usize> = ids
                    .iter()
                    .copied()
                    .filter(|&i| self.items[i].modality == Modality::Audio)
                    .collect();
                let mut pick = vec![first];
                pick.extend(random.sample(&clips, 1));
                let others: Vec<usize> = ids[1..]
                    .iter()
                    .copied()
                    .filter(|&i| !pick.contains(&i) && self.drawable(i, random, recipe))
                    .collect();
                pick.extend(random.sample(&others, recipe.per_group.saturating_sub(pick.len())));
                pick
            } else {
                let lemmas_only = vocabulary.contains(&bag);
                let others: Vec<usize> = ids[1..]
                    .iter()
                    .copied()
                    .filter(|&i| !lemmas_only || role_of(&i) == "lemma")
                    .filter(|&i| self.drawable(i, random, recipe))
                    .collect();
                let mut pick = vec![first];
                pick.extend(random.sample(&others, recipe.per_group.saturating_sub(1)));
                pick
            };
            batch.bags.extend(std::iter::repeat_n(bag, pick.len()));
            group_of.extend(std::iter::repeat_n(group, pick.len()));
            members.extend(pick);
        }

        // Edges: within a bag by roles, between bags by edges.tsv and, when the recipe draws hypernyms, between a
        // synset's items and its hypernym's (both ways); then between synsets of one lexicographer file that no edge
        // joins yet.
        let mut positions: HashMap<usize, Vec<usize>> = HashMap::new();
        for (p, &group) in group_of.iter().enumerate() {
            positions.entry(group).or_default().push(p);
        }
        let mut attract = vec![Vec::new(); members.len()];
        let mut repel = vec![Vec::new(); members.len()];
        for p in 0..members.len() {
            for q in 0..members.len() {
                if p != q && batch.bags[p] == batch.bags[q] {
                    attract[p].push((q, self.role_weight(members[p], members[q])?));
                }
            }
            for edge in self.edges.get(&group_of[p]).map_or(&[][..], Vec::as_slice) {
                for &q in positions.get(&edge.to).map_or(&[][..], Vec::as_slice) {
                    let lists = if edge.attract {
                        &mut attract
                    } else {
                        &mut repel
                    };
                    lists[p].push((q, edge.weight));
                }
            }
            if recipe.hypernyms > 0.0 {
                for parent in self
                    .hypernyms
                    .get(&group_of[p])
                    .map_or(&[][..], Vec::as_slice)
                {
                    for &q in positions.get(parent).map_or(&[][..], Vec::as_slice) {
                        attract[p].push((q, recipe.hypernym_weight));
                        attract[q].push((p, recipe.hypernym_weight));
                    }
                }
            }
        }
        if recipe.supersense > 0.0 {
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
                let joined: std::collections::HashSet<usize> = attract[p]
                    .iter()
                    .chain(&repel[p])
                    .map(|&(q, _)| q)
                    .collect();
                for &q in mates {
                    if group_of[q] != group && !joined.contains(&q) {
                        attract[p].push((q, recipe.supersense));
                    }
                }
            }
        }

        for (&i, &group) in members.iter().zip(&group_of) {
            let item = &self.items[i];
            batch.modalities.push(item.modality);
            batch.contents.push(match item.modality {
                Modality::Text if self.role_names[item.role] == "lemma" => {
                    self.lemma_read(&self.groups[group], &item.content, random, recipe.articles)
                }
                Modality::Text => item.content.clone(),
                _ => self.root.join(&item.content).to_string_lossy().into_owned(),
            });
            let canonical = i == self.groups[group].first;
            batch.sides.push(match self.role_names[item.role].as_str() {
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

        // Outlier pictures, each in a bag of its own with no edge: negatives alone.
        if recipe.outliers > 0 {
            let pool = self.outliers.get(&split).unwrap_or(&none);
            if pool.len() < recipe.outliers {
                return Err(format!(
                    "{} outlier pictures a batch, but the {split:?} split has {} (outliers.tsv: run \
                     tools/data/prepare.py again)",
                    recipe.outliers,
                    pool.len()
                )
                .into());
            }
            for i in random.sample(pool, recipe.outliers) {
                batch.modalities.push(Modality::Image);
                batch.contents.push(self.outlier_paths[i].clone());
                batch.bags.push(batch.bags.last().map_or(0, |bag| bag + 1));
                batch.sides.push(LateInteractionSide::None);
                attract.push(Vec::new());
                repel.push(Vec::new());
            }
        }

        // Choice items, each in a bag of its own, with the only nonempty entries of the choice tapes.
        batch.choices.1 = vec![0; batch.bags.len() + 1];
        batch.targets.1 = vec![0; batch.bags.len() + 1];
        let pool = self.choices_by_split.get(&split).unwrap_or(&none);
        for c in random.sample(pool, recipe.choices) {
            let choice = &self.choices[c];
            batch.modalities.push(Modality::Text);
            batch.contents.push(choice.text.clone());
            batch.bags.push(batch.bags.last().map_or(0, |bag| bag + 1));
            batch.sides.push(LateInteractionSide::None);
            attract.push(Vec::new());
            repel.push(Vec::new());
            batch.choices.0.extend_from_slice(choice.legal.as_bytes());
            batch.choices.1.push(batch.choices.0.len());
            batch.targets.0.extend_from_slice(&choice.targets);
            batch.targets.1.push(batch.targets.0.len());
        }
        batch.attract = Rows::from_lists(attract);
        batch.repel = Rows::from_lists(repel);
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A WordNet group of a hand-made data directory: its key, its lemmas with their tag counts, the synset's uses,
    /// its lexicographer file.
    type Synset<'a> = (&'a str, &'a [(&'a str, u64)], u64, &'a str);

    /// Writes the synsets (each with a gloss "what <its first lemma> means") and one image class into a directory
    /// of its own under the system's temporary one, and loads it.
    fn write(name: &str, synsets: &[Synset], edges: &str) -> Data {
        let weight = |uses: f64| 1.0 + uses.powf(0.75);
        write_weighted(name, synsets, edges, [&weight, &weight])
    }

    /// `write`, the groups and the vocabulary groups drawn by `weights`.
    fn write_weighted(
        name: &str,
        synsets: &[Synset],
        edges: &str,
        weights: [&dyn Fn(f64) -> f64; 2],
    ) -> Data {
        let root =
            std::env::temp_dir().join(format!("uform-wordnet-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        let (mut groups, mut items) = (String::from("#header\n"), String::from("#header\n"));
        let mut count = 0;
        let mut item = |items: &mut String,
                        group: usize,
                        modality: &str,
                        role: &str,
                        content: &str,
                        uses: u64| {
            items.push_str(&format!(
                "{count}\t{group}\ttrain\t{modality}\t{role}\t{content}\t{uses}\n"
            ));
            count += 1;
            count - 1
        };
        for (g, (key, lemmas, uses, lexname)) in synsets.iter().enumerate() {
            let first = item(&mut items, g, "text", "lemma", lemmas[0].0, lemmas[0].1);
            for (lemma, tags) in &lemmas[1..] {
                item(&mut items, g, "text", "lemma", lemma, *tags);
            }
            item(
                &mut items,
                g,
                "text",
                "gloss",
                &format!("what {} means", lemmas[0].0),
                0,
            );
            groups.push_str(&format!(
                "{g}\ttrain\twordnet\t{key}\t{first}\t{}\t{}\t{uses}\t{lexname}\n",
                lemmas.len() + 1,
                lemmas[0].0
            ));
        }
        let class = synsets.len();
        let first = item(&mut items, class, "text", "caption", "a bag", 0);
        item(&mut items, class, "image", "image", "images/0.png", 0);
        groups.push_str(&format!(
            "{class}\ttrain\tfashion-mnist\tfmnist:0:train\t{first}\t2\tbag\t0\t-\n"
        ));
        let roles = "#header\nlemma\tlemma\t1\nlemma\tgloss\t0.5\ncaption\timage\t1\n";
        for (file, text) in [
            ("groups.tsv", groups.as_str()),
            ("items.tsv", items.as_str()),
            ("roles.tsv", roles),
            ("edges.tsv", &format!("#header\n{edges}")),
            ("choices.tsv", "#header\n"),
            (
                "outliers.tsv",
                "#header\nimages/o0.png\tsolid\ttrain\nimages/o1.png\tnoise\ttrain\n\
                 images/o2.png\tclouds\tvalidation\n",
            ),
        ] {
            std::fs::write(root.join(file), text).unwrap();
        }
        let data = Data::load(&root, 127, weights).unwrap();
        std::fs::remove_dir_all(&root).unwrap();
        data
    }

    /// D's recipe over `groups` groups, one of them the image class, taking every item of a synset.
    fn recipe(groups: usize) -> Recipe {
        Recipe {
            groups,
            images: 1,
            spoken: 0,
            per_group: 10,
            hard: 0.0,
            choices: 0,
            common: 0.75,
            floor: 1.0,
            cap: f64::INFINITY,
            hypernyms: 0.0,
            hypernym_weight: 0.35,
            articles: 0.0,
            class_images: 1,
            rare_senses: 0.0,
            rare_by_lemma: false,
            vocabulary: 0,
            vocabulary_common: None,
            supersense: 0.0,
            lemma_documents: 0.0,
            outliers: 0,
        }
    }

    /// `write` with one synset, "cat" and "true cat".
    fn one_cat(name: &str) -> Data {
        write(
            name,
            &[("wn:n1", &[("cat", 18), ("true cat", 0)], 18, "noun.Tops")],
            "",
        )
    }

    #[test]
    fn outlier_pictures_are_negatives_alone_in_bags_of_their_own() {
        let data = one_cat("outliers");
        let with = Recipe {
            outliers: 2,
            ..recipe(2)
        };
        let plain = data
            .batch(&mut Random::new(13, 0), Split::Train, &recipe(2))
            .unwrap();
        let batch = data
            .batch(&mut Random::new(13, 0), Split::Train, &with)
            .unwrap();
        let n = plain.bags.len();
        // The batch without them, bit for bit, then the train split's two pictures, each a bag of its own.
        assert_eq!(batch.contents[..n], plain.contents[..]);
        assert_eq!(batch.bags.len(), n + 2);
        assert_eq!(
            batch.bags[n..],
            [plain.bags[n - 1] + 1, plain.bags[n - 1] + 2]
        );
        assert_eq!(batch.modalities[n..], [Modality::Image, Modality::Image]);
        let mut drawn: Vec<&str> = batch.contents[n..]
            .iter()
            .map(|c| &c[c.len() - 13..])
            .collect();
        drawn.sort_unstable();
        assert_eq!(drawn, ["images/o0.png", "images/o1.png"]);
        for rows in [&batch.attract, &batch.repel] {
            assert_eq!(rows.offsets.len(), n + 3);
            assert!(
                rows.ids.iter().all(|&id| id < n),
                "no edge reaches an outlier"
            );
            assert_eq!(rows.offsets[n..], [rows.ids.len(); 3], "no edge leaves one");
        }
        assert_eq!(batch.choices.1.len(), n + 3);
        // The validation split has one picture: a batch that asks for two is refused, with the reason.
        let error = data.batch(&mut Random::new(13, 0), Split::Validation, &with);
        assert!(error.is_err_and(|e| e.to_string().contains("outlier pictures")));
    }

    #[test]
    fn a_canonical_lemma_becomes_a_document_at_the_recipes_chance() {
        let data = one_cat("lemma-documents");
        let side = |recipe: &Recipe, step: u64, text: &str| {
            let batch = data
                .batch(&mut Random::new(13, step), Split::Train, recipe)
                .unwrap();
            let at = batch.contents.iter().position(|c| c == text).unwrap();
            (batch.sides[at], batch.contents.clone())
        };
        let with = |p: f64| Recipe {
            lemma_documents: p,
            ..recipe(2)
        };
        let mut documents = 0;
        for step in 0..200 {
            let (never, plain) = side(&with(0.0), step, "cat");
            assert_eq!(never, LateInteractionSide::Query);
            assert_eq!(
                side(&with(1.0), step, "cat").0,
                LateInteractionSide::Document
            );
            let (half, contents) = side(&with(0.5), step, "cat");
            documents += usize::from(half == LateInteractionSide::Document);
            assert_eq!(contents, plain, "the same items");
            // A synonym stays a query, the gloss a document.
            assert_eq!(
                side(&with(1.0), step, "true cat").0,
                LateInteractionSide::Query
            );
            assert_eq!(
                side(&with(1.0), step, "what cat means").0,
                LateInteractionSide::Document
            );
        }
        assert!(
            (70..=130).contains(&documents),
            "{documents} of 200 at one half"
        );
    }

    #[test]
    fn vocabulary_groups_are_drawn_by_their_own_weights() {
        let synsets: [Synset; 3] = [
            ("wn:n1", &[("cat", 18)], 18, "noun.Tops"),
            ("wn:n2", &[("rock", 0)], 0, "noun.Tops"),
            ("wn:n3", &[("stone", 0)], 0, "noun.Tops"),
        ];
        let recipe = Recipe {
            common: 0.0,
            vocabulary: 1,
            vocabulary_common: Some(3.0),
            ..recipe(2)
        };
        let data = write_weighted(
            "vocabulary-weights",
            &synsets,
            "",
            [&|uses| recipe.weight(uses), &|uses| {
                recipe.vocabulary_weight(uses)
            }],
        );
        // The group: one of three alike. The vocabulary group: "cat" at 1 + 18^3 against 1 and 1, unless the group
        // took it.
        let (mut first, mut second) = (0, 0);
        for step in 0..300 {
            let batch = data
                .batch(&mut Random::new(13, step), Split::Train, &recipe)
                .unwrap();
            let bag_of_cat = batch.contents.iter().position(|text| text == "cat");
            let bag_of_cat = bag_of_cat.map(|at| batch.bags[at]);
            first += usize::from(bag_of_cat == Some(0));
            second += usize::from(bag_of_cat == Some(1));
        }
        assert!(
            (70..=130).contains(&first),
            "the group took cat {first} times of 300"
        );
        assert_eq!(
            first + second,
            300,
            "the vocabulary group took it every other time"
        );
    }

    #[test]
    fn vocabulary_groups_take_their_lemmas_alone() {
        let data = write(
            "vocabulary",
            &[
                ("wn:n1", &[("cat", 18), ("true cat", 0)], 18, "noun.Tops"),
                ("wn:n2", &[("feline", 30), ("felid", 0)], 30, "noun.Tops"),
                (
                    "wn:v3",
                    &[("begin", 500), ("start", 58)],
                    558,
                    "verb.change",
                ),
                ("wn:n4", &[("rock", 0), ("stone", 0)], 0, "noun.Tops"),
                ("wn:n5", &[("car", 40), ("auto", 0)], 40, "noun.Tops"),
            ],
            "",
        );
        let recipe = Recipe {
            vocabulary: 2,
            ..recipe(3)
        };
        for step in 0..20 {
            let batch = data
                .batch(&mut Random::new(13, step), Split::Train, &recipe)
                .unwrap();
            // Two groups as ever (two lemmas and the gloss each), two vocabulary groups (two lemmas), the class.
            assert_eq!(batch.bags.iter().max(), Some(&4));
            assert!(
                batch.bags.len() <= recipe.max_items(),
                "the trainer's bound holds"
            );
            for bag in 0..4 {
                let texts: Vec<&String> = (0..batch.bags.len())
                    .filter(|&i| batch.bags[i] == bag)
                    .map(|i| &batch.contents[i])
                    .collect();
                assert_eq!(texts.len(), if bag < 2 { 3 } else { 2 }, "{texts:?}");
                assert_eq!(
                    texts.iter().any(|t| t.starts_with("what ")),
                    bag < 2,
                    "{texts:?}"
                );
            }
            // Two items from each group, and the caption and image of the class: the bound, met.
            let two = Recipe {
                per_group: 2,
                ..recipe
            };
            let full = data
                .batch(&mut Random::new(13, step), Split::Train, &two)
                .unwrap();
            assert_eq!(full.bags.len(), two.max_items());
        }
    }

    #[test]
    fn synsets_of_one_lexicographer_file_attract_unless_an_edge_joins_them() {
        // "cat", "feline" and "dog" are noun.animal, "dog" a sister of "cat" (repel); "truck" noun.artifact; "begin"
        // verb.change; "big" and "large" adj.all, a file too broad to attract.
        let data = write(
            "supersense",
            &[
                ("wn:n1", &[("cat", 18)], 18, "noun.animal"),
                ("wn:n2", &[("feline", 0)], 0, "noun.animal"),
                ("wn:n3", &[("dog", 40)], 40, "noun.animal"),
                ("wn:n4", &[("truck", 9)], 9, "noun.artifact"),
                ("wn:v5", &[("begin", 500)], 500, "verb.change"),
                ("wn:a6", &[("big", 50)], 50, "adj.all"),
                ("wn:a7", &[("large", 50)], 50, "adj.all"),
            ],
            "repel\tsister\t0\t2\t1\nrepel\tsister\t2\t0\t1\n",
        );
        for supersense in [0.0, 0.1] {
            let recipe = Recipe {
                supersense,
                per_group: 1,
                ..recipe(8)
            };
            let batch = data
                .batch(&mut Random::new(13, 0), Split::Train, &recipe)
                .unwrap();
            let rows = &batch.attract;
            let mut pairs = Vec::new();
            for p in 0..batch.contents.len() {
                for at in rows.offsets[p]..rows.offsets[p + 1] {
                    let (a, b) = (&batch.contents[p], &batch.contents[rows.ids[at]]);
                    if batch.bags[p] != batch.bags[rows.ids[at]] {
                        pairs.push((a.as_str(), b.as_str(), rows.weights[at]));
                    }
                }
            }
            pairs.sort_by(|x, y| x.partial_cmp(y).unwrap());
            let expected = if supersense > 0.0 {
                vec![
                    ("cat", "feline", 0.1),
                    ("dog", "feline", 0.1),
                    ("feline", "cat", 0.1),
                    ("feline", "dog", 0.1),
                ]
            } else {
                Vec::new()
            };
            assert_eq!(pairs, expected);
        }
    }

    #[test]
    fn a_sense_is_rare_by_its_synset_or_by_the_lemma() {
        // "cat" is never tagged in "Caterpillar, cat" (a synset used less than "cat, true cat"): rare either way.
        // "start" is never tagged in "begin, start", used more than "start, starting": rare by the lemma alone.
        let data = write(
            "rare",
            &[
                ("wn:n1", &[("cat", 18), ("true cat", 0)], 18, "noun.Tops"),
                ("wn:n2", &[("Caterpillar", 0), ("cat", 0)], 0, "noun.Tops"),
                ("wn:v3", &[("begin", 500), ("start", 0)], 558, "verb.change"),
                ("wn:n4", &[("start", 30), ("starting", 0)], 30, "noun.Tops"),
            ],
            "",
        );
        for (rare_by_lemma, starts) in [(false, 2), (true, 1)] {
            let recipe = Recipe {
                rare_by_lemma,
                ..recipe(5)
            };
            let batch = data
                .batch(&mut Random::new(13, 0), Split::Train, &recipe)
                .unwrap();
            let count = |word: &str| batch.contents.iter().filter(|c| *c == word).count();
            assert_eq!((count("cat"), count("start")), (1, starts));
        }
    }
}
