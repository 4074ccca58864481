// The discrete Fourier transform behind cpp/media/real_dft.hpp, WASI's stand-in for KissFFT's real transform.
#include "cpp/media/real_dft.hpp"

#if defined(__wasi__)

#include <cmath>
#include <new>
#include <numbers>
#include <vector>

/// The length and, for every residue m of n, cos and sin of 2 pi m / n.
struct kiss_fftr_state {
    std::size_t points = 0;
    std::vector<double> cosines, sines;
};

kiss_fftr_cfg kiss_fftr_alloc(int points, int inverse, void *memory, std::size_t *memory_bytes) noexcept {
    if (points <= 0 || points % 2 != 0 || inverse != 0 || memory != nullptr || memory_bytes != nullptr) return nullptr;
    auto *plan = new (std::nothrow) kiss_fftr_state;
    if (plan == nullptr) return nullptr;
    plan->points = std::size_t(points);
    plan->cosines.resize(plan->points);
    plan->sines.resize(plan->points);
    for (std::size_t m = 0; m != plan->points; ++m) {
        double const angle = 2 * std::numbers::pi * double(m) / double(plan->points);
        plan->cosines[m] = std::cos(angle);
        plan->sines[m] = std::sin(angle);
    }
    return plan;
}

void kiss_fftr(kiss_fftr_cfg plan, kiss_fft_scalar const *samples, kiss_fft_cpx *spectrum) noexcept {
    std::size_t const n = plan->points;
    for (std::size_t k = 0; k <= n / 2; ++k) {
        double real = 0, imaginary = 0;
        for (std::size_t t = 0, m = 0; t != n; ++t, m = (m + k) % n) { // m = k t mod n
            real += double(samples[t]) * plan->cosines[m];
            imaginary -= double(samples[t]) * plan->sines[m];
        }
        spectrum[k] = kiss_fft_cpx{float(real), float(imaginary)};
    }
}

void kiss_fftr_free(kiss_fftr_cfg plan) noexcept { delete plan; }

#endif // defined(__wasi__)
