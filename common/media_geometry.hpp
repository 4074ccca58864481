// docs/model.md's media geometry, the one copy that the stub and the RAM residency both follow so that their token
// counts agree: the image grid, what a recording becomes at the model's rate, and the bounds that keep a media item's
// memory and time proportional to the budgets a checkpoint declares.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "common/checkpoint.hpp"

namespace uform {

/// Decoded pixels per image (and per video frame) when `max_pixels` is zero: 100 million.
inline constexpr std::size_t default_max_pixels_k = 100'000'000;

/// Tokens one item may reach under a checkpoint's budgets (`image.max_patches`, `audio.max_patches`, a clip's
/// `video.max_frames / video.tubelet_frames * video.max_patches_per_frame`); a checkpoint declaring more is `corrupt`.
inline constexpr std::size_t max_item_tokens_k = std::size_t(1) << 16;

/// Frames a checkpoint's `video.max_frames` may ask for: each is held decoded until its clip is embedded.
inline constexpr std::size_t max_video_frames_k = 1024;

/// `audio.n_fft` at most (and even, at least 2); `audio.hop` lies in `[1, n_fft]`.
inline constexpr std::size_t max_n_fft_k = std::size_t(1) << 16;

/// Samples at the model's rate that a checkpoint's audio budget may cover (`max_patches * frames_per_patch * hop`):
/// 2^24, 17 minutes at 16 kHz, 64 MiB of F32 per recording.
inline constexpr std::size_t max_audio_samples_k = std::size_t(1) << 24;

/// Sample rates the audio verbs accept, of the model and of the input, in Hz: outside them libswresample's filter
/// bank or its output grows without a useful bound.
inline constexpr std::size_t min_sample_rate_k = 1'000, max_sample_rate_k = 384'000;

/// The largest sample magnitude the audio verbs accept: unnormalised 32-bit PCM. Larger finite values overflow the
/// F32 transform into NaN.
inline constexpr float max_sample_magnitude_k = 4294967296.0f;

/// A checkpoint's `image.mean` lies in `[-image_mean_bound_k, image_mean_bound_k]` and its `image.std` in
/// `[image_std_min_k, image_std_max_k]`, so that a normalised pixel stays within 10^6 of zero.
inline constexpr float image_mean_bound_k = 1000.0f, image_std_min_k = 0.001f, image_std_max_k = 1000.0f;

/// Whether `rate` Hz lies in `[min_sample_rate_k, max_sample_rate_k]`.
constexpr bool sample_rate_accepted(std::size_t rate) noexcept {
    return rate >= min_sample_rate_k && rate <= max_sample_rate_k;
}

/// A grid of patches: `rows x columns`.
struct image_grid_t {
    std::size_t rows = 0, columns = 0;
};

/// docs/model.md's grid of an `height x width` image with patch side `p` under the budget `max_patches` (both nonzero):
/// `gh = max(1, min(floor(H / p * s), max_patches))`, `gw = max(1, min(floor(W / p * s), floor(max_patches / gh)))`.
inline image_grid_t image_grid(std::size_t height, std::size_t width, std::size_t p, std::size_t max_patches) noexcept {
    double const h = double(height) / double(p), w = double(width) / double(p);
    double const s = std::sqrt(double(max_patches) / (h * w));
    double const gh = std::min(std::floor(h * s + 1e-6), double(max_patches));
    double const gw = std::floor(w * s + 1e-6);
    image_grid_t grid;
    grid.rows = gh < 1 ? 1 : std::size_t(gh);
    grid.columns =
        std::max<std::size_t>(std::min(gw < 1 ? std::size_t(0) : std::size_t(gw), max_patches / grid.rows), 1);
    return grid;
}

/// Samples at the model's rate that `max_patches` patches cover: audio past them is dropped before the log-mel.
constexpr std::size_t audio_sample_budget(geometry_t const &g, std::size_t max_patches) noexcept {
    return max_patches * g.audio_frames_per_patch * g.audio_hop;
}

/// What one recording becomes: its samples at the model's rate within the budget, zero-extended, its log-mel frames
/// and its patches.
struct audio_shape_t {
    std::size_t samples = 0; // kept, at the model's rate
    std::size_t length = 0;  // after zero-extension to `n_fft / 2 + 1`
    std::size_t frames = 0;  // log-mel frames, the last STFT frame dropped
    std::size_t patches = 0; // tokens
    bool truncated = false;  // whether samples past the budget were dropped
};

/// The shape of a recording of `samples` samples at the model's rate (none: an empty item, no tokens).
constexpr audio_shape_t audio_shape(geometry_t const &g, std::size_t samples, std::size_t max_patches) noexcept {
    audio_shape_t shape;
    if (samples == 0 || g.audio_hop == 0 || g.audio_frames_per_patch == 0) return shape;
    std::size_t const budget = audio_sample_budget(g, max_patches), per = g.audio_frames_per_patch;
    shape.truncated = samples > budget;
    shape.samples = std::min(samples, budget);
    shape.length = std::max(shape.samples, g.audio_n_fft / 2 + 1);
    shape.frames = shape.length / g.audio_hop; // 1 + length / hop centred frames, less the last one
    shape.patches = std::min((shape.frames + per - 1) / per, max_patches);
    return shape;
}

} // namespace uform
