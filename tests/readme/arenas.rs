// README, "Arenas", verbatim.
#![allow(dead_code, unused)]
use uform::*;

fn arenas(model: Model, executor: Executor, batches: Vec<Vec<&str>>, consume: impl Fn(Option<&[f32]>)) -> uform::Result<()> {
    let mut arena = Arena::new_in(&executor)?;
    for batch in &batches {
        let encoded = model.on(&executor).text_encode(batch, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
        consume(encoded.embeddings.map(|rows| rows.values::<f32>()).transpose()?); // rewinds next iteration
    }
    Ok(())
}

fn main() {}
