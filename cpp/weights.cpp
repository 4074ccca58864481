// Loading a checkpoint's tensors into packed, class-ready weights.
#include "cpp/weights.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include "cpp/kernels/amx.hpp"
#include "cpp/kernels/amx_product.hpp"
#include "cpp/kernels/cpu_class.hpp"
#include "cpp/kernels/e4m3.hpp"
#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cpp/mapped_file.hpp"

namespace uform::ram {
namespace {

/// Positions the RoPE tables cover at load; longer texts compute the rest per call.
constexpr std::size_t rope_table_positions_k = 4096;

/// A failure: its status and static message.
struct failure_t {
    uform_status_t status;
    char const *message;
};

/// The loader's state: the file, the options, the progress so far.
class loader_t {
  public:
    loader_t(checkpoint_t const &checkpoint, std::span<std::byte const> file, weights_options_t const &options) noexcept
        : checkpoint_(checkpoint), file_(file), options_(options) {}

    /// The BF16 values of tensor `name`, checked as `tensor_bytes` does; nullptr with `failure_` set.
    std::byte const *bf16(std::string const &name, std::size_t count) noexcept {
        return tensor(name, dtype_t::bf16, count);
    }

    /// The F32 values of tensor `name`, checked likewise.
    std::byte const *f32(std::string const &name, std::size_t count) noexcept {
        return tensor(name, dtype_t::f32, count);
    }

    /// Counts `bytes` as loaded and asks the progress handler whether to go on; false when it asked to stop.
    bool advance(std::size_t bytes) noexcept {
        completed_ += bytes;
        if (options_.progress == nullptr) return true;
        if (!options_.progress(options_.progress_context, completed_, total_)) return true;
        fail(uform_status_cancelled_k, "the progress handler stopped the load");
        return false;
    }

    /// Adds a tensor's bytes to the total the progress reports.
    void plan(std::string const &name) noexcept {
        if (tensor_entry_t const *entry = checkpoint_.find(name)) total_ += entry->end - entry->begin;
    }

    /// Records a failure and answers nullptr, for chaining.
    std::byte const *fail(uform_status_t status, char const *message) noexcept {
        if (failure_.status == uform_status_ok_k) failure_ = {status, message};
        return nullptr;
    }

    failure_t failure() const noexcept { return failure_; }
    weights_options_t const &options() const noexcept { return options_; }

  private:
    std::byte const *tensor(std::string const &name, dtype_t dtype, std::size_t count) noexcept {
        uform_status_t status = uform_status_ok_k;
        char const *message = nullptr;
        std::byte const *bytes = tensor_bytes(checkpoint_, file_, options_.file, name, dtype, count, status, message);
        return bytes != nullptr ? bytes : fail(status, message);
    }

