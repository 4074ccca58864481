// The seven verbs of a model: their checks, then a blocking or deferred run through `dispatch`.
#include <chrono>

#include "c/handles.hpp"
#include "common/checks.hpp"
#include "common/media_geometry.hpp"

namespace uform {

namespace {

/// Most bytes of one text when a verb's `max_bytes` is zero, and the most it may name.
constexpr std::size_t default_text_max_bytes_k = 16'384, text_max_bytes_limit_k = std::size_t(1) << 24;

/// Checks the receiver of a verb: the model, the executor, the arena and the result out-pointer.
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

/// The devices a call computes on: a VRAM executor's, else a VRAM model's placement, else none.
std::span<std::size_t const> call_devices(uform_executor_s const *executor, uform_model_s const *model) noexcept {
    if (executor && executor->kind == executor_kind_t::vram) return executor->devices;
    if (model->residency == uform_residency_vram_k) return {model->placement, model->placement_count};
    return {};
}

template <typename value_type_>
tape_view_t<value_type_> view_of(value_type_ const *data, std::size_t const *offsets, std::size_t count) noexcept {
    return {data, offsets, offsets ? count : 0};
}

/// Runs a checked verb's body on the thread the call runs on, publishing its result and stats only on
/// success (and a media verb's `failed_item` on failure too). `verb_type_` holds `model`, `args` (with
/// `stats`, `progress` and `progress_context`) and `result` (where the result lands), and computes through
/// `compute(call, result, stats, message) const`.
template <typename verb_type_>
struct verb_job_t {
    verb_type_ verb;

    static uform_status_t run(verb_job_t const &job, holds_t const &holds, char const **message) noexcept {
        verb_type_ const &v = job.verb;
        using result_t = std::remove_pointer_t<decltype(v.result)>;
        using stats_t = std::remove_pointer_t<decltype(v.args.stats)>;
        *v.result = result_t{};
        arena_rewind(holds.arena);
        call_t call(holds.executor, holds.arena, v.model->residency, call_devices(holds.executor, v.model),
                    v.args.progress, v.args.progress_context);
        auto const start = std::chrono::steady_clock::now();
        result_t result{};
        stats_t stats{};
        constexpr bool names_items = requires { stats.failed_item; };
        if constexpr (names_items) stats.failed_item = SIZE_MAX;
        uform_status_t status = v.compute(call, result, stats, message);
        if (status == uform_status_ok_k && call.cancelled())
            status = fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
        if (status) {
            if constexpr (names_items)
                if (v.args.stats) v.args.stats->failed_item = stats.failed_item;
            return status;
        }
        stats.nanoseconds = std::uint64_t(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
        if (v.args.stats) *v.args.stats = stats;
        *v.result = result;
        return uform_status_ok_k;
    }
};

/// Runs a checked verb blocking or deferred, holding its executor, arena and model.
template <typename verb_type_>
uform_status_t dispatch_verb(verb_type_ const &verb, uform_executor_s *executor, uform_arena_s *arena,
                             uform_outcome_t *outcome, char const **message) noexcept {
    return dispatch(verb_job_t<verb_type_>{verb}, holds_t{executor, arena, verb.model, nullptr}, outcome, message);
}

/// The checks an encoding verb shares, in order: the receiver, the outputs and scalar (resolved into
/// `request`), the verb's own inputs, then what the model carries. A media verb's refusal names the item in
/// `failed_item` (or `SIZE_MAX`).
struct encode_checks_t {
    uform_model_s const *model;
    uform_executor_s const *executor;
    uform_arena_s const *arena;
    uform_encoded_t const *encoded;
    backend::encode_request_t request; // the outputs and scalar as passed, resolved by `receiver`
    char const **message;
    std::size_t failed_item = SIZE_MAX;

