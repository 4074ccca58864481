// A deferred call's config borrowing a local fails: the library writes the stats after the verb returns.
use uform::*;

fn main() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 0)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram("model.safetensors")?;
    let texts = vec![String::from("a cat on a mat")];
    let mut stats = TextEncodeStats::default();
    let config = TextEncodeConfig { stats: Some(&mut stats), ..TextEncodeConfig::from(Scalar::F32) };
    let call = model.deferred(&executor).text_encode(texts, Outputs::EMBEDDINGS, config, &mut arena)?;
    call.wait()?;
    Ok(())
}
