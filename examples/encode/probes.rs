//! Scores probe triples: a text, one meant to be near it and one meant to be farther, one triple per tab-separated
//! line (`#` starts a comment). A probe is met when the first text's embedding is nearer the second's than the third's
//! by cosine; chance is half.

use uform::*;

/// One probe: the text, the one meant to be near it, the one meant to be farther.
pub struct Probe {
    pub texts: [String; 3],
}

/// Reads the probes of `path`: three tab-separated texts a line, blank lines and `#` comments skipped.
pub fn read(path: &std::path::Path) -> std::result::Result<Vec<Probe>, Box<dyn std::error::Error>> {
    let mut probes = Vec::new();
    for (number, line) in std::fs::read_to_string(path)?.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = line.split('\t').collect();
        let [text, near, far] = fields[..] else {
            return Err(format!(
                "{}:{}: a probe is three tab-separated texts, this line has {}",
                path.display(),
                number + 1,
                fields.len()
            )
            .into());
        };
        probes.push(Probe {
            texts: [text, near, far].map(str::to_owned),
        });
    }
    if probes.is_empty() {
        return Err(format!("{} holds no probe", path.display()).into());
    }
    Ok(probes)
}

/// Encodes every probe's texts in one batch and prints each probe's two cosines and whether it is met, then the count
/// met.
pub fn score(
    model: &Model,
    executor: &Executor,
    arena: &mut Arena,
    probes: &[Probe],
) -> uform::Result<usize> {
    let texts: Vec<&str> = probes
        .iter()
        .flat_map(|probe| probe.texts.iter().map(String::as_str))
        .collect();
    let encoded =
        model
            .on(executor)
            .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, arena)?;
    let rows = encoded.embeddings.expect("EMBEDDINGS were asked for");
    let (values, columns) = (rows.values::<f32>()?, rows.columns());
    // Embeddings are unit rows, so a dot product is their cosine.
    let cosine = |i: usize, j: usize| -> f32 {
        let row = |k: usize| &values[k * columns..][..columns];
        row(i).iter().zip(row(j)).map(|(a, b)| a * b).sum()
    };
    let mut met = 0;
    for (p, probe) in probes.iter().enumerate() {
        let (near, far) = (cosine(3 * p, 3 * p + 1), cosine(3 * p, 3 * p + 2));
        met += usize::from(near > far);
        let [text, second, third] = &probe.texts;
        println!(
            "  {}  {near:+.3} / {far:+.3}  {text:?}: {second:?} / {third:?}",
            if near > far { "met    " } else { "not met" }
        );
    }
    println!(
        "{met} of {} probes met (chance {:.1})",
        probes.len(),
        probes.len() as f64 / 2.0
    );
    Ok(met)
}
