// The media verbs of the RAM residency: the image, video and audio front-ends of MODEL.md over decoded input, feeding
// the same trunk as text through pre-embedded tokens (see encode.hpp). Files are decoded by cpp/media (FFmpeg) on the
// call's threads, one item per task, before the front-ends run; the first item that fails (in order) fails the call
// and is named in the stats.
//
// `c/` has already refused a checkpoint without the modality, with its own `unsupported` message.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "../../c/checks.hpp"
#include "../media/audio_decode.hpp"
#include "../media/video_decode.hpp"
#include "encode.hpp"

namespace uform::backend {
namespace {

using ram::scratch_bytes;

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
void complete_batch(ram::token_batch_t &batch, std::byte *prefix, front_layout_t const &layout, std::size_t hidden,
                    bool positions) noexcept {
    batch.embedded = reinterpret_cast<float const *>(prefix + layout.embedded);
    batch.embedded_stride = hidden;
    batch.positions = positions ? reinterpret_cast<std::uint32_t const *>(prefix + layout.positions) : nullptr;
}

/// Runs the trunk over `count` items whose tokens `offsets` count, embedded by `prepare(context, ...)` into the prefix
/// of the call's scratch that `layout` lays out.
uform_status_t encode_front(model_t const &model, call_t &call, std::size_t const *offsets, std::size_t count,
                            front_layout_t const &layout, ram::prepare_fn_t prepare, void *context,
                            encode_request_t request, uform_encoded_t &encoded, char const **message) noexcept {
    ram::encode_job_t encode;
    encode.batch = {nullptr, offsets, count, false};
    encode.prefix_bytes = layout.total;
    encode.prepare = prepare;
    encode.prepare_context = context;
    return ram::encode_tokens(model, call, encode, request, encoded, message);
}

/// Token offsets of `count` items in the arena: the batch's `offsets`, which the output tapes copy.
std::size_t *allocate_offsets(call_t &call, std::size_t count) noexcept {
    return static_cast<std::size_t *>(call.allocate((count + 1) * sizeof(std::size_t)));
}

/// `count` values in the arena, which a steady loop of calls reuses without allocating; null when out of memory.
template <typename value_type_>
value_type_ *arena_array(call_t &call, std::size_t count) noexcept {
    if (count > SIZE_MAX / sizeof(value_type_)) return nullptr;
    return static_cast<value_type_ *>(call.allocate(count * sizeof(value_type_)));
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

/// Resizes one RGB image to `gh * p x gw * p` and writes its normalised patch vectors, `stride` floats apart, and
/// (when `positions` is not null) their `(0, row, column)` positions, row-major over the grid.
void image_patches(geometry_t const &g, std::uint8_t const *pixels, std::size_t height, std::size_t width,
                   std::size_t rows, std::size_t columns, std::byte *work, float *patches, std::size_t stride,
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
    for (std::size_t row = 0; row != rows; ++row)
        for (std::size_t column = 0; column != columns; ++column) {
            std::size_t const token = row * columns + column;
            float *patch = patches + token * stride;
            for (std::size_t py = 0; py != p; ++py)
                for (std::size_t px = 0; px != p; ++px)
                    for (std::size_t c = 0; c != 3; ++c) {
                        float const value = resized[((row * p + py) * out_width + column * p + px) * 3 + c] / 255.0f;
                        patch[(py * p + px) * 3 + c] = (value - g.image_mean[c]) / g.image_std[c];
                    }
            if (positions == nullptr) continue;
            positions[token * 3 + 0] = 0;
            positions[token * 3 + 1] = std::uint32_t(row);
            positions[token * 3 + 2] = std::uint32_t(column);
        }
}

/// What the image front-end reads per item: the RGB bytes and the size of each image.
struct images_t {
    std::uint8_t const **pixels = nullptr;
    std::size_t const *heights = nullptr, *widths = nullptr;
    std::size_t count = 0;
};

struct images_job_t {
    model_t const *model;
    call_t *call;
    images_t const *images;
    std::size_t max_patches;
    std::size_t tokens;
    front_layout_t layout;
};

uform_status_t prepare_images(void *context, std::byte *prefix, ram::token_batch_t &batch, char const **) noexcept {
    auto &job = *static_cast<images_job_t *>(context);
    geometry_t const &g = job.model->weights.geometry;
    std::size_t const input = g.image_patch_side * g.image_patch_side * 3;
    auto *patches = reinterpret_cast<float *>(prefix + job.layout.patches);
    auto *positions = reinterpret_cast<std::uint32_t *>(prefix + job.layout.positions);
    images_t const &images = *job.images;
    job.call->parallel_for(batch.count, [&](std::size_t i, std::size_t worker) noexcept {
        std::size_t rows, columns;
        image_grid(images.heights[i], images.widths[i], g.image_patch_side, job.max_patches, rows, columns);
        std::size_t const token = batch.offsets[i];
        image_patches(g, images.pixels[i], images.heights[i], images.widths[i], rows, columns,
                      prefix + job.layout.work + worker * job.layout.work_slot, patches + token * input, input,
                      positions + token * 3);
    });
    embed_patches(*job.model, job.model->image, *job.call, prefix, job.layout, job.tokens);
    complete_batch(batch, prefix, job.layout, g.hidden, true);
    return uform_status_ok_k;
}

/// Whether the model's image geometry is one the front-ends handle: RGB patches of a nonzero side.
bool rgb_patches(model_t const &model, front_end_t const &front) noexcept {
    geometry_t const &g = model.weights.geometry;
    return front.weight.columns() != 0 && g.image_channels == 3 && g.image_patch_side != 0;
}

/// Encodes RGB images of any sizes, packed as segments of one trunk call.
uform_status_t encode_images(model_t const &model, call_t &call, images_t const &images, std::size_t max_patches,
                             encode_request_t request, uform_encoded_t &encoded, uform_image_encode_stats_t &stats,
                             char const **message) noexcept {
    geometry_t const &g = model.weights.geometry;
    if (!rgb_patches(model, model.image) || max_patches == 0)
        return fail(message, uform_status_unsupported_k, "the model's image front-end is not RGB patches");
    std::size_t const count = images.count;
    std::size_t *offsets = allocate_offsets(call, count);
    if (offsets == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t work = 0, pixel_count = 0;
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) {
        std::size_t rows, columns;
        image_grid(images.heights[i], images.widths[i], g.image_patch_side, max_patches, rows, columns);
        offsets[i + 1] = offsets[i] + rows * columns;
        work = std::max(work, image_work_bytes(images.heights[i], images.widths[i], rows * g.image_patch_side,
                                               columns * g.image_patch_side));
        pixel_count += images.heights[i] * images.widths[i];
    }
    std::size_t const tokens = offsets[count];
    images_job_t job{&model, &call, &images, max_patches, tokens, {}};
    job.layout = layout_front(tokens, g.image_patch_side * g.image_patch_side * 3, g.hidden, true, call.width(), work);
    if (uform_status_t status =
            encode_front(model, call, offsets, count, job.layout, prepare_images, &job, request, encoded, message))
        return status;
    stats.items = count;
    stats.tokens = tokens;
    stats.pixels = pixel_count;
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Files                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/// Runs `decode(i, path, message)` for every file of a path tape on the call's threads, one item per task. The first
/// item that fails, in order, fails the call: its status and message are answered and its index lands in `failed`.
template <typename decode_type_>
uform_status_t decode_files(call_t &call, tape_view_t<char> const &paths, decode_type_ &&decode, std::size_t &failed,
                            char const **message) noexcept {
    auto *statuses = arena_array<uform_status_t>(call, paths.count);
    auto *messages = arena_array<char const *>(call, paths.count);
    if (statuses == nullptr || messages == nullptr)
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    call.parallel_for(paths.count, [&](std::size_t i, std::size_t) noexcept {
        char path[max_path_bytes_k + 1];
        std::span<char const> const bytes = paths.item(i);
        path_terminated(bytes.data(), bytes.size(), path);
        statuses[i] = decode(i, static_cast<char const *>(path), &messages[i]);
    });
    for (std::size_t i = 0; i != paths.count; ++i)
        if (statuses[i] != uform_status_ok_k) {
            failed = i;
            return fail(message, statuses[i], messages[i]);
        }
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Video                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/// Decoded pixels per video frame at most: the image verbs' default limit.
constexpr std::size_t video_max_pixels_k = 100'000'000;

/// One clip's sampled frames and the grid of its first frame.
struct clip_t {
    std::vector<media::rgb_image_t> frames;
    std::size_t rows = 0, columns = 0;
};

struct video_job_t {
    model_t const *model;
    call_t *call;
    clip_t const *clips;
    std::size_t tokens;
    front_layout_t layout;
};

/// Writes each clip's tubelet vectors (frame `f` of a tubelet at `f * p * p * 3`) and `(tubelet, row, column)`
/// positions; a last incomplete tubelet repeats its final frame.
uform_status_t prepare_video(void *context, std::byte *prefix, ram::token_batch_t &batch, char const **) noexcept {
    auto &job = *static_cast<video_job_t *>(context);
    geometry_t const &g = job.model->weights.geometry;
    std::size_t const frame_input = g.image_patch_side * g.image_patch_side * 3, tubelet = g.video_tubelet_frames;
    std::size_t const input = tubelet * frame_input;
    auto *patches = reinterpret_cast<float *>(prefix + job.layout.patches);
    auto *positions = reinterpret_cast<std::uint32_t *>(prefix + job.layout.positions);
    job.call->parallel_for(batch.count, [&](std::size_t i, std::size_t worker) noexcept {
        clip_t const &clip = job.clips[i];
        std::size_t const grid = clip.rows * clip.columns, tubelets = (clip.frames.size() + tubelet - 1) / tubelet;
        std::byte *work = prefix + job.layout.work + worker * job.layout.work_slot;
        for (std::size_t t = 0; t != tubelets; ++t) {
            std::size_t const token = batch.offsets[i] + t * grid;
            for (std::size_t f = 0; f != tubelet; ++f) {
                media::rgb_image_t const &frame = clip.frames[std::min(t * tubelet + f, clip.frames.size() - 1)];
                image_patches(g, frame.pixels.data(), frame.height, frame.width, clip.rows, clip.columns, work,
                              patches + token * input + f * frame_input, input, nullptr);
            }
            for (std::size_t cell = 0; cell != grid; ++cell) {
                positions[(token + cell) * 3 + 0] = std::uint32_t(t);
                positions[(token + cell) * 3 + 1] = std::uint32_t(cell / clip.columns);
                positions[(token + cell) * 3 + 2] = std::uint32_t(cell % clip.columns);
            }
        }
    });
    embed_patches(*job.model, job.model->video, *job.call, prefix, job.layout, job.tokens);
    complete_batch(batch, prefix, job.layout, g.hidden, true);
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Audio                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

/// What one recording becomes: its samples at the model's rate, zero-extended, its frames and its patches.
struct audio_shape_t {
    std::size_t samples = 0; // at the model's rate
    std::size_t length = 0;  // after zero-extension to `n_fft / 2 + 1`
    std::size_t frames = 0;  // log-mel frames, the last STFT frame dropped
    std::size_t patches = 0; // within the budget
    bool truncated = false;
};

audio_shape_t audio_shape(geometry_t const &g, std::size_t samples, std::size_t max_patches) noexcept {
    audio_shape_t shape;
    if (samples == 0) return shape; // an empty item: no tokens
    shape.samples = samples;
    shape.length = std::max(samples, g.audio_n_fft / 2 + 1);
    shape.frames = shape.length / g.audio_hop; // 1 + length / hop centred frames, less the last one
    std::size_t const patches = (shape.frames + g.audio_frames_per_patch - 1) / g.audio_frames_per_patch;
    shape.patches = std::min(patches, max_patches);
    shape.truncated = patches > max_patches;
    return shape;
}

std::size_t audio_work_bytes(geometry_t const &g, audio_shape_t const &shape) noexcept {
    std::size_t const bins = g.audio_n_fft / 2 + 1;
    return scratch_bytes(shape.length + g.audio_n_fft) + scratch_bytes(shape.frames * g.audio_mel_bins) +
           scratch_bytes(g.audio_n_fft) + scratch_bytes<kiss_fft_cpx>(bins) + scratch_bytes<double>(bins);
}

/// One recording's log-mel patches (Whisper's recipe over the whole clip, then patches) into `patches`, its samples
/// at the model's rate; `fft` is a KissFFT real-transform plan of `n_fft` points.
void audio_patches(model_t const &model, float const *samples, audio_shape_t const &shape, kiss_fftr_cfg fft,
                   std::byte *work, float *patches) noexcept {
    geometry_t const &g = model.weights.geometry;
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
        for (std::size_t k = 0; k != n; ++k) frame[k] = source[k] * model.hann[k];
        kiss_fftr(fft, frame, spectrum);
        for (std::size_t m = 0; m != bins; ++m)
            power[m] = double(spectrum[m].r) * spectrum[m].r + double(spectrum[m].i) * spectrum[m].i;
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

/// What the audio front-end reads per item: mono samples at the model's rate.
struct recordings_t {
    float const **samples = nullptr;
    std::size_t *lengths = nullptr;
    std::size_t count = 0;
};

struct audio_job_t {
    model_t const *model;
    call_t *call;
    recordings_t const *recordings;
    std::size_t max_patches, tokens;
    kiss_fftr_cfg *ffts; // one per worker, lent by the model's pool
    front_layout_t layout;
};

uform_status_t prepare_audio(void *context, std::byte *prefix, ram::token_batch_t &batch,
                             char const **message) noexcept {
    auto &job = *static_cast<audio_job_t *>(context);
    geometry_t const &g = job.model->weights.geometry;
    std::size_t const input = g.audio_frames_per_patch * g.audio_mel_bins;
    auto *patches = reinterpret_cast<float *>(prefix + job.layout.patches);
    media::fft_pool_t &pool = job.model->ffts;
    std::size_t const workers = job.call->width();
    if (!pool.take(g.audio_n_fft, job.ffts, workers))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the audio FFT");
    recordings_t const &recordings = *job.recordings;
    job.call->parallel_for(batch.count, [&](std::size_t i, std::size_t worker) noexcept {
        audio_shape_t const shape = audio_shape(g, recordings.lengths[i], job.max_patches);
        if (shape.patches == 0) return;
        audio_patches(*job.model, recordings.samples[i], shape, job.ffts[worker],
                      prefix + job.layout.work + worker * job.layout.work_slot, patches + batch.offsets[i] * input);
    });
    pool.give(job.ffts, workers);
    embed_patches(*job.model, job.model->audio, *job.call, prefix, job.layout, job.tokens);
    complete_batch(batch, prefix, job.layout, g.hidden, false); // audio positions are text's (i, i, i)
    return uform_status_ok_k;
}

/// Whether the model's audio front-end is complete enough to run.
bool audio_ready(model_t const &model) noexcept {
    geometry_t const &g = model.weights.geometry;
    return model.audio.weight.columns() != 0 && !model.mel_filters.empty() && g.audio_hop != 0 &&
           g.audio_frames_per_patch != 0 && g.audio_n_fft >= 4 && g.audio_n_fft % 2 == 0 && g.audio_n_fft <= (1u << 20);
}

/// Encodes mono recordings at the model's rate, packed as segments of one trunk call; `seconds` is the stats'.
uform_status_t encode_audio(model_t const &model, call_t &call, recordings_t const &recordings, std::size_t max_patches,
                            double seconds, encode_request_t request, uform_encoded_t &encoded,
                            uform_audio_encode_stats_t &stats, char const **message) noexcept {
    geometry_t const &g = model.weights.geometry;
    std::size_t const count = recordings.count;
    std::size_t *offsets = allocate_offsets(call, count);
    auto *ffts = arena_array<kiss_fftr_cfg>(call, call.width());
    if (offsets == nullptr || ffts == nullptr)
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t work = 0, truncated = 0;
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) {
        audio_shape_t const shape = audio_shape(g, recordings.lengths[i], max_patches);
        offsets[i + 1] = offsets[i] + shape.patches;
        if (shape.patches) work = std::max(work, audio_work_bytes(g, shape));
        truncated += shape.truncated;
    }
    std::size_t const tokens = offsets[count];
    audio_job_t job{&model, &call, &recordings, max_patches, tokens, ffts, {}};
    job.layout = layout_front(tokens, g.audio_frames_per_patch * g.audio_mel_bins, g.hidden, false, call.width(), work);
    if (uform_status_t status =
            encode_front(model, call, offsets, count, job.layout, prepare_audio, &job, request, encoded, message))
        return status;
    stats.items = count;
    stats.tokens = tokens;
    stats.seconds = seconds;
    stats.truncated_items = truncated;
    return uform_status_ok_k;
}

} // namespace

uform_status_t image_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_patches,
                            std::size_t max_pixels, encode_request_t request, uform_encoded_t &encoded,
                            uform_image_encode_stats_t &stats, char const **message) noexcept {
    if (!rgb_patches(model, model.image))
        return fail(message, uform_status_unsupported_k, "the model's image front-end is not RGB patches");
    std::vector<media::rgb_image_t> decoded;
    try {
        decoded.resize(paths.count);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    }
    auto **pixels = arena_array<std::uint8_t const *>(call, paths.count);
    auto *heights = arena_array<std::size_t>(call, paths.count), *widths = arena_array<std::size_t>(call, paths.count);
    if (pixels == nullptr || heights == nullptr || widths == nullptr)
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    auto decode = [&](std::size_t i, char const *path, char const **item_message) noexcept {
        uform_status_t const status = media::decode_image_file(path, max_pixels, decoded[i], item_message);
        pixels[i] = decoded[i].pixels.data();
        heights[i] = decoded[i].height;
        widths[i] = decoded[i].width;
        return status;
    };
    if (uform_status_t status = decode_files(call, paths, decode, stats.failed_item, message)) return status;
    images_t const images{pixels, heights, widths, paths.count};
    return encode_images(model, call, images, max_patches, request, encoded, stats, message);
}

uform_status_t image_encode_pixels(model_t const &model, call_t &call, tape_view_t<std::uint8_t> pixels,
                                   std::size_t const *heights, std::size_t const *widths, std::size_t max_patches,
                                   encode_request_t request, uform_encoded_t &encoded,
                                   uform_image_encode_stats_t &stats, char const **message) noexcept {
    auto **items = arena_array<std::uint8_t const *>(call, pixels.count);
    if (items == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    for (std::size_t i = 0; i != pixels.count; ++i) items[i] = pixels.item(i).data();
    images_t const images{items, heights, widths, pixels.count};
    return encode_images(model, call, images, max_patches, request, encoded, stats, message);
}

uform_status_t video_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_frames,
                            std::size_t max_patches_per_frame, encode_request_t request, uform_encoded_t &encoded,
                            uform_video_encode_stats_t &stats, char const **message) noexcept {
    geometry_t const &g = model.weights.geometry;
    if (!rgb_patches(model, model.video) || g.video_tubelet_frames == 0 || max_patches_per_frame == 0)
        return fail(message, uform_status_unsupported_k, "the model's video front-end is not RGB tubelets");
    std::vector<clip_t> clips;
    try {
        clips.resize(paths.count);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    }
    auto decode = [&](std::size_t i, char const *path, char const **item_message) noexcept {
        clip_t &clip = clips[i];
        if (uform_status_t status = media::decode_video_file(path, double(g.video_fps), max_frames, video_max_pixels_k,
                                                             clip.frames, item_message))
            return status;
        image_grid(clip.frames[0].height, clip.frames[0].width, g.image_patch_side, max_patches_per_frame, clip.rows,
                   clip.columns);
        return uform_status_ok_k;
    };
    if (uform_status_t status = decode_files(call, paths, decode, stats.failed_item, message)) return status;

    std::size_t const count = paths.count, p = g.image_patch_side, tubelet = g.video_tubelet_frames;
    std::size_t *offsets = allocate_offsets(call, count);
    if (offsets == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t work = 0, frames = 0;
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) {
        clip_t const &clip = clips[i];
        std::size_t const tubelets = (clip.frames.size() + tubelet - 1) / tubelet;
        offsets[i + 1] = offsets[i] + tubelets * clip.rows * clip.columns;
        for (media::rgb_image_t const &frame : clip.frames)
            work = std::max(work, image_work_bytes(frame.height, frame.width, clip.rows * p, clip.columns * p));
        frames += clip.frames.size();
    }
    std::size_t const tokens = offsets[count];
    video_job_t job{&model, &call, clips.data(), tokens, {}};
    job.layout = layout_front(tokens, tubelet * p * p * 3, g.hidden, true, call.width(), work);
    if (uform_status_t status =
            encode_front(model, call, offsets, count, job.layout, prepare_video, &job, request, encoded, message))
        return status;
    stats.items = count;
    stats.tokens = tokens;
    stats.frames = frames;
    return uform_status_ok_k;
}

uform_status_t audio_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_patches,
                            encode_request_t request, uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                            char const **message) noexcept {
    if (!audio_ready(model))
        return fail(message, uform_status_unsupported_k, "the model's audio front-end is incomplete");
    std::vector<std::vector<float>> decoded;
    try {
        decoded.resize(paths.count);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    }
    recordings_t recordings{arena_array<float const *>(call, paths.count), arena_array<std::size_t>(call, paths.count),
                            paths.count};
    auto *seconds = arena_array<double>(call, paths.count);
    if (recordings.samples == nullptr || recordings.lengths == nullptr || seconds == nullptr)
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t const rate = model.weights.geometry.audio_sample_rate;
    auto decode = [&](std::size_t i, char const *path, char const **item_message) noexcept {
        seconds[i] = 0;
        uform_status_t const status = media::decode_audio_file(path, rate, decoded[i], seconds[i], item_message);
        recordings.samples[i] = decoded[i].data();
        recordings.lengths[i] = decoded[i].size();
        return status;
    };
    if (uform_status_t status = decode_files(call, paths, decode, stats.failed_item, message)) return status;
    double total = 0;
    for (std::size_t i = 0; i != paths.count; ++i) total += seconds[i];
    return encode_audio(model, call, recordings, max_patches, total, request, encoded, stats, message);
}

uform_status_t audio_encode_samples(model_t const &model, call_t &call, tape_view_t<float> samples,
                                    std::size_t sample_rate, std::size_t max_patches, encode_request_t request,
                                    uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                                    char const **message) noexcept {
    if (!audio_ready(model))
        return fail(message, uform_status_unsupported_k, "the model's audio front-end is incomplete");
    std::size_t const rate = model.weights.geometry.audio_sample_rate, count = samples.count;
    recordings_t recordings{arena_array<float const *>(call, count), arena_array<std::size_t>(call, count), count};
    auto *statuses = arena_array<uform_status_t>(call, count);
    auto *messages = arena_array<char const *>(call, count);
    auto **targets = arena_array<float *>(call, count); // where an item resamples to; null: read in place
    if (recordings.samples == nullptr || recordings.lengths == nullptr || statuses == nullptr || messages == nullptr ||
        targets == nullptr)
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    // Another rate is resampled by libswresample into the arena, one item per task; the model's rate is read in place.
    for (std::size_t i = 0; i != count; ++i) {
        recordings.samples[i] = samples.item(i).data();
        recordings.lengths[i] = samples.item_size(i);
        targets[i] = nullptr;
        if (sample_rate == rate || recordings.lengths[i] == 0) continue;
        targets[i] = arena_array<float>(call, media::resampled_capacity(recordings.lengths[i], sample_rate, rate));
        if (targets[i] == nullptr)
            return fail(message, uform_status_out_of_memory_k, "out of memory for the resampled audio");
        recordings.samples[i] = targets[i];
    }
    call.parallel_for(count, [&](std::size_t i, std::size_t) noexcept {
        statuses[i] = uform_status_ok_k;
        std::span<float const> const values = samples.item(i);
        if (targets[i] == nullptr) return;
        statuses[i] = media::resample_mono(values.data(), values.size(), sample_rate, rate, targets[i],
                                           recordings.lengths[i], &messages[i]);
    });
    double seconds = 0;
    for (std::size_t i = 0; i != count; ++i) {
        if (statuses[i] != uform_status_ok_k) {
            stats.failed_item = i;
            return fail(message, statuses[i], messages[i]);
        }
        seconds += double(samples.item_size(i)) / double(sample_rate);
    }
    return encode_audio(model, call, recordings, max_patches, seconds, request, encoded, stats, message);
}

} // namespace uform::backend
