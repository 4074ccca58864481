// README, "Models", verbatim.
#![allow(dead_code, unused)]
use uform::*;

fn models(executor: Executor) -> uform::Result<()> {
    let model = Model::load_vram(ModelLoadVramConfig {
        executor: Some(&executor),
        devices: &[0],
        quantization: Scalar::E4M3,
        ..ModelLoadVramConfig::from("model.safetensors")
    })?;
    let description = model.describe()?;                          // geometry, placement, classes and heads
    Ok(())
}

fn main() {}
