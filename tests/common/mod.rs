//! What the integration tests share: the tiny checkpoint, scratch folders, and a gate that holds a call
//! inside its progress handler until the test opens it.
#![allow(dead_code)]

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use uform::Progress;

pub mod golden;

/// The tiny checkpoint every suite loads (docs/model.md's format, written by tools/checkpoint).
pub const TINY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tiny.safetensors");

/// The tiny checkpoint's geometry, as its metadata states it.
pub const HIDDEN: usize = 64;
pub const DIMENSIONS: usize = 64;
pub const TOKEN_WIDTH: usize = 32;
pub const CHOICE_GROUPS: usize = 2;

/// A fresh, empty folder under the system's temporary folder, unique to this process and call.
pub fn scratch_dir(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let unique = NEXT.fetch_add(1, Ordering::Relaxed);
    let dir =
        std::env::temp_dir().join(format!("uform-test-{}-{name}-{unique}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch folder");
    dir
}

/// Holds a call inside its progress handler: the handler marks the gate entered, then waits until the
/// test opens it, so the test knows the call holds its executor and arena meanwhile.
#[derive(Default)]
pub struct Gate {
    entered: AtomicBool,
    open: AtomicBool,
    calls: AtomicUsize,
    finished: AtomicBool,
}

impl Gate {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// A `'static` handler, as a deferred receiver needs, that blocks on this gate at its first call and
    /// marks the gate finished once it reports every unit complete.
    pub fn handler(self: &Arc<Self>) -> Progress<'static> {
        let gate = Arc::clone(self);
        Box::leak(Box::new(move |completed: usize, total: usize| {
            gate.calls.fetch_add(1, Ordering::SeqCst);
            gate.entered.store(true, Ordering::SeqCst);
            while !gate.open.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(1));
            }
            if completed == total {
                gate.finished.store(true, Ordering::SeqCst);
            }
            ControlFlow::Continue(())
        }))
    }

    /// Waits until a handler entered the gate, failing the test after ten seconds.
    pub fn wait_entered(&self) {
        let start = Instant::now();
        while !self.entered.load(Ordering::SeqCst) {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "the call never reached its progress handler"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn open(&self) {
        self.open.store(true, Ordering::SeqCst);
    }

    pub fn is_open(&self) -> bool {
        self.open.load(Ordering::SeqCst)
    }

    /// Whether the handler saw the last unit complete.
    pub fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }

    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

/// Opens `gate` from another thread after `delay`.
pub fn open_later(gate: &Arc<Gate>, delay: Duration) -> std::thread::JoinHandle<()> {
    let gate = Arc::clone(gate);
    std::thread::spawn(move || {
        std::thread::sleep(delay);
        gate.open();
    })
}

/// The Euclidean norm of a row.
pub fn norm(row: &[f32]) -> f32 {
    row.iter().map(|value| value * value).sum::<f32>().sqrt()
}
