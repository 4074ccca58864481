//! Tests of the teacher's rows over a small hand-made data directory: which row each item of a batch carries, the
//! other texts, and the refusals.

use std::path::{Path, PathBuf};

use super::*;

/// A synset "cat" (two lemmas, a gloss and a clip speaking "cat") and a class (a caption and an image), and a
/// choice item, written into a directory of its own; `teacher` writes `teacher/` too.
fn directory(name: &str, teacher: bool) -> PathBuf {
    let root = std::env::temp_dir().join(format!("uform-teacher-{}-{name}", std::process::id()));
    std::fs::create_dir_all(root.join("teacher")).unwrap();
    let files = [
        (
            "items.tsv",
            "#header\n0\t0\ttrain\ttext\tlemma\tcat\t5\n1\t0\ttrain\ttext\tlemma\ttrue cat\t0\n\
             2\t0\ttrain\ttext\tgloss\tfeline mammal\t0\n3\t0\ttrain\taudio\tspeech-lemma\taudio/c.wav\t0\n\
             4\t1\ttrain\ttext\tcaption\ta bag\t0\n5\t1\ttrain\timage\timage\timages/0.png\t0\n",
        ),
        (
            "groups.tsv",
            "#header\n0\ttrain\twordnet\twn:n1\t0\t4\tcat\t5\tnoun.animal\n\
             1\ttrain\tfashion-mnist\tfmnist:0:train\t4\t2\tbag\t0\t-\n",
        ),
        (
            "roles.tsv",
            "#header\nlemma\tlemma\t1\nlemma\tgloss\t0.5\nspeech-lemma\tlemma\t1\nspeech-lemma\tgloss\t0.5\n\
             caption\timage\t1\n",
        ),
        ("edges.tsv", "#header\n"),
        ("choices.tsv", "#header\n0\ttrain\twn:n1\tA\tAB\t1 0\tWhich? A: one B: two Answer:\n"),
    ];
    for (file, text) in files {
        std::fs::write(root.join(file), text).unwrap();
    }
    if teacher {
        let long = "a definition far longer than a row of the recipe allows ".repeat(3);
        let teacher = [
            (
                "manifest.json",
                r#"{"teacher": {"name": "t", "sha256": "0", "width": 2}, "rows": 6}"#.to_owned(),
            ),
            (
                "items.tsv",
                "#item\trow\n0\t0\n1\t1\n2\t2\n4\t3\n".to_owned(),
            ),
            (
                "extra.tsv",
                format!(
                    "#extra\tsource\tsplit\trow\tcontent\n0\tfortune\ttrain\t4\tall is well\n\
                     1\tgcide\ttrain\t5\t{long}\n2\tgcide\tvalidation\t5\tkept apart\n"
                ),
            ),
        ];
        for (file, text) in teacher {
            std::fs::write(root.join("teacher").join(file), text).unwrap();
        }
        let rows: [f32; 12] = [1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 0.0, 3.0, 3.0, 4.0, 4.0];
        let bytes: Vec<u8> = rows.iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(root.join("teacher").join("rows.f32"), bytes).unwrap();
    }
    root
}

/// The data of `root`, its teacher's rows read when `teacher`; the directory removed after.
fn load(root: &Path, teacher: bool) -> Result<Data, Box<dyn std::error::Error>> {
    let weight = |uses: f64| 1.0 + uses;
    let mut data = Data::load(root, 127, [&weight, &weight]).unwrap();
    let read = if teacher {
        data.load_teacher(127)
    } else {
        Ok(())
    };
    std::fs::remove_dir_all(root).unwrap();
    read.map(|()| data)
}

/// A batch taking every item of both groups, one other text and the choice item.
fn recipe() -> BatchRecipe {
    BatchRecipe {
        groups: 2,
        images: 1,
        spoken: 0,
        per_group: 10,
        hard: 0.0,
        choices: 1,
        articles: 0.0,
        class_images: 1,
        extras: 1,
        ..BatchRecipe::default()
    }
}

