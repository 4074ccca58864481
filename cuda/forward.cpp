// The trunk forward of docs/model.md on a GPU: every item of a call packed into one token matrix, each linear one
// cuBLASLt product over all tokens (BF16 inputs, F32 accumulation and result), attention block-diagonal per item, only
// the surfaces asked for computed. The call's inputs (byte ids or media tokens embedded on the host, positions, segment
// bounds) go to the device in one copy through pinned staging; activations live in the stream's scratch, grown to a
// high-water mark; the surfaces land in the call's VRAM arena.
#include <algorithm>
#include <cstring>
#include <mutex>
#include <optional>

#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cpp/backend/gpu.hpp"
#include "cuda/gemm.hpp"
#include "cuda/kernels.hpp"
#include "cuda/model.hpp"

namespace uform::gpu {
namespace {

using cuda::replica_t;
using cuda::stream_t;

constexpr std::size_t alignment_k = 256;

constexpr std::size_t aligned(std::size_t bytes) noexcept {
    return (bytes + alignment_k - 1) / alignment_k * alignment_k;
}

/// The stream and replica a call computes on: the executor's stream of a device holding a replica (the arena's device
/// first), or, without an executor, the model's own stream for that replica, held under its lock for the call.
struct lease_t {
    stream_t *stream = nullptr;
    replica_t const *replica = nullptr;
    std::unique_lock<std::mutex> lock;
    std::optional<cuda::device_guard_t> device; // the stream's device, current on this thread for the call
};

uform_status_t take_lease(model_t const &model, call_t &call, lease_t &lease, char const **message) noexcept {
    auto *streams = static_cast<cuda::streams_t *>(call.device_state());
    std::size_t const arena_device =
        call.output_residency() == uform_residency_vram_k ? call.output_device() : std::size_t(-1);
    std::span<std::size_t const> const devices = call.devices();
    std::size_t chosen = model.replicas.size();
    for (std::size_t r = 0; r != model.replicas.size(); ++r) {
        std::size_t const ordinal = model.replicas[r].ordinal;
        if (std::find(devices.begin(), devices.end(), ordinal) == devices.end()) continue;
        if (chosen == model.replicas.size() || ordinal == arena_device) chosen = r;
    }
    if (chosen == model.replicas.size())
        return fail(message, uform_status_invalid_argument_k, "the model is on none of the call's devices");
    lease.replica = &model.replicas[chosen];
    if (streams != nullptr) {
        for (stream_t &stream : streams->devices)
            if (stream.ordinal == lease.replica->ordinal) lease.stream = &stream;
    } else {
        lease.lock = std::unique_lock(model.local_mutex);
        lease.stream = &model.local[chosen];
    }
    if (lease.stream == nullptr)
        return fail(message, uform_status_invalid_argument_k, "the executor has no stream on the model's device");
    lease.device.emplace(lease.stream->device);
    if (!lease.device->ok())
        return fail(message, uform_status_internal_k, "the CUDA runtime refused to select the device");
    return uform_status_ok_k;
}

/// What one forward computes, F32 on the device: null surfaces are not asked for.
struct surfaces_t {
    bool states = false, token_vectors = false, embeddings = false, logits = false;
};

/// Device memory carved from the stream's scratch, and the inputs' host twin in its pinned staging, laid out alike so
/// that one copy moves them.
struct buffers_t {
    // inputs, in this order at the start of both blocks
    std::uint16_t *ids;
    float *embedded;
    std::uint32_t *positions, *segment_begin, *segment_end, *item_offsets, *choose_rows;
    std::size_t input_bytes;
    // activations
    float *x, *qkv, *gate_up, *states, *embeddings, *token_vectors, *logits;
    std::uint16_t *normed, *attention, *mlp, *head_in, *dequantized;
    unsigned *non_finite;
};

/// Carves `buffers` from `base` (or only sizes them when `base` is null); answers the bytes in all.
std::size_t carve(model_t const &model, std::size_t tokens, std::size_t items, bool embedded, surfaces_t wanted,
                  std::byte *base, buffers_t &buffers) noexcept {
    geometry_t const &g = model.geometry;
    std::size_t const hidden = g.hidden, attention = g.heads * g.head_dim, ffn = g.ffn_hidden;
    std::size_t offset = 0;
    auto take = [&](auto *&pointer, std::size_t count) noexcept {
        using value_t = std::remove_reference_t<decltype(*pointer)>;
        pointer = base == nullptr ? nullptr : reinterpret_cast<value_t *>(base + offset);
        offset += aligned(count * sizeof(value_t));
    };
    take(buffers.ids, embedded ? 0 : tokens);
    take(buffers.embedded, embedded ? tokens * hidden : 0);
    take(buffers.positions, 3 * tokens);
    take(buffers.segment_begin, tokens);
    take(buffers.segment_end, tokens);
    take(buffers.item_offsets, items + 1);
    take(buffers.choose_rows, items);
    buffers.input_bytes = offset;
    take(buffers.x, embedded ? 0 : tokens * hidden);
    if (embedded) buffers.x = buffers.embedded; // the residual stream starts as the embedded tokens
    take(buffers.qkv, tokens * 3 * attention);
    take(buffers.gate_up, tokens * 2 * ffn);
    take(buffers.states, tokens * hidden);
    take(buffers.embeddings, wanted.embeddings ? items * g.dimensions : 0);
    take(buffers.token_vectors, wanted.token_vectors ? tokens * g.token_width : 0);
    take(buffers.logits, wanted.logits ? items * 256 : 0);
    take(buffers.normed, tokens * hidden);
    take(buffers.attention, tokens * attention);
    take(buffers.mlp, tokens * ffn);
    take(buffers.head_in, std::max(tokens, items) * hidden);
    take(buffers.dequantized, model.e4m3 ? model.largest_linear : 0);
    take(buffers.non_finite, 1);
    return offset;
}

/// The BF16 weights of `linear`: its own, or (E4M3) dequantized into `scratch` first, on the stream.
std::uint16_t const *weights_of(cuda::linear_t const &linear, std::uint16_t *scratch, stream_t &stream,
                                bool &ok) noexcept {
    if (linear.scales == nullptr) return static_cast<std::uint16_t const *>(linear.weights);
    ok = ok && cuda::dequantize_e4m3(static_cast<std::uint8_t const *>(linear.weights), linear.scales, linear.columns,
                                     linear.depth, scratch, stream.stream);
    return scratch;
}

/// `y (+)= x . W^T` over `rows` rows.
bool multiply(stream_t &stream, buffers_t const &buffers, std::uint16_t const *x, std::size_t rows,
              cuda::linear_t const &linear, float *y, bool accumulate) noexcept {
    bool ok = true;
    std::uint16_t const *weights = weights_of(linear, buffers.dequantized, stream, ok);
    return ok && cuda::linear(stream, x, linear.depth, rows, weights, linear.columns, linear.depth, y, linear.columns,
                              accumulate);
}

/// Fills the pinned inputs: byte ids (CHOOSE is 257) or embedded rows, positions (text's `(i, i, i)` or the batch's),
/// segments, item offsets, CHOOSE rows.
void stage_inputs(ram::token_batch_t const &batch, std::size_t hidden, buffers_t const &host) noexcept {
    std::size_t const count = batch.count;
    std::size_t row = 0;
    for (std::size_t item = 0; item != count; ++item) {
        std::size_t const begin = row, bytes = batch.offsets[item + 1] - batch.offsets[item];
        std::size_t const tokens = bytes + (batch.append_choose ? 1 : 0);
        host.item_offsets[item] = std::uint32_t(begin);
        for (std::size_t t = 0; t != tokens; ++t, ++row) {
            std::size_t const source = batch.offsets[item] - batch.offsets[0] + t; // the token's row in `embedded`
            if (batch.embedded == nullptr)
                host.ids[row] = t < bytes ? std::uint16_t(batch.bytes[batch.offsets[item] + t]) : std::uint16_t(257);
            else
                std::memcpy(host.embedded + row * hidden, batch.embedded + source * batch.embedded_stride,
                            hidden * sizeof(float));
            for (std::size_t axis = 0; axis != 3; ++axis)
                host.positions[3 * row + axis] =
                    batch.positions != nullptr ? batch.positions[3 * source + axis] : std::uint32_t(t);
            host.segment_begin[row] = std::uint32_t(begin);
            host.segment_end[row] = std::uint32_t(begin + tokens);
        }
        host.choose_rows[item] = std::uint32_t(row == 0 ? 0 : row - 1);
    }
    host.item_offsets[count] = std::uint32_t(row);
}

/// Runs the trunk and the heads `wanted` names over `batch` on the leased stream, and waits for them. Leaves the F32
/// surfaces in `buffers`; answers `corrupt` when one holds a non-finite value.
uform_status_t forward(model_t const &model, lease_t &lease, ram::token_batch_t const &batch, surfaces_t wanted,
                       buffers_t &buffers, std::size_t &tokens, char const **message) noexcept {
    geometry_t const &g = model.geometry;
    stream_t &stream = *lease.stream;
    replica_t const &replica = *lease.replica;
    std::size_t const items = batch.count;
    tokens = (items ? batch.offsets[items] - batch.offsets[0] : 0) + (batch.append_choose ? items : 0);
    if (tokens >= (std::size_t(1) << 31))
        return fail(message, uform_status_limit_exceeded_k, "a call on a GPU takes fewer than 2^31 tokens");
    bool const embedded = batch.embedded != nullptr;
    buffers_t host{};
    std::size_t const bytes = carve(model, tokens, items, embedded, wanted, nullptr, buffers);
    if (!stream.activations.reserve(bytes) || !stream.staging.reserve(buffers.input_bytes))
        return fail(message, uform_status_out_of_memory_k, "out of device or pinned memory for the call's scratch");
    carve(model, tokens, items, embedded, wanted, static_cast<std::byte *>(stream.activations.data), buffers);
    carve(model, tokens, items, embedded, wanted, static_cast<std::byte *>(stream.staging.data), host);
    stage_inputs(batch, g.hidden, host);

    cudaStream_t const s = stream.stream;
    std::size_t const hidden = g.hidden, attention = g.heads * g.head_dim, ffn = g.ffn_hidden;
    bool ok = cudaMemcpyAsync(stream.activations.data, stream.staging.data, buffers.input_bytes, cudaMemcpyHostToDevice,
                              s) == cudaSuccess &&
              cudaMemsetAsync(buffers.non_finite, 0, sizeof(unsigned), s) == cudaSuccess;
    if (!embedded)
        ok = ok && cuda::embed_rows(replica.byte_embedding, buffers.ids, tokens, hidden, buffers.x, hidden, s);
    for (cuda::block_t const &block : replica.blocks) {
        ok = ok &&
             cuda::rms_norm(buffers.x, hidden, block.attn_norm, tokens, hidden, g.norm_eps, buffers.normed, nullptr,
                            hidden, s) &&
             multiply(stream, buffers, buffers.normed, tokens, block.qkv, buffers.qkv, false) &&
             cuda::rope_round(buffers.qkv, 3 * attention, tokens, buffers.positions, g.heads, g.head_dim,
                              double(g.rope_theta), std::uint32_t(g.rope_sections[0]),
                              std::uint32_t(g.rope_sections[1]), s) &&
             cuda::attention(buffers.qkv, 3 * attention, buffers.segment_begin, buffers.segment_end, tokens, g.heads,
                             g.head_dim, buffers.attention, attention, s) &&
             multiply(stream, buffers, buffers.attention, tokens, block.out, buffers.x, true) &&
             cuda::rms_norm(buffers.x, hidden, block.mlp_norm, tokens, hidden, g.norm_eps, buffers.normed, nullptr,
                            hidden, s) &&
             multiply(stream, buffers, buffers.normed, tokens, block.gate_up, buffers.gate_up, false) &&
             cuda::silu_mul(buffers.gate_up, 2 * ffn, tokens, ffn, buffers.mlp, ffn, s) &&
             multiply(stream, buffers, buffers.mlp, tokens, block.down, buffers.x, true);
    }
    ok = ok && cuda::rms_norm(buffers.x, hidden, replica.final_norm, tokens, hidden, g.norm_eps, nullptr,
                              buffers.states, hidden, s);
    if (wanted.states) ok = ok && cuda::count_non_finite(buffers.states, hidden, tokens, hidden, buffers.non_finite, s);
    if (wanted.embeddings)
        ok = ok &&
             cuda::mean_pool_bf16(buffers.states, hidden, buffers.item_offsets, items, hidden, buffers.head_in, hidden,
                                  s) &&
             multiply(stream, buffers, buffers.head_in, items, replica.embedding_head, buffers.embeddings, false) &&
             cuda::l2_normalize(buffers.embeddings, g.dimensions, items, g.dimensions, s) &&
             cuda::count_non_finite(buffers.embeddings, g.dimensions, items, g.dimensions, buffers.non_finite, s);
    if (wanted.token_vectors)
        ok = ok && cuda::gather_bf16(buffers.states, hidden, nullptr, tokens, hidden, buffers.head_in, hidden, s) &&
             multiply(stream, buffers, buffers.head_in, tokens, replica.token_head, buffers.token_vectors, false) &&
             cuda::l2_normalize(buffers.token_vectors, g.token_width, tokens, g.token_width, s) &&
             cuda::count_non_finite(buffers.token_vectors, g.token_width, tokens, g.token_width, buffers.non_finite, s);
    if (wanted.logits)
        ok =
            ok &&
            cuda::gather_bf16(buffers.states, hidden, buffers.choose_rows, items, hidden, buffers.head_in, hidden, s) &&
            multiply(stream, buffers, buffers.head_in, items, replica.byte_head, buffers.logits, false) &&
            cuda::count_non_finite(buffers.logits, 256, items, 256, buffers.non_finite, s);
    unsigned non_finite = 0;
    ok = ok &&
         cudaMemcpyAsync(&non_finite, buffers.non_finite, sizeof(unsigned), cudaMemcpyDeviceToHost, s) == cudaSuccess;
    bool const finished = cudaStreamSynchronize(s) == cudaSuccess;
    if (!ok || !finished) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "the GPU refused a step of the forward");
    }
    if (non_finite != 0)
        return fail(message, uform_status_corrupt_k,
                    "the model computed a non-finite value: its weights overflow on this input");
    return uform_status_ok_k;
}

