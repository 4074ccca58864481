// The stub backend: simulated hardware, models that keep only their checkpoint's geometry, and the
// encoding verbs answering deterministic rows (see rows.hpp and docs/internal-interfaces.md, "The stub").
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>

#include "common/backend.hpp"
#include "common/checks.hpp"
#include "common/media_geometry.hpp"
#include "common/scalars.hpp"
#include "stub/rows.hpp"

namespace uform::backend {

struct model_t {
    geometry_t geometry;
    uform_residency_t residency;
};

} // namespace uform::backend

namespace uform::backend {

namespace {

using namespace uform::stub;

/// A count from the environment: its decimal value when set and below `limit`, else `fallback`.
std::size_t environment_count(char const *name, std::size_t fallback, std::size_t limit) noexcept {
    char const *text = std::getenv(name);
    if (!text || !*text) return fallback;
    char *end = nullptr;
    unsigned long long const value = std::strtoull(text, &end, 10);
    if (!end || *end || value > limit) return fallback;
    return std::size_t(value);
}

bool architecture_has(uform_cpu_class_t cpu_class) noexcept {
    switch (cpu_class) {
    case uform_cpu_class_serial_k: return true;
#if defined(__x86_64__) || defined(_M_X64)
    case uform_cpu_class_intel_haswell_k:
    case uform_cpu_class_intel_skylake_k:
    case uform_cpu_class_intel_icelake_k:
    case uform_cpu_class_intel_sapphire_rapids_k:
    case uform_cpu_class_amd_genoa_k:
    case uform_cpu_class_amd_turin_k: return true;
#elif defined(__aarch64__) || defined(_M_ARM64)
    case uform_cpu_class_arm_neon_k:
    case uform_cpu_class_arm_sve_k:
    case uform_cpu_class_arm_sve2_k:
    case uform_cpu_class_arm_sme_k: return true;
#elif defined(__wasm__)
    case uform_cpu_class_wasm_v128_relaxed_k: return true;
#endif
    default: return false;
    }
}

/// What the first pass learned about one item.
struct item_t {
    std::uint64_t seed;
    std::uint64_t tokens;
    double extra; // pixels, frames or seconds, per verb
    char const *message;
    uform_status_t status;
    bool truncated;
};

/// Encodes `count` items: `prepare(i, item)` fills each item's seed and tokens (in parallel), then the
/// rows of every surface asked for are generated and converted into the arena. Answers the items through
/// `items` for the caller's stats, and the first item that failed through the nullable `failed_item`.
template <typename prepare_type_>
uform_status_t encode_items(model_t const &model, call_t &call, std::size_t count, encode_request_t request,
                            uform_encoded_t &encoded, prepare_type_ &&prepare, item_t const *&items,
                            std::size_t *failed_item, char const **message) noexcept {
    geometry_t const &g = model.geometry;
    bool const want_embeddings = request.outputs & uform_outputs_embeddings_k;
    bool const want_states = request.outputs & uform_outputs_states_k;
    bool const want_tokens = request.outputs & uform_outputs_token_vectors_k;
    std::size_t const row_floats = std::max({g.dimensions, g.hidden, g.token_width, std::size_t(1)});
    std::size_t items_bytes;
    if (!multiply(count, sizeof(item_t), items_bytes) || !call.reserve_scratch(row_floats * sizeof(float), items_bytes))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call's scratch");
    auto *table = static_cast<item_t *>(call.shared_scratch());
    call.parallel_for(count, [&](std::size_t i, std::size_t) noexcept {
        item_t &item = table[i];
        item = item_t{0, 0, 0.0, nullptr, uform_status_ok_k, false};
        prepare(i, item);
    });
    std::size_t tokens = 0;
    for (std::size_t i = 0; i != count; ++i) {
        if (table[i].status) {
            if (failed_item) *failed_item = i;
            return fail(message, table[i].status, table[i].message);
        }
        if (__builtin_add_overflow(tokens, table[i].tokens, &tokens))
            return fail(message, uform_status_limit_exceeded_k, "the batch holds too many tokens");
    }

    auto allocate_tape = [&](uform_rows_t &rows, std::size_t columns) noexcept {
        if (!call.allocate_rows(rows, tokens, count, columns, request.scalar, true)) return false;
        auto *offsets = const_cast<std::size_t *>(rows.offsets);
        offsets[0] = 0;
        for (std::size_t i = 0; i != count; ++i) offsets[i + 1] = offsets[i] + table[i].tokens;
        return true;
    };
    uform_encoded_t result{};
    if (want_embeddings && !call.allocate_rows(result.embeddings, count, count, g.dimensions, request.scalar, false))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the embeddings");
    if (want_states && !allocate_tape(result.states, g.hidden))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the states");
    if (want_tokens && !allocate_tape(result.token_vectors, g.token_width))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the token vectors");

    call.parallel_for(count, [&](std::size_t i, std::size_t worker) noexcept {
        if (call.cancelled()) return;
        auto *row = static_cast<float *>(call.scratch(worker));
        item_t const &item = table[i];
        if (want_embeddings) {
            auto *out = static_cast<std::byte *>(result.embeddings.data) + i * result.embeddings.stride;
            if (item.tokens == 0) std::memset(out, 0, result.embeddings.stride);
            else {
                fill_row(item.seed, surface_embedding_k, 0, g.dimensions, true, row);
                convert_row(row, g.dimensions, request.scalar, out);
            }
        }
        if (want_states)
            for (std::size_t t = 0; t != item.tokens; ++t) {
                fill_row(item.seed, surface_state_k, t, g.hidden, false, row);
                convert_row(row, g.hidden, request.scalar,
                            static_cast<std::byte *>(result.states.data) +
                                (result.states.offsets[i] + t) * result.states.stride);
            }
        if (want_tokens)
            for (std::size_t t = 0; t != item.tokens; ++t) {
                fill_row(item.seed, surface_token_vector_k, t, g.token_width, true, row);
                convert_row(row, g.token_width, request.scalar,
                            static_cast<std::byte *>(result.token_vectors.data) +
                                (result.token_vectors.offsets[i] + t) * result.token_vectors.stride);
            }
        call.advance(1, count);
    });
    if (call.cancelled()) return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    encoded = result;
    items = table;
    return uform_status_ok_k;
}

/// Reads a media file of a path tape into an item: its seed, and its length through `length`.
bool digest_item(tape_view_t<char> const &paths, std::size_t i, uform_modality_t modality, item_t &item,
                 std::uint64_t &length) noexcept {
    char path[max_path_bytes_k + 1];
    std::span<char const> const bytes = paths.item(i);
    path_terminated(bytes.data(), bytes.size(), path);
    file_digest_t const digest = digest_file(path, item_seed(modality));
    if (digest.status) {
        item.status = digest.status;
        item.message = digest_message(digest.status);
        return false;
    }
    item.seed = digest.hash;
    length = digest.length;
    return true;
}

std::size_t square_grid(std::size_t max_patches) noexcept {
    std::size_t side = 0;
    while ((side + 1) * (side + 1) <= max_patches) ++side;
    return side * side;
}

} // namespace

/* ---------------------------------------------------------------------------------------------------------- */
/* Hardware                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

char const *flavor() noexcept { return "stub"; }

std::size_t numa_nodes() noexcept {
    static std::size_t const nodes = std::max<std::size_t>(1, environment_count("UFORM_STUB_NUMA_NODES", 2, 64));
    return nodes;
}

void worker_start(uform_residency_t, std::span<std::size_t const>, std::size_t, std::size_t) noexcept {}

bool cpu_class_available(uform_cpu_class_t cpu_class) noexcept { return architecture_has(cpu_class); }

uform_cpu_class_t cpu_class_native() noexcept { return uform_cpu_class_serial_k; }

std::size_t gpu_count() noexcept {
    static std::size_t const count = environment_count("UFORM_STUB_GPUS", 2, 64);
    return count;
}

void gpu_describe(std::size_t ordinal, uform_gpu_device_t &device) noexcept {
    device = uform_gpu_device_t{};
    std::snprintf(device.name, sizeof(device.name), "UForm stub GPU %zu", ordinal);
    device.gpu_class = uform_gpu_class_nvidia_hopper_k;
    device.memory_bytes = std::size_t(80) << 30;
    device.multiprocessors = 132;
    std::snprintf(device.pci_bus_id, sizeof(device.pci_bus_id), "0000:%02zx:00.0", (ordinal + 0x18) & 0xFF);
}

bool gpu_class_available(uform_gpu_class_t gpu_class, std::span<std::size_t const> devices) noexcept {
    (void)devices; // every simulated device is a Hopper, which runs Ampere's and Ada's kernels too
    return gpu_class == uform_gpu_class_nvidia_ampere_k || gpu_class == uform_gpu_class_nvidia_ada_k ||
           gpu_class == uform_gpu_class_nvidia_hopper_k;
}

uform_status_t vram_open(std::span<std::size_t const>, std::span<std::size_t const>, std::size_t, void *&state,
                         char const **) noexcept {
    state = nullptr;
    return uform_status_ok_k;
}

void vram_close(void *) noexcept {}

void *vram_allocate(std::size_t, std::size_t bytes) noexcept {
    return ::operator new(bytes, std::align_val_t{256}, std::nothrow);
}

void vram_free(std::size_t, void *pointer, std::size_t) noexcept { ::operator delete(pointer, std::align_val_t{256}); }

/* ---------------------------------------------------------------------------------------------------------- */
/* Models                                                                                                      */
/* ---------------------------------------------------------------------------------------------------------- */

uform_status_t model_load(model_load_t const &request, checkpoint_t &&checkpoint, call_t &call, model_t *&model,
                          std::size_t &weight_bytes, char const **message) noexcept {
    // The stub never reads the weights: it reports progress tensor by tensor, as a loader would.
    std::uint64_t const total = checkpoint.file_size;
    std::uint64_t completed = checkpoint.data_offset;
    if (call.report(completed, total))
        return fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
    std::size_t bytes = 0;
    for (tensor_entry_t const &tensor : checkpoint.tensors) {
        std::size_t held = tensor.end - tensor.begin;
        bool const linear = tensor.name.starts_with("blocks.") &&
                            (tensor.name.ends_with(".qkv.weight") || tensor.name.ends_with(".out.weight") ||
                             tensor.name.ends_with(".gate_up.weight") || tensor.name.ends_with(".down.weight"));
        bool const quantized = request.quantization == uform_scalar_e4m3_k || request.quantization == uform_scalar_i8_k;
        if (quantized && linear && tensor.shape.size() == 2) {
            std::size_t const rows = tensor.shape[0], columns = tensor.shape[1];
            held = rows * columns + sizeof(float) * ((rows + 127) / 128) * ((columns + 127) / 128);
        }
        bytes += held;
        completed += tensor.end - tensor.begin;
        if (call.report(std::min(completed, total), total))
            return fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
    }
    if (call.report(total, total))
        return fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
    model = new (std::nothrow) model_t{checkpoint.geometry, request.residency};
    if (!model) return fail(message, uform_status_out_of_memory_k, "out of memory making a model");
    weight_bytes = bytes;
    return uform_status_ok_k;
}

void model_free(model_t *model) noexcept { delete model; }

/* ---------------------------------------------------------------------------------------------------------- */
/* Encoding                                                                                                    */
/* ---------------------------------------------------------------------------------------------------------- */

uform_status_t text_encode(model_t const &model, call_t &call, tape_view_t<char> texts, encode_request_t request,
                           uform_encoded_t &encoded, uform_text_encode_stats_t &stats, char const **message) noexcept {
    item_t const *items = nullptr;
    auto prepare = [&](std::size_t i, item_t &item) noexcept {
        std::span<char const> const text = texts.item(i);
        item.seed = fnv1a(item_seed(uform_modality_text_k), text.data(), text.size());
        item.tokens = text.size();
    };
    if (uform_status_t status =
            encode_items(model, call, texts.count, request, encoded, prepare, items, nullptr, message))
        return status;
    stats.items = texts.count;
    for (std::size_t i = 0; i != texts.count; ++i) stats.tokens += items[i].tokens;
    return uform_status_ok_k;
}

uform_status_t image_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_patches,
                            std::size_t, encode_request_t request, uform_encoded_t &encoded,
                            uform_image_encode_stats_t &stats, char const **message) noexcept {
    // A file's bytes stand for a square image filling the patch budget.
    std::size_t const p = model.geometry.image_patch_side;
    std::size_t const tokens = square_grid(max_patches);
    item_t const *items = nullptr;
    auto prepare = [&](std::size_t i, item_t &item) noexcept {
        std::uint64_t length = 0;
        if (!digest_item(paths, i, uform_modality_image_k, item, length)) return;
        item.tokens = tokens;
        item.extra = double(tokens * p * p);
    };
    if (uform_status_t status =
            encode_items(model, call, paths.count, request, encoded, prepare, items, &stats.failed_item, message))
        return status;
    stats.items = paths.count;
    for (std::size_t i = 0; i != paths.count; ++i) {
        stats.tokens += items[i].tokens;
        stats.pixels += std::size_t(items[i].extra);
    }
    return uform_status_ok_k;
}

