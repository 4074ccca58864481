// README, "Encoding", verbatim.
#![allow(dead_code, unused)]
use std::ops::ControlFlow;
use uform::*;

fn tape(model: Model, mut arena: Arena) -> uform::Result<()> {
    let tape = (b"first documentthe second".as_slice(), [0usize, 14, 24]);
    let encoded = model.text_encode(tape, Outputs::STATES, Scalar::BF16, &mut arena)?;
    let states = encoded.states.expect("STATES were asked for");
    let offsets = states.offsets()?;                              // item `i` spans rows `offsets[i]` up to `offsets[i + 1]`
    let second = states.item(1)?;                                 // the rows of one item, as `Rows`
    Ok(())
}

fn config(model: Model, mut arena: Arena) -> uform::Result<()> {
    let texts = ["a cat on a mat", "a dog in the fog"];
    let mut stats = TextEncodeStats::default();
    let mut handler = |completed, total| if completed * 2 < total { ControlFlow::Continue(()) } else { ControlFlow::Break(()) };
    let config = TextEncodeConfig { stats: Some(&mut stats), progress: Some(&mut handler), ..TextEncodeConfig::from(Scalar::F32) };
    let encoded = model.text_encode(&texts, Outputs::EMBEDDINGS, config, &mut arena);
    Ok(())
}

fn choose(model: Model, mut arena: Arena) -> uform::Result<()> {
    let config = TextChooseConfig { temperature_groups: &[0, 1], ..TextChooseConfig::default() };
    let probabilities = model.text_choose(&["keep this candidate?", "expand which neighbour?"], &["yn", "ABCD"], config, &mut arena)?;
    let expand: &[f32] = probabilities.item(1)?;                  // the probabilities of 'A' through 'D'
    Ok(())
}

fn main() {}
