//! Reading one F32 value of a checkpoint, such as its `trainer.step` or its choice temperature, from the safetensors
//! header and data (MODEL.md's checkpoint format), without loading the model.

use std::error::Error;
use std::path::Path;

/// Element `index` of the F32 tensor `name` in the checkpoint at `path`.
pub fn scalar(path: &Path, name: &str, index: usize) -> Result<f32, Box<dyn Error>> {
    let bytes = std::fs::read(path).map_err(|error| format!("{}: {error}", path.display()))?;
    let corrupt = || format!("{}: not a checkpoint with an F32 {name}", path.display());
    let length = u64::from_le_bytes(bytes.get(..8).ok_or_else(corrupt)?.try_into()?) as usize;
    let header: serde_json::Value =
        serde_json::from_slice(bytes.get(8..8 + length).ok_or_else(corrupt)?)?;
    let tensor = &header[name];
    if tensor["dtype"] != "F32" {
        return Err(corrupt().into());
    }
    let (start, end) = (
        tensor["data_offsets"][0].as_u64().ok_or_else(corrupt)? as usize,
        tensor["data_offsets"][1].as_u64().ok_or_else(corrupt)? as usize,
    );
    let at = 8 + length + start + 4 * index;
    if at + 4 > 8 + length + end {
        return Err(format!("{}: {name} has no element {index}", path.display()).into());
    }
    let value = bytes.get(at..at + 4).ok_or_else(corrupt)?;
    Ok(f32::from_le_bytes(value.try_into()?))
}
