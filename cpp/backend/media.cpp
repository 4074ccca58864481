// The media verbs of the RAM residency: the image and audio front-ends of MODEL.md over decoded input (pixels and
// samples), feeding the same trunk as text through pre-embedded tokens (see encode.hpp).
//
// `c/` has already refused a checkpoint without the modality, with its own `unsupported` message. The file verbs
// open every file first, so that a missing, unreadable or empty file answers as it will once decoders exist
// (`not-found`, `io`, `corrupt`); past that, decoding lands with the media issue, and they answer `unsupported`.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <numbers>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../c/checks.hpp"
#include "encode.hpp"

namespace uform::backend {
namespace {

using ram::backend_fail;
using ram::scratch_bytes;

/* ---------------------------------------------------------------------------------------------------------- */
/* Files                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/// Opens every file of a path tape, in order: the first missing, unreadable or empty one fails the call.
uform_status_t check_files(tape_view_t<char> const &paths, char const **message) noexcept {
    for (std::size_t i = 0; i != paths.count; ++i) {
        char path[max_path_bytes_k + 1];
        std::span<char const> const bytes = paths.item(i);
        path_terminated(bytes.data(), bytes.size(), path);
        int const descriptor = ::open(path, O_RDONLY | O_CLOEXEC);
        if (descriptor < 0)
            return errno == ENOENT || errno == ENOTDIR
                       ? backend_fail(message, uform_status_not_found_k, "a media file does not exist")
                       : backend_fail(message, uform_status_io_k, "a media file could not be opened");
        struct stat status{};
        bool const stated = ::fstat(descriptor, &status) == 0;
        ::close(descriptor);
        if (!stated || S_ISDIR(status.st_mode))
            return backend_fail(message, uform_status_io_k, "a media file could not be read");
        if (S_ISREG(status.st_mode) && status.st_size == 0)
            return backend_fail(message, uform_status_corrupt_k, "a media file is empty");
    }
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* The shared shape of a front-end's call                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

/// Where a front-end's call keeps its work in the prefix of the call's scratch.
struct front_layout_t {
    std::size_t patches = 0;   // [tokens x input] F32: the vectors entering the embedding linear
    std::size_t embedded = 0;  // [tokens x hidden] F32: the trunk's input
    std::size_t positions = 0; // [tokens x 3] u32, or none for `(i, i, i)`
    std::size_t gemm = 0;      // the embedding GEMM's per-thread scratch
    std::size_t work = 0;      // one slot per worker of `work_slot` bytes
    std::size_t work_slot = 0; //
    std::size_t total = 0;     // bytes in all
};

front_layout_t layout_front(std::size_t tokens, std::size_t input, std::size_t hidden, bool positions,
                            std::size_t workers, std::size_t work_slot) noexcept {
    front_layout_t layout;
    std::size_t at = 0;
    layout.patches = at, at += scratch_bytes(tokens * input);
    layout.embedded = at, at += scratch_bytes(tokens * hidden);
    layout.positions = at, at += positions ? scratch_bytes<std::uint32_t>(tokens * 3) : 0;
    layout.gemm = at, at += scratch_bytes(workers * ram::gemm_scratch_floats(input));
    layout.work_slot = (work_slot + 63) / 64 * 64;
    layout.work = at, at += workers * layout.work_slot;
    layout.total = at;
    return layout;
}

/// `embedded = patches * W^T + bias` over the call's threads: the patch vectors and the weights rounded to BF16 (the
/// GEMM rounds A as it packs it; the panels hold BF16 values), the products summed in F32, the bias added in F32.
void embed_patches(model_t const &model, front_end_t const &front, call_t &call, std::byte *prefix,
                   front_layout_t const &layout, std::size_t tokens) noexcept {
    std::size_t const input = front.weight.depth(), hidden = front.weight.columns();
    auto *patches = reinterpret_cast<float const *>(prefix + layout.patches);
    auto *embedded = reinterpret_cast<float *>(prefix + layout.embedded);
    ram::parallel_t const parallel = ram::parallel_of(call);
    ram::gemm(*model.weights.kernels, parallel, patches, input, tokens, front.weight.view(), embedded, hidden, 0,
              reinterpret_cast<float *>(prefix + layout.gemm));
    call.parallel_for((tokens + 63) / 64, [&](std::size_t task, std::size_t) noexcept {
        for (std::size_t row = task * 64, end = std::min(tokens, row + 64); row != end; ++row)
            for (std::size_t column = 0; column != hidden; ++column)
                embedded[row * hidden + column] += front.bias[column];
    });
}

/// Points a batch at the prefix's embedded rows (and positions, when laid out).
void complete_batch(ram::text_batch_t &batch, std::byte *prefix, front_layout_t const &layout, std::size_t hidden,
                    bool positions) noexcept {
    batch.embedded = reinterpret_cast<float const *>(prefix + layout.embedded);
    batch.embedded_stride = hidden;
    batch.positions = positions ? reinterpret_cast<std::uint32_t const *>(prefix + layout.positions) : nullptr;
}

/// Token offsets of `count` items in the arena: the batch's `offsets`, which the output tapes copy.
std::size_t *allocate_offsets(call_t &call, std::size_t count) noexcept {
    return static_cast<std::size_t *>(call.allocate((count + 1) * sizeof(std::size_t)));
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Images                                                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

/// MODEL.md's grid of an `height x width` image with patch side `p` under the budget `max_patches`.
void image_grid(std::size_t height, std::size_t width, std::size_t p, std::size_t max_patches, std::size_t &rows,
                std::size_t &columns) noexcept {
    double const h = double(height) / double(p), w = double(width) / double(p);
    double const s = std::sqrt(double(max_patches) / (h * w));
    double const gh = std::floor(h * s + 1e-6), gw = std::floor(w * s + 1e-6);
    rows = gh < 1 ? 1 : std::size_t(gh);
    columns = std::min(gw < 1 ? std::size_t(0) : std::size_t(gw), max_patches / rows);
    columns = std::max<std::size_t>(columns, 1);
}

/// Taps per output of the antialiased triangle filter from `in` samples to `out`.
std::size_t resize_taps(std::size_t in, std::size_t out) noexcept {
    double const scale = double(in) / double(out);
    return std::size_t(std::ceil(2 * std::max(scale, 1.0))) + 2;
}

/// The filter of torch's `interpolate(mode="bilinear", antialias=True, align_corners=False)` and PIL's BILINEAR:
/// per output `i`, the first input `first[i]`, `count[i]` taps and their weights (`taps` apart), normalised.
void resize_weights(std::size_t in, std::size_t out, std::size_t taps, std::size_t *first, std::size_t *count,
                    float *weights) noexcept {
    double const scale = double(in) / double(out);
    double const support = scale >= 1 ? scale : 1.0, inverse = scale >= 1 ? 1 / scale : 1.0;
    for (std::size_t i = 0; i != out; ++i) {
        double const center = scale * (double(i) + 0.5);
        auto const low = std::max<std::int64_t>(std::int64_t(center - support + 0.5), 0);
        auto const high = std::min<std::int64_t>(std::int64_t(center + support + 0.5), std::int64_t(in));
        std::size_t const size = std::min<std::size_t>(high > low ? std::size_t(high - low) : 0, taps);
        float *row = weights + i * taps;
        double total = 0;
        for (std::size_t j = 0; j != size; ++j) {
            double const x = (double(j) + double(low) - center + 0.5) * inverse;
            double const w = std::max(0.0, 1.0 - std::fabs(x));
            row[j] = float(w);
            total += w;
        }
        if (total != 0)
            for (std::size_t j = 0; j != size; ++j) row[j] = float(double(row[j]) / total);
        first[i] = std::size_t(low);
        count[i] = size;
    }
}

/// Bytes of one image's resize work: both passes' buffers and both filters.
std::size_t image_work_bytes(std::size_t height, std::size_t width, std::size_t out_height,
                             std::size_t out_width) noexcept {
    std::size_t const horizontal = resize_taps(width, out_width), vertical = resize_taps(height, out_height);
    return scratch_bytes(height * out_width * 3) + scratch_bytes(out_height * out_width * 3) +
           scratch_bytes(out_width * horizontal) + scratch_bytes(out_height * vertical) +
           scratch_bytes<std::size_t>(2 * out_width) + scratch_bytes<std::size_t>(2 * out_height);
}

/// Resizes one RGB image to `gh * p x gw * p` and writes its normalised patch vectors and `(0, row, column)`
/// positions, row-major over the grid.
void image_patches(geometry_t const &g, std::uint8_t const *pixels, std::size_t height, std::size_t width,
                   std::size_t rows, std::size_t columns, std::byte *work, float *patches,
                   std::uint32_t *positions) noexcept {
    std::size_t const p = g.image_patch_side, out_height = rows * p, out_width = columns * p;
    std::size_t const horizontal = resize_taps(width, out_width), vertical = resize_taps(height, out_height);
    auto *wide = reinterpret_cast<float *>(work); // [height x out_width x 3]
    work += scratch_bytes(height * out_width * 3);
    auto *resized = reinterpret_cast<float *>(work); // [out_height x out_width x 3]
    work += scratch_bytes(out_height * out_width * 3);
    auto *horizontal_weights = reinterpret_cast<float *>(work);
    work += scratch_bytes(out_width * horizontal);
    auto *vertical_weights = reinterpret_cast<float *>(work);
    work += scratch_bytes(out_height * vertical);
    auto *horizontal_taps = reinterpret_cast<std::size_t *>(work);
    work += scratch_bytes<std::size_t>(2 * out_width);
    auto *vertical_taps = reinterpret_cast<std::size_t *>(work);
    resize_weights(width, out_width, horizontal, horizontal_taps, horizontal_taps + out_width, horizontal_weights);
    resize_weights(height, out_height, vertical, vertical_taps, vertical_taps + out_height, vertical_weights);

    // Along each row, then along each column, on the float values of the 8-bit pixels.
    for (std::size_t y = 0; y != height; ++y)
        for (std::size_t x = 0; x != out_width; ++x) {
            float const *w = horizontal_weights + x * horizontal;
            std::uint8_t const *source = pixels + (y * width + horizontal_taps[x]) * 3;
            double sum[3] = {0, 0, 0};
            for (std::size_t t = 0; t != horizontal_taps[out_width + x]; ++t)
                for (std::size_t c = 0; c != 3; ++c) sum[c] += double(w[t]) * double(source[t * 3 + c]);
            for (std::size_t c = 0; c != 3; ++c) wide[(y * out_width + x) * 3 + c] = float(sum[c]);
        }
    for (std::size_t y = 0; y != out_height; ++y) {
        float const *w = vertical_weights + y * vertical;
        std::size_t const first = vertical_taps[y], taps = vertical_taps[out_height + y];
        for (std::size_t x = 0; x != out_width; ++x)
            for (std::size_t c = 0; c != 3; ++c) {
                double sum = 0;
                for (std::size_t t = 0; t != taps; ++t)
                    sum += double(w[t]) * double(wide[((first + t) * out_width + x) * 3 + c]);
                resized[(y * out_width + x) * 3 + c] = float(sum);
            }
    }
    // Patches: index `(py * p + px) * channels + c`, scaled to [0, 1], then `(x - mean[c]) / std[c]`.
    std::size_t const input = p * p * 3;
    for (std::size_t row = 0; row != rows; ++row)
        for (std::size_t column = 0; column != columns; ++column) {
            std::size_t const token = row * columns + column;
            float *patch = patches + token * input;
            for (std::size_t py = 0; py != p; ++py)
                for (std::size_t px = 0; px != p; ++px)
                    for (std::size_t c = 0; c != 3; ++c) {
                        float const value = resized[((row * p + py) * out_width + column * p + px) * 3 + c] / 255.0f;
                        patch[(py * p + px) * 3 + c] = (value - g.image_mean[c]) / g.image_std[c];
                    }
            positions[token * 3 + 0] = 0;
            positions[token * 3 + 1] = std::uint32_t(row);
            positions[token * 3 + 2] = std::uint32_t(column);
        }
}

struct pixels_job_t {
    model_t const *model;
    call_t *call;
    tape_view_t<std::uint8_t> pixels;
    std::size_t const *heights, *widths;
    std::size_t max_patches;
    std::size_t tokens;
    front_layout_t layout;
};

uform_status_t prepare_pixels(void *context, std::byte *prefix, ram::text_batch_t &batch, char const **) noexcept {
    auto &job = *static_cast<pixels_job_t *>(context);
    geometry_t const &g = job.model->weights.geometry;
    std::size_t const input = g.image_patch_side * g.image_patch_side * 3;
    auto *patches = reinterpret_cast<float *>(prefix + job.layout.patches);
    auto *positions = reinterpret_cast<std::uint32_t *>(prefix + job.layout.positions);
    job.call->parallel_for(batch.count, [&](std::size_t i, std::size_t worker) noexcept {
        std::size_t rows, columns;
        image_grid(job.heights[i], job.widths[i], g.image_patch_side, job.max_patches, rows, columns);
        std::size_t const token = batch.offsets[i];
        image_patches(g, job.pixels.item(i).data(), job.heights[i], job.widths[i], rows, columns,
                      prefix + job.layout.work + worker * job.layout.work_slot, patches + token * input,
                      positions + token * 3);
    });
    embed_patches(*job.model, job.model->image, *job.call, prefix, job.layout, job.tokens);
    complete_batch(batch, prefix, job.layout, g.hidden, true);
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Audio                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/// What one recording becomes: its samples at the model's rate, zero-extended, its frames and its patches.
struct audio_shape_t {
    std::size_t resampled = 0; // samples at the model's rate
    std::size_t length = 0;    // after zero-extension to `n_fft / 2 + 1`
    std::size_t frames = 0;    // log-mel frames, the last STFT frame dropped
    std::size_t patches = 0;   // within the budget
    bool truncated = false;
};

audio_shape_t audio_shape(geometry_t const &g, std::size_t samples, std::size_t sample_rate,
                          std::size_t max_patches) noexcept {
    audio_shape_t shape;
    if (samples == 0) return shape; // an empty item: no tokens
    shape.resampled =
        sample_rate == g.audio_sample_rate
            ? samples
            : std::size_t(std::llround(double(samples) * double(g.audio_sample_rate) / double(sample_rate)));
    shape.length = std::max(shape.resampled, g.audio_n_fft / 2 + 1);
    shape.frames = shape.length / g.audio_hop; // 1 + length / hop centred frames, less the last one
    std::size_t const patches = (shape.frames + g.audio_frames_per_patch - 1) / g.audio_frames_per_patch;
    shape.patches = std::min(patches, max_patches);
    shape.truncated = patches > max_patches;
    return shape;
}

std::size_t audio_work_bytes(geometry_t const &g, audio_shape_t const &shape) noexcept {
    std::size_t const bins = g.audio_n_fft / 2 + 1;
    return scratch_bytes(shape.length + g.audio_n_fft) + scratch_bytes(shape.frames * g.audio_mel_bins) +
           scratch_bytes<double>(g.audio_n_fft + bins);
}

/// The zeroth-order modified Bessel function of the first kind, by its series.
double bessel_i0(double x) noexcept {
    double const quarter = x * x / 4;
    double sum = 1, term = 1;
    for (int k = 1; k != 64 && term > sum * 1e-17; ++k) {
        term *= quarter / (double(k) * double(k));
        sum += term;
    }
    return sum;
}

/// Resamples `count` samples from `from` Hz to `to` Hz into `out[0, produced)`: a Kaiser-windowed sinc (32 taps at
/// the lower rate, cutoff 0.97 of its Nyquist, beta 9), as libswresample's defaults; not bit-exact with it.
void resample(float const *in, std::size_t count, std::size_t from, std::size_t to, float *out,
              std::size_t produced) noexcept {
    double const ratio = double(to) / double(from);
    double const factor = std::min(1.0, ratio), cutoff = 0.97 * factor, half = 16.0 / factor;
    double const normal = bessel_i0(9.0);
    for (std::size_t k = 0; k != produced; ++k) {
        double const t = double(k) / ratio;
        auto const low = std::max<std::int64_t>(std::int64_t(std::ceil(t - half)), 0);
        auto const high = std::min<std::int64_t>(std::int64_t(std::floor(t + half)), std::int64_t(count) - 1);
        double sum = 0;
        for (std::int64_t j = low; j <= high; ++j) {
            double const d = t - double(j), u = d / half;
            if (u <= -1 || u >= 1) continue;
            double const x = std::numbers::pi * cutoff * d;
            double const sinc = x == 0 ? 1.0 : std::sin(x) / x;
            sum += double(in[j]) * cutoff * sinc * bessel_i0(9.0 * std::sqrt(1 - u * u)) / normal;
        }
        out[k] = float(sum);
    }
}

/// One recording's log-mel patches (Whisper's recipe over the whole clip, then patches) into `patches`.
void audio_patches(model_t const &model, float const *samples, std::size_t count, std::size_t sample_rate,
                   audio_shape_t const &shape, std::byte *work, float *patches) noexcept {
    geometry_t const &g = model.weights.geometry;
    std::size_t const n = g.audio_n_fft, pad = n / 2, bins = n / 2 + 1, mels = g.audio_mel_bins;
    auto *padded = reinterpret_cast<float *>(work); // [pad | length | pad]
    work += scratch_bytes(shape.length + n);
    auto *log_mel = reinterpret_cast<float *>(work); // [frames x mels]
    work += scratch_bytes(shape.frames * mels);
    auto *frame = reinterpret_cast<double *>(work); // [n], then the power spectrum [bins]
    double *power = frame + n;

    float *signal = padded + pad;
    if (sample_rate == g.audio_sample_rate) std::memcpy(signal, samples, count * sizeof(float));
    else resample(samples, count, sample_rate, g.audio_sample_rate, signal, shape.resampled);
    std::fill(signal + shape.resampled, signal + shape.length, 0.0f);
    for (std::size_t k = 1; k <= pad; ++k) { // reflect padding, as torch.stft(center=True)
        padded[pad - k] = signal[k];
        signal[shape.length - 1 + k] = signal[shape.length - 1 - k];
    }

    double peak = -INFINITY;
    for (std::size_t f = 0; f != shape.frames; ++f) {
        float const *source = padded + f * g.audio_hop;
        for (std::size_t k = 0; k != n; ++k) frame[k] = double(source[k]) * double(model.hann[k]);
        for (std::size_t m = 0; m != bins; ++m) { // |X_m|^2 by the DFT, twiddles indexed (m k) mod n
            double re = 0, im = 0;
            for (std::size_t k = 0, index = 0; k != n; ++k, index = index + m >= n ? index + m - n : index + m) {
                re += frame[k] * model.twiddle_cos[index];
                im -= frame[k] * model.twiddle_sin[index];
            }
            power[m] = re * re + im * im;
        }
        for (std::size_t b = 0; b != mels; ++b) {
            float const *filter = model.mel_filters.data() + b * bins;
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

struct samples_job_t {
    model_t const *model;
    call_t *call;
    tape_view_t<float> samples;
    std::size_t sample_rate, max_patches, tokens;
    front_layout_t layout;
};

uform_status_t prepare_samples(void *context, std::byte *prefix, ram::text_batch_t &batch, char const **) noexcept {
    auto &job = *static_cast<samples_job_t *>(context);
    geometry_t const &g = job.model->weights.geometry;
    std::size_t const input = g.audio_frames_per_patch * g.audio_mel_bins;
    auto *patches = reinterpret_cast<float *>(prefix + job.layout.patches);
    job.call->parallel_for(batch.count, [&](std::size_t i, std::size_t worker) noexcept {
        std::span<float const> const values = job.samples.item(i);
        audio_shape_t const shape = audio_shape(g, values.size(), job.sample_rate, job.max_patches);
        if (shape.patches == 0) return;
        audio_patches(*job.model, values.data(), values.size(), job.sample_rate, shape,
                      prefix + job.layout.work + worker * job.layout.work_slot, patches + batch.offsets[i] * input);
    });
    embed_patches(*job.model, job.model->audio, *job.call, prefix, job.layout, job.tokens);
    complete_batch(batch, prefix, job.layout, g.hidden, false); // audio positions are text's (i, i, i)
    return uform_status_ok_k;
}

} // namespace

uform_status_t image_encode(model_t const &, call_t &, tape_view_t<char> paths, std::size_t, std::size_t,
                            encode_request_t, uform_encoded_t &, uform_image_encode_stats_t &,
                            char const **message) noexcept {
    if (uform_status_t status = check_files(paths, message)) return status;
    return backend_fail(message, uform_status_unsupported_k,
                        "the RAM residency does not decode images yet: decoding lands with the media issue");
}

uform_status_t image_encode_pixels(model_t const &model, call_t &call, tape_view_t<std::uint8_t> pixels,
                                   std::size_t const *heights, std::size_t const *widths, std::size_t max_patches,
                                   encode_request_t request, uform_encoded_t &encoded,
                                   uform_image_encode_stats_t &stats, char const **message) noexcept {
    geometry_t const &g = model.weights.geometry;
    if (model.image.weight.columns() == 0 || g.image_channels != 3 || g.image_patch_side == 0 || max_patches == 0)
        return backend_fail(message, uform_status_unsupported_k, "the model's image front-end is not RGB patches");
    std::size_t const count = pixels.count;
    std::size_t *offsets = allocate_offsets(call, count);
    if (offsets == nullptr) return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t work = 0, pixel_count = 0;
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) {
        std::size_t rows, columns;
        image_grid(heights[i], widths[i], g.image_patch_side, max_patches, rows, columns);
        offsets[i + 1] = offsets[i] + rows * columns;
        work = std::max(
            work, image_work_bytes(heights[i], widths[i], rows * g.image_patch_side, columns * g.image_patch_side));
        pixel_count += heights[i] * widths[i];
    }
    std::size_t const tokens = offsets[count];
    pixels_job_t job{&model, &call, pixels, heights, widths, max_patches, tokens, {}};
    job.layout = layout_front(tokens, g.image_patch_side * g.image_patch_side * 3, g.hidden, true, call.width(), work);
    ram::encode_job_t encode;
    encode.batch = {nullptr, offsets, count, false};
    encode.prefix_bytes = job.layout.total;
    encode.prepare = prepare_pixels;
    encode.prepare_context = &job;
    if (uform_status_t status = ram::encode_tokens(model, call, encode, request, encoded, message)) return status;
    stats.items = count;
    stats.tokens = tokens;
    stats.pixels = pixel_count;
    return uform_status_ok_k;
}

uform_status_t video_encode(model_t const &, call_t &, tape_view_t<char> paths, std::size_t, std::size_t,
                            encode_request_t, uform_encoded_t &, uform_video_encode_stats_t &,
                            char const **message) noexcept {
    if (uform_status_t status = check_files(paths, message)) return status;
    return backend_fail(message, uform_status_unsupported_k,
                        "the RAM residency does not decode video yet: decoding lands with the media issue");
}

uform_status_t audio_encode(model_t const &, call_t &, tape_view_t<char> paths, std::size_t, encode_request_t,
                            uform_encoded_t &, uform_audio_encode_stats_t &, char const **message) noexcept {
    if (uform_status_t status = check_files(paths, message)) return status;
    return backend_fail(message, uform_status_unsupported_k,
                        "the RAM residency does not decode audio yet: decoding lands with the media issue");
}

uform_status_t audio_encode_samples(model_t const &model, call_t &call, tape_view_t<float> samples,
                                    std::size_t sample_rate, std::size_t max_patches, encode_request_t request,
                                    uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                                    char const **message) noexcept {
    geometry_t const &g = model.weights.geometry;
    if (model.audio.weight.columns() == 0 || model.mel_filters.empty() || g.audio_hop == 0 ||
        g.audio_frames_per_patch == 0 || g.audio_n_fft < 4)
        return backend_fail(message, uform_status_unsupported_k, "the model's audio front-end is incomplete");
    std::size_t const count = samples.count;
    std::size_t *offsets = allocate_offsets(call, count);
    if (offsets == nullptr) return backend_fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t work = 0, truncated = 0;
    double seconds = 0;
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) {
        audio_shape_t const shape = audio_shape(g, samples.item_size(i), sample_rate, max_patches);
        offsets[i + 1] = offsets[i] + shape.patches;
        if (shape.patches) work = std::max(work, audio_work_bytes(g, shape));
        truncated += shape.truncated;
        seconds += double(samples.item_size(i)) / double(sample_rate);
    }
    std::size_t const tokens = offsets[count];
    samples_job_t job{&model, &call, samples, sample_rate, max_patches, tokens, {}};
    job.layout = layout_front(tokens, g.audio_frames_per_patch * g.audio_mel_bins, g.hidden, false, call.width(), work);
    ram::encode_job_t encode;
    encode.batch = {nullptr, offsets, count, false};
    encode.prefix_bytes = job.layout.total;
    encode.prepare = prepare_samples;
    encode.prepare_context = &job;
    if (uform_status_t status = ram::encode_tokens(model, call, encode, request, encoded, message)) return status;
    stats.items = count;
    stats.tokens = tokens;
    stats.seconds = seconds;
    stats.truncated_items = truncated;
    return uform_status_ok_k;
}

} // namespace uform::backend
