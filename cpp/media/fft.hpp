// The audio front-end's FFT: libavutil's double-precision complex transform of `n_fft` points, whose contexts hold
// scratch and so serve one thread at a time. A model keeps a pool of them, so that a steady loop of calls allocates
// nothing after its first.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

extern "C" {
#include <libavutil/tx.h>
}

namespace uform::media {

/// FFT contexts of one size, lent to a call's workers and given back when its loop ends.
class fft_pool_t {
  public:
    fft_pool_t() noexcept = default;
    fft_pool_t(fft_pool_t const &) = delete;
    fft_pool_t &operator=(fft_pool_t const &) = delete;
    ~fft_pool_t();

    /// Fills `contexts[0, count)` with contexts of `points` points, made where the pool has too few; false when
    /// memory ran out (nothing is then lent).
    bool take(std::size_t points, AVTXContext **contexts, std::size_t count) noexcept;
    /// Gives back what `take` lent.
    void give(AVTXContext *const *contexts, std::size_t count) noexcept;
    /// The transform every context of the pool runs: `transform(context, out, in, sizeof(AVComplexDouble))`.
    av_tx_fn transform() const noexcept { return transform_; }

  private:
    std::mutex mutex_;
    std::vector<AVTXContext *> idle_;
    av_tx_fn transform_ = nullptr;
};

} // namespace uform::media
