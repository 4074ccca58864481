//! The evaluation's query and candidate sets, drawn from the test split of the prepared data (docs/training/README.md,
//! "What each number means"):
//! - synonym -> lemma: every non-canonical lemma of a test synset (whose text differs from the canonical one) queries
//!   the distinct canonical-lemma texts of all test synsets; relevant is its synset's canonical lemma, and a candidate
//!   identical to the query's own text is excluded;
//! - lemma -> gloss: every distinct canonical-lemma text of the test synsets queries the glosses of all test synsets;
//!   relevant are the glosses of every test synset with that canonical lemma;
//! - spoken lemma -> text: every `speech-lemma` clip of a test synset queries the same candidates as synonym -> lemma;
//!   relevant is the spoken synset's canonical lemma;
//! - zero-shot images: the test split's Fashion-MNIST images, each class's prototype built from its test captions;
//! - choices: the test split's choice items.

use std::collections::HashMap;
use std::error::Error;

use uform::Modality;

use crate::data::{Data, Random, Split};
use crate::metrics;

/// One retrieval task: queries, candidates and, per query, the candidates that count as hits and those left out.
pub struct Retrieval {
    /// Each query's text, or its clip's path.
    pub queries: Vec<String>,
    /// The candidate texts.
    pub candidates: Vec<String>,
    /// Per query, the relevant candidates (at least one).
    pub relevant: Vec<Vec<usize>>,
    /// Per query, the candidates excluded from its ranking (its own text).
    pub excluded: Vec<Vec<usize>>,
    /// The queries the split holds, before any sampling.
    pub available: usize,
}

impl Retrieval {
    /// Recall@k a uniformly random ranking reaches, averaged over the queries.
    pub fn chance(&self, k: usize) -> f64 {
        let sum: f64 = self
            .relevant
            .iter()
            .zip(&self.excluded)
            .map(|(relevant, excluded)| {
                metrics::chance_recall(self.candidates.len() - excluded.len(), relevant.len(), k)
            })
            .sum();
        sum / self.relevant.len().max(1) as f64
    }

    /// Keeps at most `limit` queries (all when `limit` is zero), a sample drawn with `random`, in their order.
    fn sample(&mut self, limit: usize, random: &mut Random) {
        let kept = sample_indices(self.queries.len(), limit, random);
        self.queries = keep(&mut self.queries, &kept);
        self.relevant = keep(&mut self.relevant, &kept);
        self.excluded = keep(&mut self.excluded, &kept);
    }
}

/// The elements of `from` at `kept`, taken out of it.
fn keep<T: Default>(from: &mut [T], kept: &[usize]) -> Vec<T> {
    kept.iter().map(|&i| std::mem::take(&mut from[i])).collect()
}

/// Zero-shot classification: class prototypes from captions, images labelled by class.
pub struct ZeroShot {
    /// The class names, in the test split's group order.
    pub classes: Vec<String>,
    /// Per class, its captions of the test split (the held-out template).
    pub captions: Vec<Vec<String>>,
    /// The image paths.
    pub images: Vec<String>,
    /// Each image's class.
    pub labels: Vec<usize>,
    /// The images the split holds, before any sampling.
    pub available: usize,
}

/// Choice items: their texts, legal bytes and targets, and each one's right answer.
pub struct Choices {
    /// The questions.
    pub texts: Vec<String>,
    /// Each item's legal bytes.
    pub legal: Vec<String>,
    /// Each item's index of its largest target.
    pub answers: Vec<usize>,
    /// The items the split holds, before any sampling.
    pub available: usize,
}

/// Everything the evaluation scores.
pub struct Tasks {
    /// Synonym -> canonical lemma.
    pub synonyms: Retrieval,
    /// Canonical lemma -> gloss.
    pub glosses: Retrieval,
    /// Spoken canonical lemma -> its text.
    pub spoken: Retrieval,
    /// Fashion-MNIST from captions.
    pub zero_shot: ZeroShot,
    /// The test choice items.
    pub choices: Choices,
}

/// How many of each task to keep; zero keeps all.
pub struct Limits {
    /// Queries per retrieval task.
    pub queries: usize,
    /// Test images.
    pub images: usize,
    /// Test choice items.
    pub choices: usize,
}

/// The stream of the evaluation's samples' generator, apart from the steps'.
const SAMPLE_STREAM: u64 = 0xE7A1_0A7E;

impl Tasks {
    /// Builds the test split's tasks and samples them down to `limits` with `seed`.
    pub fn new(data: &Data, limits: &Limits, seed: u64) -> Result<Self, Box<dyn Error>> {
        let words = Words::new(data)?;
        let mut random = Random::new(seed, SAMPLE_STREAM);
        let [synonyms, glosses, spoken] = words.retrievals(limits.queries, &mut random);
        let zero_shot = ZeroShot::new(data, limits.images, &mut random)?;
        let items: Vec<_> = data.choice_items(Split::Test).collect();
        let kept = sample_indices(items.len(), limits.choices, &mut random);
        let choices = Choices {
            texts: kept.iter().map(|&i| items[i].0.to_owned()).collect(),
            legal: kept.iter().map(|&i| items[i].1.to_owned()).collect(),
            answers: kept.iter().map(|&i| metrics::argmax(items[i].2)).collect(),
            available: items.len(),
        };
        Ok(Self {
            synonyms,
            glosses,
            spoken,
            zero_shot,
            choices,
        })
    }
}

