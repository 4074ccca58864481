//! The shipped model's answers mean something (issue 13, item 4): the main job ranks a synonym above an unrelated
//! word, and the folder search over `tests/data/media` (the media goldens' files and one Fashion-MNIST test image
//! per class) answers each class's held-out test caption with that class's image first. The folder search is the
//! main job's own module (`examples/encode/folder.rs`: `i8` embeddings in a USearch index). docs/search.md lists the
//! queries and what each checkpoint answered.
#![cfg(not(feature = "stub"))]

#[path = "../examples/encode/folder.rs"]
mod folder;

use std::path::Path;

use folder::FolderIndex;
use uform::*;

/// The model the main job loads by default.
const SHIPPED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/models/uform-wordnet-small.safetensors"
);

/// Each Fashion-MNIST class's image in `tests/data/media` (tools/data/fashion_media.py) and its caption in the
/// test split's template, "an image of {a}", with the class's first name (tools/data/prepare.py).
const CLASSES: [(&str, &str); 10] = [
    ("fashion-t-shirt-top.png", "an image of a T-shirt"),
    ("fashion-trouser.png", "an image of a pair of trousers"),
    ("fashion-pullover.png", "an image of a pullover"),
    ("fashion-dress.png", "an image of a dress"),
    ("fashion-coat.png", "an image of a coat"),
    ("fashion-sandal.png", "an image of a sandal"),
    ("fashion-shirt.png", "an image of a shirt"),
    ("fashion-sneaker.png", "an image of a sneaker"),
    ("fashion-bag.png", "an image of a bag"),
    ("fashion-ankle-boot.png", "an image of an ankle boot"),
];

#[test]
fn the_main_job_ranks_a_synonym_above_an_unrelated_word(
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let model = Model::load_ram(SHIPPED)?;
    let mut arena = Arena::new();
    let texts = ["a cat", "a feline", "a truck"];
    let encoded = model.text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let rows = encoded.embeddings.expect("EMBEDDINGS were asked for");
    let (values, columns) = (rows.values::<f32>()?, rows.columns());
    let cosine = |j: usize| -> f32 {
        values[..columns]
            .iter()
            .zip(&values[j * columns..][..columns])
            .map(|(a, b)| a * b)
            .sum()
    };
    let (synonym, unrelated) = (cosine(1), cosine(2));
    assert!(
        synonym > unrelated,
        "cosine({:?}, {:?}) = {synonym:+.3} should exceed cosine({:?}, {:?}) = {unrelated:+.3}",
        texts[0],
        texts[1],
        texts[0],
        texts[2]
    );
    Ok(())
}

#[test]
fn the_folder_search_finds_the_image_of_the_queried_class(
) -> std::result::Result<(), Box<dyn std::error::Error>> {
    let model = Model::load_ram(SHIPPED)?;
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut arena = Arena::new_in(&executor)?;
    let media = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/media");
    let index = FolderIndex::build(&model, &executor, &mut arena, &media)?;
    let refused: Vec<String> = index
        .skipped
        .iter()
        .map(|(modality, count, error)| format!("{count} {modality:?} file(s): {error}"))
        .collect();
    assert!(refused.is_empty(), "the library refused {refused:?}");

    let mut misses = Vec::new();
    for (image, query) in CLASSES {
        let hits = index.nearest(&model, &executor, &mut arena, query, index.files.len())?;
        let rank = hits
            .iter()
            .position(|hit| hit.file.path.file_name() == Some(image.as_ref()));
        if rank != Some(0) {
            let first = &hits[0];
            misses.push(format!(
                "{query:?}: {image} ranks {} of {}, below {:?} {} ({:+.3})",
                rank.map_or(0, |rank| rank + 1),
                hits.len(),
                first.file.modality,
                first
                    .file
                    .path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy(),
                first.similarity
            ));
        }
    }
    assert!(
        misses.is_empty(),
        "{} of {} class queries miss their image:\n{}",
        misses.len(),
        CLASSES.len(),
        misses.join("\n")
    );
    Ok(())
}
