//! Drawing a batch (docs/data.md, "Sampling a batch"): the step's generator, the batch recipe, and the groups and
//! items it draws; `write` turns them into the batch a step takes.

use std::collections::HashSet;
use std::error::Error;
use std::ops::Range;

use serde::Deserialize;
use uform::Modality;

use super::load::{Data, Group, Split};
use super::write::Batch;

/// By whose tag count a lemma's sense is rare.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum RareBy {
    /// Its synset's: a synset used less than the word's most used sense ("cat" in "Caterpillar, cat").
    #[default]
    Synset,
    /// The lemma's own: never tagged in this sense while tagged in another ("cat" in "guy, hombre, cat, bozo").
    Lemma,
}

/// How a batch is drawn: a recipe file's `[batch]` table. Every field defaults to the smoke run's value.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct BatchRecipe {
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
    /// The tag count above which a synset is drawn no more often (`inf`: no cap).
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
    /// By whose tag count a sense is rare.
    pub rare_by: RareBy,
    /// Vocabulary groups beside the others: WordNet groups whose items are their lemmas alone (a hypernym beside one
    /// is a vocabulary group too), so short words meet short words as negatives.
    pub vocabulary: usize,
    /// The exponent `common` of the vocabulary groups' draw weights (`floor + min(uses, cap)^E`); absent: `common`.
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
    /// Other English texts with a teacher row (`teacher/extra.tsv`: dictionary definitions, package descriptions,
    /// fortunes) beside the groups, each in a bag of its own with no edge: they train the distillation term alone
    /// (0: none; more needs the teacher's rows). A split with fewer gives what it has.
    pub extras: usize,
    /// Sentence families with a teacher row (`teacher/families.tsv`: a sentence, the same with a word swapped for a
    /// synonym, and with a word swapped for a look-alike of another meaning) beside the groups, each member in a bag of
    /// its own with no edge: the distillation term alone says how near each variant stays (0: none).
    pub families: usize,
}

/// A sentence family's members at most: the sentence and its two variants (`teacher/families.tsv`).
pub const FAMILY_MEMBERS: usize = 3;

impl Default for BatchRecipe {
    /// 34 bags: 24 WordNet groups (2 of them spoken) and all ten Fashion-MNIST classes, plus 4 choice items.
    fn default() -> Self {
        Self {
            groups: 34,
            images: 10,
            spoken: 2,
            per_group: 3,
            hard: 0.5,
            choices: 4,
            common: 0.75,
            floor: 1.0,
            cap: f64::INFINITY,
            hypernyms: 0.0,
            hypernym_weight: 0.35,
            articles: 0.25,
            class_images: 3,
            rare_senses: 0.0,
            rare_by: RareBy::Synset,
            vocabulary: 0,
            vocabulary_common: None,
            supersense: 0.0,
            lemma_documents: 0.0,
            outliers: 0,
            extras: 0,
            families: 0,
        }
    }
}

impl BatchRecipe {
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
    /// `class_images` from each class, the outliers, the other texts, the sentence families' members and the choice
    /// items. Partners and hypernyms count among the groups.
    pub fn max_items(&self) -> usize {
        let text_groups = self.groups.saturating_sub(self.images) + self.vocabulary;
        text_groups * self.per_group.max(2)
            + self.images * (1 + self.class_images)
            + self.outliers
            + self.extras
            + self.families * FAMILY_MEMBERS
            + self.choices
    }

    /// Refuses a recipe that could not fill a batch.
    pub fn check(&self) -> Result<(), Box<dyn Error>> {
        if self.per_group < 2 || self.groups <= self.images {
            return Err(
                "a batch needs two items per group and WordNet groups besides the images".into(),
            );
        }
        if !(self.floor > 0.0 && self.cap >= 0.0) {
            return Err(
                "floor must be positive (a synset weighing nothing could never fill a batch) and cap at least 0"
                    .into(),
            );
        }
        Ok(())
    }
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
    pub(super) fn below(&mut self, n: usize) -> usize {
        ((self.next() >> 11) as f64 / (1u64 << 53) as f64 * n as f64) as usize
    }