    /// Checks the receiver, then resolves and checks the outputs and scalar.
    uform_status_t receiver() noexcept {
        if (uform_status_t status = check_receiver(model, executor, arena, encoded, message)) return status;
        if (uform_status_t status = check_outputs(request.outputs, message)) return status;
        return check_output_scalar(request.scalar, request.outputs, message);
    }
    /// Checks a tape of paths: its offsets against its data, then each path.
    uform_status_t files(char const *data, std::size_t length, std::size_t const *offsets, std::size_t count) noexcept {
        if (uform_status_t status =
                check_tape(data, length, offsets, count, UFORM_TAPE_MESSAGES("the files tape"), message))
            return status;
        return check_paths(data, offsets, offsets ? count : 0, message);
    }
    /// Refuses item `item` of the batch.
    uform_status_t fail_at(std::size_t item, uform_status_t status, char const *text) noexcept {
        failed_item = item;
        return fail(message, status, text);
    }
    /// Checks the modality (`has`, answering `missing` when the checkpoint lacks it), then the heads.
    uform_status_t modality(bool geometry_t::*has, char const *missing) noexcept {
        if (!(model->geometry.*has)) return fail(message, uform_status_unsupported_k, missing);
        return heads();
    }
    /// Checks that the model has the heads the outputs need.
    uform_status_t heads() noexcept {
        if ((request.outputs & uform_outputs_token_vectors_k) && !model->geometry.has_token_head)
            return fail(message, uform_status_unsupported_k, "the model has no token head for token vectors");
        return uform_status_ok_k;
    }
    /// Answers a media verb's refusal, naming `failed_item` in the stats `args` point at, if any.
    template <typename args_type_>
    uform_status_t refuse(args_type_ const *args, uform_status_t status) const noexcept {
        if (args && args->stats) args->stats->failed_item = failed_item;
        return status;
    }
    /// The checks of a verb reading a tape of paths.
    uform_status_t file_verb(char const *data, std::size_t length, std::size_t const *offsets, std::size_t count,
                             bool geometry_t::*has, char const *missing) noexcept {
        if (uform_status_t status = receiver()) return status;
        if (uform_status_t status = files(data, length, offsets, count)) return status;
        return modality(has, missing);
    }
};

/* ---------------------------------------------------------------------------------------------------------- */

struct text_encode_verb_t {
    uform_model_s *model;
    tape_view_t<char> texts;
    backend::encode_request_t request;
    uform_text_encode_args_t args;
    uform_encoded_t *result;

    uform_status_t compute(call_t &call, uform_encoded_t &encoded, uform_text_encode_stats_t &stats,
                           char const **message) const noexcept {
        return backend::text_encode(*model->backend, call, texts, request, encoded, stats, message);
    }
};

struct image_encode_verb_t {
    uform_model_s *model;
    tape_view_t<char> paths;
    backend::encode_request_t request;
    uform_image_encode_args_t args; // `max_patches` and `max_pixels` resolved
    uform_encoded_t *result;

    uform_status_t compute(call_t &call, uform_encoded_t &encoded, uform_image_encode_stats_t &stats,
                           char const **message) const noexcept {
        return backend::image_encode(*model->backend, call, paths, args.max_patches, args.max_pixels, request, encoded,
                                     stats, message);
    }
};

struct image_encode_pixels_verb_t {
    uform_model_s *model;
    tape_view_t<std::uint8_t> pixels;
    std::size_t const *heights;
    std::size_t const *widths;
    backend::encode_request_t request;
    uform_image_encode_args_t args; // `max_patches` resolved
    uform_encoded_t *result;

    uform_status_t compute(call_t &call, uform_encoded_t &encoded, uform_image_encode_stats_t &stats,
                           char const **message) const noexcept {
        return backend::image_encode_pixels(*model->backend, call, pixels, heights, widths, args.max_patches, request,
                                            encoded, stats, message);
    }
};

struct video_encode_verb_t {
    uform_model_s *model;
    tape_view_t<char> paths;
    backend::encode_request_t request;
    uform_video_encode_args_t args; // `max_frames` and `max_patches_per_frame` resolved
    uform_encoded_t *result;

    uform_status_t compute(call_t &call, uform_encoded_t &encoded, uform_video_encode_stats_t &stats,
                           char const **message) const noexcept {
        return backend::video_encode(*model->backend, call, paths, args.max_frames, args.max_patches_per_frame, request,
                                     encoded, stats, message);
    }
};

struct audio_encode_verb_t {
    uform_model_s *model;
    tape_view_t<char> paths;
    backend::encode_request_t request;
    uform_audio_encode_args_t args; // `max_patches` resolved
    uform_encoded_t *result;

