// The media verbs of the RAM residency: the image, video and audio front-ends of docs/model.md over decoded input,
// feeding the same trunk as text through pre-embedded tokens (see encode.hpp). Files are decoded by cpp/media (FFmpeg)
// on the call's threads, one item per task, before the front-ends run; the first item that fails (in order) fails the
// call and is named in the stats.
//
// `c/` has already refused a checkpoint without the modality, with its own `unsupported` message.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "common/checks.hpp"
#include "common/media_geometry.hpp"
#include "cpp/media/audio_decode.hpp"
#include "cpp/media/video_decode.hpp"
#include "cpp/backend/encode.hpp"
#include "cpp/backend/patches.hpp"

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

/// Token offsets of `count` items in the arena's host memory: the batch's `offsets`, which the output tapes copy.
std::size_t *allocate_offsets(call_t &call, std::size_t count) noexcept {
    return static_cast<std::size_t *>(call.allocate_host((count + 1) * sizeof(std::size_t)));
}

/// `count` values in the arena's host memory (beside a VRAM arena's device memory), which a steady loop of calls
/// reuses without allocating; null when out of memory.
template <typename value_type_>
value_type_ *arena_array(call_t &call, std::size_t count) noexcept {
    if (count > SIZE_MAX / sizeof(value_type_)) return nullptr;
    return static_cast<value_type_ *>(call.allocate_host(count * sizeof(value_type_)));
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Images                                                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

/// What the image front-end reads per item: the size of each image and either its RGB bytes, resized in the
/// trunk's prepare step (pixels), or its patch vectors, resized as it was decoded (files).
struct images_t {
    std::uint8_t const **pixels = nullptr;
    float const **vectors = nullptr;
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
        image_grid_t const grid = image_grid(images.heights[i], images.widths[i], g.image_patch_side, job.max_patches);
        std::size_t const token = batch.offsets[i];
        if (images.vectors != nullptr)
            std::memcpy(patches + token * input, images.vectors[i], grid.rows * grid.columns * input * sizeof(float));
        else
            image_patches(g, images.pixels[i], images.heights[i], images.widths[i], grid,
                          prefix + job.layout.work + worker * job.layout.work_slot, patches + token * input, input);
        grid_positions(grid, 0, positions + token * 3);
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
        image_grid_t const grid = image_grid(images.heights[i], images.widths[i], g.image_patch_side, max_patches);
        offsets[i + 1] = offsets[i] + grid.rows * grid.columns;
        if (images.vectors == nullptr)
            work = std::max(work, image_work_bytes(images.widths[i], grid.rows * g.image_patch_side,
                                                   grid.columns * g.image_patch_side));
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
    job.call->parallel_for(batch.count, [&](std::size_t i, std::size_t) noexcept {
        clip_tubelets(g, job.clips[i], patches + batch.offsets[i] * input, positions + batch.offsets[i] * 3);
    });
    embed_patches(*job.model, job.model->video, *job.call, prefix, job.layout, job.tokens);
    complete_batch(batch, prefix, job.layout, g.hidden, true);
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */
/* Audio                                                                                                       */
/* ---------------------------------------------------------------------------------------------------------- */

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
        audio_patches(g, job.model->mel_filters.data(), job.model->hann.data(), recordings.samples[i], shape,
                      job.ffts[worker], prefix + job.layout.work + worker * job.layout.work_slot,
                      patches + batch.offsets[i] * input);
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
    std::vector<std::vector<float>> vectors;
    try {
        vectors.resize(paths.count);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    }
    auto **items = arena_array<float const *>(call, paths.count);
    auto *heights = arena_array<std::size_t>(call, paths.count), *widths = arena_array<std::size_t>(call, paths.count);
    if (items == nullptr || heights == nullptr || widths == nullptr)
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    geometry_t const &g = model.weights.geometry;
    // Each picture is resized to its grid as soon as it is decoded, and dropped.
    auto decode = [&](std::size_t i, char const *path, char const **item_message) noexcept {
        media::rgb_image_t image;
        std::vector<std::byte> work;
        if (uform_status_t status = media::decode_image_file(path, max_pixels, image, item_message)) return status;
        heights[i] = image.height, widths[i] = image.width;
        image_grid_t const grid = image_grid(image.height, image.width, g.image_patch_side, max_patches);
        if (uform_status_t status = append_patches(g, image, grid, vectors[i], work, item_message)) return status;
        items[i] = vectors[i].data();
        return uform_status_ok_k;
    };
    if (uform_status_t status = decode_files(call, paths, decode, stats.failed_item, message)) return status;
    images_t const images{nullptr, items, heights, widths, paths.count};
    return encode_images(model, call, images, max_patches, request, encoded, stats, message);
}

uform_status_t image_encode_pixels(model_t const &model, call_t &call, tape_view_t<std::uint8_t> pixels,
                                   std::size_t const *heights, std::size_t const *widths, std::size_t max_patches,
                                   encode_request_t request, uform_encoded_t &encoded,
                                   uform_image_encode_stats_t &stats, char const **message) noexcept {
    auto **items = arena_array<std::uint8_t const *>(call, pixels.count);
    if (items == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    for (std::size_t i = 0; i != pixels.count; ++i) items[i] = pixels.item(i).data();
    images_t const images{items, nullptr, heights, widths, pixels.count};
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
        clips[i].geometry = &g;
        clips[i].max_patches = max_patches_per_frame;
        return media::decode_video_file(path, double(g.video_fps), max_frames, default_max_pixels_k,
                                        {keep_frame, &clips[i]}, item_message);
    };
    if (uform_status_t status = decode_files(call, paths, decode, stats.failed_item, message)) return status;

    std::size_t const count = paths.count, p = g.image_patch_side, tubelet = g.video_tubelet_frames;
    std::size_t *offsets = allocate_offsets(call, count);
    if (offsets == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory for the call");
    std::size_t frames = 0;
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) {
        clip_t const &clip = clips[i];
        offsets[i + 1] = offsets[i] + (clip.frames + tubelet - 1) / tubelet * clip.grid.rows * clip.grid.columns;
        frames += clip.frames;
    }
    std::size_t const tokens = offsets[count];
    video_job_t job{&model, &call, clips.data(), tokens, {}};
    job.layout = layout_front(tokens, tubelet * p * p * 3, g.hidden, true, call.width(), 0);
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
    geometry_t const &g = model.weights.geometry;
    std::size_t const rate = g.audio_sample_rate, limit = audio_sample_budget(g, max_patches);
    auto decode = [&](std::size_t i, char const *path, char const **item_message) noexcept {
        seconds[i] = 0;
        uform_status_t const status = media::decode_audio_file(path, rate, limit, decoded[i], seconds[i], item_message);
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
    // Another rate is resampled by libswresample into the arena, one item per task, only as far as the patch budget
    // reaches (a sample past it is dropped unread); the model's rate is read in place. `recordings.lengths` holds the
    // input samples to resample until the resampler writes what they became.
    std::size_t const reach =
        media::resampling_reach(audio_sample_budget(model.weights.geometry, max_patches) + 1, sample_rate, rate);
    for (std::size_t i = 0; i != count; ++i) {
        recordings.samples[i] = samples.item(i).data();
        recordings.lengths[i] = samples.item_size(i);
        targets[i] = nullptr;
        if (sample_rate == rate || recordings.lengths[i] == 0) continue;
        recordings.lengths[i] = std::min(recordings.lengths[i], reach);
        targets[i] = arena_array<float>(call, media::resampled_capacity(recordings.lengths[i], sample_rate, rate));
        if (targets[i] == nullptr)
            return fail(message, uform_status_out_of_memory_k, "out of memory for the resampled audio");
        recordings.samples[i] = targets[i];
    }
    call.parallel_for(count, [&](std::size_t i, std::size_t) noexcept {
        statuses[i] = uform_status_ok_k;
        if (targets[i] == nullptr) return;
        std::size_t const inputs = recordings.lengths[i];
        statuses[i] = media::resample_mono(samples.item(i).data(), inputs, sample_rate, rate, targets[i],
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
