//! `--folder DIR --query TEXT`: encodes every text, image, video and audio file of a folder, one call per
//! modality, and prints the files nearest the query text by cosine similarity.

use std::error::Error;
use std::path::{Path, PathBuf};

use uform::*;

/// What a file holds, by its extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Modality {
    Text,
    Image,
    Video,
    Audio,
}

impl Modality {
    /// The modality of a file named `path`, or `None` for extensions the library does not read.
    fn of(path: &Path) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            "txt" | "md" => Self::Text,
            "jpg" | "jpeg" | "png" | "webp" => Self::Image,
            "mp4" | "webm" => Self::Video,
            "wav" | "flac" | "mp3" | "opus" | "ogg" => Self::Audio,
            _ => return None,
        })
    }
}

/// A file and its embedding.
struct Entry {
    path: PathBuf,
    modality: Modality,
    embedding: Vec<f32>,
}

/// Copies the embeddings of one call out of the arena, one row per file.
fn collect(
    entries: &mut Vec<Entry>,
    files: &[PathBuf],
    modality: Modality,
    encoded: Encoded<'_>,
) -> Result<()> {
    let rows = encoded.embeddings.expect("EMBEDDINGS were asked for");
    let (values, columns) = (rows.values::<f32>()?, rows.columns());
    for (path, embedding) in files.iter().zip(values.chunks(columns)) {
        entries.push(Entry {
            path: path.clone(),
            modality,
            embedding: embedding.to_vec(),
        });
    }
    Ok(())
}

/// Encodes the folder's files and prints the `top` nearest to `query`.
pub fn search(
    model: &Model,
    executor: &Executor,
    arena: &mut Arena,
    folder: &Path,
    query: &str,
    top: usize,
) -> std::result::Result<(), Box<dyn Error>> {
    let mut files: Vec<(Modality, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(folder)? {
        let path = entry?.path();
        if let Some(modality) = Modality::of(&path) {
            files.push((modality, path));
        }
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    let mut entries = Vec::new();
    for modality in [
        Modality::Text,
        Modality::Image,
        Modality::Video,
        Modality::Audio,
    ] {
        let paths: Vec<PathBuf> = files
            .iter()
            .filter(|f| f.0 == modality)
            .map(|f| f.1.clone())
            .collect();
        if paths.is_empty() {
            continue;
        }
        let on = model.on(executor);
        let (embeddings, scalar) = (Outputs::EMBEDDINGS, Scalar::F32);
        let encoded = match modality {
            Modality::Text => {
                let mut texts = Vec::with_capacity(paths.len());
                for path in &paths {
                    texts.push(std::fs::read(path)?);
                }
                on.text_encode(&texts, embeddings, scalar, arena)
            }
            Modality::Image => on.image_encode(&paths, embeddings, scalar, arena),
            Modality::Video => on.video_encode(&paths, embeddings, scalar, arena),
            Modality::Audio => on.audio_encode(&paths, embeddings, scalar, arena),
        };
        match encoded {
            Ok(encoded) => collect(&mut entries, &paths, modality, encoded)?,
            Err(error) => eprintln!("skipped {} {modality:?} file(s): {error}", paths.len()),
        }
    }

    let encoded =
        model
            .on(executor)
            .text_encode(&[query], Outputs::EMBEDDINGS, Scalar::F32, arena)?;
    let query_embedding = encoded
        .embeddings
        .ok_or("no query embedding")?
        .values::<f32>()?
        .to_vec();
    let mut scored: Vec<(f32, &Entry)> = entries
        .iter()
        .map(|entry| (cosine(&query_embedding, &entry.embedding), entry))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!(
        "{} files encoded from {}; nearest to {query:?}:",
        entries.len(),
        folder.display()
    );
    for (score, entry) in scored.iter().take(top) {
        println!(
            "  {score:+.3}  {:<5}  {}",
            format!("{:?}", entry.modality).to_lowercase(),
            entry.path.display()
        );
    }
    Ok(())
}

/// The cosine of two rows; zero when either is zero.
fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norms =
        a.iter().map(|x| x * x).sum::<f32>().sqrt() * b.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norms == 0.0 {
        0.0
    } else {
        dot / norms
    }
}