/// Copies `rows` F32 rows of `columns` values (contiguous, on the device) into the arena's `target` rows in their
/// scalar: directly for F32, else through pinned staging and the host conversion the RAM residency uses.
uform_status_t publish(stream_t &stream, float const *source, std::size_t rows, std::size_t columns,
                       uform_rows_t const &target, char const **message) noexcept {
    std::size_t const f32_bytes = rows * columns * sizeof(float);
    cudaStream_t const s = stream.stream;
    bool ok = true;
    if (target.scalar == uform_scalar_f32_k)
        ok = cudaMemcpyAsync(target.data, source, f32_bytes, cudaMemcpyDefault, s) == cudaSuccess;
    else {
        std::size_t const converted = rows * target.stride;
        if (!stream.staging.reserve(aligned(f32_bytes) + converted))
            return fail(message, uform_status_out_of_memory_k, "out of pinned memory for the call's outputs");
        auto *staged = static_cast<float *>(stream.staging.data);
        auto *bytes = static_cast<std::byte *>(stream.staging.data) + aligned(f32_bytes);
        ok = cudaMemcpyAsync(staged, source, f32_bytes, cudaMemcpyDeviceToHost, s) == cudaSuccess &&
             cudaStreamSynchronize(s) == cudaSuccess;
        if (ok)
            for (std::size_t row = 0; row != rows; ++row)
                convert_row(staged + row * columns, columns, target.scalar, bytes + row * target.stride);
        ok = ok && cudaMemcpyAsync(target.data, bytes, converted, cudaMemcpyHostToDevice, s) == cudaSuccess;
    }
    ok = ok && cudaStreamSynchronize(s) == cudaSuccess;
    if (!ok) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "copying the call's outputs into the arena failed");
    }
    return uform_status_ok_k;
}

