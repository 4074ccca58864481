// Saving a trainer's parameters as docs/model.md's checkpoint.
#include "cpp/train/save.hpp"

#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "common/checkpoint_writer.hpp"
#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/weights.hpp"

namespace uform::train {
namespace {

/// What the writer's fill callback reads.
struct save_job_t {
    parameters_t const *parameters;
    std::size_t steps;
};

/// Fills one planned tensor from the parameters, little-endian (the writer runs on little-endian hosts only).
void fill(void *context, tensor_plan_t const &plan, std::byte *bytes) noexcept {
    auto const &job = *static_cast<save_job_t const *>(context);
    parameters_t const &p = *job.parameters;
    std::string_view const name = plan.name;
    float const *values = nullptr;
    float step = float(job.steps);
    if (name == "frontend.audio.mel_filters") values = p.mel_filters.data();
    else if (name == "head.choice.temperatures") values = p.temperatures.data();
    else if (name == step_tensor_name_k) values = &step;
    else if (tensor_t const *t = p.find(name)) values = t->master.data();
    std::size_t const count = plan.elements();
    if (plan.dtype == dtype_t::bf16) {
        for (std::size_t i = 0; i != count; ++i) {
            std::uint16_t const bits = values ? f32_to_bf16(values[i]) : 0;
            std::memcpy(bytes + 2 * i, &bits, 2);
        }
    } else if (values) std::memcpy(bytes, values, count * sizeof(float));
    else std::memset(bytes, 0, count * sizeof(float));
}

tensor_plan_t scalar_plan(std::string_view name) noexcept {
    tensor_plan_t plan{};
    std::memcpy(plan.name, name.data(), name.size());
    plan.dtype = dtype_t::f32;
    plan.rank = 1;
    plan.shape[0] = 1;
    return plan;
}

} // namespace

uform_status_t save_checkpoint(parameters_t const &parameters, std::size_t steps, char const *path,
                               std::size_t path_length, char const **message) noexcept {
    try {
        std::vector<tensor_plan_t> plan = checkpoint_plan(parameters.geometry);
        for (tensor_t const &t : parameters.tensors)
            if (t.name.starts_with("trainer.")) plan.push_back(scalar_plan(t.name));
        plan.push_back(scalar_plan(step_tensor_name_k));
        save_job_t job{&parameters, steps};
        return checkpoint_write(path, path_length, parameters.geometry, plan, fill, &job, message);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory saving the trainer");
    }
}

uform_status_t saved_steps(char const *path, std::size_t path_length, checkpoint_t const &checkpoint,
                           std::size_t &steps, char const **message) noexcept {
    steps = 0;
    if (checkpoint.find(step_tensor_name_k) == nullptr) return uform_status_ok_k;
    ram::mapped_file_t file;
    if (uform_status_t status = file.open(path, path_length, message)) return status;
    uform_status_t status = uform_status_ok_k;
    char const *text = nullptr;
    std::byte const *bytes =
        ram::tensor_bytes(checkpoint, file.bytes(), &file, step_tensor_name_k, dtype_t::f32, 1, status, text);
    if (bytes == nullptr) return fail(message, status, text);
    float value;
    std::memcpy(&value, bytes, sizeof value);
    if (!(value >= 0 && value <= 16777216.0f) || value != std::floor(value))
        return fail(message, uform_status_corrupt_k, "the checkpoint's trainer.step is not a whole number of steps");
    steps = std::size_t(value);
    return uform_status_ok_k;
}

} // namespace uform::train