    checkpoint_t const &checkpoint_;
    std::span<std::byte const> file_;
    weights_options_t const &options_;
    std::size_t completed_ = 0, total_ = 0;
    failure_t failure_{uform_status_ok_k, nullptr};
};

/// The BF16 value at `bytes + 2 * index`, read without alignment assumptions (the file is little-endian).
inline std::uint16_t load_bf16(std::byte const *bytes, std::size_t index) noexcept {
    std::uint16_t value;
    std::memcpy(&value, bytes + 2 * index, 2);
    return value;
}

/// Converts `count` BF16 values to F32.
bool to_f32(std::byte const *source, std::size_t count, std::vector<float> &out) noexcept {
    try {
        out.resize(count);
    } catch (...) {
        return false;
    }
    for (std::size_t i = 0; i != count; ++i) out[i] = bf16_to_f32(load_bf16(source, i));
    return true;
}

/// Copies `count` F32 values.
bool copy_f32(std::byte const *source, std::size_t count, std::vector<float> &out) noexcept {
    try {
        out.resize(count);
    } catch (...) {
        return false;
    }
    std::memcpy(out.data(), source, count * sizeof(float));
    return true;
}

/// Packs BF16 `W[columns x depth]` panel by panel across the packing threads, writing each panel sequentially.
bool pack_bf16_matrix(std::byte const *source, std::size_t columns, std::size_t depth, parallel_t const &parallel,
                      packed_matrix_t &out) noexcept {
    if (!out.allocate(columns, depth)) return false;
    std::size_t const panels = panel_count(columns);
    parallel(panels, [&](std::size_t panel, std::size_t) noexcept {
        std::size_t const begin = panel * gemm_panel_columns_k;
        std::size_t const end = std::min(columns, begin + gemm_panel_columns_k);
        for (std::size_t k = 0; k != depth; ++k)
            for (std::size_t column = begin; column != end; ++column)
                out.set(column, k, bf16_to_f32(load_bf16(source, column * depth + k)));
    });
    return true;
}

/// Quantizes BF16 `W[columns x depth]` to E4M3 blocks, then keeps the bytes in pair panels on a class with a pair
/// micro-kernel, else packs the dequantized values (`q * s` rounded to BF16, as the pairs see them) in F32 panels.
bool pack_e4m3_matrix(kernels_t const &kernels, std::byte const *source, std::size_t columns, std::size_t depth,
                      parallel_t const &parallel, linear_t &out) noexcept {
    std::unique_ptr<std::uint16_t[]> weights(new (std::nothrow) std::uint16_t[columns * depth]);
    std::unique_ptr<std::uint8_t[]> bytes(new (std::nothrow) std::uint8_t[columns * depth]);
    std::unique_ptr<float[]> scales(new (std::nothrow) float[e4m3_blocks(columns) * e4m3_blocks(depth)]);
    bool const pairs = kernels.gemm_micro_pairs != nullptr && kernels.dequantize_e4m3_pairs != nullptr;
    if (!weights || !bytes || !scales || (!pairs && !out.panels.allocate(columns, depth))) return false;
    std::memcpy(weights.get(), source, columns * depth * 2);
    std::size_t const row_blocks = e4m3_blocks(columns), column_blocks = e4m3_blocks(depth);
    parallel(row_blocks, [&](std::size_t block, std::size_t) noexcept {
        std::size_t const row = block * e4m3_block_k;
        std::size_t const rows = std::min(e4m3_block_k, columns - row);
        quantize_e4m3_blocks(weights.get() + row * depth, rows, depth, depth, bytes.get() + row * depth,
                             scales.get() + block * column_blocks);
        if (pairs) return;
        for (std::size_t column = row; column != row + rows; ++column)
            for (std::size_t k = 0; k != depth; ++k)
                out.panels.set(column, k,
                               round_bf16(e4m3_to_f32(bytes[column * depth + k]) *
                                          scales[block * column_blocks + k / e4m3_block_k]));
    });
    return !pairs || out.e4m3.pack(bytes.get(), scales.get(), columns, depth);
}

/// Packs BF16 `W[columns x depth]` into the pair panels of `kernels`, through an aligned copy of the file's bits.
bool pack_pair_matrix(kernels_t const &kernels, std::byte const *source, std::size_t columns, std::size_t depth,
                      parallel_t const &parallel, pair_matrix_t &out) noexcept {
    std::unique_ptr<std::uint16_t[]> weights(new (std::nothrow) std::uint16_t[columns * depth]);
    if (!weights) return false;
    std::memcpy(weights.get(), source, columns * depth * 2);
    return out.pack(kernels, parallel, weights.get(), columns, depth);
}

/// Loads and packs one linear: E4M3 when asked (trunk linears only, as bytes in pair panels or dequantized in F32
/// panels), int8 blocks when asked (trunk linears only), BF16 pair panels on a class with a pair micro-kernel or on
/// AMX tiles (`product` runs them there), else BF16 in F32 panels.
bool load_linear(loader_t &loader, kernels_t const &kernels, std::string const &name, std::size_t columns,
                 std::size_t depth, uform_scalar_t quantization, linear_t &out) noexcept {
    std::byte const *source = loader.bf16(name, columns * depth);
    if (source == nullptr) return false;
    parallel_t const &parallel = loader.options().parallel;
    bool const packed = quantization == uform_scalar_e4m3_k
                            ? pack_e4m3_matrix(kernels, source, columns, depth, parallel, out)
                        : quantization == uform_scalar_i8_k ? out.blocks.pack(parallel, source, columns, depth)
                        : kernels.gemm_micro_pairs != nullptr || kernels.tiles != tiles_t::none
                            ? pack_pair_matrix(kernels, source, columns, depth, parallel, out.pairs)
                            : pack_bf16_matrix(source, columns, depth, parallel, out.panels);
    if (!packed) {
        loader.fail(uform_status_out_of_memory_k, "out of memory while packing weights");
        return false;
    }
    if (loader.options().file != nullptr) release_mapped_pages({source, columns * depth * 2});
    return loader.advance(columns * depth * 2);
}

/// Loads a BF16 vector or matrix as F32.
bool load_f32_from_bf16(loader_t &loader, std::string const &name, std::size_t count,
                        std::vector<float> &out) noexcept {
    std::byte const *source = loader.bf16(name, count);
    if (source == nullptr) return false;
    if (!to_f32(source, count, out)) {
        loader.fail(uform_status_out_of_memory_k, "out of memory while loading weights");
        return false;
    }
    return loader.advance(count * 2);
}

/// The RoPE frequencies and the cos/sin tables for the first positions.
bool build_rope(model_weights_t &weights) noexcept {
    std::size_t const half = weights.geometry.head_dim / 2;
    weights.rope_positions = rope_table_positions_k;
    try {
        weights.rope_frequencies.resize(half);
        weights.rope_cos.resize(weights.rope_positions * half);
        weights.rope_sin.resize(weights.rope_positions * half);
    } catch (...) {
        return false;
    }
    double const theta = weights.geometry.rope_theta, head_dim = static_cast<double>(weights.geometry.head_dim);
    for (std::size_t j = 0; j != half; ++j)
        weights.rope_frequencies[j] = std::pow(theta, -2.0 * static_cast<double>(j) / head_dim);
    for (std::size_t position = 0; position != weights.rope_positions; ++position) {
        for (std::size_t j = 0; j != half; ++j) {
            double const angle = static_cast<double>(position) * weights.rope_frequencies[j];
            weights.rope_cos[position * half + j] = static_cast<float>(std::cos(angle));
            weights.rope_sin[position * half + j] = static_cast<float>(std::sin(angle));
        }
    }
    return true;
}

} // namespace

// Table rows for covered positions, F64 evaluation for the rest.
void model_weights_t::rope_angles(std::size_t position, float *cos, float *sin) const noexcept {
    std::size_t const half = geometry.head_dim / 2;
    if (position < rope_positions) {
        std::memcpy(cos, rope_cos.data() + position * half, half * sizeof(float));
        std::memcpy(sin, rope_sin.data() + position * half, half * sizeof(float));
        return;
    }
    for (std::size_t j = 0; j != half; ++j) {
        double const angle = static_cast<double>(position) * rope_frequencies[j];
        cos[j] = static_cast<float>(std::cos(angle));
        sin[j] = static_cast<float>(std::sin(angle));
    }
}

// Sums every buffer the weights own.
std::size_t model_weights_t::bytes() const noexcept {
    std::size_t total =
        (byte_embedding.size() + final_norm.size() + temperatures.size() + rope_cos.size() + rope_sin.size()) *
            sizeof(float) +
        rope_frequencies.size() * sizeof(double);
    total += embedding_head.bytes() + token_head.bytes() + byte_head.bytes();
    for (block_weights_t const &block : blocks)
        total += (block.attn_norm.size() + block.mlp_norm.size()) * sizeof(float) + block.qkv.bytes() +
                 block.out.bytes() + block.gate_up.bytes() + block.down.bytes();
    return total;
}

// Finds and checks the entry, fetches its bytes when they come from a file, then scans them for NaN and infinity.
std::byte const *tensor_bytes(checkpoint_t const &checkpoint, std::span<std::byte const> bytes,
                              mapped_file_t const *file, std::string_view name, dtype_t dtype, std::size_t count,
                              uform_status_t &status, char const *&message) noexcept {
    auto refuse = [&](uform_status_t refusal, char const *text) noexcept -> std::byte const * {
        status = refusal, message = text;
        return nullptr;
    };
    tensor_entry_t const *entry = checkpoint.find(name);
    if (entry == nullptr) return refuse(uform_status_corrupt_k, "a tensor the model needs is missing");
    if (entry->dtype != dtype) return refuse(uform_status_corrupt_k, "a tensor's dtype disagrees with the model");
    std::size_t const length = count * dtype_size(dtype);
    if (entry->end - entry->begin != length) return refuse(uform_status_corrupt_k, "a tensor's byte span disagrees");
    std::uint64_t const end = checkpoint.data_offset + entry->end;
    if (end > bytes.size() || end < entry->end) return refuse(uform_status_corrupt_k, "a tensor lies past the file");
    std::byte const *begin = bytes.data() + checkpoint.data_offset + entry->begin;
    if (file != nullptr)
        if (uform_status_t fetched = file->fetch(begin, length, &message)) return refuse(fetched, message);
    bool finite = true;
    if (dtype == dtype_t::bf16)
        for (std::size_t i = 0; i != count; ++i) finite &= (load_bf16(begin, i) & 0x7F80u) != 0x7F80u;
    else if (dtype == dtype_t::f32)
        for (std::size_t i = 0; i != count; ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, begin + 4 * i, 4);
            finite &= (bits & 0x7F800000u) != 0x7F800000u;
        }
    if (!finite) return refuse(uform_status_corrupt_k, "a tensor of the checkpoint holds NaN or infinity");
    return begin;
}