uform_status_t image_encode_pixels(model_t const &model, call_t &call, tape_view_t<std::uint8_t> pixels,
                                   std::size_t const *heights, std::size_t const *widths, std::size_t max_patches,
                                   encode_request_t request, uform_encoded_t &encoded,
                                   uform_image_encode_stats_t &stats, char const **message) noexcept {
    std::size_t const p = model.geometry.image_patch_side;
    item_t const *items = nullptr;
    auto prepare = [&](std::size_t i, item_t &item) noexcept {
        std::span<std::uint8_t const> const bytes = pixels.item(i);
        std::uint64_t seed = item_seed(uform_modality_image_k);
        seed = fnv1a_u64(fnv1a_u64(seed, heights[i]), widths[i]);
        item.seed = fnv1a(seed, bytes.data(), bytes.size());
        image_grid_t const grid = image_grid(heights[i], widths[i], p, max_patches);
        item.tokens = grid.rows * grid.columns;
        item.extra = double(heights[i]) * double(widths[i]);
    };
    if (uform_status_t status =
            encode_items(model, call, pixels.count, request, encoded, prepare, items, &stats.failed_item, message))
        return status;
    stats.items = pixels.count;
    for (std::size_t i = 0; i != pixels.count; ++i) {
        stats.tokens += items[i].tokens;
        stats.pixels += std::size_t(items[i].extra);
    }
    return uform_status_ok_k;
}

