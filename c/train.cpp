// The mesh (its file bootstrap through a shared directory) and the trainer: checks, defaults, its two
// constructors (RAM and VRAM, one configuration), and the verbs `step`, `calibrate` and `save`.
//
// Mesh bootstrap, for a run of `host_domain_count` hosts over a directory every host sees:
// - host 0 asks the backend for a fresh identity and publishes `<directory>/<job>.mesh` atomically (a
//   temporary file renamed into place): a version line, the host count, the identity in hex, the GPU class;
// - every host polls until that file appears (re-reading it each poll, so a stale file from an earlier run
//   is followed by the fresh one), then publishes `<directory>/<job>.mesh.<index>` atomically with the
//   identity it read and its device count;
// - every host polls until all hosts' files carry the same identity, then joins through the backend.
// Past `timeout_seconds` a host gives up with `timeout`. A one-host mesh writes nothing and returns at once.
// Files are left in place; give each run a fresh job name. That is the VRAM mesh's; a RAM mesh (one process per
// host) hands the checked options to the backend, whose Gloo rendezvous agrees on a fresh attempt itself.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>

#include <sys/stat.h>

#include "checks.hpp"
#include "small_files.hpp"

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

constexpr std::size_t max_job_bytes_k = 200;
constexpr std::size_t max_hostname_bytes_k = 255;

