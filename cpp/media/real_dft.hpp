// The real transform of the audio front-end on WASI, where KissFFT is not built: the few names of KissFFT's real
// transform that cpp/media/fft.hpp and its users call (a plan, the complex bin, the forward transform), over a
// discrete Fourier transform of our own (cpp/media/real_dft.cpp). Any even length; each bin sums in double precision,
// so the bins are at least as exact as KissFFT's, at O(n^2) work per frame (400 points: 80 400 products).
#pragma once

#include <cstddef>

#if defined(__wasi__)

/// A sample of the transform's input.
using kiss_fft_scalar = float;

/// One complex bin: real and imaginary parts.
struct kiss_fft_cpx {
    float r;
    float i;
};

/// A plan: its length and its twiddle factors.
struct kiss_fftr_state;
/// A plan, as KissFFT names it.
using kiss_fftr_cfg = kiss_fftr_state *;

/// A forward plan of `points` points (even, positive); `nullptr` for an inverse one, an odd or non-positive length,
/// caller-provided memory, or when memory ran out.
kiss_fftr_cfg kiss_fftr_alloc(int points, int inverse, void *memory, std::size_t *memory_bytes) noexcept;

/// Bins 0 to points/2 of the transform of `points` samples: `spectrum[k]` = sum of `samples[t]` e^(-2 pi i k t / n).
void kiss_fftr(kiss_fftr_cfg plan, kiss_fft_scalar const *samples, kiss_fft_cpx *spectrum) noexcept;

/// Frees a plan; ignores `nullptr`.
void kiss_fftr_free(kiss_fftr_cfg plan) noexcept;

#endif // defined(__wasi__)