uform_status_t video_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_frames,
                            std::size_t max_patches_per_frame, encode_request_t request, uform_encoded_t &encoded,
                            uform_video_encode_stats_t &stats, char const **message) noexcept {
    // A file's bytes stand for one sampled frame per 64 KiB, each a square frame filling its patch budget.
    std::size_t const tubelet = std::max<std::size_t>(1, model.geometry.video_tubelet_frames);
    std::size_t const per_frame = square_grid(max_patches_per_frame);
    item_t const *items = nullptr;
    auto prepare = [&](std::size_t i, item_t &item) noexcept {
        std::uint64_t length = 0;
        if (!digest_item(paths, i, uform_modality_video_k, item, length)) return;
        std::size_t const frames = std::min<std::size_t>(max_frames, 1 + (length - 1) / 65536);
        item.tokens = (frames + tubelet - 1) / tubelet * per_frame;
        item.extra = double(frames);
    };
    if (uform_status_t status =
            encode_items(model, call, paths.count, request, encoded, prepare, items, &stats.failed_item, message))
        return status;
    stats.items = paths.count;
    for (std::size_t i = 0; i != paths.count; ++i) {
        stats.tokens += items[i].tokens;
        stats.frames += std::size_t(items[i].extra);
    }
    return uform_status_ok_k;
}