    uform_status_t compute(call_t &call, uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                           char const **message) const noexcept {
        return backend::audio_encode(*model->backend, call, paths, args.max_patches, request, encoded, stats, message);
    }
};

struct audio_encode_samples_verb_t {
    uform_model_s *model;
    tape_view_t<float> samples;
    std::size_t sample_rate;
    backend::encode_request_t request;
    uform_audio_encode_args_t args; // `max_patches` resolved
    uform_encoded_t *result;

    uform_status_t compute(call_t &call, uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                           char const **message) const noexcept {
        return backend::audio_encode_samples(*model->backend, call, samples, sample_rate, args.max_patches, request,
                                             encoded, stats, message);
    }
};

struct text_choose_verb_t {
    uform_model_s *model;
    tape_view_t<char> texts;
    tape_view_t<char> choices;
    uform_text_choose_args_t args;
    uform_tape_t *result;

    uform_status_t compute(call_t &call, uform_tape_t &probabilities, uform_text_choose_stats_t &stats,
                           char const **message) const noexcept {
        std::span<std::size_t const> const groups{args.temperature_groups,
                                                  args.temperature_groups ? args.temperature_groups_count : 0};
        return backend::text_choose(*model->backend, call, texts, choices, groups, probabilities, stats, message);
    }
};

/// The outputs and scalar as the caller passed them, for `encode_checks_t` to check. Both are copied as bits:
/// a C caller may pass any `int`, and reading one as its enum before `check_outputs` and `check_output_scalar` would
/// be undefined (see `raw_enum`).
backend::encode_request_t request_of(uform_outputs_t const &outputs, uform_scalar_t const &scalar) noexcept {
    backend::encode_request_t request{uform_outputs_embeddings_k, uform_scalar_auto_k};
    std::memcpy(&request.outputs, &outputs, sizeof(outputs));
    std::memcpy(&request.scalar, &scalar, sizeof(scalar));
    return request;
}

/// Takes the checkpoint's `budget` for a zero `value`, and bounds any other by it.
void clamp_to_budget(std::size_t &value, std::size_t budget) noexcept {
    if (value == 0 || value > budget) value = budget;
}

} // namespace

} // namespace uform

using namespace uform;

namespace {

/// Resolves a text verb's `max_bytes` (zero takes the default) and holds every text of the tape to it.
uform_status_t check_text_lengths(std::size_t &max_bytes, std::size_t const *offsets, std::size_t count,
                                  char const **message) noexcept {
    if (max_bytes == 0) max_bytes = default_text_max_bytes_k;
    if (max_bytes > text_max_bytes_limit_k)
        return fail(message, uform_status_invalid_argument_k, "max_bytes is over 16,777,216");
    for (std::size_t i = 0; offsets && i != count; ++i)
        if (offsets[i + 1] - offsets[i] > max_bytes)
            return fail(message, uform_status_limit_exceeded_k, "a text is longer than max_bytes");
    return uform_status_ok_k;
}

} // namespace

extern "C" {

uform_status_t uform_text_encode(uform_model_t model, uform_executor_t executor, char const *texts, size_t texts_length,
                                 size_t const *texts_offsets, size_t texts_count, uform_outputs_t outputs,
                                 uform_text_encode_args_t const *args, uform_arena_t arena, uform_encoded_t *encoded,
                                 uform_outcome_t *outcome, char const **message) {
    uform_text_encode_args_t a = args ? *args : uform_text_encode_args_t{};
    encode_checks_t checks{model, executor, arena, encoded, request_of(outputs, a.scalar), message};
    if (uform_status_t status = checks.receiver()) return status;
    if (uform_status_t status =
            check_tape(texts, texts_length, texts_offsets, texts_count, UFORM_TAPE_MESSAGES("the texts tape"), message))
        return status;
    if (uform_status_t status = check_text_lengths(a.max_bytes, texts_offsets, texts_count, message)) return status;
    if (uform_status_t status = checks.heads()) return status;
    return dispatch_verb(
        text_encode_verb_t{model, view_of(texts, texts_offsets, texts_count), checks.request, a, encoded}, executor,
        arena, outcome, message);
}

uform_status_t uform_image_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_image_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    uform_image_encode_args_t a = args ? *args : uform_image_encode_args_t{};
    encode_checks_t checks{model, executor, arena, encoded, request_of(outputs, a.scalar), message};
    if (uform_status_t status = checks.file_verb(files, files_length, files_offsets, files_count,
                                                 &geometry_t::has_image, "the model has no image front-end"))
        return checks.refuse(args, status);
    clamp_to_budget(a.max_patches, model->geometry.image_max_patches);
    if (a.max_pixels == 0) a.max_pixels = default_max_pixels_k;
    return dispatch_verb(
        image_encode_verb_t{model, view_of(files, files_offsets, files_count), checks.request, a, encoded}, executor,
        arena, outcome, message);
}

uform_status_t uform_image_encode_pixels(uform_model_t model, uform_executor_t executor, uint8_t const *pixels,
                                         size_t pixels_length, size_t const *pixels_offsets, size_t pixels_count,
                                         size_t const *heights, size_t const *widths, uform_outputs_t outputs,
                                         uform_image_encode_args_t const *args, uform_arena_t arena,
                                         uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    uform_image_encode_args_t a = args ? *args : uform_image_encode_args_t{};
    encode_checks_t checks{model, executor, arena, encoded, request_of(outputs, a.scalar), message};
    uform_status_t const checked = [&]() noexcept -> uform_status_t {
        if (uform_status_t status = checks.receiver()) return status;
        if (uform_status_t status = check_tape(pixels, pixels_length, pixels_offsets, pixels_count,
                                               UFORM_TAPE_MESSAGES("the pixels tape"), message))
            return status;
        std::size_t const count = pixels_offsets ? pixels_count : 0;
        if (count && (!heights || !widths))
            return fail(message, uform_status_invalid_argument_k, "heights or widths are null but items are counted");
        std::size_t const max_pixels = a.max_pixels ? a.max_pixels : default_max_pixels_k;
        for (std::size_t i = 0; i != count; ++i)
            if (heights[i] == 0 || widths[i] == 0)
                return checks.fail_at(i, uform_status_invalid_argument_k, "an image has a zero height or width");
        for (std::size_t i = 0; i != count; ++i) {
            std::size_t area, bytes;
            bool const fits = multiply(heights[i], widths[i], area) && multiply(area, 3, bytes);
            if (!fits || bytes != pixels_offsets[i + 1] - pixels_offsets[i])
                return checks.fail_at(i, uform_status_shape_mismatch_k,
                                      "an image's pixels are not height * width * 3 bytes");
            if (area > max_pixels)
                return checks.fail_at(i, uform_status_limit_exceeded_k, "an image has more pixels than max_pixels");
        }
        return checks.modality(&geometry_t::has_image, "the model has no image front-end");
    }();
    if (checked) return checks.refuse(args, checked);
    clamp_to_budget(a.max_patches, model->geometry.image_max_patches);
    return dispatch_verb(image_encode_pixels_verb_t{model, view_of(pixels, pixels_offsets, pixels_count), heights,
                                                    widths, checks.request, a, encoded},
                         executor, arena, outcome, message);
}

uform_status_t uform_video_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_video_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    uform_video_encode_args_t a = args ? *args : uform_video_encode_args_t{};
    encode_checks_t checks{model, executor, arena, encoded, request_of(outputs, a.scalar), message};
    if (uform_status_t status = checks.file_verb(files, files_length, files_offsets, files_count,
                                                 &geometry_t::has_video, "the model has no video front-end"))
        return checks.refuse(args, status);
    geometry_t const &g = model->geometry;
    clamp_to_budget(a.max_frames, g.video_max_frames);
    clamp_to_budget(a.max_patches_per_frame, g.video_max_patches_per_frame);
    return dispatch_verb(
        video_encode_verb_t{model, view_of(files, files_offsets, files_count), checks.request, a, encoded}, executor,
        arena, outcome, message);
}

