//! Reads the PyTorch goldens of `tests/data/goldens/` (safetensors written by `tools/reference/make_goldens.py`)
//! and holds rows to docs/model.md's "How agreement is measured".

use std::collections::HashMap;

/// One golden file: its tensors by name, as dtype, shape and little-endian bytes.
pub struct Golden {
    tensors: HashMap<String, (String, Vec<usize>, Vec<u8>)>,
}

impl Golden {
    /// Opens `tests/data/goldens/<name>`, panicking with the path when it cannot be read or parsed.
    pub fn open(name: &str) -> Self {
        let path = format!("{}/tests/data/goldens/{name}", env!("CARGO_MANIFEST_DIR"));
        let bytes = std::fs::read(&path).unwrap_or_else(|error| panic!("{path}: {error}"));
        let header_length = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
        let header: serde_json::Value =
            serde_json::from_slice(&bytes[8..8 + header_length]).expect("a JSON header");
        let data = &bytes[8 + header_length..];
        let mut tensors = HashMap::new();
        for (key, entry) in header.as_object().expect("a JSON object") {
            if key == "__metadata__" {
                continue;
            }
            let dtype = entry["dtype"].as_str().expect("a dtype").to_owned();
            let shape = entry["shape"].as_array().expect("a shape").iter();
            let shape = shape.map(|d| d.as_u64().unwrap() as usize).collect();
            let offsets = entry["data_offsets"].as_array().expect("data_offsets");
            let (begin, end) = (
                offsets[0].as_u64().unwrap() as usize,
                offsets[1].as_u64().unwrap() as usize,
            );
            tensors.insert(key.clone(), (dtype, shape, data[begin..end].to_vec()));
        }
        Self { tensors }
    }

    fn raw(&self, name: &str, dtype: &str) -> &(String, Vec<usize>, Vec<u8>) {
        let tensor = self
            .tensors
            .get(name)
            .unwrap_or_else(|| panic!("no tensor {name}"));
        assert_eq!(tensor.0, dtype, "tensor {name}'s dtype");
        tensor
    }

    /// The shape of tensor `name`.
    pub fn shape(&self, name: &str) -> &[usize] {
        &self.tensors[name].1
    }

    /// Tensor `name`, which must be F32.
    pub fn f32(&self, name: &str) -> Vec<f32> {
        let bytes = &self.raw(name, "F32").2;
        bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect()
    }

    /// Tensor `name`, which must be I64, as `usize`.
    pub fn usize(&self, name: &str) -> Vec<usize> {
        let bytes = &self.raw(name, "I64").2;
        bytes
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as usize)
            .collect()
    }

    /// Tensor `name`, which must be U8.
    pub fn u8(&self, name: &str) -> Vec<u8> {
        self.raw(name, "U8").2.clone()
    }
}

/// Cosine of two rows, in F64.
pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut ab, mut aa, mut bb) = (0f64, 0f64, 0f64);
    for (&x, &y) in a.iter().zip(b) {
        ab += f64::from(x) * f64::from(y);
        aa += f64::from(x) * f64::from(x);
        bb += f64::from(y) * f64::from(y);
    }
    if aa == 0.0 && bb == 0.0 {
        1.0
    } else {
        ab / (aa.sqrt() * bb.sqrt())
    }
}

/// docs/model.md's rule for STATES and TOKEN_VECTORS of one item: every row's cosine >= 0.999 and the relative
/// Frobenius error <= 1e-2. Answers the worst row cosine and the relative error, for the test's message.
pub fn assert_rows_agree(what: &str, ours: &[f32], golden: &[f32], columns: usize) -> (f64, f64) {
    assert_eq!(ours.len(), golden.len(), "{what}: row counts differ");
    let mut worst = 1f64;
    for (row, (a, b)) in ours.chunks(columns).zip(golden.chunks(columns)).enumerate() {
        let c = cosine(a, b);
        assert!(c >= 0.999, "{what}: row {row}'s cosine {c} < 0.999");
        worst = worst.min(c);
    }
    let (mut error, mut norm) = (0f64, 0f64);
    for (&a, &b) in ours.iter().zip(golden) {
        error += (f64::from(a) - f64::from(b)).powi(2);
        norm += f64::from(b).powi(2);
    }
    let relative = if norm == 0.0 {
        error.sqrt()
    } else {
        (error / norm).sqrt()
    };
    assert!(
        relative <= 1e-2,
        "{what}: relative Frobenius error {relative} > 1e-2"
    );
    (worst, relative)
}

/// docs/model.md's rule for EMBEDDINGS: cosine >= `bound` per item, an empty item's embedding exactly zero on both sides.
/// Answers the worst item's cosine, for the test's message.
pub fn assert_embeddings_agree(
    what: &str,
    ours: &[f32],
    golden: &[f32],
    columns: usize,
    bound: f64,
) -> f64 {
    assert_eq!(ours.len(), golden.len(), "{what}: item counts differ");
    let mut worst = 1f64;
    for (item, (a, b)) in ours.chunks(columns).zip(golden.chunks(columns)).enumerate() {
        if b.iter().all(|&v| v == 0.0) {
            assert!(
                a.iter().all(|&v| v == 0.0),
                "{what}: item {item}'s embedding must be exactly zero"
            );
            continue;
        }
        let c = cosine(a, b);
        assert!(
            c >= bound,
            "{what}: item {item}'s embedding cosine {c} < {bound}"
        );
        worst = worst.min(c);
    }
    worst
}