uform_status_t audio_encode(model_t const &model, call_t &call, tape_view_t<char> paths, std::size_t max_patches,
                            encode_request_t request, uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                            char const **message) noexcept {
    // A file's bytes past a 44-byte WAV header stand for 16-bit mono samples at the model's rate.
    geometry_t const &g = model.geometry;
    item_t const *items = nullptr;
    auto prepare = [&](std::size_t i, item_t &item) noexcept {
        std::uint64_t length = 0;
        if (!digest_item(paths, i, uform_modality_audio_k, item, length)) return;
        std::size_t const samples = length > 44 ? (length - 44) / 2 : 0;
        audio_shape_t const shape = audio_shape(g, samples, max_patches);
        item.tokens = shape.patches;
        item.truncated = shape.truncated;
        item.extra = double(samples) / double(g.audio_sample_rate);
    };
    if (uform_status_t status =
            encode_items(model, call, paths.count, request, encoded, prepare, items, &stats.failed_item, message))
        return status;
    stats.items = paths.count;
    for (std::size_t i = 0; i != paths.count; ++i) {
        stats.tokens += items[i].tokens;
        stats.seconds += items[i].extra;
        stats.truncated_items += items[i].truncated;
    }
    return uform_status_ok_k;
}

uform_status_t audio_encode_samples(model_t const &model, call_t &call, tape_view_t<float> samples,
                                    std::size_t sample_rate, std::size_t max_patches, encode_request_t request,
                                    uform_encoded_t &encoded, uform_audio_encode_stats_t &stats,
                                    char const **message) noexcept {
    geometry_t const &g = model.geometry;
    item_t const *items = nullptr;
    auto prepare = [&](std::size_t i, item_t &item) noexcept {
        std::span<float const> const values = samples.item(i);
        std::uint64_t const seed = fnv1a_u64(item_seed(uform_modality_audio_k), sample_rate);
        item.seed = fnv1a(seed, values.data(), values.size_bytes());
        // Resampled to the model's rate: round(n * rate / sample_rate) samples.
        double const resampled =
            std::nearbyint(double(values.size()) * double(g.audio_sample_rate) / double(sample_rate));
        std::size_t const count = values.empty() ? 0 : std::size_t(resampled);
        audio_shape_t const shape = audio_shape(g, values.empty() ? 0 : std::max<std::size_t>(count, 1), max_patches);
        item.tokens = shape.patches;
        item.truncated = shape.truncated;
        item.extra = double(values.size()) / double(sample_rate);
    };
    if (uform_status_t status =
            encode_items(model, call, samples.count, request, encoded, prepare, items, &stats.failed_item, message))
        return status;
    stats.items = samples.count;
    for (std::size_t i = 0; i != samples.count; ++i) {
        stats.tokens += items[i].tokens;
        stats.seconds += items[i].extra;
        stats.truncated_items += items[i].truncated;
    }
    return uform_status_ok_k;
}

