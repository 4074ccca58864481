// A `Deferred` borrows the executor it was submitted to, so it cannot outlive it.
use uform::*;

fn main() -> uform::Result<()> {
    let model = Model::load_ram("model.safetensors")?;
    let mut arena = Arena::new();
    let call;
    {
        let executor = Executor::for_ram(&[], None, 0)?;
        call = model.deferred(&executor).text_encode(vec!["text"], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    }
    call.wait()?;
    Ok(())
}
