// Training: a step's items become the trunk's segments here (texts masked, media decoded by the same front-ends as the
// encoders) and cpp/train runs the step's plan, on the CPU's kernels or, for a VRAM trainer in a CUDA build, on one
// GPU's (cuda/train/step_kernels.hpp), across the ranks of the trainer's mesh when it has one.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "common/media_geometry.hpp"
#include "cpp/media/audio_decode.hpp"
#include "cpp/media/video_decode.hpp"
#include "cpp/train/calibrate.hpp"
#include "cpp/train/masking.hpp"
#include "cpp/train/save.hpp"
#include "cpp/train/step.hpp"
#include "cpp/backend/gpu.hpp"
#include "cpp/backend/mesh.hpp"
#include "cpp/backend/patches.hpp"
#include "cpp/backend/ram.hpp"
#if UFORM_WITH_CUDA
#include "cuda/train/step_kernels.hpp"
#endif

namespace uform::backend {

/// One item's inputs as the trunk reads them, kept between steps so that a steady loop reuses their memory.
struct item_inputs_t {
    std::vector<std::uint16_t> tokens;
    std::vector<float> patches;
    std::vector<std::uint32_t> positions;
    std::vector<std::byte> work;
};

struct trainer_t {
#if UFORM_WITH_CUDA
    cuda::train::cuda_kernels_t device; // a VRAM trainer's kernels (`core.kernels`); unopened for a RAM trainer
#endif
    train::trainer_core_t core;
    std::vector<float> hann; // [n_fft]: the periodic Hann window of the audio front-end
    media::fft_pool_t ffts;  // its FFT plans
    std::vector<item_inputs_t> inputs;
    std::vector<train::segment_t> segments;
    std::vector<train::logit_row_t> mask_rows;
    std::vector<std::uint8_t> mask_targets;
    train::mask_t mask;
    std::vector<float> samples;                       // one recording's, decoded
    std::vector<std::uint8_t> legal;                  // calibration: the items' legal bytes, contiguous
    std::vector<float> logits, targets, temperatures; // calibration: their logits at CHOOSE, targets, the fit
    std::vector<std::size_t> offsets;                 // calibration: item i's entries in the three above
    std::vector<std::size_t> groups;                  // calibration: each item's group
    std::vector<std::uint8_t> named;                  // calibration: whether a group has items
};

namespace {

/// The settings of a trainer from its resolved configuration.
train::settings_t settings_of(uform_trainer_init_vram_args_t const &a) noexcept {
    return {a.objective, a.masking, a.contrastive, a.late_interaction, a.choices, a.schedule, a.seed, a.distill};
}

/// The poll hook of the trunk over a call: asks the handler again, reporting no new progress.
bool poll_step(void *context) noexcept { return static_cast<call_t *>(context)->poll(0, 2); }

/// The progress hook of a step over a call.
bool report_step(void *context, std::size_t completed, std::size_t total) noexcept {
    return static_cast<call_t *>(context)->report(completed, total);
}

/// Whether item `i` of a step is a choice item: it has legal bytes.
bool is_choice(trainer_step_t const &step, std::size_t i) noexcept {
    return step.choices.count && step.choices.item_size(i) != 0;
}

/// The tokens of a text's bytes (0-255), followed by CHOOSE (257) when `choose` is set.
void byte_tokens(std::span<char const> text, bool choose, std::vector<std::uint16_t> &tokens) {
    tokens.resize(text.size() + (choose ? 1 : 0));
    for (std::size_t k = 0; k != text.size(); ++k) tokens[k] = static_cast<unsigned char>(text[k]);
    if (choose) tokens.back() = 257;
}

/// A text item's tokens: its bytes, masked when the masking term runs (a nonempty text without choices), followed by
/// CHOOSE for a choice item.
uform_status_t text_tokens(trainer_t &t, trainer_step_t const &step, std::size_t i, bool masking, item_inputs_t &in,
                           char const **message) {
    std::span<char const> const text = step.contents.item(i);
    bool const choice = is_choice(step, i);
    byte_tokens(text, choice, in.tokens);
    if (choice || !masking || text.empty()) return uform_status_ok_k;
    train::settings_t const &s = t.core.settings;
    // Drawn by the item's index among the world's items, so a mesh's ranks draw what one process would.
    std::size_t const index = t.core.layout().first + i;
    if (uform_status_t status = train::sample_mask(s.seed, t.core.steps, index, {text.data(), text.size()},
                                                   s.masking.ratio, s.masking.mean_span, t.mask, message))
        return status;
    for (std::size_t k = 0; k != t.mask.positions.size(); ++k) {
        std::size_t const position = t.mask.positions[k];
        t.mask_rows.push_back({i, position});
        t.mask_targets.push_back(static_cast<std::uint8_t>(in.tokens[position]));
        in.tokens[position] = t.mask.tokens[k];
    }
    return uform_status_ok_k;
}

/// A media item's patch vectors and positions, decoded from the file at `path` as the encoders decode it.
uform_status_t media_patches(trainer_t &t, uform_modality_t modality, std::string const &path, item_inputs_t &in,
                             std::size_t &count, char const **message) {
    geometry_t const &g = t.core.parameters.geometry;
    in.patches.clear();
    in.positions.clear();
    if (modality == uform_modality_image_k) {
        media::rgb_image_t image;
        if (uform_status_t status = media::decode_image_file(path.c_str(), default_max_pixels_k, image, message))
            return status;
        image_grid_t const grid = image_grid(image.height, image.width, g.image_patch_side, g.image_max_patches);
        if (uform_status_t status = append_patches(g, image, grid, in.patches, in.work, message)) return status;
        count = grid.rows * grid.columns;
        in.positions.resize(count * 3);
        grid_positions(grid, 0, in.positions.data());
        return uform_status_ok_k;
    }
    if (modality == uform_modality_video_k) {
        clip_t clip;
        clip.geometry = &g;
        clip.max_patches = g.video_max_patches_per_frame;
        if (uform_status_t status = media::decode_video_file(path.c_str(), double(g.video_fps), g.video_max_frames,
                                                             default_max_pixels_k, {keep_frame, &clip}, message))
            return status;
        std::size_t const tubelet = g.video_tubelet_frames, p = g.image_patch_side;
        count = (clip.frames + tubelet - 1) / tubelet * clip.grid.rows * clip.grid.columns;
        in.patches.resize(count * tubelet * p * p * 3);
        in.positions.resize(count * 3);
        if (count) clip_tubelets(g, clip, in.patches.data(), in.positions.data());
        return uform_status_ok_k;
    }
    double seconds = 0;
    std::size_t const limit = audio_sample_budget(g, g.audio_max_patches);
    if (uform_status_t status =
            media::decode_audio_file(path.c_str(), g.audio_sample_rate, limit, t.samples, seconds, message))
        return status;
    audio_shape_t const shape = audio_shape(g, t.samples.size(), g.audio_max_patches);
    count = shape.patches;
    if (count == 0) return uform_status_ok_k;
    in.patches.resize(count * g.audio_frames_per_patch * g.audio_mel_bins);
    in.work.resize(std::max(in.work.size(), audio_work_bytes(g, shape)));
    kiss_fftr_cfg fft = nullptr;
    if (!t.ffts.take(g.audio_n_fft, &fft, 1))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the audio FFT");
    audio_patches(g, t.core.parameters.mel_filters.data(), t.hann.data(), t.samples.data(), shape, fft, in.work.data(),
                  in.patches.data());
    t.ffts.give(&fft, 1);
    return uform_status_ok_k;
}

/// Builds the trunk's segments of a step's items.
uform_status_t build_segments(trainer_t &t, trainer_step_t const &step, char const **message) noexcept {
    std::size_t const n = step.contents.count;
    uform_objective_t const objective = t.core.settings.objective;
    bool const masking = objective == uform_objective_joint_k || objective == uform_objective_masking_k;
    try {
        if (t.inputs.size() < n) t.inputs.resize(n);
        t.segments.assign(n, {});
        t.mask_rows.clear();
        t.mask_targets.clear();
        for (std::size_t i = 0; i != n; ++i) {
            item_inputs_t &in = t.inputs[i];
            train::segment_t &segment = t.segments[i];
            segment.modality = step.modalities[i];
            if (segment.modality == uform_modality_text_k) {
                if (uform_status_t status = text_tokens(t, step, i, masking, in, message)) return status;
                segment.tokens = in.tokens.data();
                segment.count = in.tokens.size();
                continue;
            }
            std::span<char const> const path = step.contents.item(i);
            if (uform_status_t status = media_patches(t, segment.modality, std::string(path.data(), path.size()), in,
                                                      segment.count, message))
                return status;
            segment.patches = in.patches.data();
            segment.positions = in.positions.empty() ? nullptr : in.positions.data();
        }
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory reading the step's items");
    }
    return uform_status_ok_k;
}

} // namespace

uform_status_t trainer_init(trainer_config_t const &config, call_t &call, trainer_t *&trainer,
                            char const **message) noexcept {
    trainer = nullptr;
    if (config.residency == uform_residency_vram_k) {
        if (config.devices.size() > 1)
            return fail(message, uform_status_unsupported_k,
                        "a VRAM trainer trains on one device: data parallelism over an executor's devices is not "
                        "built yet (join a mesh with one device per rank)");
#if UFORM_WITH_CUDA
        if (config.devices.empty())
            return fail(message, uform_status_invalid_argument_k, "a VRAM trainer needs a device");
#else
        return fail(message, uform_status_unsupported_k, "a VRAM trainer runs on GPUs: this build has none");
#endif
    }
    auto *made = new (std::nothrow) trainer_t;
    if (made == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory making a trainer");
    uform_trainer_init_vram_args_t const &a = config.args;
    made->core.settings = settings_of(a);
    uform_status_t status =
        config.checkpoint
            ? train::parameters_load(a.checkpoint, a.checkpoint_length, *config.checkpoint, a.contrastive.form,
                                     made->core.parameters, message)
            : train::parameters_seeded(config.geometry, a.seed, a.contrastive.form, made->core.parameters, message);
    if (status == uform_status_ok_k && config.checkpoint)
        status = train::saved_steps(a.checkpoint, a.checkpoint_length, *config.checkpoint, made->core.steps, message);
    made->core.mesh = config.mesh;
#if UFORM_WITH_CUDA
    if (status == uform_status_ok_k && config.residency == uform_residency_vram_k) {
        status = made->device.open(config.devices[0], made->core.parameters, message);
        made->core.kernels = &made->device;
    }
#endif
    if (status == uform_status_ok_k) status = made->core.agree(ram::parallel_of(call), message);
#if UFORM_WITH_CUDA
    // The mesh's agreement broadcast rank 0's masters and moments into the host's arrays: the device takes them too.
    if (status == uform_status_ok_k && config.mesh && config.mesh->ranks() > 1 && made->core.kernels)
        status = made->device.upload(made->core.parameters, message);
#endif
    geometry_t const &g = made->core.parameters.geometry;
    if (status == uform_status_ok_k && g.has_audio) try {
            made->hann.resize(g.audio_n_fft);
            periodic_hann(g.audio_n_fft, made->hann.data());
        } catch (std::bad_alloc const &) {
            status = fail(message, uform_status_out_of_memory_k, "out of memory making a trainer");
        }
    if (status != uform_status_ok_k) {
        delete made;
        return status;
    }
    trainer = made;
    return uform_status_ok_k;
}

void trainer_free(trainer_t *trainer) noexcept { delete trainer; }

uform_status_t trainer_step(trainer_t &trainer, call_t &call, trainer_step_t const &step,
                            uform_trainer_step_stats_t &stats, uform_rows_t &embeddings,
                            char const **message) noexcept {
    if (trainer.core.mesh)
        if (uform_status_t status = trainer.core.arrange(step.contents.count, !step.sides.empty(), !step.bags.empty(),
                                                         step.teacher_width, message))
            return status;
    if (uform_status_t status = build_segments(trainer, step, message)) return status;
    std::size_t const n = step.contents.count;
    train::batch_t batch;
    batch.segments = trainer.segments;
    batch.mask_rows = trainer.mask_rows;
    batch.mask_targets = trainer.mask_targets;
    batch.bags = step.bags;
    batch.relations = step.relations;
    batch.sides = step.sides;
    batch.teacher = step.teacher;
    batch.teacher_width = step.teacher_width;
    if (step.choices.count) {
        batch.choices = reinterpret_cast<std::uint8_t const *>(step.choices.data);
        batch.choice_targets = step.choice_targets.data;
        batch.choice_offsets = step.choices.offsets;
    }
    std::size_t const index = trainer.core.steps;
    train::step_report_t report;
    if (uform_status_t status =
            trainer.core.step(batch, ram::parallel_of(call), {poll_step, &call}, {report_step, &call}, report, message))
        return status;
    stats.step = index;
    stats.loss = float(report.loss);
    stats.masking_loss = float(report.masking);
    stats.contrastive_loss = float(report.contrastive);
    stats.late_interaction_loss = float(report.late_interaction);
    stats.choices_loss = float(report.choices);
    stats.distill_loss = float(report.distill);
    stats.gradient_norm = float(report.gradient_norm);
    stats.learning_rate = float(report.learning_rate);
    stats.items = n;
    stats.tokens = report.tokens;
    if (call.has_arena()) {
        std::size_t const dims = trainer.core.parameters.geometry.dimensions;
        if (!call.allocate_rows(embeddings, n, n, dims, uform_scalar_f32_k, false))
            return fail(message, uform_status_out_of_memory_k, "out of memory for the step's embeddings");
        std::size_t const bytes = n * dims * sizeof(float);
        if (call.output_residency() == uform_residency_vram_k) {
            if (uform_status_t status = gpu::copy_to_arena(call, embeddings.data, report.embeddings, bytes, message))
                return status;
        } else if (n) std::memcpy(embeddings.data, report.embeddings, bytes);
    }
    return uform_status_ok_k;
}

namespace {

/// The mean choice cross-entropy of calibration items at the temperatures of their groups.
double choice_loss(trainer_t const &t, float const *temperatures) noexcept {
    std::size_t const items = t.offsets.size() - 1;
    double total = 0;
    for (std::size_t i = 0; i != items; ++i) {
        double const scale = 1.0 / double(temperatures[t.groups[i]]);
        double peak = -INFINITY, sum = 0, expected = 0;
        for (std::size_t k = t.offsets[i]; k != t.offsets[i + 1]; ++k) peak = std::max(peak, t.logits[k] * scale);
        for (std::size_t k = t.offsets[i]; k != t.offsets[i + 1]; ++k) {
            sum += std::exp(t.logits[k] * scale - peak);
            expected += double(t.targets[k]) * t.logits[k] * scale;
        }
        total += peak + std::log(sum) - expected; // targets sum to one
    }
    return items ? total / double(items) : 0.0;
}

} // namespace

uform_status_t trainer_calibrate(trainer_t &trainer, call_t &call, trainer_calibrate_t const &calibrate,
                                 uform_trainer_calibrate_stats_t &stats, char const **message) noexcept {
    std::size_t const n = calibrate.texts.count;
    std::size_t const groups = trainer.core.parameters.temperatures.size();
    try {
        if (trainer.inputs.size() < n) trainer.inputs.resize(n);
        trainer.segments.assign(n, {});
        trainer.legal.clear();
        trainer.targets.clear();
        trainer.offsets.assign(1, 0);
        trainer.groups.clear();
        std::size_t tokens = 0;
        for (std::size_t i = 0; i != n; ++i) {
            std::span<char const> const text = calibrate.texts.item(i), legal = calibrate.choices.item(i);
            std::span<float const> const targets = calibrate.targets.item(i);
            item_inputs_t &in = trainer.inputs[i];
            byte_tokens(text, true, in.tokens);
            trainer.segments[i] = {uform_modality_text_k, in.tokens.data(), nullptr, nullptr, in.tokens.size()};
            tokens += in.tokens.size();
            for (char c : legal) trainer.legal.push_back(static_cast<std::uint8_t>(c));
            trainer.targets.insert(trainer.targets.end(), targets.begin(), targets.end());
            trainer.offsets.push_back(trainer.legal.size());
            trainer.groups.push_back(calibrate.groups.empty() ? 0 : calibrate.groups[i]);
        }
        trainer.temperatures.assign(groups, 1.0f);
        trainer.named.assign(groups, 0);
        stats.items = n;
        stats.tokens = tokens;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory reading the calibration items");
    }
    if (uform_status_t status =
            trainer.core.choice_logits(trainer.segments, trainer.legal.data(), trainer.offsets.data(),
                                       ram::parallel_of(call), {poll_step, &call}, trainer.logits, message))
        return status;
    if (call.report(n, n)) return fail(message, uform_status_cancelled_k, "a progress handler stopped the calibration");
    std::vector<float> &kept = trainer.core.parameters.temperatures;
    stats.loss_before = float(choice_loss(trainer, kept.data()));
    train::calibration_items_t const items{trainer.logits.data(), trainer.targets.data(), trainer.offsets.data(),
                                           trainer.groups.data(), n};
    if (uform_status_t status = train::fit_temperatures(items, groups, trainer.temperatures.data(), message))
        return status;
    // Only the groups the items name take their fit; the others keep their temperature.
    for (std::size_t group : trainer.groups) trainer.named[group] = 1;
    stats.groups_fitted = 0;
    for (std::size_t g = 0; g != groups; ++g)
        if (trainer.named[g]) kept[g] = trainer.temperatures[g], ++stats.groups_fitted;
    stats.loss_after = float(choice_loss(trainer, kept.data()));
    return uform_status_ok_k;
}

uform_status_t trainer_save(trainer_t &trainer, call_t &, char const *path, std::size_t path_length,
                            char const **message) noexcept {
    // A VRAM trainer's tensors come back from the device once; the checkpoint is then the RAM trainer's.
    if (uform_status_t status = trainer.core.residency().to_host(trainer.core.parameters, message)) return status;
    return train::save_checkpoint(trainer.core.parameters, trainer.core.steps, path, path_length, message);
}

} // namespace uform::backend