#[test]
fn every_item_carries_its_teachers_row_and_the_others_zeros() {
    let data = load(&directory("rows", true), true).unwrap();
    assert_eq!(
        data.teacher_counts(),
        Some((6, 5, 2, 1, 0)),
        "four texts and the clip; the long text dropped; no families file"
    );
    let batch = data
        .batch(&mut Random::new(13, 0), Split::Train, &recipe())
        .unwrap();
    assert_eq!(batch.teacher_width, 2);
    assert_eq!(batch.teacher.len(), 2 * batch.contents.len());
    for (i, content) in batch.contents.iter().enumerate() {
        let expected: [f32; 2] = match content.as_str() {
            "cat" => [1.0, 0.0],
            "true cat" => [0.0, 1.0],
            "feline mammal" => [1.0, 1.0],
            "a bag" => [2.0, 0.0],
            "all is well" => [3.0, 3.0],
            path if path.ends_with("audio/c.wav") => [1.0, 0.0], // the clip speaks "cat"
            _ => [0.0, 0.0],                                     // the image and the choice item
        };
        assert_eq!(batch.teacher[2 * i..2 * i + 2], expected, "{content}");
    }
    assert!(batch.contents.iter().any(|c| c == "all is well"));
    assert!(batch.contents.iter().any(|c| c.starts_with("Which?")));
    assert_eq!(
        batch.contents.len(),
        8,
        "4 + 2 items, an other text, a choice item"
    );
    let validation = data
        .batch(&mut Random::new(13, 0), Split::Validation, &recipe())
        .unwrap();
    assert!(
        validation.contents.iter().all(|c| c != "all is well"),
        "the validation split's own texts"
    );
}

#[test]
fn a_batch_without_the_teacher_has_no_rows_and_draws_no_other_texts() {
    let data = load(&directory("none", false), false).unwrap();
    let plain = BatchRecipe {
        extras: 0,
        ..recipe()
    };
    let batch = data
        .batch(&mut Random::new(13, 0), Split::Train, &plain)
        .unwrap();
    assert_eq!((batch.teacher.len(), batch.teacher_width), (0, 0));
    let error = data
        .batch(&mut Random::new(13, 0), Split::Train, &recipe())
        .err()
        .unwrap();
    assert!(
        error.to_string().contains("extras are the teacher's texts"),
        "{error}"
    );
}

#[test]
fn a_missing_or_broken_store_is_refused_with_what_makes_it() {
    let root = directory("missing", false);
    let error = load(&root, true).err().unwrap().to_string();
    assert!(error.contains("prepare.py --teacher"), "{error}");

    let root = directory("past", true);
    std::fs::write(root.join("teacher/items.tsv"), "#item\trow\n0\t6\n").unwrap();
    let error = load(&root, true).err().unwrap().to_string();
    assert!(error.contains("row 6 past the store's 6 rows"), "{error}");

    let root = directory("image", true);
    std::fs::write(root.join("teacher/items.tsv"), "#item\trow\n5\t0\n").unwrap();
    let error = load(&root, true).err().unwrap().to_string();
    assert!(error.contains("item 5 is not a text"), "{error}");

    let root = directory("torn", true);
    std::fs::write(root.join("teacher/rows.f32"), [0u8; 10]).unwrap();
    let error = load(&root, true).err().unwrap().to_string();
    assert!(error.contains("not whole rows"), "{error}");

    let root = directory("nan", true);
    let nan: Vec<u8> = [0.0f32, f32::NAN]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    std::fs::write(root.join("teacher/rows.f32"), nan).unwrap();
    let error = load(&root, true).err().unwrap().to_string();
    assert!(error.contains("not finite"), "{error}");
}

