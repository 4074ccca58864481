// README, "Errors", verbatim.
#![allow(dead_code, unused)]
use uform::*;

fn errors(model: Model, executor: Executor, mut arena: Arena) {
    let texts = ["a cat on a mat", "a dog in the fog"];
    match model.on(&executor).text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena) {
        Ok(encoded) => println!("{} items", encoded.embeddings.map_or(0, |rows| rows.count())),
        Err(Error { status: Status::Contended, .. }) => println!("the arena serves another call"),
        Err(error) => println!("{}: {}", error.status, error.message),
    }
}

fn main() {}
