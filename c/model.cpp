// Loading checkpoints (from a path or a buffer, into RAM or VRAM), describing and freeing models.
//
// The ABI layer reads and validates the checkpoint's header itself (`checkpoint_read_*`), so every backend
// refuses a broken checkpoint with the same statuses, then hands the validated header to the backend,
// which loads the weights.
#include <cstring>

#include "c/handles.hpp"

namespace uform {

void model_enter(uform_model_s *model) noexcept {
    std::lock_guard lock(model->mutex);
    ++model->uses;
}

void model_leave(uform_model_s *model) noexcept {
    std::lock_guard lock(model->mutex);
    if (--model->uses == 0) model->idle.notify_all(); // under the lock: a free may destroy the model right after
}

namespace {

constexpr std::size_t max_placement_k = 16;

bool has_duplicates(std::size_t const *values, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i)
        for (std::size_t j = 0; j != i; ++j)
            if (values[i] == values[j]) return true;
    return false;
}

/// Weights load as `auto`, `bf16` or `e4m3` in every residency, and as `i8` in RAM (`ram`).
bool legal_quantization(uform_scalar_t const &scalar, bool ram) noexcept {
    std::uint64_t const bits = raw_enum(scalar);
    return bits == uform_scalar_auto_k || bits == uform_scalar_bf16_k || bits == uform_scalar_e4m3_k ||
           (ram && bits == uform_scalar_i8_k);
}

/// The quantization a load asks of its backend: `auto` becomes `bf16`.
uform_scalar_t resolved_quantization(uform_scalar_t scalar) noexcept {
    return scalar == uform_scalar_auto_k ? uform_scalar_bf16_k : scalar;
}

/// What both residencies' loads share once their own arguments are checked.
struct load_t {
    backend::model_load_t request;
    uform_executor_s *executor;
    uform_progress_t progress;
    void *progress_context;
};

uform_status_t load(load_t &load, uform_model_t *model, char const **message) noexcept {
    if (uform_status_t status = refuse_nesting_too_deep(message)) return status;
    if (load.executor)
        if (uform_status_t status = executor_acquire(load.executor, true, message)) return status;
    struct release_t {
        uform_executor_s *executor;
        ~release_t() {
            if (executor) executor_release(executor);
        }
    } release{load.executor};

    checkpoint_t checkpoint;
    uform_status_t status =
        load.request.buffer ? checkpoint_read_buffer(load.request.buffer, load.request.length, checkpoint, message)
                            : checkpoint_read_file(load.request.path, load.request.path_length, checkpoint, message);
    if (status) return status;

    auto *made = new (std::nothrow) uform_model_s;
    if (!made) return fail(message, uform_status_out_of_memory_k, "out of memory making a model");
    made->geometry = checkpoint.geometry;
    made->residency = load.request.residency;
    made->placement_count = load.request.placement.size();
    std::copy(load.request.placement.begin(), load.request.placement.end(), made->placement);
    if (made->residency == uform_residency_ram_k && made->placement_count == 0) made->placement_count = 1; // node 0
    made->cpu_class = load.request.cpu_class;
    made->gpu_class = load.request.gpu_class;
    made->quantization = load.request.quantization;

    holds_t const holds{load.executor, nullptr, nullptr, nullptr};
    running_t const running(holds, nullptr);
    call_t call(load.executor, nullptr, load.request.residency,
                load.request.residency == uform_residency_vram_k ? load.request.placement
                                                                 : std::span<std::size_t const>{},
                load.progress, load.progress_context);
    status = backend::model_load(load.request, std::move(checkpoint), call, made->backend, made->weight_bytes, message);
    if (status == uform_status_ok_k && call.cancelled()) {
        backend::model_free(made->backend);
        status = fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
    }
    if (status) {
        made->magic = 0;
        delete made;
        return status;
    }
    *model = made;
    return uform_status_ok_k;
}

uform_status_t check_ram(uform_model_load_ram_args_t const &args, load_t &load, char const **message) noexcept {
    if (!args.numa_nodes && args.numa_nodes_count)
        return fail(message, uform_status_invalid_argument_k, "NUMA nodes are null but counted");
    if (args.numa_nodes_count > max_placement_k)
        return fail(message, uform_status_invalid_argument_k, "more than 16 NUMA nodes named");
    if (has_duplicates(args.numa_nodes, args.numa_nodes_count))
        return fail(message, uform_status_invalid_argument_k, "a NUMA node is named twice");
    if (!known_enum(args.cpu_class, uform_cpu_class_wasm_simd128_k))
        return fail(message, uform_status_invalid_argument_k, "unknown CPU class");
    if (!legal_quantization(args.quantization, true))
        return fail(message, uform_status_invalid_argument_k, "weights load as auto, bf16, e4m3 or i8 only");
    if (args.executor) {
        if (!executor_valid(args.executor))
            return fail(message, uform_status_invalid_argument_k, "the executor is not a live executor");
        if (args.executor->kind == executor_kind_t::vram)
            return fail(message, uform_status_invalid_argument_k, "a RAM load needs a RAM or local executor");
    }
    for (std::size_t i = 0; i != args.numa_nodes_count; ++i)
        if (args.numa_nodes[i] >= backend::numa_nodes())
            return fail(message, uform_status_not_found_k, "a NUMA node does not exist");
    uform_cpu_class_t cpu_class = args.cpu_class;
    if (cpu_class == uform_cpu_class_auto_k)
        cpu_class = args.executor ? args.executor->cpu_class : backend::cpu_class_native();
    else if (!backend::cpu_class_available(cpu_class))
        return fail(message, uform_status_unsupported_k, "this machine or build cannot dispatch as that CPU class");
    load.request.residency = uform_residency_ram_k;
    load.request.placement = {args.numa_nodes, args.numa_nodes ? args.numa_nodes_count : 0};
    load.request.cpu_class = cpu_class;
    load.request.gpu_class = uform_gpu_class_auto_k;
    load.request.quantization = resolved_quantization(args.quantization);
    load.executor = args.executor;
    load.progress = args.progress;
    load.progress_context = args.progress_context;
    return uform_status_ok_k;
}

uform_status_t check_vram(uform_model_load_vram_args_t const &args, load_t &load,
                          std::size_t (&devices)[max_placement_k], char const **message) noexcept {
    if (!args.devices && args.devices_count)
        return fail(message, uform_status_invalid_argument_k, "devices are null but counted");
    if (args.devices_count > max_placement_k)
        return fail(message, uform_status_invalid_argument_k, "more than 16 devices named");
    if (has_duplicates(args.devices, args.devices_count))
        return fail(message, uform_status_invalid_argument_k, "a device is named twice");
    if (!known_enum(args.gpu_class, uform_gpu_class_amd_cdna2_k))
        return fail(message, uform_status_invalid_argument_k, "unknown GPU class");
    if (raw_enum(args.quantization) == uform_scalar_i8_k)
        return fail(message, uform_status_unsupported_k, "int8 weights load in the RAM residency only");
    if (!legal_quantization(args.quantization, false))
        return fail(message, uform_status_invalid_argument_k, "weights load as auto, bf16 or e4m3 only");
    if (args.executor) {
        if (!executor_valid(args.executor))
            return fail(message, uform_status_invalid_argument_k, "the executor is not a live executor");
        if (args.executor->kind != executor_kind_t::vram)
            return fail(message, uform_status_invalid_argument_k, "a VRAM load needs a VRAM executor");
    }
    if (backend::gpu_count() == 0)
        return fail(message, uform_status_unsupported_k, "no GPU is present that this build drives");
    std::size_t count = args.devices_count;
    if (count) std::memcpy(devices, args.devices, count * sizeof(std::size_t));
    else if (args.executor) {
        count = std::min(args.executor->devices.size(), max_placement_k);
        std::memcpy(devices, args.executor->devices.data(), count * sizeof(std::size_t));
    } else devices[count++] = 0;
    for (std::size_t i = 0; i != count; ++i)
        if (devices[i] >= backend::gpu_count())
            return fail(message, uform_status_not_found_k, "a device does not exist");
    std::span<std::size_t const> const placement{devices, count};
    uform_gpu_class_t gpu_class = args.gpu_class;
    if (gpu_class == uform_gpu_class_auto_k) {
        if (args.executor) gpu_class = args.executor->gpu_class;
        else {
            uform_gpu_device_t device;
            backend::gpu_describe(devices[0], device);
            gpu_class = device.gpu_class;
        }
    }
    if (!backend::gpu_class_available(gpu_class, placement))
        return fail(message, uform_status_unsupported_k, "the devices cannot dispatch as that GPU class");
    load.request.residency = uform_residency_vram_k;
    load.request.placement = placement;
    load.request.cpu_class = uform_cpu_class_auto_k;
    load.request.gpu_class = gpu_class;
    load.request.quantization = resolved_quantization(args.quantization);
    load.executor = args.executor;
    load.progress = args.progress;
    load.progress_context = args.progress_context;
    return uform_status_ok_k;
}

uform_status_t check_path(char const *path, std::size_t length, char const **message) noexcept {
    if (!path || length == 0) return fail(message, uform_status_invalid_argument_k, "the checkpoint's path is empty");
    if (std::memchr(path, 0, length))
        return fail(message, uform_status_invalid_argument_k, "the checkpoint's path holds a NUL byte");
    return uform_status_ok_k;
}

/// The buffer, or a non-null stand-in for an empty one: `load` reads a buffer when it is non-null, and
/// an empty one is corrupt as a file that short is.
void const *buffer_or_empty(void const *buffer) noexcept {
    static unsigned char const empty = 0;
    return buffer ? buffer : &empty;
}

/// Where a load reads its checkpoint: the file at a path, or a buffer in memory.
enum class source_t { path, buffer };

/// The steps every load entry point shares, in order: the arguments and the out-pointer are present, the source is
/// well formed (a path nonempty and without NUL, a buffer non-null unless empty), the residency's own checks
/// (`check_residency(args, request, message)`, which fills the request's placement and classes) pass; then the load.
template <typename args_type_, typename check_type_>
uform_status_t load_from(args_type_ const *args, source_t source, uform_model_t *model, char const **message,
                         check_type_ &&check_residency) noexcept {
    bool const from_path = source == source_t::path;
    if (!args)
        return fail(message, uform_status_invalid_argument_k,
                    from_path ? "the arguments are null; the path is required"
                              : "the arguments are null; the buffer is required");
    if (!model) return fail(message, uform_status_invalid_argument_k, "the model out-pointer is null");
    if (from_path) {
        if (uform_status_t status = check_path(args->path, args->path_length, message)) return status;
    } else if (!args->buffer && args->buffer_length)
        return fail(message, uform_status_invalid_argument_k, "the buffer is null but has a length");
    load_t request{};
    if (uform_status_t status = check_residency(*args, request, message)) return status;
    if (from_path) {
        request.request.path = args->path;
        request.request.path_length = args->path_length;
    } else {
        request.request.buffer = buffer_or_empty(args->buffer);
        request.request.length = args->buffer_length;
    }
    return load(request, model, message);
}

} // namespace

} // namespace uform