/// Copies a rows tape's `items + 1` offsets (the batch's tokens, counted from zero) into the arena.
uform_status_t publish_offsets(stream_t &stream, ram::token_batch_t const &batch, uform_rows_t const &target,
                               char const **message) noexcept {
    std::size_t const bytes = (batch.count + 1) * sizeof(std::size_t);
    if (!stream.staging.reserve(bytes))
        return fail(message, uform_status_out_of_memory_k, "out of pinned memory for the call's outputs");
    auto *offsets = static_cast<std::size_t *>(stream.staging.data);
    for (std::size_t i = 0; i <= batch.count; ++i) offsets[i] = batch.offsets[i] - batch.offsets[0];
    if (cudaMemcpyAsync(const_cast<std::size_t *>(target.offsets), offsets, bytes, cudaMemcpyHostToDevice,
                        stream.stream) != cudaSuccess ||
        cudaStreamSynchronize(stream.stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "copying the call's offsets into the arena failed");
    }
    return uform_status_ok_k;
}

} // namespace

uform_status_t encode_tokens(model_t const &model, call_t &call, ram::encode_job_t const &job,
                             backend::encode_request_t request, uform_encoded_t &encoded,
                             char const **message) noexcept {
    geometry_t const &g = model.geometry;
    if (call.output_residency() != uform_residency_vram_k)
        return fail(message, uform_status_invalid_argument_k, "a VRAM model writes into a VRAM arena");
    ram::token_batch_t batch = job.batch; // a media job's `prepare` completes it (embedded rows, positions)
    std::size_t const count = batch.count, tokens = count ? batch.offsets[count] - batch.offsets[0] : 0;
    surfaces_t wanted;
    wanted.states = request.outputs & uform_outputs_states_k;
    wanted.token_vectors = request.outputs & uform_outputs_token_vectors_k;
    wanted.embeddings = request.outputs & uform_outputs_embeddings_k;
    if (wanted.token_vectors && !g.has_token_head)
        return fail(message, uform_status_unsupported_k, "the model has no token head for token vectors");

    uform_encoded_t result{};
    if ((wanted.embeddings &&
         !call.allocate_rows(result.embeddings, count, count, g.dimensions, request.scalar, false)) ||
        (wanted.states && !call.allocate_rows(result.states, tokens, count, g.hidden, request.scalar, true)) ||
        (wanted.token_vectors &&
         !call.allocate_rows(result.token_vectors, tokens, count, g.token_width, request.scalar, true)))
        return fail(message, uform_status_out_of_memory_k, "out of device memory for the call's outputs");

    // A media job's front-end embeds its tokens on the host, into the call's host scratch; then the trunk runs here.
    if (job.prepare != nullptr) {
        if (!call.reserve_scratch(0, job.prefix_bytes))
            return fail(message, uform_status_out_of_memory_k, "out of memory for the call's scratch");
        if (uform_status_t status =
                job.prepare(job.prepare_context, static_cast<std::byte *>(call.shared_scratch()), batch, message))
            return status;
        if (call.cancelled()) return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    }
    lease_t lease;
    if (uform_status_t status = take_lease(model, call, lease, message)) return status;
    buffers_t buffers{};
    std::size_t rows = 0;
    if (uform_status_t status = forward(model, lease, batch, wanted, buffers, rows, message)) return status;
    if (wanted.embeddings)
        if (uform_status_t status =
                publish(*lease.stream, buffers.embeddings, count, g.dimensions, result.embeddings, message))
            return status;
    if (wanted.states)
        if (uform_status_t status = publish(*lease.stream, buffers.states, rows, g.hidden, result.states, message);
            status || (status = publish_offsets(*lease.stream, batch, result.states, message)))
            return status;
    if (wanted.token_vectors)
        if (uform_status_t status =
                publish(*lease.stream, buffers.token_vectors, rows, g.token_width, result.token_vectors, message);
            status || (status = publish_offsets(*lease.stream, batch, result.token_vectors, message)))
            return status;
    if (call.report(count, count))
        return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    encoded = result;
    return uform_status_ok_k;
}

