// Loading a validated checkpoint into the RAM residency: mapped from its path or read from the caller's buffer,
// packed by cpp/weights in BF16 or E4M3, progress reported in bytes through the call.
#include <new>
#include <utility>

#include "../mapped_file.hpp"
#include "ram.hpp"

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

} // namespace

uform_status_t model_load(model_load_t const &request, checkpoint_t &&checkpoint, call_t &call, model_t *&model,
                          std::size_t &weight_bytes, char const **message) noexcept {
    if (request.residency != uform_residency_ram_k)
        return ram::backend_fail(message, uform_status_unsupported_k, "this build loads models into RAM only");

    ram::mapped_file_t mapping;
    std::span<std::byte const> file;
    if (request.buffer != nullptr) file = {static_cast<std::byte const *>(request.buffer), request.length};
    else {
        if (uform_status_t status = mapping.open(request.path, request.path_length, message)) return status;
        file = mapping.bytes();
    }
    if (file.size() < checkpoint.file_size)
        return ram::backend_fail(message, uform_status_corrupt_k, "the checkpoint changed while it was loaded");

    auto *made = new (std::nothrow) model_t;
    if (made == nullptr)
        return ram::backend_fail(message, uform_status_out_of_memory_k, "out of memory making a model");

    load_progress_t progress{&call};
    ram::weights_options_t options;
    options.cpu_class = request.cpu_class;
    options.e4m3 = request.quantization == uform_scalar_e4m3_k;
    options.parallel = ram::parallel_of(call);
    options.progress = report_load;
    options.progress_context = &progress;
    uform_status_t status = ram::weights_load(checkpoint, file, options, made->weights, message);
    if (status == uform_status_ok_k && progress.total != 0 && call.report(progress.total, progress.total))
        status = ram::backend_fail(message, uform_status_cancelled_k, "a progress handler stopped the load");
    if (status != uform_status_ok_k) {
        delete made;
        return status;
    }
    weight_bytes = made->weights.bytes();
    model = made;
    return uform_status_ok_k;
}

void model_free(model_t *model) noexcept { delete model; }

} // namespace uform::backend
