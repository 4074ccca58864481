// Lending `&Vec<String>` to a deferred receiver fails: the library reads the inputs after the verb returns.
use uform::*;

fn main() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 0)?;
    let mut arena = Arena::new_in(&executor)?;
    let model = Model::load_ram("model.safetensors")?;
    let texts = vec![String::from("a cat on a mat"), String::from("a dog in the fog")];
    let call = model.deferred(&executor).text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    call.wait()?;
    Ok(())
}
