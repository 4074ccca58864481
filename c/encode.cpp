/**
 * @file encode.cpp
 * @brief The seven verbs of a model: their checks, then a blocking or deferred run through `dispatch`.
 */
#include <chrono>

#include "checks.hpp"
#include "media_geometry.hpp"

namespace uform {

namespace {

/** @brief Checks the receiver of a verb: the model, the executor, the arena and the result out-pointer. */
uform_status_t check_receiver(uform_model_s const *model, uform_executor_s const *executor, uform_arena_s const *arena,
                              void const *result, char const **message) noexcept {
    if (!model_valid(model)) return fail(message, uform_status_invalid_argument_k, "the model is null");
    if (executor && !executor_valid(executor))
        return fail(message, uform_status_invalid_argument_k, "the executor is not a live executor");
    if (!arena_valid(arena)) return fail(message, uform_status_invalid_argument_k, "the arena is null");
    if (!result) return fail(message, uform_status_invalid_argument_k, "the result out-pointer is null");
    if (executor) {
        bool const vram = executor->kind == executor_kind_t::vram;
        if (vram != (model->residency == uform_residency_vram_k))
            return fail(message, uform_status_invalid_argument_k, "the executor's residency differs from the model's");
        if (vram) {
            bool shared = false;
            for (std::size_t device : executor->devices)
                for (std::size_t i = 0; i != model->placement_count; ++i) shared |= model->placement[i] == device;
            if (!shared)
                return fail(message, uform_status_invalid_argument_k, "the model is on none of the executor's devices");
        }
    }
    if (arena->residency != model->residency)
        return fail(message, uform_status_invalid_argument_k, "the arena's residency differs from the model's");
    return uform_status_ok_k;
}

/** @brief The devices a call computes on: a VRAM executor's, else a VRAM model's placement, else none. */
std::span<std::size_t const> call_devices(uform_executor_s const *executor, uform_model_s const *model) noexcept {
    if (executor && executor->kind == executor_kind_t::vram) return executor->devices;
    if (model->residency == uform_residency_vram_k) return {model->placement, model->placement_count};
    return {};
}

template <typename value_type_>
tape_view_t<value_type_> view_of(value_type_ const *data, std::size_t const *offsets, std::size_t count) noexcept {
    return {data, offsets, offsets ? count : 0};
}

/** @brief Runs an encoding verb's body, publishing its views and stats only on success (and a media verb's
 * `failed_item` on failure too). */
template <typename stats_type_, typename body_type_>
uform_status_t run_encode(uform_model_s *model, holds_t const &holds, uform_encoded_t *encoded, stats_type_ *stats_out,
                          uform_progress_t progress, void *progress_context, char const **message,
                          body_type_ &&body) noexcept {
    *encoded = uform_encoded_t{};
    arena_rewind(holds.arena);
    call_t call(holds.executor, holds.arena, model->residency, call_devices(holds.executor, model), progress,
                progress_context);
    auto const start = std::chrono::steady_clock::now();
    uform_encoded_t result{};
    stats_type_ stats{};
    constexpr bool names_items = requires { stats.failed_item; };
    if constexpr (names_items) stats.failed_item = SIZE_MAX;
    uform_status_t status = body(call, result, stats, message);
    if (status == uform_status_ok_k && call.cancelled())
        status = fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    if (status) {
        if constexpr (names_items)
            if (stats_out) stats_out->failed_item = stats.failed_item;
        return status;
    }
    stats.nanoseconds = std::uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
    if (stats_out) *stats_out = stats;
    *encoded = result;
    return uform_status_ok_k;
}

/** @brief Answers a media verb's refusal found before the call started, naming `item` (or `SIZE_MAX`) in the stats
 * the args point at, if any. */
template <typename args_type_>
uform_status_t refuse_media(args_type_ const *args, std::size_t item, uform_status_t status) noexcept {
    if (args && args->stats) args->stats->failed_item = item;
    return status;
}

/** @brief Checks what every encoder shares past its receiver: outputs, scalar, and the heads they need. */
uform_status_t check_encoding(uform_model_s const *, uform_outputs_t &outputs, uform_scalar_t &scalar,
                              char const **message) noexcept {
    if (uform_status_t status = check_outputs(outputs, message)) return status;
    return check_output_scalar(scalar, outputs, message);
}

uform_status_t check_heads(uform_model_s const *model, uform_outputs_t outputs, char const **message) noexcept {
    if ((outputs & uform_outputs_token_vectors_k) && !model->geometry.has_token_head)
        return fail(message, uform_status_unsupported_k, "the model has no token head for token vectors");
    return uform_status_ok_k;
}

/* ---------------------------------------------------------------------------------------------------------- */

struct text_encode_params_t {
    uform_model_s *model;
    tape_view_t<char> texts;
    backend::encode_request_t request;
    uform_text_encode_args_t args;
    uform_encoded_t *encoded;