namespace {

/// Checks the options and the checkpoint's geometry and bytes, and starts `weights` with the CPU class and
/// quantization.
uform_status_t start_weights(checkpoint_t const &checkpoint, std::span<std::byte const> file,
                             weights_options_t const &options, model_weights_t &weights,
                             char const **message) noexcept {
    geometry_t const &geometry = checkpoint.geometry;
    uform_cpu_class_t const cpu_class =
        options.cpu_class == uform_cpu_class_auto_k ? cpu_class_native() : options.cpu_class;
    kernels_t const *kernels = kernels_for(cpu_class);
    if (kernels == nullptr)
        return fail(message, uform_status_unsupported_k, "this machine cannot dispatch as that CPU class");
    if (geometry.hidden == 0 || geometry.heads == 0 || geometry.head_dim == 0 || geometry.head_dim % 2 != 0)
        return fail(message, uform_status_corrupt_k, "the checkpoint's geometry has no trunk");
    if (file.size() < checkpoint.file_size)
        return fail(message, uform_status_corrupt_k, "the checkpoint's bytes are cut short");
    weights.geometry = geometry;
    weights.cpu_class = cpu_class;
    weights.kernels = kernels;
    if (options.quantization != uform_scalar_bf16_k && options.quantization != uform_scalar_e4m3_k &&
        options.quantization != uform_scalar_i8_k)
        return fail(message, uform_status_invalid_argument_k, "weights load as bf16, e4m3 or i8 only");
    weights.quantization = options.quantization;
    // AMX: the hardware's tiles where Sapphire Rapids' are granted, their model on the native class of any machine.
    bool const tiles_here = options.tiles == tiles_t::model
                                ? cpu_class == cpu_class_native()
                                : cpu_class == uform_cpu_class_intel_sapphire_rapids_k && amx_available();
    kernels_t const *tiled = options.amx && options.quantization != uform_scalar_e4m3_k && tiles_here
                                 ? kernels_on_tiles(options.tiles)
                                 : nullptr;
    weights.amx = tiled != nullptr;
    if (tiled != nullptr) weights.kernels = tiled;
    return uform_status_ok_k;
}

/// Counts every tensor the trunk loads into the progress total and makes room for the blocks; false when out of memory.
bool plan_load(loader_t &loader, model_weights_t &weights) noexcept {
    try {
        loader.plan("embed.byte.weight");
        for (std::size_t i = 0; i != weights.geometry.depth; ++i)
            for (char const *suffix : {".attn_norm.weight", ".attn.qkv.weight", ".attn.out.weight", ".mlp_norm.weight",
                                       ".mlp.gate_up.weight", ".mlp.down.weight"})
                loader.plan("blocks." + std::to_string(i) + suffix);
        for (char const *name : {"final_norm.weight", "head.embedding.weight", "head.token.weight", "head.byte.weight"})
            loader.plan(name);
        weights.blocks.resize(weights.geometry.depth);
    } catch (...) {
        return false;
    }
    return true;
}

/// Loads block `i`'s norms and linear layers; false with the loader's failure set.
bool load_block(loader_t &loader, model_weights_t &weights, std::size_t i) noexcept {
    geometry_t const &geometry = weights.geometry;
    kernels_t const &kernels = *weights.kernels;
    uform_scalar_t const quantization = weights.quantization;
    std::size_t const hidden = geometry.hidden, attention = geometry.heads * geometry.head_dim;
    block_weights_t &block = weights.blocks[i];
    std::string name;
    try {
        name = "blocks." + std::to_string(i);
    } catch (...) {
        loader.fail(uform_status_out_of_memory_k, "out of memory while loading weights");
        return false;
    }
    return load_f32_from_bf16(loader, name + ".attn_norm.weight", hidden, block.attn_norm) &&
           load_linear(loader, kernels, name + ".attn.qkv.weight", 3 * attention, hidden, quantization, block.qkv) &&
           load_linear(loader, kernels, name + ".attn.out.weight", hidden, attention, quantization, block.out) &&
           load_f32_from_bf16(loader, name + ".mlp_norm.weight", hidden, block.mlp_norm) &&
           load_linear(loader, kernels, name + ".mlp.gate_up.weight", 2 * geometry.ffn_hidden, hidden, quantization,
                       block.gate_up) &&
           load_linear(loader, kernels, name + ".mlp.down.weight", hidden, geometry.ffn_hidden, quantization,
                       block.down);
}

/// Loads the choice temperatures, each in (0, 1e6]; false with the loader's failure set.
bool load_temperatures(loader_t &loader, model_weights_t &weights) noexcept {
    std::size_t const groups = weights.geometry.choice_groups;
    std::byte const *source = loader.f32("head.choice.temperatures", groups);
    if (source == nullptr) return false;
    if (!copy_f32(source, groups, weights.temperatures)) {
        loader.fail(uform_status_out_of_memory_k, "out of memory while loading weights");
        return false;
    }
    for (float temperature : weights.temperatures)
        if (!(temperature > 0 && temperature <= 1e6f)) {
            loader.fail(uform_status_corrupt_k, "a choice temperature is not in (0, 1e6]");
            return false;
        }
    return true;
}

/// Loads the final norm and the heads the geometry has, always in BF16; false with the loader's failure set.
bool load_heads(loader_t &loader, model_weights_t &weights) noexcept {
    geometry_t const &geometry = weights.geometry;
    kernels_t const &kernels = *weights.kernels;
    std::size_t const hidden = geometry.hidden;
    if (!load_f32_from_bf16(loader, "final_norm.weight", hidden, weights.final_norm) ||
        !load_linear(loader, kernels, "head.embedding.weight", geometry.dimensions, hidden, uform_scalar_bf16_k,
                     weights.embedding_head))
        return false;
    if (geometry.has_token_head && !load_linear(loader, kernels, "head.token.weight", geometry.token_width, hidden,
                                                uform_scalar_bf16_k, weights.token_head))
        return false;
    if (!geometry.has_byte_head) return true;
    if (!load_linear(loader, kernels, "head.byte.weight", 256, hidden, uform_scalar_bf16_k, weights.byte_head))
        return false;
    return geometry.choice_groups == 0 || load_temperatures(loader, weights);
}

/// The most scratch floats any of the loaded linear layers asks for.
std::size_t largest_scratch(model_weights_t const &weights) noexcept {
    std::size_t floats = 0;
    for (block_weights_t const &block : weights.blocks)
        for (linear_t const *linear : {&block.qkv, &block.out, &block.gate_up, &block.down})
            floats = std::max(floats, linear->scratch_floats());
    for (linear_t const *linear : {&weights.embedding_head, &weights.token_head, &weights.byte_head})
        floats = std::max(floats, linear->scratch_floats());
    return floats;
}

} // namespace

