// A pause of the calling thread for the library's polling loops (a mesh waiting for its peers' files): the standard
// library's sleep everywhere but WASI (wasm32-wasip1), whose libc++ has no <thread>, where POSIX nanosleep stands in.
#ifndef UFORM_COMMON_PAUSE_HPP
#define UFORM_COMMON_PAUSE_HPP

#include <chrono>

#if defined(__wasi__)
#include <time.h>
#else
#include <thread>
#endif

namespace uform {

/// Sleeps the calling thread for about `duration` (at least, as the platform's sleep allows).
inline void pause_for(std::chrono::microseconds duration) noexcept {
#if defined(__wasi__)
    auto const micros = duration.count();
    timespec const pause{static_cast<time_t>(micros / 1'000'000), static_cast<long>(micros % 1'000'000) * 1'000};
    ::nanosleep(&pause, nullptr);
#else
    std::this_thread::sleep_for(duration);
#endif
}

} // namespace uform

#endif // UFORM_COMMON_PAUSE_HPP
