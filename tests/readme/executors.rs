// README, "Executors", verbatim.
#![allow(dead_code, unused)]
use uform::*;

fn executors(pool: *mut std::ffi::c_void) -> uform::Result<()> {
    let threads = Executor::for_ram(&[], None, 8)?;                      // eight threads, where zero takes 7/8 of the cores
    let domains = Executor::for_ram(&[0, 1], None, 0)?;                  // threads interleaved across two NUMA nodes
    let serial = Executor::for_ram(&[], Some(CPUClass::Serial), 0)?;        // dispatches as the portable floor
    let streams = unsafe { Executor::for_vram(&[0, 1], None, &[], None, &[], 0)? }; // one stream per device, scratch grown as asked
    let shared = unsafe { Executor::on_pool(&[], None, pool, 0)? };         // borrows a ForkUnion pool's threads
    let local = Executor::default();                                        // owns nothing, runs on the calling thread

    threads.drain(Mood::Spinning)?;                                         // waits until no call holds it, then keeps spinning
    Ok(())
}

fn devices(devices: &mut [GPUDevice]) -> uform::Result<usize> {
    gpu_devices(devices)
}

fn main() {}
