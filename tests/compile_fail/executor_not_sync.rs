// An executor runs one call at a time: it is `Send` but not `Sync`, so two threads cannot share one.
use uform::*;

fn main() {
    let executor = Executor::for_ram(&[], None, 0).unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| executor.drain(Mood::Spinning));
        scope.spawn(|| executor.drain(Mood::Sleeping));
    });
}