    static uform_status_t run(text_encode_params_t const &p, holds_t const &holds, char const **message) noexcept {
        return run_encode(p.model, holds, p.encoded, p.args.stats, p.args.progress, p.args.progress_context, message,
                          [&](call_t &call, uform_encoded_t &result, uform_text_encode_stats_t &stats,
                              char const **message) noexcept {
                              return backend::text_encode(*p.model->backend, call, p.texts, p.request, result, stats,
                                                          message);
                          });
    }
};

struct image_encode_params_t {
    uform_model_s *model;
    tape_view_t<char> paths;
    backend::encode_request_t request;
    uform_image_encode_args_t args; // `max_patches` and `max_pixels` resolved
    uform_encoded_t *encoded;

    static uform_status_t run(image_encode_params_t const &p, holds_t const &holds, char const **message) noexcept {
        return run_encode(p.model, holds, p.encoded, p.args.stats, p.args.progress, p.args.progress_context, message,
                          [&](call_t &call, uform_encoded_t &result, uform_image_encode_stats_t &stats,
                              char const **message) noexcept {
                              return backend::image_encode(*p.model->backend, call, p.paths, p.args.max_patches,
                                                           p.args.max_pixels, p.request, result, stats, message);
                          });
    }
};

struct image_encode_pixels_params_t {
    uform_model_s *model;
    tape_view_t<std::uint8_t> pixels;
    std::size_t const *heights;
    std::size_t const *widths;
    backend::encode_request_t request;
    uform_image_encode_args_t args;
    uform_encoded_t *encoded;

    static uform_status_t run(image_encode_pixels_params_t const &p, holds_t const &holds,
                              char const **message) noexcept {
        return run_encode(p.model, holds, p.encoded, p.args.stats, p.args.progress, p.args.progress_context, message,
                          [&](call_t &call, uform_encoded_t &result, uform_image_encode_stats_t &stats,
                              char const **message) noexcept {
                              return backend::image_encode_pixels(*p.model->backend, call, p.pixels, p.heights,
                                                                  p.widths, p.args.max_patches, p.request, result,
                                                                  stats, message);
                          });
    }
};

struct video_encode_params_t {
    uform_model_s *model;
    tape_view_t<char> paths;
    backend::encode_request_t request;
    uform_video_encode_args_t args;
    uform_encoded_t *encoded;

    static uform_status_t run(video_encode_params_t const &p, holds_t const &holds, char const **message) noexcept {
        return run_encode(p.model, holds, p.encoded, p.args.stats, p.args.progress, p.args.progress_context, message,
                          [&](call_t &call, uform_encoded_t &result, uform_video_encode_stats_t &stats,
                              char const **message) noexcept {
                              return backend::video_encode(*p.model->backend, call, p.paths, p.args.max_frames,
                                                           p.args.max_patches_per_frame, p.request, result, stats,
                                                           message);
                          });
    }
};

struct audio_encode_params_t {
    uform_model_s *model;
    tape_view_t<char> paths;
    backend::encode_request_t request;
    uform_audio_encode_args_t args;
    uform_encoded_t *encoded;

