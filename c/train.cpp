// The trainer: checks, defaults, its two constructors (RAM and VRAM, one configuration), and the verbs `step`,
// `calibrate` and `save`. The mesh it trains across is c/mesh.cpp's.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <sys/stat.h>

#include "common/checkpoint_writer.hpp"
#include "c/handles.hpp"
#include "common/checks.hpp"

namespace uform {

void trainer_enter(uform_trainer_s *trainer) noexcept {
    std::lock_guard lock(trainer->mutex);
    ++trainer->uses;
}

void trainer_leave(uform_trainer_s *trainer) noexcept {
    std::lock_guard lock(trainer->mutex);
    if (--trainer->uses == 0) trainer->idle.notify_all();
}

namespace {

bool finite_nonnegative(float value) noexcept { return std::isfinite(value) && value >= 0; }

/// The largest learning rate (peak and final) and weight decay a trainer takes (train.h).
constexpr float max_rate_k = 1;
/// The largest term weight, hard-negative weight and mean masked span a trainer takes (train.h).
constexpr float max_weight_k = 1e6f;

/// Checks an edge set against a step of `items`.
uform_status_t check_edges(uform_edges_t const &edges, std::size_t items, char const **message) noexcept {
    if (!edges.offsets && edges.offsets_count)
        return fail(message, uform_status_invalid_argument_k, "an edge set's offsets are null but counted");
    if (!edges.ids && edges.ids_count)
        return fail(message, uform_status_invalid_argument_k, "an edge set's ids are null but counted");
    if (!edges.weights && edges.weights_count)
        return fail(message, uform_status_invalid_argument_k, "an edge set's weights are null but counted");
    if (edges.offsets_count == 0) {
        if (edges.ids_count || edges.weights_count)
            return fail(message, uform_status_shape_mismatch_k, "an edge set has ids but no offsets");
        return uform_status_ok_k;
    }
    if (edges.offsets_count != items + 1)
        return fail(message, uform_status_shape_mismatch_k, "an edge set's offsets are not one per item plus one");
    for (std::size_t i = 0; i != items; ++i)
        if (edges.offsets[i] > edges.offsets[i + 1])
            return fail(message, uform_status_shape_mismatch_k, "an edge set's offsets fall");
    if (edges.offsets[items] != edges.ids_count)
        return fail(message, uform_status_shape_mismatch_k, "an edge set's ids do not match its last offset");
    if (edges.weights_count != 0 && edges.weights_count != edges.ids_count)
        return fail(message, uform_status_shape_mismatch_k, "an edge set's weights are neither zero nor one per id");
    for (std::size_t i = 0; i != items; ++i)
        for (std::size_t e = edges.offsets[i]; e != edges.offsets[i + 1]; ++e) {
            if (edges.ids[e] >= items)
                return fail(message, uform_status_invalid_argument_k, "an edge leads outside the step's items");
            if (edges.ids[e] == i)
                return fail(message, uform_status_invalid_argument_k, "an edge leads to its own item");
        }
    for (std::size_t e = 0; e != edges.weights_count; ++e)
        if (!std::isfinite(edges.weights[e]) || edges.weights[e] <= 0)
            return fail(message, uform_status_invalid_argument_k, "an edge's weight is not finite and positive");
    return uform_status_ok_k;
}

bool modality_built(geometry_t const &g, uform_modality_t modality) noexcept {
    switch (modality) {
    case uform_modality_text_k: return true;
    case uform_modality_image_k: return g.has_image;
    case uform_modality_video_k: return g.has_video;
    case uform_modality_audio_k: return g.has_audio;
    }
    return false;
}

/// Checks the executor of a call on `trainer`: live, not local, of the trainer's residency and placement.
uform_status_t check_trainer_executor(uform_trainer_s const *trainer, uform_executor_s const *executor,
                                      char const **message) noexcept {
    if (!trainer_valid(trainer)) return fail(message, uform_status_invalid_argument_k, "the trainer is null");
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (executor->kind == executor_kind_t::local)
        return fail(message, uform_status_unsupported_k, "training runs on a RAM or VRAM executor, not a local one");
    bool const vram = executor->kind == executor_kind_t::vram;
    if (vram != (trainer->residency == uform_residency_vram_k))
        return fail(message, uform_status_invalid_argument_k, "the executor's residency differs from the trainer's");
    if (vram ? executor->devices != trainer->devices : executor->numa_nodes != trainer->numa_nodes)
        return fail(message, uform_status_invalid_argument_k,
                    vram ? "the executor's devices differ from the trainer's"
                         : "the executor's NUMA nodes differ from the trainer's");
    return uform_status_ok_k;
}

/// The devices a trainer's batch bounds count: a VRAM trainer's, or the one process of a RAM trainer.
std::size_t local_devices(uform_trainer_s const *trainer) noexcept {
    return trainer->residency == uform_residency_vram_k ? trainer->devices.size() : 1;
}

/// Checks a step's items: the contents tape, a known modality per item, and a path for each media item.
uform_status_t check_step_items(uform_modality_t const *modalities, char const *contents, std::size_t contents_length,
                                std::size_t const *contents_offsets, std::size_t contents_count,
                                char const **message) noexcept {
    if (uform_status_t status = check_tape(contents, contents_length, contents_offsets, contents_count,
                                           UFORM_TAPE_MESSAGES("the contents tape"), message))
        return status;
    std::size_t const n = contents_offsets ? contents_count : 0;
    if (n && !modalities)
        return fail(message, uform_status_invalid_argument_k, "modalities are null but items counted");
    for (std::size_t i = 0; i != n; ++i)
        if (!known_enum(modalities[i], uform_modality_audio_k))
            return fail(message, uform_status_invalid_argument_k, "unknown modality");
    for (std::size_t i = 0; i != n; ++i)
        if (modalities[i] != uform_modality_text_k) {
            std::size_t const offsets[2] = {contents_offsets[i], contents_offsets[i + 1]};
            std::size_t const relative[2] = {0, offsets[1] - offsets[0]};
            if (uform_status_t status = check_paths(contents + offsets[0], relative, 1, message)) return status;
        }
    return uform_status_ok_k;
}

/// Whether any of a step's `n` checked items has content: a media item, or a nonempty text.
bool has_content(uform_modality_t const *modalities, std::size_t const *offsets, std::size_t n) noexcept {
    for (std::size_t i = 0; i != n; ++i)
        if (modalities[i] != uform_modality_text_k || offsets[i + 1] != offsets[i]) return true;
    return false;
}

/// Checks what relates a step's `n` items: bags, edges and late-interaction sides.
uform_status_t check_step_relations(uform_trainer_step_args_t const &a, std::size_t n, char const **message) noexcept {
    if (!a.bags && a.bags_count) return fail(message, uform_status_invalid_argument_k, "bags are null but counted");
    if (a.bags_count != 0 && a.bags_count != n)
        return fail(message, uform_status_shape_mismatch_k, "bags are neither zero nor one per item");
    for (uform_edges_t const *edges : {&a.relations.attract, &a.relations.repel, &a.relations.ignore})
        if (uform_status_t status = check_edges(*edges, n, message)) return status;
    if (!a.sides && a.sides_count) return fail(message, uform_status_invalid_argument_k, "sides are null but counted");
    if (a.sides_count != 0 && a.sides_count != n)
        return fail(message, uform_status_shape_mismatch_k, "sides are neither zero nor one per item");
    for (std::size_t i = 0; i != a.sides_count; ++i)
        if (!known_enum(a.sides[i], uform_late_interaction_side_document_k))
            return fail(message, uform_status_invalid_argument_k, "unknown late-interaction side");
    return uform_status_ok_k;
}

/// Checks one item's legal choice bytes and their targets, already shaped alike: distinct bytes, and targets that are
/// finite, non-negative and, for a nonempty item, sum to one within 1e-5 (their F32 sum, as decisions.md says).
uform_status_t check_choice_item(std::span<char const> choices, std::span<float const> targets,
                                 char const **message) noexcept {
    bool seen[256] = {};
    for (char choice : choices) {
        auto const byte = static_cast<unsigned char>(choice);
        if (seen[byte]) return fail(message, uform_status_invalid_argument_k, "an item's choices repeat a byte");
        seen[byte] = true;
    }
    float sum = 0;
    for (float target : targets) {
        if (!finite_nonnegative(target))
            return fail(message, uform_status_invalid_argument_k, "a choice target is negative or not finite");
        sum += target;
    }
    if (!choices.empty() && !(std::fabs(sum - 1.0f) <= 1e-5f))
        return fail(message, uform_status_invalid_argument_k, "an item's choice targets do not sum to one within 1e-5");
    return uform_status_ok_k;
}

/// Checks a choices tape and its targets tape: offsets, and targets shaped as the choices, item by item.
uform_status_t check_choice_tapes(tape_view_t<char> choices, tape_view_t<float> targets,
                                  char const **message) noexcept {
    if (targets.count != choices.count)
        return fail(message, uform_status_shape_mismatch_k, "the choice targets are not shaped as the choices");
    for (std::size_t i = 0; i != choices.count; ++i)
        if (targets.item_size(i) != choices.item_size(i))
            return fail(message, uform_status_shape_mismatch_k, "the choice targets are not shaped as the choices");
    for (std::size_t i = 0; i != choices.count; ++i)
        if (uform_status_t status = check_choice_item(choices.item(i), targets.item(i), message)) return status;
    return uform_status_ok_k;
}

/// Checks a step's choices and their targets: zero or one per item, text items only, distinct bytes, and targets
/// that are distributions over them.
uform_status_t check_step_choices(uform_trainer_step_args_t const &a, uform_modality_t const *modalities, std::size_t n,
                                  char const **message) noexcept {
    if (uform_status_t status = check_tape(a.choices, a.choices_length, a.choices_offsets, a.choices_count,
                                           UFORM_TAPE_MESSAGES("the choices tape"), message))
        return status;
    if (uform_status_t status =
            check_tape(a.choice_targets, a.choice_targets_length, a.choice_targets_offsets, a.choice_targets_count,
                       UFORM_TAPE_MESSAGES("the choice targets tape"), message))
        return status;
    tape_view_t<char> const choices{a.choices, a.choices_offsets, a.choices_offsets ? a.choices_count : 0};
    tape_view_t<float> const targets{a.choice_targets, a.choice_targets_offsets,
                                     a.choice_targets_offsets ? a.choice_targets_count : 0};
    if (choices.count != 0 && choices.count != n)
        return fail(message, uform_status_shape_mismatch_k, "the choices tape is neither empty nor one per item");
    for (std::size_t i = 0; i != choices.count; ++i)
        if (choices.item_size(i) != 0 && modalities[i] != uform_modality_text_k)
            return fail(message, uform_status_invalid_argument_k, "only text items take choices");
    return check_choice_tapes(choices, targets, message);
}

/// The widest teacher row a step may carry (train.h).
constexpr std::size_t max_teacher_width_k = 65536;

/// Checks a step's teacher rows: none, or `teacher_width` finite values per item, given to a trainer whose objective
/// distils (train.h).
uform_status_t check_step_teacher(uform_trainer_s const *trainer, uform_trainer_step_args_t const &a, std::size_t n,
                                  char const **message) noexcept {
    if (!a.teacher && a.teacher_count)
        return fail(message, uform_status_invalid_argument_k, "teacher rows are null but counted");
    if (a.teacher_count == 0) {
        if (a.teacher_width != 0)
            return fail(message, uform_status_shape_mismatch_k, "a teacher width is named but no teacher rows given");
        return uform_status_ok_k;
    }
    if (a.teacher_width == 0 || a.teacher_width > max_teacher_width_k)
        return fail(message, uform_status_invalid_argument_k, "the teacher width is not between 1 and 65536");
    std::size_t values = 0;
    if (!multiply(n, a.teacher_width, values) || a.teacher_count != values)
        return fail(message, uform_status_shape_mismatch_k,
                    "the teacher rows are not the step's items times the teacher width");
    uform_objective_t const objective = trainer->args.objective;
    if (objective != uform_objective_joint_k && objective != uform_objective_distill_k)
        return fail(message, uform_status_invalid_argument_k,
                    "teacher rows given to a trainer whose objective does not distil (joint or distill)");
    for (std::size_t k = 0; k != a.teacher_count; ++k)
        if (!std::isfinite(a.teacher[k]))
            return fail(message, uform_status_invalid_argument_k, "a teacher row holds a NaN or infinite value");
    return uform_status_ok_k;
}

/// Checks a step's `n` items against the bounds its trainer's buffers were sized for, and its front-ends.
uform_status_t check_step_bounds(uform_trainer_s const *trainer, uform_trainer_step_args_t const &a,
                                 uform_modality_t const *modalities, std::size_t const *contents_offsets, std::size_t n,
                                 char const **message) noexcept {
    uform_batch_shape_t const &b = trainer->args.batch;
    std::size_t const devices = local_devices(trainer);
    if (n > b.max_segments_per_device * devices)
        return fail(message, uform_status_limit_exceeded_k, "the step holds more items than the batch's bound");
    std::size_t text_tokens = 0;
    for (std::size_t i = 0; i != n; ++i)
        if (modalities[i] == uform_modality_text_k) {
            // A choice item's forward is its text and the CHOOSE token.
            bool const chooses =
                a.choices_offsets && a.choices_count && a.choices_offsets[i + 1] != a.choices_offsets[i];
            std::size_t const length = contents_offsets[i + 1] - contents_offsets[i] + chooses;
            if (length > b.max_columns_per_row)
                return fail(message, uform_status_limit_exceeded_k, "a text is longer than a packed row");
            text_tokens += length;
        }
    if (text_tokens > b.max_rows_per_device * b.max_columns_per_row * devices)
        return fail(message, uform_status_limit_exceeded_k, "the step's texts exceed the packed rows");
    if (a.bags_count) {
        std::size_t distinct = 0;
        for (std::size_t i = 0; i != n; ++i) {
            bool first = true;
            for (std::size_t j = 0; first && j != i; ++j) first = a.bags[j] != a.bags[i];
            distinct += first;
        }
        if (distinct > b.max_bags_per_device * devices)
            return fail(message, uform_status_limit_exceeded_k, "the step holds more bags than the batch's bound");
    }
    for (std::size_t i = 0; i != n; ++i)
        if (!modality_built(trainer->geometry, modalities[i]))
            return fail(message, uform_status_unsupported_k, "the trainer has no front-end for an item's modality");

    return uform_status_ok_k;
}

struct step_params_t {
    uform_trainer_s *trainer;
    backend::trainer_step_t step;
    uform_trainer_step_stats_t *stats;
    uform_progress_t progress;
    void *progress_context;
    uform_rows_t *embeddings;