void mesh_unreference(uform_mesh_s *mesh) noexcept {
    if (mesh->references.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    backend::mesh_free(mesh->backend);
    mesh->magic = 0;
    delete mesh;
}

bool valid_utf8(char const *text, std::size_t length) noexcept {
    auto const *bytes = reinterpret_cast<unsigned char const *>(text);
    for (std::size_t i = 0; i < length;) {
        std::uint32_t code = bytes[i];
        std::size_t extra;
        std::uint32_t least;
        if (code < 0x80) {
            ++i;
            continue;
        } else if ((code & 0xE0) == 0xC0) extra = 1, least = 0x80, code &= 0x1F;
        else if ((code & 0xF0) == 0xE0) extra = 2, least = 0x800, code &= 0x0F;
        else if ((code & 0xF8) == 0xF0) extra = 3, least = 0x10000, code &= 0x07;
        else return false;
        if (length - i <= extra) return false;
        for (std::size_t j = 1; j <= extra; ++j) {
            if ((bytes[i + j] & 0xC0) != 0x80) return false;
            code = (code << 6) | (bytes[i + j] & 0x3F);
        }
        if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return false;
        i += extra + 1;
    }
    return true;
}

std::string hex_of(unsigned char const *bytes, std::size_t length) {
    static char const digits[] = "0123456789abcdef";
    std::string text(length * 2, '0');
    for (std::size_t i = 0; i != length; ++i) {
        text[2 * i] = digits[bytes[i] >> 4];
        text[2 * i + 1] = digits[bytes[i] & 15];
    }
    return text;
}

struct bootstrap_t {
    std::size_t index, count;
    std::string directory, job;
    std::chrono::steady_clock::time_point deadline;
    std::span<std::size_t const> devices;
    uform_gpu_class_t gpu_class;
};

/// The file protocol: answers the identity, the class of the run, and each host's device count.
uform_status_t bootstrap_files(bootstrap_t const &b, unsigned char (&identity)[backend::mesh_identity_bytes_k],
                               uform_gpu_class_t &gpu_class, std::vector<std::size_t> &host_devices,
                               char const **message) {
    std::string const base = b.directory + "/" + b.job + ".mesh";
    if (b.index == 0) {
        if (uform_status_t status = backend::mesh_identity(identity, message)) return status;
        std::string const contents = "uform-mesh 1\n" + std::to_string(b.count) + "\n" +
                                     hex_of(identity, sizeof(identity)) + "\n" + uform_gpu_class_name(b.gpu_class) +
                                     "\n";
        if (!write_atomically(base, contents, std::to_string(b.index)))
            return fail(message, uform_status_io_k, "cannot publish the mesh's identity in its directory");
    }
    std::string marked; // the identity this host's file carries
    std::string contents;
    for (;;) {
        std::string identity_hex;
        if (read_small(base, contents)) {
            std::vector<std::string> const lines = lines_of(contents);
            if (lines.size() >= 4 && lines[0] == "uform-mesh 1" && lines[1] == std::to_string(b.count) &&
                lines[2].size() == 2 * backend::mesh_identity_bytes_k &&
                uform_gpu_class_parse(lines[3].c_str(), &gpu_class) == uform_status_ok_k)
                identity_hex = lines[2];
        }
        if (!identity_hex.empty() && identity_hex != marked) {
            std::string const mine = identity_hex + "\n" + std::to_string(b.devices.size()) + "\n";
            if (!write_atomically(base + "." + std::to_string(b.index), mine, std::to_string(b.index)))
                return fail(message, uform_status_io_k, "cannot publish this host's part of the mesh");
            marked = identity_hex;
        }
        if (!marked.empty()) {
            bool all = true;
            host_devices.assign(b.count, 0);
            for (std::size_t host = 0; all && host != b.count; ++host) {
                std::vector<std::string> lines;
                all = read_small(base + "." + std::to_string(host), contents) &&
                      (lines = lines_of(contents)).size() >= 2 && lines[0] == marked;
                if (all) host_devices[host] = std::strtoull(lines[1].c_str(), nullptr, 10);
            }
            if (all) {
                for (std::size_t i = 0; i != sizeof(identity); ++i)
                    identity[i] = static_cast<unsigned char>(std::stoul(marked.substr(2 * i, 2), nullptr, 16));
                return uform_status_ok_k;
            }
        }
        if (std::chrono::steady_clock::now() >= b.deadline)
            return fail(message, uform_status_timeout_k, "the mesh's peers did not all join in time");
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
}

/// Releases an executor a call acquired when the scope ends.
struct executor_release_t {
    uform_executor_s *executor;
    ~executor_release_t() { executor_release(executor); }
};

bool finite_nonnegative(float value) noexcept { return std::isfinite(value) && value >= 0; }

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

/// Checks the executor a mesh or trainer is made on: live, and of `kind` (a local one, or one of the other residency,
/// answers `unsupported`: that residency's constructor, or its mesh, is another call or not built yet).
uform_status_t check_training_executor(uform_executor_s const *executor, executor_kind_t kind,
                                       char const **message) noexcept {
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (executor->kind == executor_kind_t::local)
        return fail(message, uform_status_unsupported_k, "training runs on a RAM or VRAM executor, not a local one");
    if (executor->kind != kind)
        return fail(message, uform_status_unsupported_k,
                    kind == executor_kind_t::vram
                        ? "this call runs on a VRAM executor only (a RAM trainer is made by uform_trainer_init_ram)"
                        : "this call runs on a RAM executor only (a VRAM trainer is made by uform_trainer_init_vram)");
    return uform_status_ok_k;
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
    if (!known_enum(a.objective, uform_objective_choices_k))
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
                           a.schedule.learning_rate,
                           a.schedule.min_learning_rate,
                           a.schedule.weight_decay,
                           a.schedule.clip_norm,
                           a.batch.video.fps};
    for (float value : reals)
        if (!finite_nonnegative(value))
            return fail(message, uform_status_invalid_argument_k, "a rate, weight or ratio is negative or not finite");
    if (a.masking.ratio >= 1) return fail(message, uform_status_invalid_argument_k, "the masking ratio is not below 1");
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
    return a.checkpoint_length ? uform_status_ok_k : geometry_of_config(a, g, message);
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

/// Joins a RAM mesh of checked options: one process per host, met through the backend's rendezvous in `directory`.
uform_status_t bootstrap_ram(uform_executor_s *executor, uform_mesh_options_t const &o, std::size_t count,
                             uform_mesh_t *mesh, char const **message) noexcept {
    try {
        std::string const directory =
            o.directory_length ? std::string(o.directory, o.directory_length) : std::string(".");
        struct stat status;
        if (::stat(directory.c_str(), &status) != 0 || !S_ISDIR(status.st_mode))
            return fail(message, uform_status_io_k, "the mesh's directory does not exist or is not a directory");
        if (uform_status_t status = executor_acquire(executor, true, message)) return status;
        executor_release_t const release{executor};
        std::size_t const seconds = o.timeout_seconds ? o.timeout_seconds : 600;
        backend::mesh_rendezvous_t const rendezvous{
            directory,
            o.job_length ? std::string_view(o.job, o.job_length) : std::string_view("uform"),
            o.hostname_length ? std::string_view(o.hostname, o.hostname_length) : std::string_view("127.0.0.1"),
            o.host_domain_index,
            count,
            std::chrono::steady_clock::now() + std::chrono::seconds(seconds),
            std::chrono::seconds(seconds)};
        auto made = std::make_unique<uform_mesh_s>();
        made->residency = uform_residency_ram_k;
        if (uform_status_t status = backend::mesh_rendezvous(rendezvous, made->backend, message)) return status;
        made->description = {o.host_domain_index,   count, 1, count, o.host_domain_index, uform_multimem_tier_none_k,
                             uform_gpu_class_auto_k};
        *mesh = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    }
}

} // namespace

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_mesh_bootstrap(uform_executor_t executor, uform_mesh_options_t const *options, uform_mesh_t *mesh,
                                    char const **message) {
    if (!mesh) return fail(message, uform_status_invalid_argument_k, "the mesh out-pointer is null");
    if (!executor_valid(executor)) return fail(message, uform_status_invalid_argument_k, "the executor is null");
    if (uform_status_t status = check_training_executor(
            executor, executor->kind == executor_kind_t::ram ? executor_kind_t::ram : executor_kind_t::vram, message))
        return status;
    uform_mesh_options_t const o = options ? *options : uform_mesh_options_t{};
    std::size_t const count = o.host_domain_count ? o.host_domain_count : 1;
    if (o.host_domain_index >= count)
        return fail(message, uform_status_invalid_argument_k, "the host's index is not below the hosts' count");
    if (!o.directory && o.directory_length)
        return fail(message, uform_status_invalid_argument_k, "the directory is null but has a length");
    if (o.directory_length > max_path_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the directory is longer than 4095 bytes");
    if (o.directory && std::memchr(o.directory, 0, o.directory_length))
        return fail(message, uform_status_invalid_argument_k, "the directory holds a NUL byte");
    if (!o.job && o.job_length)
        return fail(message, uform_status_invalid_argument_k, "the job is null but has a length");
    if (o.job_length > max_job_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the job's name is longer than 200 bytes");
    if (o.job) {
        if (!valid_utf8(o.job, o.job_length))
            return fail(message, uform_status_invalid_argument_k, "the job's name is not UTF-8");
        for (std::size_t i = 0; i != o.job_length; ++i)
            if (o.job[i] == '/' || o.job[i] == '\\' || o.job[i] == '\0')
                return fail(message, uform_status_invalid_argument_k, "the job's name holds a slash or a NUL");
    }
    if (!o.hostname && o.hostname_length)
        return fail(message, uform_status_invalid_argument_k, "the hostname is null but has a length");
    if (o.hostname_length > max_hostname_bytes_k)
        return fail(message, uform_status_invalid_argument_k, "the hostname is longer than 255 bytes");
    if (o.hostname && (!valid_utf8(o.hostname, o.hostname_length) || std::memchr(o.hostname, 0, o.hostname_length)))
        return fail(message, uform_status_invalid_argument_k, "the hostname is not UTF-8 without NUL bytes");
    if (executor->kind == executor_kind_t::ram) return bootstrap_ram(executor, o, count, mesh, message);
    if (uform_status_t status = executor_acquire(executor, true, message)) return status;
    executor_release_t const release{executor};

    try {
        auto made = std::make_unique<uform_mesh_s>();
        made->devices = executor->devices;
        std::vector<std::size_t> host_devices(count, executor->devices.size());
        unsigned char identity[backend::mesh_identity_bytes_k] = {};
        uform_gpu_class_t gpu_class = executor->gpu_class;
        if (count == 1) {
            if (uform_status_t status = backend::mesh_identity(identity, message)) return status;
        } else {
            bootstrap_t b;
            b.index = o.host_domain_index;
            b.count = count;
            b.directory = o.directory_length ? std::string(o.directory, o.directory_length) : std::string(".");
            b.job = o.job_length ? std::string(o.job, o.job_length) : std::string("uform");
            b.deadline =
                std::chrono::steady_clock::now() + std::chrono::seconds(o.timeout_seconds ? o.timeout_seconds : 600);
            b.devices = executor->devices;
            b.gpu_class = executor->gpu_class;
            if (uform_status_t status = bootstrap_files(b, identity, gpu_class, host_devices, message)) return status;
        }
        std::size_t first_rank = 0, world = 0;
        for (std::size_t host = 0; host != count; ++host) {
            if (host < o.host_domain_index) first_rank += host_devices[host];
            world += host_devices[host];
        }
        backend::mesh_join_t join{identity, o.host_domain_index, count, first_rank, world, made->devices, gpu_class};
        uform_multimem_tier_t tier = uform_multimem_tier_none_k;
        if (uform_status_t status = backend::mesh_join(join, made->backend, tier, message)) return status;
        made->description = {o.host_domain_index, count, executor->devices.size(), world, first_rank, tier, gpu_class};
        *mesh = made.release();
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    } catch (...) {
        return fail(message, uform_status_internal_k, "joining the mesh threw");
    }
}

uform_status_t uform_mesh_describe(uform_mesh_t mesh, uform_mesh_description_t *description, char const **message) {
    if (!mesh_valid(mesh)) return fail(message, uform_status_invalid_argument_k, "the mesh is null");
    if (!description) return fail(message, uform_status_invalid_argument_k, "the description out-pointer is null");
    *description = mesh->description;
    return uform_status_ok_k;
}

void uform_mesh_free(uform_mesh_t mesh) {
    if (!mesh_valid(mesh)) return;
    mesh_unreference(mesh); // a trainer still made over it frees it with its own free
}

uform_status_t uform_trainer_init_vram(uform_executor_t executor, uform_trainer_init_vram_args_t const *args,
                                       uform_trainer_t *trainer, char const **message) {
    if (!trainer) return fail(message, uform_status_invalid_argument_k, "the trainer out-pointer is null");
    if (uform_status_t status = check_training_executor(executor, executor_kind_t::vram, message)) return status;
    uform_trainer_init_vram_args_t a = args ? *args : uform_trainer_init_vram_args_t{};
    if (a.mesh) {
        if (!mesh_valid(a.mesh)) return fail(message, uform_status_invalid_argument_k, "the mesh is not a live mesh");
        if (a.mesh->residency != uform_residency_vram_k || a.mesh->devices != executor->devices)
            return fail(message, uform_status_invalid_argument_k, "the mesh was joined over other devices");
    }
    geometry_t g{};
    checkpoint_t start;
    if (uform_status_t status = resolve_trainer(a, g, start, message)) return status;
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
    if (uform_status_t status = check_step_relations(a, n, message)) return status;
    if (uform_status_t status = check_step_choices(a, modalities, n, message)) return status;
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
