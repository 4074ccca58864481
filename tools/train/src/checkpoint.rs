//! Reading one F32 value of a checkpoint, such as its `trainer.step` or its choice temperature, from the safetensors
//! header and data (docs/model.md's checkpoint format), without loading the model; and writing a copy with some changed.

use std::error::Error;
use std::path::Path;

/// Element `index` of the F32 tensor `name` in the checkpoint at `path`.
pub fn scalar(path: &Path, name: &str, index: usize) -> Result<f32, Box<dyn Error>> {
    let bytes = std::fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let at = offset(&bytes, path, name, index)?;
    Ok(f32::from_le_bytes(bytes[at..at + 4].try_into()?))
}

/// Copies the checkpoint at `path` to `out` with the first element of each named F32 tensor set to its value, every
/// other byte unchanged; nothing is written when a name is not such a tensor.
pub fn write_with_scalars(
    path: &Path,
    rewrites: &[(&str, f32)],
    out: &Path,
) -> Result<(), Box<dyn Error>> {
    let mut bytes = std::fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    for &(name, value) in rewrites {
        let at = offset(&bytes, path, name, 0)?;
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
    std::fs::write(out, bytes).map_err(|error| format!("{}: {error}", out.display()).into())
}

/// Where element `index` of the F32 tensor `name` starts in a checkpoint's bytes.
fn offset(bytes: &[u8], path: &Path, name: &str, index: usize) -> Result<usize, Box<dyn Error>> {
    let corrupt = || format!("{}: not a checkpoint with an F32 {name}", path.display());
    let length = u64::from_le_bytes(bytes.get(..8).ok_or_else(corrupt)?.try_into()?) as usize;
    let header: serde_json::Value = serde_json::from_slice(
        bytes
            .get(8..8usize.saturating_add(length))
            .ok_or_else(corrupt)?,
    )?;
    let tensor = &header[name];
    if tensor["dtype"] != "F32" {
        return Err(corrupt().into());
    }
    let (start, end) = (
        tensor["data_offsets"][0].as_u64().ok_or_else(corrupt)? as usize,
        tensor["data_offsets"][1].as_u64().ok_or_else(corrupt)? as usize,
    );
    let data = 8usize.saturating_add(length);
    let at = data
        .saturating_add(start)
        .saturating_add(index.saturating_mul(4));
    if at.saturating_add(4) > data.saturating_add(end) {
        return Err(format!("{}: {name} has no element {index}", path.display()).into());
    }
    if at.saturating_add(4) > bytes.len() {
        return Err(corrupt().into());
    }
    Ok(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A safetensors file with an F32 [2] tensor `a` = (1, 2), a BF16 [1] tensor `b` and an F32 [0] tensor `e`.
    fn file(directory: &Path) -> std::path::PathBuf {
        let header = br#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[8,10]},"e":{"dtype":"F32","shape":[0],"data_offsets":[10,10]}}"#;
        let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(header);
        for value in [1.0f32, 2.0] {
            bytes.extend_from_slice(&value.to_le_bytes());
        }
        bytes.extend_from_slice(&[0x80, 0x3f]);
        let path = directory.join("scalars.safetensors");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn a_copy_changes_the_named_elements_and_nothing_else() {
        let directory =
            std::env::temp_dir().join(format!("wordnet-checkpoint-{}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let (path, copy) = (file(&directory), directory.join("copy.safetensors"));
        write_with_scalars(&path, &[("a", 3.4012)], &copy).unwrap();
        assert_eq!(scalar(&copy, "a", 0).unwrap(), 3.4012);
        assert_eq!(scalar(&copy, "a", 1).unwrap(), 2.0);
        let (before, after) = (std::fs::read(&path).unwrap(), std::fs::read(&copy).unwrap());
        let changed: Vec<usize> = (0..before.len())
            .filter(|&i| before[i] != after[i])
            .collect();
        assert_eq!(before.len(), after.len());
        assert!(!changed.is_empty());
        assert!(changed
            .iter()
            .all(|&i| i >= before.len() - 10 && i < before.len() - 6));
        // Two rewrites of one element: the last holds.
        write_with_scalars(&path, &[("a", 5.0), ("a", -10.0)], &copy).unwrap();
        assert_eq!(scalar(&copy, "a", 0).unwrap(), -10.0);
        std::fs::remove_file(&copy).unwrap();
        for (name, why) in [("e", "no element"), ("b", "not F32"), ("c", "absent")] {
            assert!(
                write_with_scalars(&path, &[("a", 1.5), (name, 0.0)], &copy).is_err(),
                "{why}"
            );
            assert!(!copy.exists(), "{why}: nothing written");
        }
        std::fs::remove_dir_all(&directory).unwrap();
    }
}