#[test]
fn held_out_pairs_are_read_with_their_texts_cut_as_training_cuts_them() {
    let root = directory("pairs", true);
    assert!(
        read_pairs(&root, 127).unwrap().is_none(),
        "no pairs.tsv yet"
    );
    std::fs::write(
        root.join("teacher/pairs.tsv"),
        "#pair\tkind\titem_a\titem_b\tcosine\ttext_a\ttext_b\n0\tsynset\t0\t1\t0.75\tcat\ttrue cat\n\
         1\trandom\t0\t4\t-0.125\tcat\ta bag\n",
    )
    .unwrap();
    let pairs = read_pairs(&root, 4).unwrap().unwrap();
    assert_eq!(pairs.len(), 2);
    assert_eq!(
        (
            pairs[0].kind.as_str(),
            pairs[0].a.as_str(),
            pairs[0].b.as_str()
        ),
        ("synset", "cat", "true")
    );
    assert_eq!(
        (pairs[1].kind.as_str(), pairs[1].cosine),
        ("random", -0.125)
    );
    std::fs::write(
        root.join("teacher/pairs.tsv"),
        "#pair\tkind\titem_a\titem_b\tcosine\ttext_a\ttext_b\n0\tsynset\t0\t1\tNaN\tcat\ttrue cat\n",
    )
    .unwrap();
    let error = read_pairs(&root, 127).err().unwrap().to_string();
    assert!(error.contains("a cosine of NaN"), "{error}");
    std::fs::remove_dir_all(&root).unwrap();
}

/// `directory`'s data with `teacher/families.tsv` holding `families`, loaded.
fn with_families(name: &str, families: &str) -> Result<Data, Box<dyn std::error::Error>> {
    let root = directory(name, true);
    std::fs::write(
        root.join("teacher/families.tsv"),
        format!("#family\tmember\tsplit\trow\tcontent\n{families}"),
    )
    .unwrap();
    load(&root, true)
}

#[test]
fn a_family_comes_whole_into_a_batch_with_its_rows() {
    let data = with_families(
        "families",
        "0\t0\ttrain\t0\tthe soup is hot\n0\t1\ttrain\t2\tthe broth is hot\n0\t2\ttrain\t5\tthe soap is hot\n\
         1\t0\tvalidation\t3\tkept apart\n1\t1\tvalidation\t4\tkept away\n",
    )
    .unwrap();
    assert_eq!(data.teacher_counts().unwrap().4, 2);
    let recipe = BatchRecipe {
        extras: 0,
        families: 1,
        ..recipe()
    };
    let batch = data
        .batch(&mut Random::new(13, 0), Split::Train, &recipe)
        .unwrap();
    let at = |text: &str| batch.contents.iter().position(|c| c == text).unwrap();
    for (text, row) in [
        ("the soup is hot", [1.0, 0.0]),
        ("the broth is hot", [1.0, 1.0]),
        ("the soap is hot", [4.0, 4.0]),
    ] {
        let i = at(text);
        assert_eq!(batch.teacher[2 * i..2 * i + 2], row, "{text}");
        assert!(
            batch
                .bags
                .iter()
                .filter(|&&bag| bag == batch.bags[i])
                .count()
                == 1,
            "{text} is alone in its bag"
        );
    }
    assert!(batch.contents.iter().all(|c| c != "kept apart"));
    assert_eq!(
        batch.contents.len(),
        6 + 3 + 1,
        "4 + 2 items, three members, a choice item"
    );
    assert!(recipe.max_items() >= batch.contents.len());
}

#[test]
fn families_that_do_not_fit_are_refused_or_left_out() {
    let long = "a sentence far longer than a row of the recipe allows ".repeat(3);
    let data = with_families(
        "long",
        &format!("0\t0\ttrain\t0\tshort\n0\t1\ttrain\t1\t{long}\n1\t0\ttrain\t2\talone\n"),
    )
    .unwrap();
    assert_eq!(
        data.teacher_counts().unwrap().4,
        0,
        "a member longer than a row, a family of one"
    );
    let recipe = BatchRecipe {
        families: 1,
        ..recipe()
    };
    let error = data
        .batch(&mut Random::new(13, 0), Split::Train, &recipe)
        .err()
        .unwrap();
    assert!(error.to_string().contains("sentence families"), "{error}");

    let members = (0..4)
        .map(|m| format!("0\t{m}\ttrain\t0\tt{m}\n"))
        .collect::<String>();
    let error = with_families("four", &members).err().unwrap().to_string();
    assert!(error.contains("family 0 has 4 members"), "{error}");
    let error = with_families("past", "0\t0\ttrain\t9\tx\n0\t1\ttrain\t0\ty\n")
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("row 9 past"), "{error}");
}
