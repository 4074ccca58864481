//! Tests of loading, sampling and writing batches over small hand-made data directories.

use uform::{LateInteractionSide, Modality};

use super::load::Weights;
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
fn write_weighted(name: &str, synsets: &[Synset], edges: &str, weights: Weights<'_>) -> Data {
    let root = std::env::temp_dir().join(format!("uform-wordnet-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&root).unwrap();
    let (mut groups, mut items) = (String::from("#header\n"), String::from("#header\n"));
    let mut count = 0;
    let mut item =
        |items: &mut String, group: usize, modality: &str, role: &str, content: &str, uses: u64| {
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
        (
            "choices.tsv",
            "#header\n0\ttrain\twn:n1\tA\tAB\t1 0\tWhich? A: one B: two Answer:\n\
             1\ttrain\twn:n1\tB\tABC\t0 1 0\tWhich? A: one B: two C: three Answer:\n",
        ),
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
fn recipe(groups: usize) -> BatchRecipe {
    BatchRecipe {
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
    let with = BatchRecipe {
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
    let side = |recipe: &BatchRecipe, step: u64, text: &str| {
        let batch = data
            .batch(&mut Random::new(13, step), Split::Train, recipe)
            .unwrap();
        let at = batch.contents.iter().position(|c| c == text).unwrap();
        (batch.sides[at], batch.contents.clone())
    };
    let with = |p: f64| BatchRecipe {
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
    let recipe = BatchRecipe {
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
    let recipe = BatchRecipe {
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
        let two = BatchRecipe {
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
        let recipe = BatchRecipe {
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
    // At `rare_senses` 1 every rare lemma is drawn: both "cat"s and both "start"s.
    for (rare_by, rare_senses, cats, starts) in [
        (RareBy::Synset, 0.0, 1, 2),
        (RareBy::Lemma, 0.0, 1, 1),
        (RareBy::Lemma, 1.0, 2, 2),
    ] {
        let recipe = BatchRecipe {
            rare_by,
            rare_senses,
            ..recipe(5)
        };
        let batch = data
            .batch(&mut Random::new(13, 0), Split::Train, &recipe)
            .unwrap();
        let count = |word: &str| batch.contents.iter().filter(|c| *c == word).count();
        assert_eq!((count("cat"), count("start")), (cats, starts));
    }
}

#[test]
fn a_synsets_hypernym_is_drawn_beside_it_and_attracts_its_items() {
    // "cat" is a "feline"; "begin" and "rock" have no hypernym here.
    // Drawn by `1 + min(uses, 20)`: "begin" no likelier than "cat" or "feline".
    let weight = |uses: f64| 1.0 + uses.min(20.0);
    let data = write_weighted(
        "hypernyms",
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
        ],
        "none\thypernym\t0\t1\t1\n",
        [&weight, &weight],
    );
    for hypernyms in [0.0, 1.0] {
        let recipe = BatchRecipe {
            hypernyms,
            per_group: 1,
            ..recipe(3)
        };
        let mut together = 0;
        for step in 0..60 {
            let batch = data
                .batch(&mut Random::new(13, step), Split::Train, &recipe)
                .unwrap();
            let at = |text: &str| batch.contents.iter().position(|c| c == text);
            if hypernyms > 0.0 && at("cat") == Some(0) {
                assert_eq!(at("feline"), Some(1), "the hypernym follows its synset");
            }
            let (Some(cat), Some(feline)) = (at("cat"), at("feline")) else {
                continue;
            };
            together += 1;
            let row = |p: usize| {
                let span = batch.attract.offsets[p]..batch.attract.offsets[p + 1];
                (
                    batch.attract.ids[span.clone()].to_vec(),
                    batch.attract.weights[span].to_vec(),
                )
            };
            if hypernyms > 0.0 {
                assert_eq!(
                    (row(cat), row(feline)),
                    ((vec![feline], vec![0.35]), (vec![cat], vec![0.35]))
                );
            } else {
                assert_eq!((row(cat).0, row(feline).0), (vec![], vec![]));
            }
        }
        assert!(together > 5, "{together} batches held both");
    }
}

#[test]
fn a_batch_has_bags_edges_and_choices() {
    let data = write(
        "shape",
        &[
            ("wn:n1", &[("cat", 18), ("true cat", 0)], 18, "noun.Tops"),
            (
                "wn:n2",
                &[("dog", 40), ("domestic dog", 0)],
                40,
                "noun.Tops",
            ),
            ("wn:n3", &[("rock", 0), ("stone", 0)], 0, "noun.Tops"),
        ],
        "repel\tsister\t0\t1\t1\nrepel\tsister\t1\t0\t1\nattract\tsimilar\t2\t0\t0.5\n",
    );
    let recipe = BatchRecipe {
        hard: 1.0,
        choices: 2,
        ..recipe(4)
    };
    for step in 0..20 {
        let batch = data
            .batch(&mut Random::new(13, step), Split::Train, &recipe)
            .unwrap();
        let n = batch.bags.len();
        assert_eq!(
            [
                batch.modalities.len(),
                batch.contents.len(),
                batch.sides.len()
            ],
            [n; 3]
        );
        assert!(batch
            .bags
            .windows(2)
            .all(|pair| pair[1] == pair[0] || pair[1] == pair[0] + 1));
        for rows in [&batch.attract, &batch.repel] {
            assert_eq!(
                (rows.offsets.len(), rows.ids.len()),
                (n + 1, rows.weights.len())
            );
            for p in 0..n {
                let ids = &rows.ids[rows.offsets[p]..rows.offsets[p + 1]];
                assert!(
                    ids.iter().all(|&q| q != p && q < n) && ids.windows(2).all(|w| w[0] <= w[1])
                );
            }
        }
        // "cat" and "dog" repel both ways whenever both are drawn; the two choice items close the batch, each in a
        // bag of its own, with a target per legal byte.
        let at = |text: &str| batch.contents.iter().position(|c| c == text);
        let repels = |p: usize, q: usize| {
            batch.repel.ids[batch.repel.offsets[p]..batch.repel.offsets[p + 1]].contains(&q)
        };
        if let (Some(cat), Some(dog)) = (at("cat"), at("dog")) {
            assert!(repels(cat, dog) && repels(dog, cat));
        }
        let (tape, offsets) = &batch.choices;
        let legal: Vec<&[u8]> = (0..n).map(|i| &tape[offsets[i]..offsets[i + 1]]).collect();
        assert!(legal[..n - 2].iter().all(|l| l.is_empty()));
        for (i, legal) in legal.iter().enumerate().skip(n - 2) {
            assert_eq!(batch.targets.1[i + 1] - batch.targets.1[i], legal.len());
            assert!(!legal.is_empty() && batch.contents[i].ends_with("Answer:"));
            assert_eq!(batch.bags[i], batch.bags[i - 1] + 1);
        }
    }
}

#[test]
fn lemmas_read_behind_articles_at_the_recipes_share() {
    let data = write(
        "articles",
        &[
            ("wn:n1", &[("cat", 18)], 18, "noun.Tops"),
            ("wn:n2", &[("owl", 3)], 3, "noun.Tops"),
            ("wn:v3", &[("begin", 500)], 500, "verb.change"),
            ("wn:n4", &[("Paris", 9)], 9, "noun.Tops"),
            ("wn:a5", &[("big", 50)], 50, "adj.all"),
        ],
        "",
    );
    for (articles, expected) in [
        (1.0, ["a cat", "an owl", "to begin", "Paris", "big"]),
        (0.0, ["cat", "owl", "begin", "Paris", "big"]),
    ] {
        let recipe = BatchRecipe {
            articles,
            per_group: 1,
            ..recipe(6)
        };
        let batch = data
            .batch(&mut Random::new(13, 0), Split::Train, &recipe)
            .unwrap();
        for text in expected {
            assert!(
                batch.contents.iter().any(|c| c == text),
                "{text} in {:?}",
                batch.contents
            );
        }
    }
}

#[test]
fn the_json_form_has_every_items_fields() {
    let data = one_cat("json");
    let recipe = BatchRecipe {
        choices: 1,
        ..recipe(2)
    };
    let batch = data
        .batch(&mut Random::new(13, 0), Split::Train, &recipe)
        .unwrap();
    let json = batch.to_json();
    let n = batch.bags.len();
    for key in [
        "modalities",
        "contents",
        "bags",
        "sides",
        "choices",
        "choice_targets",
        "teacher",
    ] {
        assert_eq!(json[key].as_array().map(Vec::len), Some(n), "{key}");
    }
    assert_eq!(json["contents"][0], "cat");
    assert_eq!(json["sides"][0], "query");
    assert_eq!(json["modalities"][n - 2], "image");
    assert_eq!(json["bags"][n - 1], batch.bags[n - 1]);
    assert!(["AB", "ABC"].contains(&json["choices"][n - 1].as_str().unwrap()));
    assert_eq!(json["choices"][0], "");
    assert_eq!(
        (json["teacher"][0].as_bool(), json["teacher_width"].as_u64()),
        (Some(false), Some(0))
    );
    assert_eq!(
        json["attract"]["offsets"].as_array().map(Vec::len),
        Some(n + 1)
    );
    assert_eq!(
        json["attract"]["ids"].as_array().map(Vec::len),
        Some(batch.attract.ids.len())
    );
}
