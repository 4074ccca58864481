//! The README's "Executors", against the stub's simulated hardware: two NUMA nodes and two Hopper GPUs.
//!
//! Stub only: it counts the stub's simulated NUMA nodes and GPUs.
#![cfg(feature = "stub")]

mod common;

use std::ffi::c_void;
use std::ptr::NonNull;

use common::TINY;
use uform::*;

#[test]
fn the_readme_snippet_makes_every_kind_of_executor() -> uform::Result<()> {
    // A stand-in for a `fu_pool_t *`: `on_pool` answers `Unsupported` before it would touch the pool.
    let pool: *mut c_void = NonNull::<c_void>::dangling().as_ptr();

    let threads = Executor::for_ram(&[], None, 8)?; // eight threads, where zero takes 7/8 of the cores
    let domains = Executor::for_ram(&[0, 1], None, 0)?; // threads interleaved across two NUMA nodes
    let serial = Executor::for_ram(&[], Some(CPUClass::Serial), 0)?; // dispatches as the portable floor
    let streams = unsafe { Executor::for_vram(&[0, 1], None, &[], None, &[], 0)? }; // one stream per device
    let shared = unsafe { Executor::on_pool(&[], None, pool, 0) }; // borrows a ForkUnion pool's threads
    let local = Executor::default(); // owns nothing, runs on the calling thread

    threads.drain(Mood::Spinning)?; // waits until no call holds it, then keeps spinning

    assert_eq!(
        shared.unwrap_err().status,
        Status::Unsupported,
        "on_pool mirrors the C verb"
    );
    for executor in [&threads, &domains, &serial, &local] {
        executor.drain(Mood::Sleeping)?;
    }
    streams.drain(Mood::Spinning)?;
    Ok(())
}

#[test]
fn every_executor_runs_a_model_of_its_residency() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    let texts = ["one", "two", "three"];
    let mut expected = Vec::new();
    for executor in [
        Executor::for_ram(&[], None, 3)?,
        Executor::for_ram(&[0, 1], None, 0)?,
        Executor::for_ram(&[], Some(CPUClass::Serial), 0)?,
        Executor::default(),
    ] {
        let mut arena = Arena::new_in(&executor)?;
        let encoded = model.on(&executor).text_encode(
            &texts,
            Outputs::EMBEDDINGS,
            Scalar::F32,
            &mut arena,
        )?;
        let values = encoded.embeddings.unwrap().values::<f32>()?.to_vec();
        if expected.is_empty() {
            expected = values;
        } else {
            assert_eq!(values, expected, "rows do not depend on the executor");
        }
    }
    Ok(())
}

#[test]
fn a_class_the_hardware_lacks_is_unsupported() {
    let foreign = if cfg!(target_arch = "x86_64") {
        CPUClass::ArmSve
    } else {
        CPUClass::IntelHaswell
    };
    let error = Executor::for_ram(&[], Some(foreign), 0).unwrap_err();
    assert_eq!(error.status, Status::Unsupported);
}

#[test]
fn a_numa_node_the_machine_lacks_is_not_found() {
    // The stub simulates two NUMA nodes: 0 and 1 exist, 2 does not.
    assert!(Executor::for_ram(&[1, 0], None, 3).is_ok());
    for nodes in [&[2][..], &[0, 2], &[usize::MAX]] {
        let error = Executor::for_ram(nodes, None, 0).unwrap_err();
        assert_eq!(error.status, Status::NotFound, "{nodes:?}");
    }
}

#[test]
fn borrowed_streams_and_pools_are_unsupported() {
    let stream: *mut c_void = NonNull::<c_void>::dangling().as_ptr();
    let pool = NonNull::<c_void>::dangling();
    let streams = unsafe { Executor::for_vram(&[0], None, &[stream], None, &[], 0) };
    assert_eq!(streams.unwrap_err().status, Status::Unsupported);
    let pooled = unsafe { Executor::for_vram(&[0], None, &[], Some(pool), &[], 0) };
    assert_eq!(pooled.unwrap_err().status, Status::Unsupported);
}

#[test]
fn gpu_devices_fills_a_slice_and_counts_every_gpu() -> uform::Result<()> {
    let mut devices = vec![GPUDevice::default(); 4];
    let count = gpu_devices(&mut devices)?;
    assert_eq!(count, 2, "the stub simulates two GPUs");
    for device in &devices[..count] {
        assert_eq!(device.gpu_class, GPUClass::NvidiaHopper);
        assert!(device.memory_bytes > 0 && device.multiprocessors > 0);
        assert!(!device.name.is_empty() && !device.pci_bus_id.is_empty());
    }
    assert_ne!(devices[0].pci_bus_id, devices[1].pci_bus_id);
    // A smaller slice still learns how many there are.
    let mut one = [GPUDevice::default()];
    assert_eq!(gpu_devices(&mut one)?, 2);
    assert_eq!(gpu_devices(&mut [])?, 2);
    // A device's position is the ordinal `for_vram` names it by; past them is an error.
    let past = unsafe { Executor::for_vram(&[count], None, &[], None, &[], 0) };
    assert!(past.is_err());
    Ok(())
}

#[test]
fn one_executor_per_thread_while_models_are_shared() -> uform::Result<()> {
    let model = Model::load_ram(TINY)?;
    let texts = ["shared", "model"];
    let rows: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let model = &model;
                scope.spawn(move || {
                    let executor = Executor::for_ram(&[], None, 1).unwrap();
                    let mut arena = Arena::new_in(&executor).unwrap();
                    let mut last = Vec::new();
                    for _ in 0..20 {
                        let encoded = model
                            .on(&executor)
                            .text_encode(&texts, Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
                            .unwrap();
                        last = encoded
                            .embeddings
                            .unwrap()
                            .values::<f32>()
                            .unwrap()
                            .to_vec();
                    }
                    last
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().unwrap())
            .collect()
    });
    assert_eq!(rows[0], rows[1]);
    Ok(())
}

#[test]
fn an_executor_moves_between_threads() -> uform::Result<()> {
    let executor = Executor::for_ram(&[], None, 1)?;
    let model = Model::load_ram(TINY)?;
    let model = &model;
    let executor = std::thread::scope(|scope| {
        scope
            .spawn(move || {
                let mut arena = Arena::new_in(&executor).unwrap();
                model
                    .on(&executor)
                    .text_encode(&["moved"], Outputs::EMBEDDINGS, Scalar::F32, &mut arena)
                    .unwrap();
                drop(arena);
                executor
            })
            .join()
            .unwrap()
    });
    executor.drain(Mood::Sleeping)
}

#[test]
fn a_vram_arena_outlives_the_executor_that_made_it() -> uform::Result<()> {
    let executor = unsafe { Executor::for_vram(&[0], None, &[], None, &[], 0)? };
    let model = Model::load_vram(ModelLoadVramConfig {
        executor: Some(&executor),
        ..ModelLoadVramConfig::from(TINY)
    })?;
    let mut arena = Arena::new_in(&executor)?;
    let encoded = model.on(&executor).text_encode(
        &["device"],
        Outputs::EMBEDDINGS,
        Scalar::F32,
        &mut arena,
    )?;
    assert_eq!(encoded.embeddings.unwrap().residency(), Residency::Vram);
    drop(executor); // the arena still holds it, and frees it on its own drop
    drop(arena);
    Ok(())
}
