// The pool of FFT plans: made on demand, kept for the model's life.
#include "cpp/media/fft.hpp"

namespace uform::media {

fft_pool_t::~fft_pool_t() {
    for (kiss_fftr_cfg plan : idle_) kiss_fftr_free(plan);
}

bool fft_pool_t::take(std::size_t points, kiss_fftr_cfg *plans, std::size_t count) noexcept {
    if (points % 2 != 0) return false;
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i != count; ++i) {
        if (!idle_.empty()) {
            plans[i] = idle_.back();
            idle_.pop_back();
            continue;
        }
        plans[i] = kiss_fftr_alloc(int(points), 0, nullptr, nullptr);
        if (plans[i] == nullptr) {
            for (std::size_t j = 0; j != i; ++j) kiss_fftr_free(plans[j]);
            return false;
        }
    }
    try {
        idle_.reserve(idle_.size() + count); // so that giving back never allocates
    } catch (...) {
        for (std::size_t i = 0; i != count; ++i) kiss_fftr_free(plans[i]);
        return false;
    }
    return true;
}

void fft_pool_t::give(kiss_fftr_cfg const *plans, std::size_t count) noexcept {
    std::lock_guard lock(mutex_);
    for (std::size_t i = 0; i != count; ++i) idle_.push_back(plans[i]);
}

} // namespace uform::media
