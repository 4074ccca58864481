// The library's mutex and condition variable: the standard library's everywhere but WASI (wasm32-wasip1), whose
// libc++ is built without threads. There one thread runs everything (docs/building.md, "Building for WASI"), so a
// lock guards nothing and nobody else can end a wait: `mutex_t` does nothing, and `condition_t` checks that what a
// wait waits for already holds (a wait that could only end through another thread is a bug, which it reports and
// then aborts on rather than hang).
#ifndef UFORM_COMMON_LOCK_HPP
#define UFORM_COMMON_LOCK_HPP

#if defined(__wasi__)
#include <cstdio>
#include <cstdlib>
#include <mutex> // std::lock_guard and std::unique_lock, which need no threads
#else
#include <condition_variable>
#include <mutex>
#endif

namespace uform {

#if defined(__wasi__)

/// A mutex on a build with one thread: locking always succeeds at once.
struct mutex_t {
    /// Takes the (uncontended) lock.
    void lock() noexcept {}
    /// Always succeeds.
    bool try_lock() noexcept { return true; }
    /// Leaves the lock.
    void unlock() noexcept {}
};

/// A condition variable on a build with one thread: notifying wakes nobody, and a wait finds its condition true.
struct condition_t {
    /// Nobody else waits.
    void notify_one() noexcept {}
    /// Nobody else waits.
    void notify_all() noexcept {}
    /// Returns at once when `ready()` holds; otherwise no other thread could ever make it hold.
    template <typename lock_type_, typename predicate_type_>
    void wait(lock_type_ &, predicate_type_ ready) {
        if (ready()) return;
        std::fputs("uform: a wait on a build without threads can never end\n", stderr);
        std::abort();
    }
};

#else

/// The standard mutex.
using mutex_t = std::mutex;
/// The standard condition variable.
using condition_t = std::condition_variable;

#endif

} // namespace uform

#endif // UFORM_COMMON_LOCK_HPP
