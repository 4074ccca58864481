// The shared part of the encoding verbs: see encode.hpp.
#include "cpp/backend/encode.hpp"

#include <algorithm>
#include <cmath>

#include "common/scalars.hpp"
#include "cpp/backend/gpu.hpp"

namespace uform::ram {
namespace {

/// Rows per task when converting F32 rows into the output scalar.
constexpr std::size_t convert_rows_k = 64;

/// A surface the forward writes into the call's staging block, `offset` bytes in.
struct staged_t {
    float **pointer;
    std::size_t offset;
};

/// Reserves the call's scratch as `[staging | prefix | activations]`, points the staged surfaces into it, prepares,
/// and runs the forward. The activations' size comes first from a dry run of the forward on an empty borrowed block
/// (it sizes its plan, asks for that much and stops), so the scratch is reserved once: a steady loop of same-shaped
/// calls reserves the same bytes and allocates nothing after the first.
uform_status_t run_forward(backend::model_t const &model, call_t &call, encode_job_t const &job,
                           trunk_outputs_t &outputs, staged_t const *staged, std::size_t staged_count,
                           std::size_t staging, char const **message) noexcept {
    forward_hooks_t hooks;
    hooks.parallel = parallel_of(call);
    hooks.progress = report_to_call;
    hooks.poll = poll_call;
    hooks.progress_context = &call;

    // The dry run: every staged surface at a placeholder, never written since the forward stops at its scratch.
    float placeholder = 0;
    for (std::size_t i = 0; i != staged_count; ++i) *staged[i].pointer = &placeholder;
    std::size_t activations = 0;
    {
        scratch_t sizing;
        sizing.borrow(nullptr, 0);
        char const *refusal = nullptr; // the dry run's own "out of memory" is no message of the call's
        uform_status_t const status = trunk_forward(model.weights, job.batch, outputs, sizing, hooks, &refusal);
        if (status == uform_status_out_of_memory_k) activations = sizing.requested();
        else if (status != uform_status_ok_k) return fail(message, status, refusal); // the request is refused
    }
    std::size_t total = staging;
    if (job.prefix_bytes > SIZE_MAX - total || activations > SIZE_MAX - total - job.prefix_bytes)
        return fail(message, uform_status_out_of_memory_k, "the call's scratch would overflow");
    total += job.prefix_bytes + activations;
    if (!call.reserve_scratch(0, total))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call's scratch");
    auto *block = static_cast<std::byte *>(call.shared_scratch());
    for (std::size_t i = 0; i != staged_count; ++i)
        *staged[i].pointer = reinterpret_cast<float *>(block + staged[i].offset);

    token_batch_t batch = job.batch;
    if (job.prepare != nullptr)
        if (uform_status_t status = job.prepare(job.prepare_context, block + staging, batch, message)) return status;
    if (call.cancelled()) return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    scratch_t scratch;
    scratch.borrow(block + staging + job.prefix_bytes, activations);
    uform_status_t const status = trunk_forward(model.weights, batch, outputs, scratch, hooks, message);
    if (status == uform_status_cancelled_k)
        return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    return status;
}

/// Converts `rows` F32 rows of `columns` values (`source_stride` floats apart) into `target`'s scalar and stride.
void convert_rows(call_t &call, float const *source, std::size_t source_stride, std::size_t rows, std::size_t columns,
                  uform_rows_t const &target) noexcept {
    std::size_t const tasks = (rows + convert_rows_k - 1) / convert_rows_k;
    call.parallel_for(tasks, [&](std::size_t task, std::size_t) noexcept {
        std::size_t const begin = task * convert_rows_k, end = std::min(rows, begin + convert_rows_k);
        for (std::size_t row = begin; row != end; ++row)
            convert_row(source + row * source_stride, columns, target.scalar,
                        static_cast<std::byte *>(target.data) + row * target.stride);
    });
}

/// Whether `count` rows of `columns` F32 values, `stride` floats apart, are all finite. Weights and inputs are checked
/// finite, yet finite values can still overflow (a weight near the largest float squared in RMSNorm), and a NaN row
/// must never be answered with `ok`.
bool all_finite(float const *rows, std::size_t stride, std::size_t count, std::size_t columns) noexcept {
    bool finite = true;
    for (std::size_t row = 0; row != count; ++row)
        for (std::size_t column = 0; column != columns; ++column) finite &= std::isfinite(rows[row * stride + column]);
    return finite;
}

constexpr char const *non_finite_k = "the model computed a non-finite value: its weights overflow on this input";

/// One surface of an encoding: whether it was asked for, its shape, its arena rows.
struct surface_t {
    bool wanted = false;
    std::size_t rows = 0, columns = 0;
    uform_rows_t *view = nullptr;
    float **output = nullptr;
    std::size_t *output_stride = nullptr;
};

/// Allocates each wanted surface's rows in the call's arena (the token surfaces as tapes with the items' offsets) and
/// points the forward's outputs at them: F32 rows straight into the arena, other scalars into staging, whose bytes and
/// entries it counts. False when out of memory.
bool place_surfaces(call_t &call, token_batch_t const &batch, uform_scalar_t scalar, surface_t (&surfaces)[3],
                    staged_t (&staged)[3], std::size_t &staged_count, std::size_t &staging) noexcept {
    bool const direct = scalar == uform_scalar_f32_k;
    std::size_t const count = batch.count;
    for (std::size_t s = 0; s != 3; ++s) {
        surface_t &surface = surfaces[s];
        if (!surface.wanted) continue;
        bool const tape = s != 0;
        if (!call.allocate_rows(*surface.view, surface.rows, count, surface.columns, scalar, tape)) return false;
        if (tape) {
            auto *offsets = const_cast<std::size_t *>(surface.view->offsets);
            offsets[0] = 0;
            for (std::size_t i = 1; i <= count; ++i) offsets[i] = batch.offsets[i] - batch.offsets[0];
        }
        if (direct) {
            *surface.output = static_cast<float *>(surface.view->data);
            *surface.output_stride = surface.view->stride / sizeof(float);
        } else {
            staged[staged_count++] = {surface.output, staging};
            *surface.output_stride = surface.columns;
            staging += scratch_bytes(surface.rows * surface.columns);
        }
    }
    return true;
}

} // namespace

uform_status_t encode_tokens(backend::model_t const &model, call_t &call, encode_job_t const &job,
                             backend::encode_request_t request, uform_encoded_t &encoded,
                             char const **message) noexcept {
    if (model.vram != nullptr) return gpu::encode_tokens(*model.vram, call, job, request, encoded, message);
    geometry_t const &g = model.weights.geometry;
    token_batch_t const &batch = job.batch;
    std::size_t const count = batch.count;
    std::size_t const tokens = count ? batch.offsets[count] - batch.offsets[0] : 0;
    bool const direct = request.scalar == uform_scalar_f32_k; // F32 rows land in the arena as the forward writes them

    uform_encoded_t result{};
    trunk_outputs_t outputs;
    surface_t surfaces[3];
    surfaces[0] = {bool(request.outputs & uform_outputs_embeddings_k),
                   count,
                   g.dimensions,
                   &result.embeddings,
                   &outputs.embeddings,
                   &outputs.embeddings_stride};
    surfaces[1] = {bool(request.outputs & uform_outputs_states_k),
                   tokens,
                   g.hidden,
                   &result.states,
                   &outputs.states,
                   &outputs.states_stride};
    surfaces[2] = {bool(request.outputs & uform_outputs_token_vectors_k),
                   tokens,
                   g.token_width,
                   &result.token_vectors,
                   &outputs.token_vectors,
                   &outputs.token_vectors_stride};

    staged_t staged[3];
    std::size_t staged_count = 0, staging = 0;
    if (!place_surfaces(call, batch, request.scalar, surfaces, staged, staged_count, staging))
        return fail(message, uform_status_out_of_memory_k, "out of memory for the call's outputs");
    if (uform_status_t status = run_forward(model, call, job, outputs, staged, staged_count, staging, message))
        return status;
    for (surface_t const &surface : surfaces)
        if (surface.wanted && !all_finite(*surface.output, *surface.output_stride, surface.rows, surface.columns))
            return fail(message, uform_status_corrupt_k, non_finite_k);
    if (!direct)
        for (surface_t const &surface : surfaces)
            if (surface.wanted)
                convert_rows(call, *surface.output, *surface.output_stride, surface.rows, surface.columns,
                             *surface.view);
    if (call.cancelled()) return fail(message, uform_status_cancelled_k, "a progress handler stopped the call");
    encoded = result;
    return uform_status_ok_k;
}

uform_status_t forward_choose_logits(backend::model_t const &model, call_t &call, token_batch_t const &batch,
                                     float *&logits, char const **message) noexcept {
    trunk_outputs_t outputs;
    outputs.choose_logits_stride = 256;
    staged_t const staged{&outputs.choose_logits, 0};
    encode_job_t job;
    job.batch = batch;
    uform_status_t const status =
        run_forward(model, call, job, outputs, &staged, 1, scratch_bytes(batch.count * 256), message);
    logits = outputs.choose_logits;
    if (status == uform_status_ok_k && !all_finite(logits, 256, batch.count, 256))
        return fail(message, uform_status_corrupt_k, non_finite_k);
    return status;
}

} // namespace uform::ram