// Every tensor the trunk forward needs, in file order of importance: embeddings, blocks, final norm, heads.
uform_status_t weights_load(checkpoint_t const &checkpoint, std::span<std::byte const> file,
                            weights_options_t const &options, model_weights_t &out, char const **message) noexcept {
    model_weights_t weights;
    if (uform_status_t status = start_weights(checkpoint, file, options, weights, message)) return status;
    loader_t loader(checkpoint, file, options);
    if (!plan_load(loader, weights))
        return fail(message, uform_status_out_of_memory_k, "out of memory while loading weights");
    bool ok = load_f32_from_bf16(loader, "embed.byte.weight", 258 * weights.geometry.hidden, weights.byte_embedding);
    for (std::size_t i = 0; ok && i != weights.geometry.depth; ++i) ok = load_block(loader, weights, i);
    ok = ok && load_heads(loader, weights);
    if (ok && !build_rope(weights))
        loader.fail(uform_status_out_of_memory_k, "out of memory while loading weights"), ok = false;
    if (!ok) {
        failure_t const failure = loader.failure();
        return failure.status == uform_status_ok_k
                   ? fail(message, uform_status_internal_k, "the weights failed to load without a reason")
                   : fail(message, failure.status, failure.message);
    }
    weights.scratch_floats = largest_scratch(weights);
    out = std::move(weights);
    return uform_status_ok_k;
}

} // namespace uform::ram
