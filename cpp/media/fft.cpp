// The pool of FFT contexts: made on demand, kept for the model's life.
#include "fft.hpp"

namespace uform::media {

fft_pool_t::~fft_pool_t() {
    for (AVTXContext *&context : idle_) av_tx_uninit(&context);
}

bool fft_pool_t::take(std::size_t points, AVTXContext **contexts, std::size_t count) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i != count; ++i) {
        if (!idle_.empty()) {
            contexts[i] = idle_.back();
            idle_.pop_back();
            continue;
        }
        double const scale = 1.0;
        contexts[i] = nullptr;
        if (av_tx_init(&contexts[i], &transform_, AV_TX_DOUBLE_FFT, 0, int(points), &scale, 0) < 0) {
            for (std::size_t j = 0; j != i; ++j) av_tx_uninit(&contexts[j]);
            return false;
        }
    }
    try {
        idle_.reserve(idle_.size() + count); // so that giving back never allocates
    } catch (...) {
        for (std::size_t i = 0; i != count; ++i) av_tx_uninit(&contexts[i]);
        return false;
    }
    return true;
}

void fft_pool_t::give(AVTXContext *const *contexts, std::size_t count) noexcept {
    std::lock_guard<std::mutex> lock(mutex_);
    for (std::size_t i = 0; i != count; ++i) idle_.push_back(contexts[i]);
}

} // namespace uform::media
