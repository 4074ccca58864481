// Loading a validated checkpoint onto GPUs: every placement device gets a replica of the trunk and heads in one
// allocation, BF16 linears copied as the file holds them (or quantized to E4M3 blocks on the host, exactly as the RAM
// residency quantizes), norms and the byte embedding converted to F32. Progress is reported in bytes.
#include <algorithm>
#include <cstring>
#include <new>
#include <string>

#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cpp/backend/gpu.hpp"
#include "cpp/kernels/e4m3.hpp"
#include "cpp/weights.hpp"
#include "cuda/kernels.hpp"
#include "cuda/model.hpp"

namespace uform::cuda {
namespace {

/// Device allocations are carved at this alignment, which cuBLASLt's fastest kernels want.
constexpr std::size_t alignment_k = 256;

constexpr std::size_t aligned(std::size_t bytes) noexcept {
    return (bytes + alignment_k - 1) / alignment_k * alignment_k;
}

/// Walks the tensors of a replica in a fixed order: sizing the allocation (no `base`), or uploading into it.
class loader_t {
  public:
    loader_t(checkpoint_t const &checkpoint, std::span<std::byte const> file, ram::mapped_file_t const *source,
             bool e4m3, std::byte *base) noexcept
        : checkpoint_(checkpoint), file_(file), source_(source), e4m3_(e4m3), base_(base) {}

    /// A `[count]` BF16 tensor as F32 on the device.
    float const *f32(char const *name, std::size_t count) noexcept {
        std::byte *target = take(count * sizeof(float));
        read_ += count * 2;
        if (base_ == nullptr || failed()) return reinterpret_cast<float const *>(target);
        std::byte const *bytes = fetch(name, dtype_t::bf16, count);
        if (bytes == nullptr) return nullptr;
        try {
            host_f32_.resize(count);
        } catch (...) {
            return refuse(uform_status_out_of_memory_k, "out of memory while loading weights"), nullptr;
        }
        for (std::size_t i = 0; i != count; ++i) {
            std::uint16_t bits;
            std::memcpy(&bits, bytes + 2 * i, 2);
            host_f32_[i] = bf16_to_f32(bits);
        }
        upload(target, host_f32_.data(), count * sizeof(float));
        return reinterpret_cast<float const *>(target);
    }

    /// A `[columns x depth]` BF16 linear: as the file holds it, or in E4M3 blocks when `quantize` is set.
    linear_t linear(std::string const &name, std::size_t columns, std::size_t depth, bool quantize) noexcept {
        linear_t linear;
        linear.columns = columns;
        linear.depth = depth;
        std::size_t const values = columns * depth;
        quantize = quantize && e4m3_;
        std::size_t const scales = ram::e4m3_blocks(columns) * ram::e4m3_blocks(depth);
        std::byte *weights = take(quantize ? values : values * 2);
        std::byte *scale_target = quantize ? take(scales * sizeof(float)) : nullptr;
        linear.weights = weights;
        linear.scales = reinterpret_cast<float const *>(scale_target);
        read_ += values * 2;
        if (base_ == nullptr || failed()) return linear;
        std::byte const *bytes = fetch(name.c_str(), dtype_t::bf16, values);
        if (bytes == nullptr) return linear;
        if (!quantize) {
            upload(weights, bytes, values * 2);
            return linear;
        }
        try {
            host_bf16_.resize(values);
            host_bytes_.resize(values);
            host_f32_.resize(scales);
        } catch (...) {
            refuse(uform_status_out_of_memory_k, "out of memory while quantizing weights");
            return linear;
        }
        std::memcpy(host_bf16_.data(), bytes, values * 2); // the file's bytes need not be 2-byte aligned
        ram::quantize_e4m3_blocks(host_bf16_.data(), columns, depth, depth, host_bytes_.data(), host_f32_.data());
        upload(weights, host_bytes_.data(), values);
        upload(scale_target, host_f32_.data(), scales * sizeof(float));
        return linear;
    }

    std::size_t bytes() const noexcept { return offset_; }
    /// Bytes of the file's tensors walked so far (read, when uploading).
    std::size_t read() const noexcept { return read_; }
    bool failed() const noexcept { return status_ != uform_status_ok_k; }
    uform_status_t status() const noexcept { return status_; }
    char const *text() const noexcept { return text_; }

