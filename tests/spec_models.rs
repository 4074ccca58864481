//! The README's "Models": loading from a path or a buffer, into RAM or onto the stub's simulated GPUs,
//! configs, progress, and descriptions.
//!
//! Stub only: it loads onto the stub's simulated GPUs.
#![cfg(feature = "stub")]

mod common;

use std::ops::ControlFlow;

use common::TINY;
use uform::*;

#[test]
fn the_readme_snippet_loads_onto_a_gpu() -> uform::Result<()> {
    let executor = unsafe { Executor::for_vram(&[0, 1], None, &[], None, &[], 0)? };
    let model = Model::load_vram(ModelLoadVramConfig {
        executor: Some(&executor),
        devices: &[0],
        quantization: Scalar::E4M3,
        ..ModelLoadVramConfig::from(TINY)
    })?;
    let description = model.describe()?; // geometry, placement, classes and heads

    assert_eq!(description.residency, Residency::Vram);
    assert_eq!(description.placement_count, 1);
    assert_eq!(description.placement[0], 0);
    assert_eq!(
        description.gpu_class,
        GPUClass::NvidiaHopper,
        "the class the model dispatched as"
    );
    assert_eq!(description.cpu_class, CPUClass::Auto);
    assert_eq!(description.quantization, Scalar::E4M3);
    assert_eq!(
        description.token_width,
        common::TOKEN_WIDTH,
        "a nonzero width: the token head is there"
    );
    assert_eq!(
        description.choice_temperature_groups,
        common::CHOICE_GROUPS,
        "the byte head is there"
    );

    let mut arena = Arena::new_in(&executor)?;
    let encoded = model.on(&executor).text_encode(
        &["on device 0"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    let rows = encoded.embeddings.unwrap();
    assert_eq!((rows.residency(), rows.device()), (Residency::Vram, 0));
    Ok(())
}

#[test]
fn a_bare_path_loads_bf16_blocks_on_the_calling_thread() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    assert_eq!(model.describe()?.quantization, Scalar::BF16);
    let model = Model::load_ram(std::path::Path::new(TINY))?;
    assert_eq!(model.describe()?.residency, Residency::Ram);
    let model = Model::load_vram(TINY)?;
    let description = model.describe()?;
    assert_eq!(
        (
            description.residency,
            description.placement_count,
            description.placement[0]
        ),
        (Residency::Vram, 1, 0)
    );
    Ok(())
}

#[test]
fn buffers_load_like_paths() -> uform::Result<()> {
    let bytes = std::fs::read(TINY).unwrap();
    let from_path = Model::load_ram(TINY)?;
    let from_buffer = Model::load_ram_buffer(&bytes)?;
    drop(bytes); // the bytes are copied
    let on_gpu = Model::load_vram_buffer(ModelLoadVramConfig {
        devices: &[0],
        ..ModelLoadVramConfig::from(&std::fs::read(TINY).unwrap())
    })?;
    assert_eq!(
        from_buffer.describe()?.dimensions,
        from_path.describe()?.dimensions
    );
    assert_eq!(on_gpu.describe()?.residency, Residency::Vram);

    let (mut first, mut second) = (Arena::new(), Arena::new());
    let a = from_path.text_encode(&["same rows"], Outputs::EMBEDDINGS, Scalar::F32, &mut first)?;
    let b = from_buffer.text_encode(
        &["same rows"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut second,
    )?;
    assert_eq!(
        a.embeddings.unwrap().values::<f32>()?,
        b.embeddings.unwrap().values::<f32>()?
    );
    Ok(())
}

#[test]
fn a_ram_config_reaches_executor_class_quantization_and_progress() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut reports = 0usize;
    let mut handler = |completed: usize, total: usize| {
        assert!(completed <= total);
        reports += 1;
        ControlFlow::Continue(())
    };
    let model = Model::load_ram(ModelLoadRamConfig {
        executor: Some(&executor),
        numa_nodes: &[0],
        cpu_class: CPUClass::Serial,
        quantization: Scalar::E4M3,
        progress: Some(&mut handler),
        ..ModelLoadRamConfig::from(TINY)
    })?;
    let description = model.describe()?;
    assert_eq!(description.cpu_class, CPUClass::Serial);
    assert_eq!(description.quantization, Scalar::E4M3);
    assert!(reports > 0, "the handler heard of the bytes loaded");
    Ok(())
}

#[test]
fn int8_weights_load_in_ram_only() -> uform::Result<()> {
    let model = Model::load_ram(ModelLoadRamConfig {
        quantization: Scalar::I8,
        ..ModelLoadRamConfig::from(TINY)
    })?;
    assert_eq!(model.describe()?.quantization, Scalar::I8);
    let refused = Model::load_vram(ModelLoadVramConfig {
        quantization: Scalar::I8,
        ..ModelLoadVramConfig::from(TINY)
    })
    .unwrap_err();
    assert_eq!(refused.status, Status::Unsupported);
    assert!(refused.message.contains("RAM"), "{}", refused.message);
    for scalar in [Scalar::F32, Scalar::F16, Scalar::E5M2, Scalar::B1] {
        let refused = Model::load_ram(ModelLoadRamConfig {
            quantization: scalar,
            ..ModelLoadRamConfig::from(TINY)
        })
        .unwrap_err();
        assert_eq!(refused.status, Status::InvalidArgument, "{scalar}");
    }
    Ok(())
}

#[test]
fn a_handler_can_cancel_a_load() {
    let mut stop = |_: usize, _: usize| ControlFlow::Break(());
    let error = Model::load_ram(ModelLoadRamConfig {
        progress: Some(&mut stop),
        ..ModelLoadRamConfig::from(TINY)
    })
    .unwrap_err();
    assert_eq!(error.status, Status::Cancelled);
}

#[test]
fn bad_checkpoints_answer_clear_statuses() {
    let dir = common::scratch_dir("models");
    let error = Model::load_ram(&dir.join("missing.safetensors")).unwrap_err();
    assert_eq!(error.status, Status::NotFound);
    assert!(!error.message.is_empty());

    let error = Model::load_ram_buffer(b"not a checkpoint at all").unwrap_err();
    assert_eq!(error.status, Status::Corrupt);
    let mut truncated = std::fs::read(TINY).unwrap();
    truncated.truncate(truncated.len() / 2);
    assert_eq!(
        Model::load_ram_buffer(&truncated).unwrap_err().status,
        Status::Corrupt
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_vram_model_needs_a_device_its_executor_drives() -> uform::Result<()> {
    let executor = unsafe { Executor::for_vram(&[1], None, &[], None, &[], 0)? };
    let model = Model::load_vram(ModelLoadVramConfig {
        devices: &[0],
        ..ModelLoadVramConfig::from(TINY)
    })?;
    let mut arena = Arena::new_in(&executor)?;
    let refused = model.on(&executor).text_encode(
        &["elsewhere"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    );
    assert_eq!(refused.unwrap_err().status, Status::InvalidArgument);
    let missing = Model::load_vram(ModelLoadVramConfig {
        devices: &[7],
        ..ModelLoadVramConfig::from(TINY)
    });
    assert!(missing.is_err(), "no device 7");
    Ok(())
}
