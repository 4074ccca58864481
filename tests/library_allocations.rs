//! What the whole stack allocates, counted where C, C++ and Rust all allocate: this binary defines `malloc` and
//! its siblings (they take precedence over libc's for the library too) and forwards them to glibc's `__libc_*`
//! entry points, counting every call on every thread. After a first call has grown the arena and the scratch
//! to their high-water marks, a steady loop of same-shaped blocking calls (text, choices, pixels, samples, on
//! the calling thread and on a two-thread executor; and training steps of the CPU trainer, every term of the joint
//! objective, on the executor) allocates nothing at all.
//!
//! Its own `main` (`harness = false` in Cargo.toml): the test harness's threads would allocate meanwhile.
//! `scripts/sanitize.sh` leaves it out, since a sanitizer's runtime must own `malloc` itself.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;

use common::TINY;
use uform::*;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

extern "C" {
    fn __libc_malloc(size: usize) -> *mut c_void;
    fn __libc_calloc(count: usize, size: usize) -> *mut c_void;
    fn __libc_realloc(pointer: *mut c_void, size: usize) -> *mut c_void;
    fn __libc_memalign(alignment: usize, size: usize) -> *mut c_void;
    fn __libc_free(pointer: *mut c_void);
}

/// Counts a `malloc` and forwards it.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn malloc(size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded to glibc.
    unsafe { __libc_malloc(size) }
}

/// Counts a `calloc` and forwards it.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn calloc(count: usize, size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded to glibc.
    unsafe { __libc_calloc(count, size) }
}

/// Counts a `realloc` and forwards it.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn realloc(pointer: *mut c_void, size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded to glibc.
    unsafe { __libc_realloc(pointer, size) }
}

/// Counts a `memalign` and forwards it.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn memalign(alignment: usize, size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded to glibc.
    unsafe { __libc_memalign(alignment, size) }
}

/// Counts an `aligned_alloc` and forwards it.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn aligned_alloc(alignment: usize, size: usize) -> *mut c_void {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded to glibc.
    unsafe { __libc_memalign(alignment, size) }
}

/// Counts a `posix_memalign` and forwards it.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(
    out: *mut *mut c_void,
    alignment: usize,
    size: usize,
) -> i32 {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: forwarded to glibc; `out` is the caller's.
    let pointer = unsafe { __libc_memalign(alignment, size) };
    if pointer.is_null() {
        return 12; // ENOMEM
    }
    // SAFETY: the caller passes a valid out-pointer.
    unsafe { *out = pointer };
    0
}

/// Forwards a `free`.
///
/// # Safety
/// As the C function it stands for.
#[no_mangle]
pub unsafe extern "C" fn free(pointer: *mut c_void) {
    // SAFETY: forwarded to glibc, which allocated it.
    unsafe { __libc_free(pointer) }
}

/// Runs `body` once to reach the high-water marks, then `rounds` more times, and answers what those allocated.
fn steady(rounds: usize, mut body: impl FnMut() -> Result<()>) -> Result<usize> {
    body()?;
    body()?;
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    for _ in 0..rounds {
        body()?;
    }
    Ok(ALLOCATIONS.load(Ordering::SeqCst) - before)
}