uform_status_t text_choose(model_t const &, call_t &call, tape_view_t<char> texts, tape_view_t<char> choices,
                           std::span<std::size_t const> groups, uform_tape_t &probabilities,
                           uform_text_choose_stats_t &stats, char const **message) noexcept {
    std::size_t const count = texts.count;
    std::size_t const values = count ? choices.offsets[count] - choices.offsets[0] : 0;
    uform_tape_t result{};
    if (!call.allocate_tape(result, values, count, uform_scalar_f32_k))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the probabilities");
    auto *offsets = const_cast<std::size_t *>(result.offsets);
    offsets[0] = 0;
    for (std::size_t i = 0; i != count; ++i) offsets[i + 1] = choices.offsets[i + 1] - choices.offsets[0];
    auto *out = static_cast<float *>(result.data);
    call.parallel_for(count, [&](std::size_t i, std::size_t) noexcept {
        if (call.cancelled()) return;
        std::span<char const> const text = texts.item(i);
        std::span<char const> const legal = choices.item(i);
        std::uint64_t const seed = fnv1a(item_seed(uform_modality_text_k), text.data(), text.size());
        // The stub's temperatures: group `g` divides the logits by `g + 1`, as the tiny checkpoint's 1 and 2.
        float const temperature = float((groups.empty() ? 0 : groups[i]) + 1);
        float logits[256];
        float peak = -1e30f;
        for (std::size_t j = 0; j != legal.size(); ++j) {
            logits[j] = choice_logit(seed, static_cast<unsigned char>(legal[j])) / temperature;
            peak = std::max(peak, logits[j]);
        }
        double sum = 0;
        for (std::size_t j = 0; j != legal.size(); ++j) sum += std::exp(double(logits[j] - peak));
        float *row = out + offsets[i];
        for (std::size_t j = 0; j != legal.size(); ++j) row[j] = float(std::exp(double(logits[j] - peak)) / sum);
        call.advance(1, count);
    });
    if (call.cancelled()) return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    stats.items = count;
    stats.tokens = (count ? texts.offsets[count] - texts.offsets[0] : 0) + count;
    stats.choices = values;
    probabilities = result;
    return uform_status_ok_k;
}

} // namespace uform::backend