uform_status_t forward_choose_logits(model_t const &model, call_t &call, ram::token_batch_t const &batch, float *logits,
                                     char const **message) noexcept {
    if (!model.geometry.has_byte_head)
        return fail(message, uform_status_unsupported_k, "the model has no byte head to score choices");
    lease_t lease;
    if (uform_status_t status = take_lease(model, call, lease, message)) return status;
    surfaces_t wanted;
    wanted.logits = true;
    buffers_t buffers{};
    std::size_t rows = 0;
    if (uform_status_t status = forward(model, lease, batch, wanted, buffers, rows, message)) return status;
    if (cudaMemcpy(logits, buffers.logits, batch.count * 256 * sizeof(float), cudaMemcpyDeviceToHost) != cudaSuccess) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "copying the logits from the device failed");
    }
    if (call.report(batch.count, batch.count))
        return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    return uform_status_ok_k;
}

uform_status_t copy_to_arena(call_t &call, void *target, void const *source, std::size_t bytes,
                             char const **message) noexcept {
    if (call.output_residency() != uform_residency_vram_k)
        return fail(message, uform_status_invalid_argument_k, "a VRAM model writes into a VRAM arena");
    if (bytes == 0) return uform_status_ok_k;
    if (cudaMemcpy(target, source, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        (void)cudaGetLastError();
        return fail(message, uform_status_internal_k, "copying the call's outputs into the arena failed");
    }
    return uform_status_ok_k;
}

} // namespace uform::gpu