    /// A uniform number in `[0, 1)`.
    fn uniform(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// True with probability `p`.
    pub(super) fn chance(&mut self, p: f64) -> bool {
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

/// The groups a batch draws, one bag each, in bag order: the spoken groups, the WordNet groups with their partners
/// and hypernyms, the vocabulary groups, then the classes.
pub(super) struct Chosen {
    /// Every bag's group.
    pub(super) groups: Vec<usize>,
    /// The spoken groups' bags: the first ones.
    pub(super) spoken: usize,
    /// The vocabulary groups' bags.
    pub(super) vocabulary: Range<usize>,
}

/// The items a batch draws: each with its bag and group, in bag order.
pub(super) struct Picked {
    /// Indices into the data's items.
    pub(super) members: Vec<usize>,
    /// Each member's bag.
    pub(super) bags: Vec<usize>,
    /// Each member's group.
    pub(super) group_of: Vec<usize>,
}

impl Data {
    /// Draws one batch of `split` after `recipe` (docs/data.md, "Sampling a batch"): the groups, their items, then
    /// what `write` adds (edges, lemmas behind articles, sides, outlier pictures, choice items).
    pub fn batch(
        &self,
        random: &mut Random,
        split: Split,
        recipe: &BatchRecipe,
    ) -> Result<Batch, Box<dyn Error>> {
        let chosen = self.choose_groups(random, split, recipe);
        let picked = self.pick_items(random, &chosen, recipe);
        self.write_batch(random, split, recipe, &picked)
    }

    /// The groups: the spoken ones first, then WordNet ones each possibly followed by a repel partner and a
    /// hypernym, then the vocabulary groups (whose bags take lemmas alone), then classes.
    fn choose_groups(&self, random: &mut Random, split: Split, recipe: &BatchRecipe) -> Chosen {
        let none = Vec::new();
        let spoken = self.spoken.get(&split).unwrap_or(&none);
        let fashion = self.fashion.get(&split).unwrap_or(&none);
        let text_groups = recipe.groups.saturating_sub(recipe.images);
        let mut groups: Vec<usize> = random.sample(spoken, recipe.spoken.min(text_groups));
        let mut taken: HashSet<usize> = groups.iter().copied().collect();
        let spoken_bags = groups.len();
        let mut draw = Draw {
            random: &mut *random,
            split,
            recipe,
            chosen: &mut groups,
            taken: &mut taken,
        };
        self.draw_groups(&mut draw, false, text_groups);
        let start = draw.chosen.len();
        self.draw_groups(&mut draw, true, start + recipe.vocabulary);
        let vocabulary = start..groups.len();
        groups.extend(random.sample(fashion, recipe.images));
        Chosen {
            groups,
            spoken: spoken_bags,
            vocabulary,
        }
    }

    /// Draws WordNet groups by their weights (`vocabulary`: as vocabulary groups) until `draw` holds `limit`, each
    /// possibly followed by a repel partner and, at the recipe's `hypernyms`, one of its hypernyms.
    fn draw_groups(&self, draw: &mut Draw<'_>, vocabulary: bool, limit: usize) {
        let wordnet = self.wordnet.get(&draw.split).map_or(&[][..], Vec::as_slice);
        let sums = self.drawn[usize::from(vocabulary)]
            .get(&draw.split)
            .map_or(&[][..], Vec::as_slice);
        let total = sums.last().copied().unwrap_or(0.0);
        while draw.chosen.len() < limit && draw.taken.len() < wordnet.len() {
            let at = draw.random.uniform() * total;
            let group = wordnet[sums
                .partition_point(|&sum| sum <= at)
                .min(wordnet.len() - 1)];
            if !draw.taken.insert(group) {
                continue;
            }
            draw.chosen.push(group);
            let partners: Vec<usize> = self.edges.get(&group).map_or(Vec::new(), |edges| {
                let repel = edges
                    .iter()
                    .filter(|edge| !edge.attract && !draw.taken.contains(&edge.to));
                repel.map(|edge| edge.to).collect()
            });
            if !partners.is_empty()
                && draw.random.chance(draw.recipe.hard)
                && draw.chosen.len() < limit
            {
                let partner = partners[draw.random.below(partners.len())];
                draw.add(partner);
            }
            if draw.recipe.hypernyms > 0.0 && draw.chosen.len() < limit {
                let parents: Vec<usize> =
                    self.hypernyms.get(&group).map_or(Vec::new(), |parents| {
                        let free = parents.iter().copied();
                        free.filter(|parent| !draw.taken.contains(parent)).collect()
                    });
                if !parents.is_empty() && draw.random.chance(draw.recipe.hypernyms) {
                    let parent = parents[draw.random.below(parents.len())];
                    draw.add(parent);
                }
            }
        }
    }

    /// The items: a WordNet group's canonical lemma and others at random (a spoken group's clip always among them,
    /// a vocabulary group's lemmas alone), a class group's caption and images.
    fn pick_items(&self, random: &mut Random, chosen: &Chosen, recipe: &BatchRecipe) -> Picked {
        let mut picked = Picked {
            members: Vec::new(),
            bags: Vec::new(),
            group_of: Vec::new(),
        };
        for (bag, &group) in chosen.groups.iter().enumerate() {
            let pick = if self.groups[group].fashion {
                self.pick_class(random, &self.groups[group], recipe)
            } else if bag < chosen.spoken {
                self.pick_spoken(random, &self.groups[group], recipe)
            } else {
                self.pick_synset(
                    random,
                    &self.groups[group],
                    recipe,
                    chosen.vocabulary.contains(&bag),
                )
            };
            picked.bags.extend(std::iter::repeat_n(bag, pick.len()));
            picked
                .group_of
                .extend(std::iter::repeat_n(group, pick.len()));
            picked.members.extend(pick);
        }
        picked
    }

    /// A class group's caption and `class_images` of its images.
    fn pick_class(&self, random: &mut Random, group: &Group, recipe: &BatchRecipe) -> Vec<usize> {
        let ids = group.first..group.first + group.count;
        let with_role = |role: &str| -> Vec<usize> {
            ids.clone().filter(|&i| self.role_of(i) == role).collect()
        };
        let (captions, images) = (with_role("caption"), with_role("image"));
        let mut pick = random.sample(&captions, 1);
        pick.extend(random.sample(&images, recipe.class_images));
        pick
    }

    /// A spoken group's canonical lemma, one of its clips, and others up to `per_group`.
    fn pick_spoken(&self, random: &mut Random, group: &Group, recipe: &BatchRecipe) -> Vec<usize> {
        let ids = group.first..group.first + group.count;
        let clips: Vec<usize> = ids
            .clone()
            .filter(|&i| self.items[i].modality == Modality::Audio)
            .collect();
        let mut pick = vec![group.first];
        pick.extend(random.sample(&clips, 1));
        let others: Vec<usize> = (group.first + 1..ids.end)
            .filter(|&i| !pick.contains(&i) && self.drawable(i, random, recipe))
            .collect();
        pick.extend(random.sample(&others, recipe.per_group.saturating_sub(pick.len())));
        pick
    }

    /// A synset's canonical lemma and others up to `per_group` (`lemmas_only`: lemmas alone, a vocabulary group).
    fn pick_synset(
        &self,
        random: &mut Random,
        group: &Group,
        recipe: &BatchRecipe,
        lemmas_only: bool,
    ) -> Vec<usize> {
        let others: Vec<usize> = (group.first + 1..group.first + group.count)
            .filter(|&i| !lemmas_only || self.role_of(i) == "lemma")
            .filter(|&i| self.drawable(i, random, recipe))
            .collect();
        let mut pick = vec![group.first];
        pick.extend(random.sample(&others, recipe.per_group.saturating_sub(1)));
        pick
    }

    /// Item `i`'s role name.
    pub(super) fn role_of(&self, i: usize) -> &str {
        &self.role_names[self.items[i].role]
    }

    /// Whether a drawn group may take item `i`: always, unless it is a lemma in a rare sense (by the recipe's rule),
    /// then at `rare_senses`.
    fn drawable(&self, i: usize, random: &mut Random, recipe: &BatchRecipe) -> bool {
        let item = &self.items[i];
        let rare = match recipe.rare_by {
            RareBy::Lemma => item.rare_by_lemma,
            RareBy::Synset => item.rare,
        };
        !rare || random.chance(recipe.rare_senses)
    }
}

/// The state of drawing WordNet groups: the generator, the groups chosen so far and every group the batch holds.
struct Draw<'a> {
    /// The step's generator.
    random: &'a mut Random,
    /// The split drawn from.
    split: Split,
    /// The recipe's chances of partners and hypernyms.
    recipe: &'a BatchRecipe,
    /// The groups chosen, in bag order.
    chosen: &'a mut Vec<usize>,
    /// The groups the batch holds already.
    taken: &'a mut HashSet<usize>,
}

impl Draw<'_> {
    /// Takes a partner or hypernym beside the group just drawn.
    fn add(&mut self, group: usize) {
        self.taken.insert(group);
        self.chosen.push(group);
    }
}
