// The front-ends' patch vectors of docs/model.md from decoded media (see patches.hpp).
#include "cpp/backend/patches.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "common/fail.hpp"
#include "cpp/backend/ram.hpp"

namespace uform::backend {
namespace {

using ram::scratch_bytes;

/// One axis of the filter of torch's `interpolate(mode="bilinear", antialias=True, align_corners=False)` and PIL's
/// BILINEAR, from `in` samples to `out`: the triangle widened by the scale factor when shrinking. Per output `i` it
/// keeps the first input `first[i]`, the taps `count[i]` and the sum `total[i]` of their raw weights; each weight is
/// computed where it is used, so the filter's memory grows with the output alone, however long the input.
struct resize_axis_t {
    double scale = 1, support = 1, inverse = 1;
    std::size_t *first = nullptr, *count = nullptr;
    double *total = nullptr;

    /// Lays the axis out in `work`, which holds `resize_axis_bytes(out)`, and computes its spans.
    resize_axis_t(std::size_t in, std::size_t out, std::byte *work) noexcept
        : scale(double(in) / double(out)), support(scale >= 1 ? scale : 1.0), inverse(scale >= 1 ? 1 / scale : 1.0),
          first(reinterpret_cast<std::size_t *>(work)),
          count(reinterpret_cast<std::size_t *>(work + scratch_bytes<std::size_t>(out))),
          total(reinterpret_cast<double *>(work + 2 * scratch_bytes<std::size_t>(out))) {
        for (std::size_t i = 0; i != out; ++i) {
            double const center = scale * (double(i) + 0.5);
            auto const low = std::max<std::int64_t>(std::int64_t(center - support + 0.5), 0);
            auto const high = std::min<std::int64_t>(std::int64_t(center + support + 0.5), std::int64_t(in));
            first[i] = std::size_t(low);
            count[i] = high > low ? std::size_t(high - low) : 0;
            total[i] = 0;
            for (std::size_t j = 0; j != count[i]; ++j) total[i] += raw(i, j);
        }
    }

    /// The unnormalised weight of tap `j` of output `i`.
    double raw(std::size_t i, std::size_t j) const noexcept {
        double const x = (double(j) + double(first[i]) - scale * (double(i) + 0.5) + 0.5) * inverse;
        return std::max(0.0, 1.0 - std::fabs(x));
    }