    static uform_status_t run(audio_encode_params_t const &p, holds_t const &holds, char const **message) noexcept {
        return run_encode(p.model, holds, p.encoded, p.args.stats, p.args.progress, p.args.progress_context, message,
                          [&](call_t &call, uform_encoded_t &result, uform_audio_encode_stats_t &stats,
                              char const **message) noexcept {
                              return backend::audio_encode(*p.model->backend, call, p.paths, p.args.max_patches,
                                                           p.request, result, stats, message);
                          });
    }
};

struct audio_encode_samples_params_t {
    uform_model_s *model;
    tape_view_t<float> samples;
    std::size_t sample_rate;
    backend::encode_request_t request;
    uform_audio_encode_args_t args;
    uform_encoded_t *encoded;

    static uform_status_t run(audio_encode_samples_params_t const &p, holds_t const &holds,
                              char const **message) noexcept {
        return run_encode(p.model, holds, p.encoded, p.args.stats, p.args.progress, p.args.progress_context, message,
                          [&](call_t &call, uform_encoded_t &result, uform_audio_encode_stats_t &stats,
                              char const **message) noexcept {
                              return backend::audio_encode_samples(*p.model->backend, call, p.samples, p.sample_rate,
                                                                   p.args.max_patches, p.request, result, stats,
                                                                   message);
                          });
    }
};

struct text_choose_params_t {
    uform_model_s *model;
    tape_view_t<char> texts;
    tape_view_t<char> choices;
    uform_text_choose_args_t args;
    uform_tape_t *probabilities;