    static uform_status_t run(step_params_t const &p, holds_t const &holds, char const **message) noexcept {
        if (p.embeddings) *p.embeddings = uform_rows_t{};
        if (holds.arena) arena_rewind(holds.arena);
        call_t call(holds.executor, holds.arena, p.trainer->residency, p.trainer->devices, p.progress,
                    p.progress_context);
        auto const start = std::chrono::steady_clock::now();
        uform_trainer_step_stats_t stats{};
        uform_rows_t rows{};
        uform_status_t status = backend::trainer_step(*p.trainer->backend, call, p.step, stats, rows, message);
        if (status == uform_status_ok_k && call.cancelled())
            status = fail(message, uform_status_cancelled_k, "a progress handler stopped the step");
        if (status) return status;
        stats.nanoseconds = std::uint64_t(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
        if (p.stats) *p.stats = stats;
        if (p.embeddings) *p.embeddings = rows;
        return uform_status_ok_k;
    }
};

struct save_params_t {
    uform_trainer_s *trainer;
    char const *path;
    std::size_t path_length;

    static uform_status_t run(save_params_t const &p, holds_t const &holds, char const **message) noexcept {
        call_t call(holds.executor, nullptr, p.trainer->residency, p.trainer->devices, nullptr, nullptr);
        return backend::trainer_save(*p.trainer->backend, call, p.path, p.path_length, message);
    }
};

struct calibrate_params_t {
    uform_trainer_s *trainer;
    backend::trainer_calibrate_t calibrate;
    uform_trainer_calibrate_stats_t *stats;
    uform_progress_t progress;
    void *progress_context;