    /// The weight of tap `j` of output `i`, normalised over the output's taps (rounded to F32 before and after).
    float weight(std::size_t i, std::size_t j) const noexcept {
        float const w = float(raw(i, j));
        return total[i] != 0 ? float(double(w) / total[i]) : w;
    }
};

/// Bytes of one `resize_axis_t` of `out` outputs.
constexpr std::size_t resize_axis_bytes(std::size_t out) noexcept {
    return 2 * scratch_bytes<std::size_t>(out) + scratch_bytes<double>(out);
}

/// Floats of the cache of row weights: every tap of one output column at least, else 2^16.
std::size_t row_weights_capacity(std::size_t width, std::size_t out_width) noexcept {
    double const scale = double(width) / double(out_width);
    return std::max<std::size_t>(std::size_t(std::ceil(2 * std::max(scale, 1.0))) + 2, std::size_t(1) << 16);
}

} // namespace

std::size_t image_work_bytes(std::size_t width, std::size_t out_height, std::size_t out_width) noexcept {
    return scratch_bytes(out_width * 3) + scratch_bytes<double>(out_height * out_width * 3) +
           resize_axis_bytes(out_width) + resize_axis_bytes(out_height) +
           scratch_bytes(row_weights_capacity(width, out_width));
}

void image_patches(geometry_t const &g, std::uint8_t const *pixels, std::size_t height, std::size_t width,
                   image_grid_t grid, std::byte *work, float *patches, std::size_t stride) noexcept {
    std::size_t const p = g.image_patch_side, out_height = grid.rows * p, out_width = grid.columns * p;
    auto *row = reinterpret_cast<float *>(work); // [out_width x 3]: one input row resized along its width
    work += scratch_bytes(out_width * 3);
    auto *sums = reinterpret_cast<double *>(work); // [out_height x out_width x 3]
    work += scratch_bytes<double>(out_height * out_width * 3);
    resize_axis_t const across(width, out_width, work);
    work += resize_axis_bytes(out_width);
    resize_axis_t const down(height, out_height, work);
    work += resize_axis_bytes(out_height);
    auto *cache = reinterpret_cast<float *>(work); // the row weights of the block's columns, tap after tap
    std::size_t const capacity = row_weights_capacity(width, out_width);
    std::fill(sums, sums + out_height * out_width * 3, 0.0);

    for (std::size_t begin = 0, end = 0; begin != out_width; begin = end) {
        std::size_t cached = 0;
        for (; end != out_width && cached + across.count[end] <= capacity; ++end)
            for (std::size_t t = 0; t != across.count[end]; ++t) cache[cached++] = across.weight(end, t);
        std::size_t lowest = 0; // the first output row whose taps reach the current input row
        for (std::size_t y = 0; y != height; ++y) {
            while (lowest != out_height && down.first[lowest] + down.count[lowest] <= y) ++lowest;
            if (lowest == out_height || down.first[lowest] > y) continue; // no output row reads this one
            float const *w = cache;
            for (std::size_t x = begin; x != end; ++x) {
                std::uint8_t const *source = pixels + (y * width + across.first[x]) * 3;
                double sum[3] = {0, 0, 0};
                for (std::size_t t = 0; t != across.count[x]; ++t, ++w)
                    for (std::size_t c = 0; c != 3; ++c) sum[c] += double(*w) * double(source[t * 3 + c]);
                for (std::size_t c = 0; c != 3; ++c) row[x * 3 + c] = float(sum[c]);
            }
            for (std::size_t out = lowest; out != out_height && down.first[out] <= y; ++out) {
                double const weight = down.weight(out, y - down.first[out]);
                double *target = sums + out * out_width * 3;
                for (std::size_t i = begin * 3; i != end * 3; ++i) target[i] += weight * double(row[i]);
            }
        }
    }
    // Patches: index `(py * p + px) * channels + c`, scaled to [0, 1], then `(x - mean[c]) / std[c]`.
    for (std::size_t r = 0; r != grid.rows; ++r)
        for (std::size_t column = 0; column != grid.columns; ++column) {
            std::size_t const token = r * grid.columns + column;
            float *patch = patches + token * stride;
            for (std::size_t py = 0; py != p; ++py)
                for (std::size_t px = 0; px != p; ++px)
                    for (std::size_t c = 0; c != 3; ++c) {
                        float const resized = float(sums[((r * p + py) * out_width + column * p + px) * 3 + c]);
                        patch[(py * p + px) * 3 + c] = (resized / 255.0f - g.image_mean[c]) / g.image_std[c];
                    }
        }
}

void grid_positions(image_grid_t grid, std::size_t time, std::uint32_t *positions) noexcept {
    for (std::size_t cell = 0; cell != grid.rows * grid.columns; ++cell) {
        positions[cell * 3 + 0] = std::uint32_t(time);
        positions[cell * 3 + 1] = std::uint32_t(cell / grid.columns);
        positions[cell * 3 + 2] = std::uint32_t(cell % grid.columns);
    }
}

uform_status_t append_patches(geometry_t const &g, media::rgb_image_t const &image, image_grid_t grid,
                              std::vector<float> &vectors, std::vector<std::byte> &work,
                              char const **message) noexcept {
    std::size_t const p = g.image_patch_side, floats = grid.rows * grid.columns * p * p * 3, at = vectors.size();
    try {
        work.resize(std::max(work.size(), image_work_bytes(image.width, grid.rows * p, grid.columns * p)));
        vectors.resize(at + floats);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    }
    image_patches(g, image.pixels.data(), image.height, image.width, grid, work.data(), vectors.data() + at, p * p * 3);
    return uform_status_ok_k;
}

uform_status_t keep_frame(void *context, media::rgb_image_t const &frame, char const **message) noexcept {
    clip_t &clip = *static_cast<clip_t *>(context);
    if (clip.frames == 0)
        clip.grid = image_grid(frame.height, frame.width, clip.geometry->image_patch_side, clip.max_patches);
    if (uform_status_t status = append_patches(*clip.geometry, frame, clip.grid, clip.patches, clip.work, message))
        return status;
    ++clip.frames;
    return uform_status_ok_k;
}

void clip_tubelets(geometry_t const &g, clip_t const &clip, float *patches, std::uint32_t *positions) noexcept {
    std::size_t const frame_input = g.image_patch_side * g.image_patch_side * 3, tubelet = g.video_tubelet_frames;
    std::size_t const input = tubelet * frame_input;
    std::size_t const cells = clip.grid.rows * clip.grid.columns, tubelets = (clip.frames + tubelet - 1) / tubelet;
    for (std::size_t t = 0; t != tubelets; ++t) {
        std::size_t const token = t * cells;
        for (std::size_t f = 0; f != tubelet; ++f) {
            float const *frame = clip.patches.data() + std::min(t * tubelet + f, clip.frames - 1) * cells * frame_input;
            for (std::size_t cell = 0; cell != cells; ++cell)
                std::memcpy(patches + (token + cell) * input + f * frame_input, frame + cell * frame_input,
                            frame_input * sizeof(float));
        }
        grid_positions(clip.grid, t, positions + token * 3);
    }
}

void periodic_hann(std::size_t n, float *window) noexcept {
    for (std::size_t k = 0; k != n; ++k)
        window[k] = float(0.5 - 0.5 * std::cos(2 * std::numbers::pi * double(k) / double(n)));
}

std::size_t audio_work_bytes(geometry_t const &g, audio_shape_t const &shape) noexcept {
    std::size_t const bins = g.audio_n_fft / 2 + 1;
    return scratch_bytes(shape.length + g.audio_n_fft) + scratch_bytes(shape.frames * g.audio_mel_bins) +
           scratch_bytes(g.audio_n_fft) + scratch_bytes<kiss_fft_cpx>(bins) + scratch_bytes<double>(bins);
}

void audio_patches(geometry_t const &g, float const *mel_filters, float const *hann, float const *samples,
                   audio_shape_t const &shape, kiss_fftr_cfg fft, std::byte *work, float *patches) noexcept {
    std::size_t const n = g.audio_n_fft, pad = n / 2, bins = n / 2 + 1, mels = g.audio_mel_bins;
    auto *padded = reinterpret_cast<float *>(work); // [pad | length | pad]
    work += scratch_bytes(shape.length + n);
    auto *log_mel = reinterpret_cast<float *>(work); // [frames x mels]
    work += scratch_bytes(shape.frames * mels);
    auto *frame = reinterpret_cast<float *>(work); // [n] windowed
    work += scratch_bytes(n);
    auto *spectrum = reinterpret_cast<kiss_fft_cpx *>(work); // [bins] its transform
    work += scratch_bytes<kiss_fft_cpx>(bins);
    auto *power = reinterpret_cast<double *>(work); // [bins]

    float *signal = padded + pad;
    std::memcpy(signal, samples, shape.samples * sizeof(float));
    std::fill(signal + shape.samples, signal + shape.length, 0.0f);
    for (std::size_t k = 1; k <= pad; ++k) { // reflect padding, as torch.stft(center=True)
        padded[pad - k] = signal[k];
        signal[shape.length - 1 + k] = signal[shape.length - 1 - k];
    }

    double peak = -INFINITY;
    for (std::size_t f = 0; f != shape.frames; ++f) {
        float const *source = padded + f * g.audio_hop;
        for (std::size_t k = 0; k != n; ++k) frame[k] = source[k] * hann[k];
        kiss_fftr(fft, frame, spectrum);
        for (std::size_t m = 0; m != bins; ++m)
            power[m] = double(spectrum[m].r) * spectrum[m].r + double(spectrum[m].i) * spectrum[m].i;
        for (std::size_t b = 0; b != mels; ++b) {
            float const *filter = mel_filters + b * bins;
            double mel = 0;
            for (std::size_t m = 0; m != bins; ++m) mel += double(filter[m]) * power[m];
            double const value = std::log10(std::max(mel, 1e-10));
            peak = std::max(peak, value);
            log_mel[f * mels + b] = float(value);
        }
    }
    float const floor = float(peak - 8.0);
    for (std::size_t i = 0; i != shape.frames * mels; ++i) log_mel[i] = (std::max(log_mel[i], floor) + 4.0f) / 4.0f;

    // Patches of `frames_per_patch` frames, index `f * mel_bins + m`; a last incomplete one zero-padded.
    std::size_t const per = g.audio_frames_per_patch, input = per * mels;
    for (std::size_t patch = 0; patch != shape.patches; ++patch)
        for (std::size_t f = 0; f != per; ++f) {
            std::size_t const source = patch * per + f;
            float *target = patches + patch * input + f * mels;
            if (source < shape.frames) std::memcpy(target, log_mel + source * mels, mels * sizeof(float));
            else std::fill(target, target + mels, 0.0f);
        }
}

} // namespace uform::backend