    static uform_status_t run(text_choose_params_t const &p, holds_t const &holds, char const **message) noexcept {
        *p.probabilities = uform_tape_t{};
        arena_rewind(holds.arena);
        call_t call(holds.executor, holds.arena, p.model->residency, call_devices(holds.executor, p.model),
                    p.args.progress, p.args.progress_context);
        auto const start = std::chrono::steady_clock::now();
        uform_tape_t result{};
        uform_text_choose_stats_t stats{};
        std::span<std::size_t const> const groups{p.args.temperature_groups,
                                                  p.args.temperature_groups ? p.args.temperature_groups_count : 0};
        uform_status_t status =
            backend::text_choose(*p.model->backend, call, p.texts, p.choices, groups, result, stats, message);
        if (status == uform_status_ok_k && call.cancelled())
            status = fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
        if (status) return status;
        stats.nanoseconds = std::uint64_t(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
        if (p.args.stats) *p.args.stats = stats;
        *p.probabilities = result;
        return uform_status_ok_k;
    }
};

uform_status_t check_modality(bool present, char const *text, char const **message) noexcept {
    return present ? uform_status_ok_k : fail(message, uform_status_unsupported_k, text);
}

/// Checks a tape of paths: its offsets against its data, then each path.
uform_status_t check_file_tape(char const *files, std::size_t length, std::size_t const *offsets, std::size_t count,
                               char const **message) noexcept {
    if (uform_status_t status =
            check_tape(files, length, offsets, count, UFORM_TAPE_MESSAGES("the files tape"), message))
        return status;
    return check_paths(files, offsets, offsets ? count : 0, message);
}

/// The checks of every file verb, in order: the receiver, the outputs and scalar, the tape of paths, the modality
/// (`has`, answering `missing` when the checkpoint lacks it), the heads the outputs need. Resolves `outputs` and
/// `scalar` as `check_encoding` does.
uform_status_t check_file_verb(uform_model_t model, uform_executor_t executor, uform_arena_t arena,
                               uform_encoded_t *encoded, uform_outputs_t &outputs, uform_scalar_t &scalar,
                               char const *files, std::size_t length, std::size_t const *offsets, std::size_t count,
                               bool geometry_t::*has, char const *missing, char const **message) noexcept {
    if (uform_status_t status = check_receiver(model, executor, arena, encoded, message)) return status;
    if (uform_status_t status = check_encoding(model, outputs, scalar, message)) return status;
    if (uform_status_t status = check_file_tape(files, length, offsets, count, message)) return status;
    if (uform_status_t status = check_modality(model->geometry.*has, missing, message)) return status;
    return check_heads(model, outputs, message);
}

/// Takes the checkpoint's `budget` for a zero `value`, and bounds any other by it.
void clamp_to_budget(std::size_t &value, std::size_t budget) noexcept {
    if (value == 0 || value > budget) value = budget;
}

} // namespace

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_text_encode(uform_model_t model, uform_executor_t executor, char const *texts, size_t texts_length,
                                 size_t const *texts_offsets, size_t texts_count, uform_outputs_t outputs,
                                 uform_text_encode_args_t const *args, uform_arena_t arena, uform_encoded_t *encoded,
                                 uform_outcome_t *outcome, char const **message) {
    if (uform_status_t status = check_receiver(model, executor, arena, encoded, message)) return status;
    text_encode_params_t p{};
    if (args) p.args = *args;
    if (uform_status_t status = check_encoding(model, outputs, p.args.scalar, message)) return status;
    if (uform_status_t status =
            check_tape(texts, texts_length, texts_offsets, texts_count, UFORM_TAPE_MESSAGES("the texts tape"), message))
        return status;
    if (uform_status_t status = check_heads(model, outputs, message)) return status;
    p.model = model;
    p.texts = view_of(texts, texts_offsets, texts_count);
    p.request = {outputs, p.args.scalar};
    p.encoded = encoded;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

uform_status_t uform_image_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_image_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    image_encode_params_t p{};
    if (args) p.args = *args;
    uform_status_t const checked =
        check_file_verb(model, executor, arena, encoded, outputs, p.args.scalar, files, files_length, files_offsets,
                        files_count, &geometry_t::has_image, "the model has no image front-end", message);
    if (checked) return refuse_media(args, SIZE_MAX, checked);
    std::size_t const budget = model->geometry.image_max_patches;
    clamp_to_budget(p.args.max_patches, budget);
    if (p.args.max_pixels == 0) p.args.max_pixels = default_max_pixels_k;
    p.model = model;
    p.paths = view_of(files, files_offsets, files_count);
    p.request = {outputs, p.args.scalar};
    p.encoded = encoded;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

uform_status_t uform_image_encode_pixels(uform_model_t model, uform_executor_t executor, uint8_t const *pixels,
                                         size_t pixels_length, size_t const *pixels_offsets, size_t pixels_count,
                                         size_t const *heights, size_t const *widths, uform_outputs_t outputs,
                                         uform_image_encode_args_t const *args, uform_arena_t arena,
                                         uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    image_encode_pixels_params_t p{};
    std::size_t failed = SIZE_MAX;
    auto fail_at = [&](std::size_t item, uform_status_t status, char const *text) noexcept {
        failed = item;
        return fail(message, status, text);
    };
    uform_status_t const checked = [&]() noexcept -> uform_status_t {
        if (uform_status_t status = check_receiver(model, executor, arena, encoded, message)) return status;
        if (args) p.args = *args;
        if (uform_status_t status = check_encoding(model, outputs, p.args.scalar, message)) return status;
        if (uform_status_t status = check_tape(pixels, pixels_length, pixels_offsets, pixels_count,
                                               UFORM_TAPE_MESSAGES("the pixels tape"), message))
            return status;
        std::size_t const count = pixels_offsets ? pixels_count : 0;
        if (count && (!heights || !widths))
            return fail(message, uform_status_invalid_argument_k, "heights or widths are null but items are counted");
        if (p.args.max_pixels == 0) p.args.max_pixels = default_max_pixels_k;
        for (std::size_t i = 0; i != count; ++i)
            if (heights[i] == 0 || widths[i] == 0)
                return fail_at(i, uform_status_invalid_argument_k, "an image has a zero height or width");
        for (std::size_t i = 0; i != count; ++i) {
            std::size_t area, bytes;
            bool const fits = multiply(heights[i], widths[i], area) && multiply(area, 3, bytes);
            if (!fits || bytes != pixels_offsets[i + 1] - pixels_offsets[i])
                return fail_at(i, uform_status_shape_mismatch_k, "an image's pixels are not height * width * 3 bytes");
            if (area > p.args.max_pixels)
                return fail_at(i, uform_status_limit_exceeded_k, "an image has more pixels than max_pixels");
        }
        if (uform_status_t status =
                check_modality(model->geometry.has_image, "the model has no image front-end", message))
            return status;
        return check_heads(model, outputs, message);
    }();
    if (checked) return refuse_media(args, failed, checked);
    std::size_t const budget = model->geometry.image_max_patches;
    clamp_to_budget(p.args.max_patches, budget);
    p.model = model;
    p.pixels = view_of(pixels, pixels_offsets, pixels_count);
    p.heights = heights;
    p.widths = widths;
    p.request = {outputs, p.args.scalar};
    p.encoded = encoded;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

uform_status_t uform_video_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_video_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    video_encode_params_t p{};
    if (args) p.args = *args;
    uform_status_t const checked =
        check_file_verb(model, executor, arena, encoded, outputs, p.args.scalar, files, files_length, files_offsets,
                        files_count, &geometry_t::has_video, "the model has no video front-end", message);
    if (checked) return refuse_media(args, SIZE_MAX, checked);
    geometry_t const &g = model->geometry;
    clamp_to_budget(p.args.max_frames, g.video_max_frames);
    clamp_to_budget(p.args.max_patches_per_frame, g.video_max_patches_per_frame);
    p.model = model;
    p.paths = view_of(files, files_offsets, files_count);
    p.request = {outputs, p.args.scalar};
    p.encoded = encoded;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

uform_status_t uform_audio_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_audio_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    audio_encode_params_t p{};
    if (args) p.args = *args;
    uform_status_t const checked =
        check_file_verb(model, executor, arena, encoded, outputs, p.args.scalar, files, files_length, files_offsets,
                        files_count, &geometry_t::has_audio, "the model has no audio front-end", message);
    if (checked) return refuse_media(args, SIZE_MAX, checked);
    std::size_t const budget = model->geometry.audio_max_patches;
    clamp_to_budget(p.args.max_patches, budget);
    p.model = model;
    p.paths = view_of(files, files_offsets, files_count);
    p.request = {outputs, p.args.scalar};
    p.encoded = encoded;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

uform_status_t uform_audio_encode_samples(uform_model_t model, uform_executor_t executor, float const *samples,
                                          size_t samples_length, size_t const *samples_offsets, size_t samples_count,
                                          size_t sample_rate, uform_outputs_t outputs,
                                          uform_audio_encode_args_t const *args, uform_arena_t arena,
                                          uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    audio_encode_samples_params_t p{};
    std::size_t failed = SIZE_MAX;
    auto fail_at = [&](std::size_t item, uform_status_t status, char const *text) noexcept {
        failed = item;
        return fail(message, status, text);
    };
    uform_status_t const checked = [&]() noexcept -> uform_status_t {
        if (uform_status_t status = check_receiver(model, executor, arena, encoded, message)) return status;
        if (args) p.args = *args;
        if (uform_status_t status = check_encoding(model, outputs, p.args.scalar, message)) return status;
        if (uform_status_t status = check_tape(samples, samples_length, samples_offsets, samples_count,
                                               UFORM_TAPE_MESSAGES("the samples tape"), message))
            return status;
        if (!sample_rate_accepted(sample_rate))
            return fail(message, uform_status_invalid_argument_k, "the sample rate is outside 1 kHz to 384 kHz");
        std::size_t const count = samples_offsets ? samples_count : 0;
        for (std::size_t item = 0; item != count; ++item)
            for (std::size_t i = samples_offsets[item]; i != samples_offsets[item + 1]; ++i)
                if (!(std::fabs(samples[i]) <= max_sample_magnitude_k))
                    return fail_at(item, uform_status_invalid_argument_k, "a sample is NaN, infinite or beyond 2^32");
        if (uform_status_t status =
                check_modality(model->geometry.has_audio, "the model has no audio front-end", message))
            return status;
        return check_heads(model, outputs, message);
    }();
    if (checked) return refuse_media(args, failed, checked);
    std::size_t const budget = model->geometry.audio_max_patches;
    clamp_to_budget(p.args.max_patches, budget);
    p.model = model;
    p.samples = view_of(samples, samples_offsets, samples_count);
    p.sample_rate = sample_rate;
    p.request = {outputs, p.args.scalar};
    p.encoded = encoded;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

uform_status_t uform_text_choose(uform_model_t model, uform_executor_t executor, char const *texts, size_t texts_length,
                                 size_t const *texts_offsets, size_t texts_count, char const *choices,
                                 size_t choices_length, size_t const *choices_offsets, size_t choices_count,
                                 uform_text_choose_args_t const *args, uform_arena_t arena, uform_tape_t *probabilities,
                                 uform_outcome_t *outcome, char const **message) {
    if (uform_status_t status = check_receiver(model, executor, arena, probabilities, message)) return status;
    text_choose_params_t p{};
    if (args) p.args = *args;
    if (uform_status_t status =
            check_tape(texts, texts_length, texts_offsets, texts_count, UFORM_TAPE_MESSAGES("the texts tape"), message))
        return status;
    if (uform_status_t status = check_tape(choices, choices_length, choices_offsets, choices_count,
                                           UFORM_TAPE_MESSAGES("the choices tape"), message))
        return status;
    std::size_t const count = texts_offsets ? texts_count : 0;
    if ((choices_offsets ? choices_count : 0) != count)
        return fail(message, uform_status_shape_mismatch_k, "the choices tape holds one item per text");
    if (p.args.temperature_groups_count != 0 && p.args.temperature_groups_count != count)
        return fail(message, uform_status_shape_mismatch_k, "temperature groups are zero or one per text");
    if (!p.args.temperature_groups && p.args.temperature_groups_count)
        return fail(message, uform_status_invalid_argument_k, "temperature groups are null but counted");
    for (std::size_t i = 0; i != count; ++i) {
        std::size_t const begin = choices_offsets[i], end = choices_offsets[i + 1];
        if (begin == end) return fail(message, uform_status_invalid_argument_k, "a text has no choices");
        bool seen[256] = {};
        for (std::size_t j = begin; j != end; ++j) {
            auto const byte = static_cast<unsigned char>(choices[j]);
            if (seen[byte]) return fail(message, uform_status_invalid_argument_k, "a text's choices repeat a byte");
            seen[byte] = true;
        }
    }
    geometry_t const &g = model->geometry;
    if (!g.has_byte_head || g.choice_groups == 0)
        return fail(message, uform_status_unsupported_k, "the model has no byte head to score choices");
    for (std::size_t i = 0; i != p.args.temperature_groups_count; ++i)
        if (p.args.temperature_groups[i] >= g.choice_groups)
            return fail(message, uform_status_invalid_argument_k, "a temperature group is past the model's groups");
    p.model = model;
    p.texts = view_of(texts, texts_offsets, texts_count);
    p.choices = view_of(choices, choices_offsets, choices_count);
    p.probabilities = probabilities;
    return dispatch(p, holds_t{executor, arena, model, nullptr}, outcome, message);
}

} // extern "C"
