//! The training texts: pairs of paraphrases, built in or read from a file, and the sampler that draws a
//! step's batch from them.

/// The texts trained on when no `--lines` file is given: each line is one pair of paraphrases.
const BUILT_IN: [[&str; 2]; 24] = [
    ["a cat sits on the mat", "the cat is on the mat"],
    ["dogs bark at night", "a dog barks in the dark"],
    ["the sun rises in the east", "in the east the sun comes up"],
    ["it is raining outside", "rain is falling out there"],
    [
        "she drinks coffee every morning",
        "each morning she has a coffee",
    ],
    ["the train leaves at noon", "at twelve the train departs"],
    ["he plays the guitar well", "he is good at playing guitar"],
    [
        "the soup is too salty",
        "there is too much salt in the soup",
    ],
    ["birds fly south in winter", "in winter the birds go south"],
    ["the car would not start", "the engine refused to start"],
    ["we walked along the beach", "we took a walk by the sea"],
    ["the book is on the table", "the table has the book on it"],
    ["prices went up this year", "this year things cost more"],
    ["the baby is sleeping now", "the infant is asleep"],
    ["open the window please", "please open the window"],
    ["the movie was very long", "the film lasted a long time"],
    ["my phone battery is dead", "my phone has run out of power"],
    [
        "the river flows to the sea",
        "the stream runs into the ocean",
    ],
    ["they won the football match", "their team won the game"],
    [
        "the bread is fresh today",
        "today the bread is freshly baked",
    ],
    ["the store closes at nine", "the shop shuts at 9 pm"],
    [
        "he forgot his keys at home",
        "he left his keys in the house",
    ],
    [
        "snow covered the mountains",
        "the peaks were white with snow",
    ],
    ["the kettle is boiling", "the water in the kettle boils"],
];

/// Texts in pairs of paraphrases: `texts[2 * p]` and `texts[2 * p + 1]` say the same thing.
pub struct Pairs {
    /// Every text, the two of each pair adjacent.
    pub texts: Vec<String>,
}

impl Pairs {
    /// The built-in pairs.
    pub fn built_in() -> Self {
        let texts = BUILT_IN.iter().flatten().map(|t| t.to_string()).collect();
        Self { texts }
    }

    /// Pairs from a file of one text per line, consecutive non-empty lines forming a pair; an odd last line
    /// is dropped.
    pub fn from_lines(text: &str) -> Self {
        let mut texts: Vec<String> = text
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect();
        texts.truncate(texts.len() / 2 * 2);
        Self { texts }
    }

    /// How many pairs there are.
    pub fn count(&self) -> usize {
        self.texts.len() / 2
    }
}

/// Draws each step's pairs: a shuffled pass over all pairs, reshuffled when it runs out, so every pair is
/// seen equally often and a step never holds one pair twice (unless it asks for more pairs than exist).
pub struct Sampler {
    /// The state of a xorshift64 generator.
    state: u64,
    /// The current pass's order of pairs.
    order: Vec<usize>,
    /// The next pair of `order` to hand out.
    next: usize,
}

impl Sampler {
    /// A sampler over `pairs` pairs, seeded with `seed`.
    pub fn new(pairs: usize, seed: u64) -> Self {
        let mut sampler = Self {
            state: seed | 1,
            order: (0..pairs).collect(),
            next: pairs,
        };
        sampler.reshuffle();
        sampler
    }

    /// The next `count` pairs' indices.
    pub fn draw(&mut self, count: usize) -> Vec<usize> {
        (0..count)
            .map(|_| {
                if self.next == self.order.len() {
                    self.reshuffle();
                }
                self.next += 1;
                self.order[self.next - 1]
            })
            .collect()
    }

    /// Shuffles `order` (Fisher-Yates) and starts a new pass.
    fn reshuffle(&mut self) {
        for i in (1..self.order.len()).rev() {
            self.state ^= self.state << 13;
            self.state ^= self.state >> 7;
            self.state ^= self.state << 17;
            self.order.swap(i, (self.state % (i as u64 + 1)) as usize);
        }
        self.next = 0;
    }
}
