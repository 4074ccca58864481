// Loading a validated checkpoint into the RAM residency: mapped from its path or read from the caller's buffer, the
// trunk and heads packed by cpp/weights in BF16, E4M3 or int8, the image, video and audio front-ends beside them,
// progress reported in bytes through the call.
#include <cstring>
#include <new>
#include <utility>

#include "common/scalars.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/backend/gpu.hpp"
#include "cpp/backend/patches.hpp"
#include "cpp/backend/ram.hpp"

namespace uform::backend {
namespace {

/// What the load's progress hook needs: the call, and the last total it reported.
struct load_progress_t {
    call_t *call;
    std::size_t total = 0;
};

bool report_load(void *context, std::size_t completed, std::size_t total) noexcept {
    auto &progress = *static_cast<load_progress_t *>(context);
    progress.total = total;
    return progress.call->report(completed < total ? completed : total, total);
}

/// Loads `embed.<modality>.weight` `[hidden x input]` and its bias (BF16) into a front-end.
uform_status_t load_front_end(checkpoint_t const &checkpoint, std::span<std::byte const> file,
                              ram::mapped_file_t const *source, char const *weight_name, char const *bias_name,
                              std::size_t hidden, std::size_t input, front_end_t &out, char const **message) noexcept {
    uform_status_t status = uform_status_ok_k;
    char const *text = nullptr;
    std::byte const *weight =
        ram::tensor_bytes(checkpoint, file, source, weight_name, dtype_t::bf16, hidden * input, status, text);
    if (weight == nullptr) return fail(message, status, text);
    std::byte const *bias = ram::tensor_bytes(checkpoint, file, source, bias_name, dtype_t::bf16, hidden, status, text);
    if (bias == nullptr) return fail(message, status, text);
    try {
        std::vector<std::uint16_t> aligned(hidden * input); // the file's bytes need not be 2-byte aligned
        std::memcpy(aligned.data(), weight, aligned.size() * 2);
        if (!ram::pack_bf16(aligned.data(), hidden, input, input, out.weight))
            return fail(message, uform_status_out_of_memory_k, "out of memory packing a front-end");
        out.bias.resize(hidden);
        for (std::size_t i = 0; i != hidden; ++i) {
            std::uint16_t bits;
            std::memcpy(&bits, bias + 2 * i, 2);
            out.bias[i] = bf16_to_f32(bits);
        }
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory loading a front-end");
    }
    return uform_status_ok_k;
}

/// The image, video and audio front-ends of a checkpoint that has them: embedding linears, mel filters, window.
uform_status_t load_front_ends(checkpoint_t const &checkpoint, std::span<std::byte const> file,
                               ram::mapped_file_t const *source, model_t &model, char const **message) noexcept {
    geometry_t const &g = checkpoint.geometry;
    if (g.has_image)
        if (uform_status_t status =
                load_front_end(checkpoint, file, source, "embed.image.weight", "embed.image.bias", g.hidden,
                               g.image_patch_side * g.image_patch_side * g.image_channels, model.image, message))
            return status;
    if (g.has_video)
        if (uform_status_t status =
                load_front_end(checkpoint, file, source, "embed.video.weight", "embed.video.bias", g.hidden,
                               g.video_tubelet_frames * g.image_patch_side * g.image_patch_side * g.image_channels,
                               model.video, message))
            return status;
    if (!g.has_audio) return uform_status_ok_k;
    if (uform_status_t status =
            load_front_end(checkpoint, file, source, "embed.audio.weight", "embed.audio.bias", g.hidden,
                           g.audio_frames_per_patch * g.audio_mel_bins, model.audio, message))
        return status;
    std::size_t const bins = g.audio_n_fft / 2 + 1, n = g.audio_n_fft;
    uform_status_t status = uform_status_ok_k;
    char const *text = nullptr;
    std::byte const *filters = ram::tensor_bytes(checkpoint, file, source, "frontend.audio.mel_filters", dtype_t::f32,
                                                 g.audio_mel_bins * bins, status, text);
    if (filters == nullptr) return fail(message, status, text);
    try {
        model.mel_filters.resize(g.audio_mel_bins * bins);
        std::memcpy(model.mel_filters.data(), filters, model.mel_filters.size() * sizeof(float));
        model.hann.resize(n);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory loading the audio front-end");
    }
    periodic_hann(n, model.hann.data());
    return uform_status_ok_k;
}

/// The host half of a VRAM model: the geometry, the host kernels its front-ends multiply with, and the choice
/// temperatures that `text_choose` divides by on the host.
uform_status_t load_host_half(checkpoint_t const &checkpoint, std::span<std::byte const> file,
                              ram::mapped_file_t const *source, ram::model_weights_t &weights,
                              char const **message) noexcept {
    geometry_t const &g = checkpoint.geometry;
    weights.geometry = g;
    weights.cpu_class = ram::cpu_class_native();
    weights.kernels = ram::kernels_for(weights.cpu_class);
    if (!g.has_byte_head || g.choice_groups == 0) return uform_status_ok_k;
    uform_status_t status = uform_status_ok_k;
    char const *text = nullptr;
    std::byte const *bytes = ram::tensor_bytes(checkpoint, file, source, "head.choice.temperatures", dtype_t::f32,
                                               g.choice_groups, status, text);
    if (bytes == nullptr) return fail(message, status, text);
    try {
        weights.temperatures.resize(g.choice_groups);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory loading the choice temperatures");
    }
    std::memcpy(weights.temperatures.data(), bytes, g.choice_groups * sizeof(float));
    for (float temperature : weights.temperatures)
        if (!(temperature > 0 && temperature <= 1e6f))
            return fail(message, uform_status_corrupt_k, "a choice temperature is not in (0, 1e6]");
    return uform_status_ok_k;
}

} // namespace

uform_status_t model_load(model_load_t const &request, checkpoint_t &&checkpoint, call_t &call, model_t *&model,
                          std::size_t &weight_bytes, char const **message) noexcept {
    ram::mapped_file_t mapping;
    std::span<std::byte const> file;
    if (request.buffer != nullptr) file = {static_cast<std::byte const *>(request.buffer), request.length};
    else {
        if (uform_status_t status = mapping.open(request.path, request.path_length, message)) return status;
        file = mapping.bytes();
    }
    if (file.size() < checkpoint.file_size)
        return fail(message, uform_status_corrupt_k, "the checkpoint changed while it was loaded");

    auto *made = new (std::nothrow) model_t;
    if (made == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory making a model");
    ram::mapped_file_t const *source = request.buffer == nullptr ? &mapping : nullptr; // never the caller's buffer

    uform_status_t status = uform_status_ok_k;
    std::size_t trunk_bytes = 0;
    if (request.residency == uform_residency_vram_k) {
        status = gpu::model_load(request, checkpoint, file, source, call, made->vram, trunk_bytes, message);
        if (status == uform_status_ok_k) status = load_host_half(checkpoint, file, source, made->weights, message);
    } else {
        load_progress_t progress{&call};
        ram::weights_options_t options;
        options.cpu_class = request.cpu_class;
        options.quantization = request.quantization;
        options.file = source;
        options.parallel = ram::parallel_of(call);
        options.progress = report_load;
        options.progress_context = &progress;
        status = ram::weights_load(checkpoint, file, options, made->weights, message);
        if (status == uform_status_ok_k && progress.total != 0 && call.report(progress.total, progress.total))
            status = fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
        trunk_bytes = made->weights.bytes();
    }
    if (status == uform_status_ok_k) status = load_front_ends(checkpoint, file, source, *made, message);
    if (status != uform_status_ok_k) {
        model_free(made);
        return status;
    }
    weight_bytes =
        trunk_bytes + made->image.weight.bytes() + made->video.weight.bytes() + made->audio.weight.bytes() +
        (made->image.bias.size() + made->video.bias.size() + made->audio.bias.size() + made->mel_filters.size()) *
            sizeof(float);
    model = made;
    return uform_status_ok_k;
}

void model_free(model_t *model) noexcept {
    if (model != nullptr && model->vram != nullptr) gpu::model_free(model->vram);
    delete model;
}

} // namespace uform::backend
