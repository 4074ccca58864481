// A model's weights in the RAM residency: embeddings and norms in F32, every linear packed once for the CPU class
// chosen at load (BF16 converted to F32 panels or BF16 pair panels, E4M3 blocks kept as bytes in pair panels or
// dequantized into F32 panels, int8 blocks; AMX tiles on Sapphire Rapids multiply
// the pair panels and the int8 blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include <uform/types.h>

#include "common/checkpoint.hpp"
#include "cpp/kernels/kernels.hpp"
#include "cpp/linear.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/parallel.hpp"

namespace uform::ram {

/// One trunk block: its norms and its four linears.
struct block_weights_t {
    std::vector<float> attn_norm; // [hidden]
    std::vector<float> mlp_norm;  // [hidden]
    linear_t qkv;                 // [3 * heads * head_dim] x hidden
    linear_t out;                 // hidden x [heads * head_dim]
    linear_t gate_up;             // [2 * ffn_hidden] x hidden
    linear_t down;                // hidden x ffn_hidden
};

/// Everything the trunk forward reads, immutable after `weights_load`.
struct model_weights_t {
    geometry_t geometry{};
    uform_cpu_class_t cpu_class = uform_cpu_class_serial_k; // the class the model dispatches as
    kernels_t const *kernels = nullptr;                     // that class's kernels
    uform_scalar_t quantization = uform_scalar_bf16_k;      // the trunk linears' weights: bf16, e4m3 or i8
    bool amx = false;                                       // products in AMX tiles (`kernels` run on them)
    std::vector<float> byte_embedding;                      // [258 x hidden]: 256 bytes, MASK, CHOOSE
    std::vector<block_weights_t> blocks;                    // [depth]
    std::vector<float> final_norm;                          // [hidden]
    linear_t embedding_head;                                // dimensions x hidden
    linear_t token_head;                                    // token_width x hidden; empty when absent
    linear_t byte_head;                                     // 256 x hidden; empty when absent
    std::vector<float> temperatures;                        // [choice_groups]; empty when absent
    std::vector<double> rope_frequencies;                   // [head_dim / 2]: theta^(-2j / head_dim), F64
    std::vector<float> rope_cos, rope_sin;                  // [rope_positions x head_dim / 2], F64 rounded once
    std::size_t rope_positions = 0;                         // positions the tables cover
    std::size_t scratch_floats = 0;                         // per thread, for the largest linear's product

    /// Fills `cos` and `sin` (head_dim / 2 each) for `position`: the angle `position * frequency` in F64, its cosine
    /// and sine rounded to F32 once, as the reference does.
    void rope_angles(std::size_t position, float *cos, float *sin) const noexcept;

    /// Bytes the weights hold in memory.
    std::size_t bytes() const noexcept;
};

/// How to load.
struct weights_options_t {
    /// The class to dispatch as; `auto` takes the hardware's own.
    uform_cpu_class_t cpu_class = uform_cpu_class_auto_k;
    /// The trunk linears' weights: `bf16` keeps them, `e4m3` quantizes them to E4M3 (128 x 128 blocks, kept as bytes
    /// and dequantized to BF16 pairs as each product runs on a class with a pair micro-kernel, else dequantized into
    /// F32 panels at load; either way the products see `q * s` rounded to BF16), `i8` to int8 (128 x 128 blocks,
    /// multiplied as int8 with activations quantized per row and block of 128 depths).
    uform_scalar_t quantization = uform_scalar_bf16_k;
    /// For the Sapphire Rapids class, run the BF16 products (linears and attention's) in AMX BF16 tiles and an int8
    /// model's trunk linears in AMX INT8 tiles when the OS grants them (E4M3 models keep their E4M3 pair products, and
    /// every other class uses pair or F32 panels).
    bool amx = true;
    /// The tiles `amx` runs on: the hardware's, or their software model (cpp/kernels/amx_tiles.hpp), which takes the
    /// AMX path on the native class of any machine, slowly, so tests check it everywhere.
    tiles_t tiles = tiles_t::hardware;
    /// Nullable: the file whose `bytes()` the load reads. Each tensor is then fetched from it as it is needed and a
    /// linear's pages released once it is packed, so the load's peak RSS holds the packed weights and about one
    /// tensor of the file. Null: the bytes are the caller's, whole, and never released.
    mapped_file_t const *file = nullptr;
    /// Threads to pack with.
    parallel_t parallel{};
    /// Nullable; called with bytes loaded and bytes in all, answers true to stop (the load then fails `cancelled`).
    bool (*progress)(void *context, std::size_t completed, std::size_t total) noexcept = nullptr;
    /// Passed to `progress` untouched.
    void *progress_context = nullptr;
};

/// The bytes of tensor `name`, `count` values of `dtype`, within `bytes` (the whole checkpoint): fetched from `file`
/// first when it is non-null, and refused when they hold a NaN or an infinity, which would turn every output they
/// reach into NaN rows. nullptr with the failure (`corrupt`, or `io` from the file) in `status` and `message`.
std::byte const *tensor_bytes(checkpoint_t const &checkpoint, std::span<std::byte const> bytes,
                              mapped_file_t const *file, std::string_view name, dtype_t dtype, std::size_t count,
                              uform_status_t &status, char const *&message) noexcept;

/// Reads the tensors of a validated checkpoint from `file` (the whole file: `checkpoint.file_size` bytes, in memory or
/// fetched from `options.file`, needed only during the call) into `out`. Answers `unsupported` for a class the machine
/// lacks, `corrupt` for a tensor whose dtype or bytes disagree with the header or that holds NaN or infinity, `io`,
/// `out-of-memory`, or `cancelled`.
uform_status_t weights_load(checkpoint_t const &checkpoint, std::span<std::byte const> file,
                            weights_options_t const &options, model_weights_t &out, char const **message) noexcept;

} // namespace uform::ram