/// The test synsets' words: their canonical lemmas (distinct texts: the lemma candidates), glosses, synonyms and
/// clips.
struct Words {
    /// The distinct canonical lemmas.
    lemma_texts: Vec<String>,
    /// Each canonical lemma's index in `lemma_texts`.
    lemma_index: HashMap<String, usize>,
    /// Every gloss.
    glosses: Vec<String>,
    /// The glosses of each canonical lemma's synsets.
    glosses_of: HashMap<usize, Vec<usize>>,
    /// Every non-canonical lemma whose text differs from its canonical one, with that canonical lemma.
    synonyms: Vec<(String, usize)>,
    /// Every spoken lemma's clip, with its canonical lemma.
    clips: Vec<(String, usize)>,
}

impl Words {
    /// Reads the test split's synsets.
    fn new(data: &Data) -> Result<Self, Box<dyn Error>> {
        let mut words = Self {
            lemma_texts: Vec::new(),
            lemma_index: HashMap::new(),
            glosses: Vec::new(),
            glosses_of: HashMap::new(),
            synonyms: Vec::new(),
            clips: Vec::new(),
        };
        for &group in data.groups_in(Split::Test, false) {
            let canonical = data.label(group).to_owned();
            let next = words.lemma_texts.len();
            let lemma = *words
                .lemma_index
                .entry(canonical.clone())
                .or_insert_with(|| {
                    words.lemma_texts.push(canonical.clone());
                    next
                });
            let mut lemmas = 0;
            for (role, modality, content) in data.members(group) {
                match (role, modality) {
                    ("lemma", Modality::Text) => {
                        if lemmas > 0 && content != canonical {
                            words.synonyms.push((content, lemma));
                        }
                        lemmas += 1;
                    }
                    ("gloss", Modality::Text) => {
                        words
                            .glosses_of
                            .entry(lemma)
                            .or_default()
                            .push(words.glosses.len());
                        words.glosses.push(content);
                    }
                    ("speech-lemma", Modality::Audio) => words.clips.push((content, lemma)),
                    _ => {}
                }
            }
        }
        if words.lemma_texts.is_empty() || words.glosses.is_empty() {
            return Err("the data's test split holds no WordNet synsets (docs/data.md)".into());
        }
        Ok(words)
    }

    /// The three text tasks, synonym -> lemma, lemma -> gloss and spoken lemma -> text, each keeping at most
    /// `queries` queries drawn with `random` in that order.
    fn retrievals(self, queries: usize, random: &mut Random) -> [Retrieval; 3] {
        let Self {
            lemma_texts,
            lemma_index,
            glosses,
            glosses_of,
            synonyms,
            clips,
        } = self;
        let own = |text: &str| lemma_index.get(text).map_or(Vec::new(), |&c| vec![c]);
        let mut synonyms = Retrieval {
            available: synonyms.len(),
            excluded: synonyms.iter().map(|(text, _)| own(text)).collect(),
            relevant: synonyms.iter().map(|&(_, lemma)| vec![lemma]).collect(),
            queries: synonyms.into_iter().map(|(text, _)| text).collect(),
            candidates: lemma_texts.clone(),
        };
        synonyms.sample(queries, random);
        let mut glosses = Retrieval {
            available: lemma_texts.len(),
            relevant: (0..lemma_texts.len())
                .map(|l| glosses_of[&l].clone())
                .collect(),
            excluded: vec![Vec::new(); lemma_texts.len()],
            queries: lemma_texts.clone(),
            candidates: glosses,
        };
        glosses.sample(queries, random);
        let mut spoken = Retrieval {
            available: clips.len(),
            relevant: clips.iter().map(|&(_, lemma)| vec![lemma]).collect(),
            excluded: vec![Vec::new(); clips.len()],
            queries: clips.into_iter().map(|(path, _)| path).collect(),
            candidates: lemma_texts,
        };
        spoken.sample(queries, random);
        [synonyms, glosses, spoken]
    }
}

impl ZeroShot {
    /// The test split's classes with their captions and images, at most `limit` images drawn with `random`.
    fn new(data: &Data, limit: usize, random: &mut Random) -> Result<Self, Box<dyn Error>> {
        let mut zero_shot = Self {
            classes: Vec::new(),
            captions: Vec::new(),
            images: Vec::new(),
            labels: Vec::new(),
            available: 0,
        };
        for &group in data.groups_in(Split::Test, true) {
            let class = zero_shot.classes.len();
            zero_shot.classes.push(data.label(group).to_owned());
            let mut captions = Vec::new();
            for (role, _, content) in data.members(group) {
                match role {
                    "caption" => captions.push(content),
                    "image" => {
                        zero_shot.images.push(content);
                        zero_shot.labels.push(class);
                    }
                    _ => {}
                }
            }
            if captions.is_empty() {
                return Err(format!("test class {:?} has no caption", data.label(group)).into());
            }
            zero_shot.captions.push(captions);
        }
        zero_shot.available = zero_shot.images.len();
        let kept = sample_indices(zero_shot.images.len(), limit, random);
        zero_shot.images = keep(&mut zero_shot.images, &kept);
        zero_shot.labels = keep(&mut zero_shot.labels, &kept);
        Ok(zero_shot)
    }
}

/// Up to `limit` of `0..count` (all when `limit` is zero), a sample drawn with `random`, ascending.
fn sample_indices(count: usize, limit: usize, random: &mut Random) -> Vec<usize> {
    let all: Vec<usize> = (0..count).collect();
    if limit == 0 || limit >= count {
        return all;
    }
    let mut kept = random.sample(&all, limit);
    kept.sort_unstable();
    kept
}
