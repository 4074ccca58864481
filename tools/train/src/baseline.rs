//! The text baseline: cosine similarity of character-3-gram TF-IDF vectors. A text is lowercased and padded with one
//! space at each end, so `dog` yields ` do`, `dog` and `og `; a gram's weight in a text is its count times its inverse
//! document frequency over the candidates, `ln((1 + n) / (1 + df)) + 1`; vectors are L2-normalised, and a query's
//! grams that no candidate has are dropped.

use std::collections::HashMap;

/// A sparse unit vector: gram ids ascending, with their weights.
type Sparse = Vec<(u32, f32)>;

/// The candidates' TF-IDF vectors, inverted: per gram, the candidates holding it and their weights.
pub struct TfIdf {
    /// Gram ids by gram.
    grams: HashMap<[char; 3], u32>,
    /// Inverse document frequency per gram id.
    idf: Vec<f32>,
    /// Per gram id, `(candidate, weight)` of every candidate holding it.
    postings: Vec<Vec<(u32, f32)>>,
    /// Candidates indexed.
    candidates: usize,
}

/// The character 3-grams of `text`, lowercased and padded with a space at each end.
fn grams(text: &str) -> Vec<[char; 3]> {
    let chars: Vec<char> = std::iter::once(' ')
        .chain(text.chars().flat_map(char::to_lowercase))
        .chain(std::iter::once(' '))
        .collect();
    chars.windows(3).map(|w| [w[0], w[1], w[2]]).collect()
}

impl TfIdf {
    /// Indexes `candidates`, whose document frequencies define the weights.
    pub fn new<S: AsRef<str>>(candidates: &[S]) -> Self {
        let mut index = Self {
            grams: HashMap::new(),
            idf: Vec::new(),
            postings: Vec::new(),
            candidates: candidates.len(),
        };
        let counted: Vec<HashMap<u32, f32>> = candidates
            .iter()
            .map(|text| {
                let mut counts = HashMap::new();
                for gram in grams(text.as_ref()) {
                    let next = index.grams.len() as u32;
                    let id = *index.grams.entry(gram).or_insert(next);
                    *counts.entry(id).or_insert(0.0) += 1.0;
                }
                counts
            })
            .collect();
        let mut frequency = vec![0usize; index.grams.len()];
        for counts in &counted {
            for &id in counts.keys() {
                frequency[id as usize] += 1;
            }
        }
        let n = candidates.len() as f32;
        index.idf = frequency
            .iter()
            .map(|&df| ((1.0 + n) / (1.0 + df as f32)).ln() + 1.0)
            .collect();
        index.postings = vec![Vec::new(); index.grams.len()];
        for (candidate, counts) in counted.into_iter().enumerate() {
            for (id, weight) in index.normalised(counts) {
                index.postings[id as usize].push((candidate as u32, weight));
            }
        }
        index
    }

    /// Counts weighted by the IDF and scaled to unit length.
    fn normalised(&self, counts: HashMap<u32, f32>) -> Sparse {
        let mut vector: Sparse = counts
            .into_iter()
            .map(|(id, count)| (id, count * self.idf[id as usize]))
            .collect();
        vector.sort_by_key(|&(id, _)| id);
        let norm = vector.iter().map(|(_, w)| w * w).sum::<f32>().sqrt();
        if norm > 0.0 {
            vector.iter_mut().for_each(|(_, w)| *w /= norm);
        }
        vector
    }

    /// The cosine similarity of `query` to every candidate, in the candidates' order.
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut counts = HashMap::new();
        for gram in grams(query) {
            if let Some(&id) = self.grams.get(&gram) {
                *counts.entry(id).or_insert(0.0) += 1.0;
            }
        }
        let mut scores = vec![0f32; self.candidates];
        for (id, weight) in self.normalised(counts) {
            for &(candidate, other) in &self.postings[id as usize] {
                scores[candidate as usize] += weight * other;
            }
        }
        scores
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grams_are_padded_and_lowercased() {
        assert_eq!(
            grams("Dog"),
            [[' ', 'd', 'o'], ['d', 'o', 'g'], ['o', 'g', ' ']]
        );
        assert_eq!(grams(""), Vec::<[char; 3]>::new());
        assert_eq!(grams("é"), [[' ', 'é', ' ']]);
    }

    #[test]
    fn identical_text_scores_one_and_disjoint_text_zero() {
        let index = TfIdf::new(&["dog", "cat", "a dog house"]);
        let scores = index.scores("DOG");
        assert!((scores[0] - 1.0).abs() < 1e-6, "{scores:?}");
        assert_eq!(scores[1], 0.0);
        assert!(scores[2] > 0.0 && scores[2] < scores[0]);
        assert_eq!(index.scores("xyz"), [0.0; 3]);
    }

    #[test]
    fn a_rare_gram_outweighs_a_common_one() {
        // " th" and "the" are in every candidate; "zeb" in one. A query sharing "zeb" beats one sharing only the.
        let index = TfIdf::new(&["the zebra", "the lion", "the tiger", "the cat"]);
        let idf = |gram: [char; 3]| index.idf[index.grams[&gram] as usize];
        assert!((idf([' ', 't', 'h']) - 1.0).abs() < 1e-6);
        assert!((idf(['z', 'e', 'b']) - ((5.0f32 / 2.0).ln() + 1.0)).abs() < 1e-6);
        let scores = index.scores("zebu");
        assert!(scores[0] > 0.0);
        assert_eq!(&scores[1..], [0.0; 3]);
        let scores = index.scores("the");
        assert!(scores.iter().all(|&s| s > 0.0));
    }
}
