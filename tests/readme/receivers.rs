// README, "Receivers and Deferred Calls", verbatim.
#![allow(dead_code, unused)]
use uform::*;

async fn deferred(model: Model, executor: Executor, mut arena: Arena) -> uform::Result<()> {
    let texts = vec![String::from("a cat on a mat"), String::from("a dog in the fog")];
    let call = model.deferred(&executor).text_encode(texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    if call.status() == Err(Status::Deferred) {
        // other work
    }
    let encoded = call.await?;                                    // or: call.wait()?
    Ok(())
}

fn waited(model: Model, executor: Executor, mut arena: Arena) -> uform::Result<()> {
    let texts = vec![String::from("a cat on a mat"), String::from("a dog in the fog")];
    let call = model.deferred(&executor).text_encode(texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let encoded = call.wait()?;
    Ok(())
}

fn scoped(model: Model, executor: Executor, mut arena: Arena) -> uform::Result<()> {
    let texts = vec![String::from("a cat on a mat"), String::from("a dog in the fog")];
    let call = model.deferred(&executor).text_encode(texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)?;
    let joined = std::thread::scope(|scope| scope.spawn(move || call.wait()).join());
    Ok(())
}

fn main() {}
