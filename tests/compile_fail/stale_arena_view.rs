// Each call rewinds its arena, so a view of the previous call cannot be used after the next one.
use uform::*;

fn main() -> uform::Result<()> {
    let model = Model::load_ram("model.safetensors")?;
    let mut arena = Arena::new();
    let first = model.text_encode(&["first"], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let second = model.text_encode(&["second"], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    println!("{:?} {:?}", first.embeddings, second.embeddings);
    Ok(())
}
