//! `--folder DIR --query TEXT`: encodes every text, image, video and audio file of a folder, one call per
//! modality, as `Scalar::I8` embeddings into a USearch index, and finds the files nearest a query text.
//! `tests/ram_shipped_model.rs` includes this module to check its answers with the shipped model.

use std::error::Error;
use std::path::{Path, PathBuf};

use uform::*;
use usearch::{Index, IndexOptions, MetricKind, ScalarKind};

/// What a file holds, by its extension.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Modality {
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

/// A file of the folder, keyed in the index by its position in [`FolderIndex::files`].
pub struct File {
    pub path: PathBuf,
    pub modality: Modality,
}

/// A file near the query, with the cosine similarity of the two `i8` embeddings.
pub struct Hit<'a> {
    pub file: &'a File,
    pub similarity: f32,
}

/// A folder's files and the USearch index of their embeddings.
pub struct FolderIndex {
    pub files: Vec<File>,
    /// The modalities whose batch failed, with how many files each held and the library's error.
    pub skipped: Vec<(Modality, usize, uform::Error)>,
    index: Index,
}

impl FolderIndex {
    /// Encodes the files of `folder` (not its subfolders), one batch per modality, and indexes them by cosine
    /// over the model's `i8` embeddings. A batch the library refuses is skipped whole and listed in `skipped`.
    pub fn build(
        model: &Model,
        executor: &Executor,
        arena: &mut Arena,
        folder: &Path,
    ) -> std::result::Result<Self, Box<dyn Error>> {
        let mut found: Vec<(Modality, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(folder)? {
            let path = entry?.path();
            if let Some(modality) = Modality::of(&path) {
                found.push((modality, path));
            }
        }
        found.sort_by(|a, b| a.1.cmp(&b.1));
        let index = Index::new(&IndexOptions {
            dimensions: model.describe()?.dimensions,
            metric: MetricKind::Cos,
            quantization: ScalarKind::I8,
            ..IndexOptions::default()
        })?;
        index.reserve(found.len())?;
        let mut folder_index = Self {
            files: Vec::with_capacity(found.len()),
            skipped: Vec::new(),
            index,
        };
        for modality in [
            Modality::Text,
            Modality::Image,
            Modality::Video,
            Modality::Audio,
        ] {
            let paths: Vec<PathBuf> = found
                .iter()
                .filter(|f| f.0 == modality)
                .map(|f| f.1.clone())
                .collect();
            if paths.is_empty() {
                continue;
            }
            let on = model.on(executor);
            let (embeddings, scalar) = (Outputs::EMBEDDINGS, Scalar::I8);
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
                Ok(encoded) => folder_index.add(paths, modality, encoded)?,
                Err(error) => folder_index.skipped.push((modality, paths.len(), error)),
            }
        }
        Ok(folder_index)
    }

    /// Adds one call's embeddings to the index, one row per file.
    fn add(
        &mut self,
        paths: Vec<PathBuf>,
        modality: Modality,
        encoded: Encoded<'_>,
    ) -> std::result::Result<(), Box<dyn Error>> {
        let rows = encoded
            .embeddings
            .ok_or("the model answered no embeddings")?;
        let (values, columns) = (rows.values::<i8>()?, rows.columns());
        for (path, embedding) in paths.into_iter().zip(values.chunks(columns)) {
            self.index.add(self.files.len() as u64, embedding)?;
            self.files.push(File { path, modality });
        }
        Ok(())
    }

    /// The `top` files nearest `query`, nearest first.
    pub fn nearest(
        &self,
        model: &Model,
        executor: &Executor,
        arena: &mut Arena,
        query: &str,
        top: usize,
    ) -> std::result::Result<Vec<Hit<'_>>, Box<dyn Error>> {
        let encoded =
            model
                .on(executor)
                .text_encode(&[query], Outputs::EMBEDDINGS, Scalar::I8, arena)?;
        let rows = encoded
            .embeddings
            .ok_or("the model answered no embeddings")?;
        let matches = self.index.search(rows.values::<i8>()?, top)?;
        Ok(matches
            .keys
            .iter()
            .zip(&matches.distances)
            .map(|(&key, &distance)| Hit {
                file: &self.files[key as usize],
                similarity: 1.0 - distance,
            })
            .collect())
    }
}