using namespace uform;

extern "C" {

uform_status_t uform_model_load_ram(uform_model_load_ram_args_t const *args, uform_model_t *model,
                                    char const **message) {
    return load_from(args, source_t::path, model, message, check_ram);
}

uform_status_t uform_model_load_ram_buffer(uform_model_load_ram_args_t const *args, uform_model_t *model,
                                           char const **message) {
    return load_from(args, source_t::buffer, model, message, check_ram);
}

uform_status_t uform_model_load_vram(uform_model_load_vram_args_t const *args, uform_model_t *model,
                                     char const **message) {
    std::size_t devices[max_placement_k]; // the placement's storage, read until the load returns
    return load_from(args, source_t::path, model, message,
                     [&devices](uform_model_load_vram_args_t const &vram, load_t &request, char const **why) noexcept {
                         return check_vram(vram, request, devices, why);
                     });
}

uform_status_t uform_model_load_vram_buffer(uform_model_load_vram_args_t const *args, uform_model_t *model,
                                            char const **message) {
    std::size_t devices[max_placement_k]; // the placement's storage, read until the load returns
    return load_from(args, source_t::buffer, model, message,
                     [&devices](uform_model_load_vram_args_t const &vram, load_t &request, char const **why) noexcept {
                         return check_vram(vram, request, devices, why);
                     });
}

uform_status_t uform_model_describe(uform_model_t model, uform_model_description_t *description, char const **message) {
    if (!model_valid(model)) return fail(message, uform_status_invalid_argument_k, "the model is null");
    if (!description) return fail(message, uform_status_invalid_argument_k, "the description out-pointer is null");
    geometry_t const &g = model->geometry;
    uform_model_description_t d{};
    d.version = g.version;
    d.depth = g.depth;
    d.hidden = g.hidden;
    d.heads = g.heads;
    d.head_dim = g.head_dim;
    d.ffn_hidden = g.ffn_hidden;
    d.norm_eps = g.norm_eps;
    d.rope_theta = g.rope_theta;
    for (int i = 0; i != 3; ++i) d.rope_sections[i] = g.rope_sections[i];
    d.dimensions = g.dimensions;
    d.token_width = g.has_token_head ? g.token_width : 0;
    d.choice_temperature_groups = g.has_byte_head ? g.choice_groups : 0;
    if (g.has_image) {
        d.image_patch_side = g.image_patch_side;
        d.image_channels = g.image_channels;
        d.image_max_patches = g.image_max_patches;
    }
    if (g.has_video) {
        d.video_tubelet_frames = g.video_tubelet_frames;
        d.video_fps = g.video_fps;
        d.video_max_frames = g.video_max_frames;
        d.video_max_patches_per_frame = g.video_max_patches_per_frame;
    }
    if (g.has_audio) {
        d.audio_sample_rate = g.audio_sample_rate;
        d.audio_mel_bins = g.audio_mel_bins;
        d.audio_frames_per_patch = g.audio_frames_per_patch;
        d.audio_max_patches = g.audio_max_patches;
    }
    d.residency = model->residency;
    std::memcpy(d.placement, model->placement, sizeof(d.placement));
    d.placement_count = model->placement_count;
    d.cpu_class = model->cpu_class;
    d.gpu_class = model->gpu_class;
    d.quantization = model->quantization;
    d.weight_bytes = model->weight_bytes;
    *description = d;
    return uform_status_ok_k;
}

uform_status_t uform_model_free(uform_model_t model) {
    if (!model_valid(model)) return uform_status_ok_k;
    if (uform_status_t status = refuse_inside_handler(holds_t{nullptr, nullptr, model, nullptr}, nullptr, nullptr))
        return status;
    executor_run_held_naming(model, nullptr);
    {
        std::unique_lock lock(model->mutex);
        model->idle.wait(lock, [&] { return model->uses == 0; });
    }
    backend::model_free(model->backend);
    model->magic = 0;
    delete model;
    return uform_status_ok_k;
}

} // extern "C"