  private:
    std::byte *take(std::size_t bytes) noexcept {
        std::byte *target = base_ == nullptr ? nullptr : base_ + offset_;
        offset_ += aligned(bytes);
        return target;
    }
    std::byte const *fetch(char const *name, dtype_t dtype, std::size_t count) noexcept {
        uform_status_t status = uform_status_ok_k;
        char const *text = nullptr;
        std::byte const *bytes = ram::tensor_bytes(checkpoint_, file_, source_, name, dtype, count, status, text);
        if (bytes == nullptr) refuse(status, text);
        return bytes;
    }
    void upload(std::byte *target, void const *source, std::size_t bytes) noexcept {
        if (cudaMemcpy(target, source, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
            (void)cudaGetLastError();
            refuse(uform_status_internal_k, "copying weights to the device failed");
        }
    }
    void refuse(uform_status_t status, char const *text) noexcept {
        if (failed()) return;
        status_ = status;
        text_ = text;
    }

    checkpoint_t const &checkpoint_;
    std::span<std::byte const> file_;
    ram::mapped_file_t const *source_;
    bool e4m3_;
    std::byte *base_;
    std::size_t offset_ = 0, read_ = 0;
    uform_status_t status_ = uform_status_ok_k;
    char const *text_ = nullptr;
    std::vector<float> host_f32_;
    std::vector<std::uint16_t> host_bf16_;
    std::vector<std::uint8_t> host_bytes_;
};

/// Every tensor of a replica, in order, through `loader`; fills `replica`'s pointers when the loader uploads.
void walk(loader_t &loader, geometry_t const &g, replica_t &replica) {
    std::size_t const hidden = g.hidden, attention = g.heads * g.head_dim;
    replica.byte_embedding = loader.f32("embed.byte.weight", 258 * hidden);
    replica.blocks.resize(g.depth);
    for (std::size_t i = 0; i != g.depth && !loader.failed(); ++i) {
        std::string const name = "blocks." + std::to_string(i);
        block_t &block = replica.blocks[i];
        block.attn_norm = loader.f32((name + ".attn_norm.weight").c_str(), hidden);
        block.qkv = loader.linear(name + ".attn.qkv.weight", 3 * attention, hidden, true);
        block.out = loader.linear(name + ".attn.out.weight", hidden, attention, true);
        block.mlp_norm = loader.f32((name + ".mlp_norm.weight").c_str(), hidden);
        block.gate_up = loader.linear(name + ".mlp.gate_up.weight", 2 * g.ffn_hidden, hidden, true);
        block.down = loader.linear(name + ".mlp.down.weight", hidden, g.ffn_hidden, true);
    }
    replica.final_norm = loader.f32("final_norm.weight", hidden);
    replica.embedding_head = loader.linear("head.embedding.weight", g.dimensions, hidden, false);
    if (g.has_token_head) replica.token_head = loader.linear("head.token.weight", g.token_width, hidden, false);
    if (g.has_byte_head) replica.byte_head = loader.linear("head.byte.weight", 256, hidden, false);
}

} // namespace
} // namespace uform::cuda

namespace uform::gpu {

model_t::~model_t() noexcept {
    for (cuda::stream_t &stream : local) stream.close();
    for (cuda::replica_t const &replica : replicas)
        if (replica.memory != nullptr) {
            cuda::device_guard_t const guard(replica.device);
            (void)cudaFree(replica.memory);
        }
}

uform_status_t model_load(backend::model_load_t const &request, checkpoint_t const &checkpoint,
                          std::span<std::byte const> file, ram::mapped_file_t const *source, call_t &call,
                          model_t *&model, std::size_t &weight_bytes, char const **message) noexcept {
    geometry_t const &g = checkpoint.geometry;
    if (g.hidden == 0 || g.heads == 0 || g.head_dim == 0 || g.head_dim % 2 != 0)
        return fail(message, uform_status_corrupt_k, "the checkpoint's geometry has no trunk");
    if (g.head_dim > cuda::head_dim_max_k)
        return fail(message, uform_status_unsupported_k, "the CUDA residency takes heads of at most 256 dimensions");
    auto *made = new (std::nothrow) model_t;
    if (made == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory making a model");
    made->geometry = g;
    made->e4m3 = request.quantization == uform_scalar_e4m3_k;
    made->largest_linear = std::max(3 * g.heads * g.head_dim * g.hidden, 2 * g.ffn_hidden * g.hidden);
    try {
        made->replicas.resize(request.placement.size());
        made->local = std::vector<cuda::stream_t>(request.placement.size());
        cuda::loader_t sizing(checkpoint, file, source, made->e4m3, nullptr);
        cuda::replica_t shape;
        cuda::walk(sizing, g, shape);
        std::size_t const bytes = sizing.bytes(), tensor_bytes = sizing.read() * request.placement.size();
        std::size_t completed = 0;
        for (std::size_t i = 0; i != request.placement.size(); ++i) {
            cuda::replica_t &replica = made->replicas[i];
            replica.ordinal = request.placement[i];
            replica.device = cuda::device_of(replica.ordinal);
            cuda::device_guard_t const guard(replica.device);
            if (!guard.ok() || cudaMalloc(&replica.memory, bytes) != cudaSuccess) {
                (void)cudaGetLastError();
                replica.memory = nullptr;
                delete made;
                return fail(message, uform_status_out_of_memory_k, "out of device memory for the model's weights");
            }
            cuda::loader_t loader(checkpoint, file, source, made->e4m3, static_cast<std::byte *>(replica.memory));
            cuda::walk(loader, g, replica);
            if (loader.failed()) {
                uform_status_t const status = loader.status();
                char const *text = loader.text();
                delete made;
                return fail(message, status, text);
            }
            completed += loader.read();
            if (call.report(std::min(completed, tensor_bytes), tensor_bytes)) {
                delete made;
                return fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
            }
            if (uform_status_t status = made->local[i].open(replica.ordinal, 0, 0, message)) {
                delete made;
                return status;
            }
        }
        weight_bytes = bytes;
    } catch (...) {
        delete made;
        return fail(message, uform_status_out_of_memory_k, "out of memory while loading weights");
    }
    model = made;
    return uform_status_ok_k;
}

void model_free(model_t *model) noexcept { delete model; }

} // namespace uform::gpu