    static uform_status_t run(calibrate_params_t const &p, holds_t const &holds, char const **message) noexcept {
        call_t call(holds.executor, nullptr, p.trainer->residency, p.trainer->devices, p.progress, p.progress_context);
        auto const start = std::chrono::steady_clock::now();
        uform_trainer_calibrate_stats_t stats{};
        uform_status_t status = backend::trainer_calibrate(*p.trainer->backend, call, p.calibrate, stats, message);
        if (status == uform_status_ok_k && call.cancelled())
            status = fail(message, uform_status_cancelled_k, "a progress handler stopped the calibration");
        if (status) return status;
        stats.nanoseconds = std::uint64_t(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count());
        if (p.stats) *p.stats = stats;
        return uform_status_ok_k;
    }
};

/// Checks a calibration's held-out items against `trainer`: one nonempty text-and-choices pair per item, targets
/// that are distributions, groups below the trainer's, each text plus CHOOSE within a packed row.
uform_status_t check_calibration(uform_trainer_s const *trainer, tape_view_t<char> texts, tape_view_t<char> choices,
                                 tape_view_t<float> targets, uform_trainer_calibrate_args_t const &a,
                                 char const **message) noexcept {
    if (!trainer->geometry.has_byte_head || trainer->geometry.choice_groups == 0)
        return fail(message, uform_status_unsupported_k, "the trainer's model has no byte head to choose with");
    if (choices.count != texts.count)
        return fail(message, uform_status_shape_mismatch_k, "the choices tape is not one item per text");
    for (std::size_t i = 0; i != choices.count; ++i)
        if (choices.item_size(i) == 0)
            return fail(message, uform_status_invalid_argument_k, "a held-out item has no choice");
    if (uform_status_t status = check_choice_tapes(choices, targets, message)) return status;
    if (!a.temperature_groups && a.temperature_groups_count)
        return fail(message, uform_status_invalid_argument_k, "temperature groups are null but counted");
    if (a.temperature_groups_count != 0 && a.temperature_groups_count != texts.count)
        return fail(message, uform_status_shape_mismatch_k, "temperature groups are neither zero nor one per item");
    for (std::size_t i = 0; i != a.temperature_groups_count; ++i)
        if (a.temperature_groups[i] >= trainer->geometry.choice_groups)
            return fail(message, uform_status_invalid_argument_k,
                        "a temperature group is not below the trainer's choice groups");
    for (std::size_t i = 0; i != texts.count; ++i)
        if (texts.item_size(i) + 1 > trainer->args.batch.max_columns_per_row)
            return fail(message, uform_status_limit_exceeded_k, "a held-out text and its CHOOSE exceed a packed row");
    return uform_status_ok_k;
}

/// Checks a trainer's configuration as passed: the checkpoint's path, the enumerators, and the rates, weights and
/// ratios. Shared by every residency's trainer.
uform_status_t check_trainer_config(uform_trainer_init_vram_args_t const &a, char const **message) noexcept {
    if (!a.checkpoint && a.checkpoint_length)
        return fail(message, uform_status_invalid_argument_k, "the checkpoint's path is null but has a length");
    if (a.checkpoint && std::memchr(a.checkpoint, 0, a.checkpoint_length))
        return fail(message, uform_status_invalid_argument_k, "the checkpoint's path holds a NUL byte");
    if (!known_enum(a.objective, uform_objective_distill_k))
        return fail(message, uform_status_invalid_argument_k, "unknown objective");
    if (!known_enum(a.contrastive.form, uform_pair_loss_form_sigmoid_k))
        return fail(message, uform_status_invalid_argument_k, "unknown pair-loss form");
    if (!known_enum(a.contrastive.negatives, uform_negatives_mesh_and_hard_k))
        return fail(message, uform_status_invalid_argument_k, "unknown negatives");
    float const reals[] = {a.masking.ratio,
                           a.masking.mean_span,
                           a.masking.weight,
                           a.contrastive.hard_negative_weight,
                           a.contrastive.weight,
                           a.late_interaction.weight,
                           a.choices.weight,
                           a.distill.student_temperature,
                           a.distill.teacher_temperature,
                           a.distill.weight,
                           a.schedule.learning_rate,
                           a.schedule.min_learning_rate,
                           a.schedule.weight_decay,
                           a.schedule.clip_norm,
                           a.batch.video.fps};
    for (float value : reals)
        if (!finite_nonnegative(value))
            return fail(message, uform_status_invalid_argument_k, "a rate, weight or ratio is negative or not finite");
    if (a.masking.ratio >= 1) return fail(message, uform_status_invalid_argument_k, "the masking ratio is not below 1");
    // The optimiser's scalars within the ranges train.h states, so that no first step can overflow the weights.
    if (a.schedule.learning_rate > max_rate_k || a.schedule.min_learning_rate > max_rate_k)
        return fail(message, uform_status_invalid_argument_k, "schedule.learning_rate is above 1");
    if (a.schedule.weight_decay > max_rate_k)
        return fail(message, uform_status_invalid_argument_k, "schedule.weight_decay is above 1");
    float const weights[] = {a.masking.mean_span,  a.masking.weight,          a.contrastive.hard_negative_weight,
                             a.contrastive.weight, a.late_interaction.weight, a.choices.weight,
                             a.distill.weight};
    for (float value : weights)
        if (value > max_weight_k)
            return fail(message, uform_status_invalid_argument_k, "a term's weight or span is above 1e6");
    return uform_status_ok_k;
}

/// Fills the zero fields of a trainer's configuration with the defaults train.h documents, derived ones last.
void resolve_trainer_defaults(uform_trainer_init_vram_args_t &a) noexcept {
    if (!a.depth) a.depth = 12;
    if (!a.hidden) a.hidden = 512;
    if (!a.heads) a.heads = a.hidden / 64;
    if (!a.ffn_hidden) a.ffn_hidden = a.hidden * 3;
    if (!a.dimensions) a.dimensions = a.hidden;
    uform_batch_shape_t &b = a.batch;
    if (!b.max_rows_per_device) b.max_rows_per_device = 64;
    if (!b.max_segments_per_device) b.max_segments_per_device = b.max_rows_per_device * 4;
    if (!b.max_columns_per_row) b.max_columns_per_row = 1024;
    if (!b.max_bags_per_device) b.max_bags_per_device = b.max_segments_per_device;
    if (b.image.patch_side) {
        if (!b.image.channels) b.image.channels = 3;
    }
    if (b.video.tubelet_frames) {
        if (b.video.fps == 0) b.video.fps = 1;
        if (!b.video.max_frames) b.video.max_frames = 16;
        if (!b.video.max_patches_per_frame) b.video.max_patches_per_frame = 64;
    }
    if (b.audio.sample_rate) {
        if (!b.audio.mel_bins) b.audio.mel_bins = 80;
        if (!b.audio.frames_per_patch) b.audio.frames_per_patch = 4;
        if (!b.audio.max_patches) b.audio.max_patches = 1500;
    }
    if (a.masking.ratio == 0) a.masking.ratio = 0.15f;
    if (a.masking.mean_span == 0) a.masking.mean_span = 3;
    if (a.masking.weight == 0) a.masking.weight = 1;
    if (a.contrastive.hard_negative_weight == 0) a.contrastive.hard_negative_weight = 2;
    if (a.contrastive.weight == 0) a.contrastive.weight = 1;
    if (!a.late_interaction.token_width) a.late_interaction.token_width = 128;
    if (a.late_interaction.weight == 0) a.late_interaction.weight = 1;
    if (!a.choices.groups) a.choices.groups = 1;
    if (a.choices.weight == 0) a.choices.weight = 1;
    if (a.distill.student_temperature == 0) a.distill.student_temperature = 0.05f;
    if (a.distill.teacher_temperature == 0) a.distill.teacher_temperature = 0.05f;
    if (a.distill.weight == 0) a.distill.weight = 1;
    uform_schedule_t &s = a.schedule;
    if (!s.steps) s.steps = 10000;
    if (!s.warmup_steps) s.warmup_steps = s.steps / 100;
    if (s.learning_rate == 0) s.learning_rate = 1e-3f;
    if (s.min_learning_rate == 0) s.min_learning_rate = s.learning_rate / 100;
    if (s.weight_decay == 0) s.weight_decay = 0.01f;
    if (s.clip_norm == 0) s.clip_norm = 1;
}

/// The largest batch bound (rows, segments, columns, bags) and MLP width a configuration may ask for.
constexpr std::size_t big_k = std::size_t(1) << 20;

/// Checks a configuration once its defaults are resolved: the schedule's order, and the batch's bounds.
uform_status_t check_resolved_config(uform_trainer_init_vram_args_t const &a, char const **message) noexcept {
    uform_schedule_t const &s = a.schedule;
    uform_batch_shape_t const &b = a.batch;
    if (s.warmup_steps > s.steps)
        return fail(message, uform_status_invalid_argument_k, "warm-up steps exceed the steps");
    if (s.min_learning_rate > s.learning_rate)
        return fail(message, uform_status_invalid_argument_k, "the final learning rate exceeds the peak");
    if (b.max_rows_per_device > big_k || b.max_segments_per_device > big_k || b.max_columns_per_row > big_k ||
        b.max_bags_per_device > big_k || a.late_interaction.token_width > 65536 || a.choices.groups > 65536)
        return fail(message, uform_status_invalid_argument_k, "a batch bound or head width is out of range");
    for (float temperature : {a.distill.student_temperature, a.distill.teacher_temperature})
        if (temperature < 1e-3f || temperature > 1e3f)
            return fail(message, uform_status_invalid_argument_k,
                        "a distillation temperature is not between 1e-3 and 1e3");
    return uform_status_ok_k;
}

/// The geometry of a trainer seeded from its configuration (no checkpoint): docs/model.md's fixed fields, the rest
/// from `a`.
uform_status_t geometry_of_config(uform_trainer_init_vram_args_t const &a, geometry_t &g,
                                  char const **message) noexcept {
    uform_batch_shape_t const &b = a.batch;
    if (a.heads == 0 || a.hidden % a.heads != 0 || (a.hidden / a.heads) % 2 != 0)
        return fail(message, uform_status_invalid_argument_k, "heads must split hidden into even head widths");
    if (a.depth > 1024 || a.hidden > 65536 || a.ffn_hidden > big_k || a.dimensions > 65536)
        return fail(message, uform_status_invalid_argument_k, "a geometry field is out of range");
    if (b.video.tubelet_frames && !b.image.patch_side)
        return fail(message, uform_status_invalid_argument_k, "video needs the image front-end's patch side");
    g.version = 1;
    g.depth = a.depth;
    g.hidden = a.hidden;
    g.heads = a.heads;
    g.head_dim = a.hidden / a.heads;
    g.ffn_hidden = a.ffn_hidden;
    g.norm_eps = 1e-6f;
    g.rope_theta = 10000;
    std::size_t const pairs = g.head_dim / 2;
    g.rope_sections[0] = pairs / 4;
    g.rope_sections[1] = (pairs - pairs / 4) / 2;
    g.rope_sections[2] = pairs - g.rope_sections[0] - g.rope_sections[1];
    g.dimensions = a.dimensions;
    g.has_token_head = g.has_byte_head = true;
    g.token_width = a.late_interaction.token_width;
    g.choice_groups = a.choices.groups;
    g.has_image = b.image.patch_side != 0;
    g.has_video = b.video.tubelet_frames != 0;
    g.has_audio = b.audio.sample_rate != 0;
    if (g.has_image || g.has_video) {
        g.image_patch_side = b.image.patch_side;
        g.image_channels = b.image.channels;
        g.image_max_patches = b.max_columns_per_row;
        for (int i = 0; i != 3; ++i) g.image_mean[i] = g.image_std[i] = 0.5f;
    }
    if (g.has_video) {
        g.video_tubelet_frames = b.video.tubelet_frames;
        g.video_fps = b.video.fps;
        g.video_max_frames = b.video.max_frames;
        g.video_max_patches_per_frame = b.video.max_patches_per_frame;
    }
    if (g.has_audio) {
        g.audio_sample_rate = b.audio.sample_rate;
        g.audio_n_fft = 400;
        g.audio_hop = 160;
        g.audio_mel_bins = b.audio.mel_bins;
        g.audio_frames_per_patch = b.audio.frames_per_patch;
        g.audio_max_patches = b.audio.max_patches;
    }
    return uform_status_ok_k;
}

/// Refuses a configuration whose geometry fields contradict the starting checkpoint's: each field passed must be
/// zero (take the checkpoint's) or the checkpoint's value.
uform_status_t check_checkpoint_agrees(uform_trainer_init_vram_args_t const &a, geometry_t const &g,
                                       char const **message) noexcept {
    struct field_t {
        double passed, have;
        char const *message;
    };
    uform_batch_shape_t const &b = a.batch;
    field_t const fields[] = {
        {double(a.depth), double(g.depth), "the starting checkpoint's depth contradicts the configuration's"},
        {double(a.hidden), double(g.hidden), "the starting checkpoint's hidden contradicts the configuration's"},
        {double(a.heads), double(g.heads), "the starting checkpoint's heads contradict the configuration's"},
        {double(a.ffn_hidden), double(g.ffn_hidden),
         "the starting checkpoint's ffn_hidden contradicts the configuration's"},
        {double(a.dimensions), double(g.dimensions),
         "the starting checkpoint's dimensions contradict the configuration's"},
        {double(a.late_interaction.token_width), double(g.token_width),
         "the starting checkpoint's token width contradicts the configuration's"},
        {double(a.choices.groups), double(g.choice_groups),
         "the starting checkpoint's choice groups contradict the configuration's"},
        {double(b.image.patch_side), double(g.image_patch_side),
         "the starting checkpoint's image front-end contradicts the configuration's"},
        {double(b.image.channels), double(g.image_channels),
         "the starting checkpoint's image front-end contradicts the configuration's"},
        {double(b.video.tubelet_frames), double(g.video_tubelet_frames),
         "the starting checkpoint's video front-end contradicts the configuration's"},
        {double(b.video.fps), double(g.video_fps),
         "the starting checkpoint's video front-end contradicts the configuration's"},
        {double(b.video.max_frames), double(g.video_max_frames),
         "the starting checkpoint's video front-end contradicts the configuration's"},
        {double(b.video.max_patches_per_frame), double(g.video_max_patches_per_frame),
         "the starting checkpoint's video front-end contradicts the configuration's"},
        {double(b.audio.sample_rate), double(g.audio_sample_rate),
         "the starting checkpoint's audio front-end contradicts the configuration's"},
        {double(b.audio.mel_bins), double(g.audio_mel_bins),
         "the starting checkpoint's audio front-end contradicts the configuration's"},
        {double(b.audio.frames_per_patch), double(g.audio_frames_per_patch),
         "the starting checkpoint's audio front-end contradicts the configuration's"},
        {double(b.audio.max_patches), double(g.audio_max_patches),
         "the starting checkpoint's audio front-end contradicts the configuration's"},
    };
    for (field_t const &field : fields)
        if (field.passed != 0 && field.passed != field.have)
            return fail(message, uform_status_invalid_argument_k, field.message);
    return uform_status_ok_k;
}

/// Takes a starting checkpoint's geometry into the configuration's geometry fields, so that the trainer's resolved
/// configuration describes the model it trains.
void adopt_checkpoint_geometry(uform_trainer_init_vram_args_t &a, geometry_t const &g) noexcept {
    a.depth = g.depth;
    a.hidden = g.hidden;
    a.heads = g.heads;
    a.ffn_hidden = g.ffn_hidden;
    a.dimensions = g.dimensions;
    a.late_interaction.token_width = g.token_width;
    a.choices.groups = g.choice_groups;
    a.batch.image = {g.image_patch_side, g.image_channels};
    a.batch.video = {g.video_tubelet_frames, g.video_fps, g.video_max_frames, g.video_max_patches_per_frame};
    a.batch.audio = {g.audio_sample_rate, g.audio_mel_bins, g.audio_frames_per_patch, g.audio_max_patches};
}

/// Resolves a trainer's configuration and geometry: checks what was passed; reads the starting checkpoint's header,
/// if any, checks that the configuration agrees with it and adopts its geometry; fills the remaining defaults, checks
/// what they give, and without a checkpoint derives the geometry from `a`.
uform_status_t resolve_trainer(uform_trainer_init_vram_args_t &a, geometry_t &g, checkpoint_t &start,
                               char const **message) noexcept {
    if (uform_status_t status = check_trainer_config(a, message)) return status;
    if (a.checkpoint_length != 0) {
        if (uform_status_t status = checkpoint_read_file(a.checkpoint, a.checkpoint_length, start, message))
            return status;
        g = start.geometry;
        if (uform_status_t status = check_checkpoint_agrees(a, g, message)) return status;
        adopt_checkpoint_geometry(a, g);
    }
    resolve_trainer_defaults(a);
    if (uform_status_t status = check_resolved_config(a, message)) return status;
    if (a.checkpoint_length) return uform_status_ok_k;
    if (uform_status_t status = geometry_of_config(a, g, message)) return status;
    // What the trainer will save must load: the reader's bounds, applied to the seeded geometry before anything runs.
    return checkpoint_check_geometry(g, message);
}

/// Makes a trainer of a resolved configuration in `executor`'s residency (its devices, or its threads and NUMA
/// nodes), holding the executor meanwhile.
uform_status_t make_trainer(uform_executor_s *executor, uform_trainer_init_vram_args_t const &a, geometry_t const &g,
                            checkpoint_t const *start, uform_trainer_t *trainer, char const **message) noexcept {
    if (uform_status_t status = executor_acquire(executor, true, message)) return status;
    executor_release_t const release{executor};
    try {
        auto made = std::make_unique<uform_trainer_s>();
        bool const vram = executor->kind == executor_kind_t::vram;
        made->args = a;
        made->geometry = g;
        made->residency = vram ? uform_residency_vram_k : uform_residency_ram_k;
        if (vram) {
            made->devices = executor->devices;
            made->gpu_class = executor->gpu_class;
        } else {
            made->numa_nodes = executor->numa_nodes;
            made->cpu_class = executor->cpu_class;
        }
        made->mesh = a.mesh;
        made->world_devices = a.mesh ? a.mesh->description.world_devices : vram ? executor->devices.size() : 1;
        backend::trainer_config_t config{a,
                                         g,
                                         start,
                                         made->residency,
                                         made->numa_nodes,
                                         made->cpu_class,
                                         made->devices,
                                         made->gpu_class,
                                         a.mesh ? a.mesh->backend : nullptr,
                                         made->world_devices};
        call_t call(executor, nullptr, made->residency, made->devices, nullptr, nullptr);
        if (uform_status_t status = backend::trainer_init(config, call, made->backend, message)) return status;
        if (a.mesh) a.mesh->references.fetch_add(1, std::memory_order_relaxed);
        *trainer = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory making a trainer");
    }
}

} // namespace

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_trainer_init_vram(uform_executor_t executor, uform_trainer_init_vram_args_t const *args,
                                       uform_trainer_t *trainer, char const **message) {
    if (!trainer) return fail(message, uform_status_invalid_argument_k, "the trainer out-pointer is null");
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (executor->kind == executor_kind_t::local)
        return fail(message, uform_status_unsupported_k, "training runs on a RAM or VRAM executor, not a local one");
    // The configuration is checked as `uform_trainer_init_ram` checks it before the executor's kind, so a process
    // without a device learns of a bad configuration as a RAM trainer would (train.h).
    uform_trainer_init_vram_args_t a = args ? *args : uform_trainer_init_vram_args_t{};
    if (a.mesh && !mesh_valid(a.mesh))
        return fail(message, uform_status_invalid_argument_k, "the mesh is not a live mesh");
    geometry_t g{};
    checkpoint_t start;
    if (uform_status_t status = resolve_trainer(a, g, start, message)) return status;
    if (executor->kind != executor_kind_t::vram && backend::gpu_count() == 0)
        return fail(message, uform_status_unsupported_k,
                    "a VRAM trainer needs a GPU and this process drives none (a RAM trainer is made by "
                    "uform_trainer_init_ram)");
    if (uform_status_t status = check_training_executor(executor, executor_kind_t::vram, message)) return status;
    if (a.mesh && (a.mesh->residency != uform_residency_vram_k || a.mesh->devices != executor->devices))
        return fail(message, uform_status_invalid_argument_k, "the mesh was joined over other devices");
    return make_trainer(executor, a, g, a.checkpoint_length ? &start : nullptr, trainer, message);
}

uform_status_t uform_trainer_init_ram(uform_executor_t executor, uform_trainer_init_ram_args_t const *args,
                                      uform_trainer_t *trainer, char const **message) {
    if (!trainer) return fail(message, uform_status_invalid_argument_k, "the trainer out-pointer is null");
    if (uform_status_t status = check_training_executor(executor, executor_kind_t::ram, message)) return status;
    uform_trainer_init_ram_args_t a = args ? *args : uform_trainer_init_ram_args_t{};
    if (a.mesh) {
        if (!mesh_valid(a.mesh)) return fail(message, uform_status_invalid_argument_k, "the mesh is not a live mesh");
        if (a.mesh->residency != uform_residency_ram_k)
            return fail(message, uform_status_invalid_argument_k, "a RAM trainer's mesh is joined over a RAM executor");
    }
    geometry_t g{};
    checkpoint_t start;
    if (uform_status_t status = resolve_trainer(a, g, start, message)) return status;
    return make_trainer(executor, a, g, a.checkpoint_length ? &start : nullptr, trainer, message);
}

uform_status_t uform_trainer_free(uform_trainer_t trainer) {
    if (!trainer_valid(trainer)) return uform_status_ok_k;
    if (uform_status_t status = refuse_inside_handler(holds_t{nullptr, nullptr, nullptr, trainer}, nullptr, nullptr))
        return status;
    {
        std::unique_lock lock(trainer->mutex);
        trainer->idle.wait(lock, [&] { return trainer->uses == 0; });
    }
    backend::trainer_free(trainer->backend);
    uform_mesh_s *mesh = trainer->mesh;
    trainer->magic = 0;
    delete trainer;
    if (mesh) mesh_unreference(mesh);
    return uform_status_ok_k;
}

uform_status_t uform_trainer_step(uform_trainer_t trainer, uform_executor_t executor,
                                  uform_modality_t const *modalities, char const *contents, size_t contents_length,
                                  size_t const *contents_offsets, size_t contents_count,
                                  uform_trainer_step_args_t const *args, uform_rows_t *embeddings,
                                  uform_outcome_t *outcome, char const **message) {
    if (uform_status_t status = check_trainer_executor(trainer, executor, message)) return status;
    uform_trainer_step_args_t const a = args ? *args : uform_trainer_step_args_t{};
    if (a.arena && !arena_valid(a.arena))
        return fail(message, uform_status_invalid_argument_k, "the arena is not a live arena");
    if (a.arena && trainer->residency == uform_residency_ram_k && a.arena->residency != uform_residency_ram_k)
        return fail(message, uform_status_invalid_argument_k, "a RAM trainer's embeddings land in a RAM arena");
    if (uform_status_t status =
            check_step_items(modalities, contents, contents_length, contents_offsets, contents_count, message))
        return status;
    std::size_t const n = contents_offsets ? contents_count : 0;
    // A step of one process with nothing to learn from is refused before anything changes (train.h); a mesh's rank
    // may bring no items, and its backend refuses a step empty over the whole mesh.
    if (!trainer->mesh && !has_content(modalities, contents_offsets, n))
        return fail(message, uform_status_invalid_argument_k,
                    "a step needs an item with content: it has no items, or only empty texts (nothing changed)");
    if (uform_status_t status = check_step_relations(a, n, message)) return status;
    if (uform_status_t status = check_step_choices(a, modalities, n, message)) return status;
    if (uform_status_t status = check_step_teacher(trainer, a, n, message)) return status;
    if (uform_status_t status = check_step_bounds(trainer, a, modalities, contents_offsets, n, message)) return status;

    step_params_t p{};
    p.trainer = trainer;
    p.stats = a.stats;
    p.progress = a.progress;
    p.progress_context = a.progress_context;
    p.embeddings = embeddings;
    p.step.modalities = modalities;
    p.step.contents = {contents, contents_offsets, n};
    p.step.bags = {a.bags, a.bags ? a.bags_count : 0};
    p.step.relations = a.relations;
    p.step.sides = {a.sides, a.sides ? a.sides_count : 0};
    p.step.choices = {a.choices, a.choices_offsets, a.choices_offsets ? a.choices_count : 0};
    p.step.choice_targets = {a.choice_targets, a.choice_targets_offsets,
                             a.choice_targets_offsets ? a.choice_targets_count : 0};
    p.step.teacher = {a.teacher, a.teacher ? a.teacher_count : 0};
    p.step.teacher_width = a.teacher_count ? a.teacher_width : 0;
    return dispatch(p, holds_t{executor, a.arena, nullptr, trainer}, outcome, message);
}

uform_status_t uform_trainer_calibrate(uform_trainer_t trainer, uform_executor_t executor, char const *texts,
                                       size_t texts_length, size_t const *texts_offsets, size_t texts_count,
                                       char const *choices, size_t choices_length, size_t const *choices_offsets,
                                       size_t choices_count, float const *targets, size_t targets_length,
                                       size_t const *targets_offsets, size_t targets_count,
                                       uform_trainer_calibrate_args_t const *args, uform_outcome_t *outcome,
                                       char const **message) {
    if (uform_status_t status = check_trainer_executor(trainer, executor, message)) return status;
    uform_trainer_calibrate_args_t const a = args ? *args : uform_trainer_calibrate_args_t{};
    if (uform_status_t status =
            check_tape(texts, texts_length, texts_offsets, texts_count, UFORM_TAPE_MESSAGES("the texts tape"), message))
        return status;
    if (uform_status_t status = check_tape(choices, choices_length, choices_offsets, choices_count,
                                           UFORM_TAPE_MESSAGES("the choices tape"), message))
        return status;
    if (uform_status_t status = check_tape(targets, targets_length, targets_offsets, targets_count,
                                           UFORM_TAPE_MESSAGES("the targets tape"), message))
        return status;
    tape_view_t<char> const text_view{texts, texts_offsets, texts_offsets ? texts_count : 0};
    tape_view_t<char> const choice_view{choices, choices_offsets, choices_offsets ? choices_count : 0};
    tape_view_t<float> const target_view{targets, targets_offsets, targets_offsets ? targets_count : 0};
    if (uform_status_t status = check_calibration(trainer, text_view, choice_view, target_view, a, message))
        return status;
    calibrate_params_t p{};
    p.trainer = trainer;
    p.calibrate = {text_view, choice_view, target_view, {a.temperature_groups, a.temperature_groups_count}};
    p.stats = a.stats;
    p.progress = a.progress;
    p.progress_context = a.progress_context;
    return dispatch(p, holds_t{executor, nullptr, nullptr, trainer}, outcome, message);
}

uform_status_t uform_trainer_save(uform_trainer_t trainer, uform_executor_t executor, char const *path,
                                  size_t path_length, uform_outcome_t *outcome, char const **message) {
    if (uform_status_t status = check_trainer_executor(trainer, executor, message)) return status;
    if (!path || path_length == 0) return fail(message, uform_status_invalid_argument_k, "the path is empty");
    if (path_length > max_path_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the path is longer than 4095 bytes");
    if (std::memchr(path, 0, path_length))
        return fail(message, uform_status_invalid_argument_k, "the path holds a NUL byte");
    save_params_t const p{trainer, path, path_length};
    return dispatch(p, holds_t{executor, nullptr, nullptr, trainer}, outcome, message);
}

} // extern "C"