fn main() -> Result<()> {
    let counted = ALLOCATIONS.load(Ordering::SeqCst);
    let boxed = std::hint::black_box(Box::new(7u64)); // kept: release builds may elide a dead allocation
    assert!(
        ALLOCATIONS.load(Ordering::SeqCst) > counted,
        "this binary's malloc must be the one called"
    );
    drop(boxed);

    let before_arena = ALLOCATIONS.load(Ordering::SeqCst);
    drop(Arena::default());
    drop(Arena::new());
    assert_eq!(
        ALLOCATIONS.load(Ordering::SeqCst) - before_arena,
        0,
        "an arena allocates nothing until a call uses it"
    );

    let before_load = ALLOCATIONS.load(Ordering::SeqCst);
    let model = Model::load_ram(TINY)?;
    let load = ALLOCATIONS.load(Ordering::SeqCst) - before_load;
    assert!(
        load > 0,
        "the library's C++ allocations must reach this binary's malloc too"
    );
    let executor = Executor::for_ram(&[], None, 2)?;
    let mut arena = Arena::new();
    let (first, second) = (
        "a cat on a mat",
        "the second, longer document of this batch",
    );
    let bytes = [first, second].concat().into_bytes();
    let offsets = [0, first.len(), first.len() + second.len()];
    let texts = (bytes.as_slice(), offsets.as_slice());
    let prompts = (
        b"keep this candidate?expand which neighbour?".as_slice(),
        [0usize, 20, 43],
    );
    let choices = (b"ynABCD".as_slice(), [0usize, 2, 6]);
    let pixels = vec![128u8; 3 * (37 * 53 + 8 * 8)];
    let pixel_offsets = [0usize, 3 * 37 * 53, pixels.len()];
    let samples: Vec<f32> = (0..20_000).map(|i| (i as f32 * 0.05).sin() * 0.5).collect();
    let sample_offsets = [0usize, 8_000, samples.len()];

    let mut results = Vec::with_capacity(16);
    for (receiver, on_executor) in [("calling thread", false), ("two threads", true)] {
        let text = steady(20, || {
            let encoded = if on_executor {
                model
                    .on(&executor)
                    .text_encode(texts, Outputs::ALL, Scalar::F32, &mut arena)?
            } else {
                model.text_encode(texts, Outputs::ALL, Scalar::F32, &mut arena)?
            };
            assert!(encoded.embeddings.is_some());
            Ok(())
        })?;
        let choose = steady(20, || {
            let probabilities = if on_executor {
                model.on(&executor).text_choose(
                    prompts,
                    choices,
                    TextChooseConfig::default(),
                    &mut arena,
                )?
            } else {
                model.text_choose(prompts, choices, TextChooseConfig::default(), &mut arena)?
            };
            assert_eq!(probabilities.items(), 2);
            Ok(())
        })?;
        let image = steady(10, || {
            let tape = (pixels.as_slice(), pixel_offsets.as_slice());
            let (heights, widths) = ([37usize, 8], [53usize, 8]);
            let encoded = if on_executor {
                let on = model.on(&executor);
                on.image_encode_pixels(
                    tape,
                    &heights,
                    &widths,
                    Outputs::ALL,
                    Scalar::F32,
                    &mut arena,
                )?
            } else {
                model.image_encode_pixels(
                    tape,
                    &heights,
                    &widths,
                    Outputs::ALL,
                    Scalar::F32,
                    &mut arena,
                )?
            };
            assert!(encoded.states.is_some());
            Ok(())
        })?;
        let audio = steady(10, || {
            let tape = (samples.as_slice(), sample_offsets.as_slice());
            let encoded = if on_executor {
                model.on(&executor).audio_encode_samples(
                    tape,
                    16_000,
                    Outputs::ALL,
                    Scalar::F32,
                    &mut arena,
                )?
            } else {
                model.audio_encode_samples(tape, 16_000, Outputs::ALL, Scalar::F32, &mut arena)?
            };
            assert!(encoded.embeddings.is_some());
            Ok(())
        })?;
        results.push((receiver, text, choose, image, audio));
    }
    let trainer = Trainer::init_ram(
        &executor,
        TrainerInitRamConfig {
            checkpoint: std::path::Path::new(TINY),
            ..TrainerInitRamConfig::default()
        },
    )?;
    let items =
        b"a cat sits on the matthe cat is on the matdogs bark at nightIs it day? Answer y or n: ";
    let item_offsets = [0usize, 21, 42, 60, items.len()];
    let sides = [
        LateInteractionSide::Query,
        LateInteractionSide::Document,
        LateInteractionSide::Document,
        LateInteractionSide::None,
    ];
    let (legal, legal_offsets) = (b"yn".as_slice(), [0usize, 0, 0, 0, 2]);
    let targets = ([0.75f32, 0.25].as_slice(), [0usize, 0, 0, 0, 2]);
    let train = steady(5, || {
        let mut stats = TrainerStepStats::default();
        let config = TrainerStepConfig {
            bags: &[0, 0, 1, 2],
            sides: &sides,
            choices: (legal, &legal_offsets),
            choice_targets: (targets.0, &targets.1),
            stats: Some(&mut stats),
            arena: Some(&mut arena),
            ..TrainerStepConfig::default()
        };
        let scored = trainer.on(&executor).step(
            &[Modality::Text; 4],
            (items.as_slice(), item_offsets.as_slice()),
            config,
        )?;
        assert_eq!(scored.map(|rows| rows.count()), Some(4));
        assert!(
            stats.masking_loss > 0.0
                && stats.late_interaction_loss > 0.0
                && stats.choices_loss > 0.0
        );
        Ok(())
    })?;
    println!("two threads: steady training steps allocated {train}");
    let mut failed = train != 0;
    for (receiver, text, choose, image, audio) in results {
        println!("{receiver}: steady loops allocated text {text}, choose {choose}, pixels {image}, samples {audio}");
        failed |= text + choose + image + audio != 0;
    }
    assert!(
        !failed,
        "a steady loop of same-shaped blocking calls must allocate nothing"
    );
    println!("library_allocations: ok");
    Ok(())
}