uform_status_t uform_audio_encode(uform_model_t model, uform_executor_t executor, char const *files,
                                  size_t files_length, size_t const *files_offsets, size_t files_count,
                                  uform_outputs_t outputs, uform_audio_encode_args_t const *args, uform_arena_t arena,
                                  uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    uform_audio_encode_args_t a = args ? *args : uform_audio_encode_args_t{};
    encode_checks_t checks{model, executor, arena, encoded, request_of(outputs, a.scalar), message};
    if (uform_status_t status = checks.file_verb(files, files_length, files_offsets, files_count,
                                                 &geometry_t::has_audio, "the model has no audio front-end"))
        return checks.refuse(args, status);
    clamp_to_budget(a.max_patches, model->geometry.audio_max_patches);
    return dispatch_verb(
        audio_encode_verb_t{model, view_of(files, files_offsets, files_count), checks.request, a, encoded}, executor,
        arena, outcome, message);
}

uform_status_t uform_audio_encode_samples(uform_model_t model, uform_executor_t executor, float const *samples,
                                          size_t samples_length, size_t const *samples_offsets, size_t samples_count,
                                          size_t sample_rate, uform_outputs_t outputs,
                                          uform_audio_encode_args_t const *args, uform_arena_t arena,
                                          uform_encoded_t *encoded, uform_outcome_t *outcome, char const **message) {
    uform_audio_encode_args_t a = args ? *args : uform_audio_encode_args_t{};
    encode_checks_t checks{model, executor, arena, encoded, request_of(outputs, a.scalar), message};
    uform_status_t const checked = [&]() noexcept -> uform_status_t {
        if (uform_status_t status = checks.receiver()) return status;
        if (uform_status_t status = check_tape(samples, samples_length, samples_offsets, samples_count,
                                               UFORM_TAPE_MESSAGES("the samples tape"), message))
            return status;
        if (!sample_rate_accepted(sample_rate))
            return fail(message, uform_status_invalid_argument_k, "the sample rate is outside 1 kHz to 384 kHz");
        std::size_t const count = samples_offsets ? samples_count : 0;
        for (std::size_t item = 0; item != count; ++item)
            for (std::size_t i = samples_offsets[item]; i != samples_offsets[item + 1]; ++i)
                if (!(std::fabs(samples[i]) <= max_sample_magnitude_k))
                    return checks.fail_at(item, uform_status_invalid_argument_k,
                                          "a sample is NaN, infinite or beyond 2^32");
        return checks.modality(&geometry_t::has_audio, "the model has no audio front-end");
    }();
    if (checked) return checks.refuse(args, checked);
    clamp_to_budget(a.max_patches, model->geometry.audio_max_patches);
    return dispatch_verb(audio_encode_samples_verb_t{model, view_of(samples, samples_offsets, samples_count),
                                                     sample_rate, checks.request, a, encoded},
                         executor, arena, outcome, message);
}

