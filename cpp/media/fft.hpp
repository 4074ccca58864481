// The audio front-end's FFT: KissFFT's real transform of `n_fft` points (mixed radix, so 400 = 2^4 x 5^2 runs as a
// real FFT; FFmpeg 5.1's av_tx runs such lengths as a direct DFT computing a sine and cosine per term). A plan holds
// scratch and so serves one thread at a time; a model keeps a pool of them, so that a steady loop of calls allocates
// nothing after its first. WASI builds no KissFFT: there the same interface runs a transform of our own
// (cpp/media/real_dft.hpp).
#pragma once

#include <cstddef>
#include <vector>

#if defined(__wasi__)
#include "cpp/media/real_dft.hpp"
#else
#include <kiss_fftr.h>
#endif

#include "common/lock.hpp"

namespace uform::media {

/// KissFFT plans of one size, lent to a call's workers and given back when its loop ends.
class fft_pool_t {
  public:
    fft_pool_t() noexcept = default;
    fft_pool_t(fft_pool_t const &) = delete;
    fft_pool_t &operator=(fft_pool_t const &) = delete;
    ~fft_pool_t();

    /// Fills `plans[0, count)` with real-FFT plans of `points` points (even), made where the pool has too few; false
    /// when memory ran out or `points` is odd (nothing is then lent). Run one with `kiss_fftr(plan, in, out)`.
    bool take(std::size_t points, kiss_fftr_cfg *plans, std::size_t count) noexcept;
    /// Gives back what `take` lent.
    void give(kiss_fftr_cfg const *plans, std::size_t count) noexcept;

  private:
    mutex_t mutex_;
    std::vector<kiss_fftr_cfg> idle_;
};

} // namespace uform::media