uform_status_t uform_text_choose(uform_model_t model, uform_executor_t executor, char const *texts, size_t texts_length,
                                 size_t const *texts_offsets, size_t texts_count, char const *choices,
                                 size_t choices_length, size_t const *choices_offsets, size_t choices_count,
                                 uform_text_choose_args_t const *args, uform_arena_t arena, uform_tape_t *probabilities,
                                 uform_outcome_t *outcome, char const **message) {
    if (uform_status_t status = check_receiver(model, executor, arena, probabilities, message)) return status;
    uform_text_choose_args_t a = args ? *args : uform_text_choose_args_t{};
    if (uform_status_t status =
            check_tape(texts, texts_length, texts_offsets, texts_count, UFORM_TAPE_MESSAGES("the texts tape"), message))
        return status;
    if (uform_status_t status = check_tape(choices, choices_length, choices_offsets, choices_count,
                                           UFORM_TAPE_MESSAGES("the choices tape"), message))
        return status;
    if (uform_status_t status = check_text_lengths(a.max_bytes, texts_offsets, texts_count, message)) return status;
    std::size_t const count = texts_offsets ? texts_count : 0;
    if ((choices_offsets ? choices_count : 0) != count)
        return fail(message, uform_status_shape_mismatch_k, "the choices tape holds one item per text");
    if (a.temperature_groups_count != 0 && a.temperature_groups_count != count)
        return fail(message, uform_status_shape_mismatch_k, "temperature groups are zero or one per text");
    if (!a.temperature_groups && a.temperature_groups_count)
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
    for (std::size_t i = 0; i != a.temperature_groups_count; ++i)
        if (a.temperature_groups[i] >= g.choice_groups)
            return fail(message, uform_status_invalid_argument_k, "a temperature group is past the model's groups");
    return dispatch_verb(text_choose_verb_t{model, view_of(texts, texts_offsets, texts_count),
                                            view_of(choices, choices_offsets, choices_count), a, probabilities},
                         executor, arena, outcome, message);
}

} // extern "C"
