// Writing a checkpoint (docs/model.md, "The checkpoint"): the tensor plan of a geometry and an atomic writer (temporary
// file, then rename), shared by every backend's `trainer_save`.
#ifndef UFORM_COMMON_CHECKPOINT_WRITER_HPP
#define UFORM_COMMON_CHECKPOINT_WRITER_HPP

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"

namespace uform {

/// One tensor to write: its name, element type and shape (rank 1 or 2).
struct tensor_plan_t {
    char name[64];
    dtype_t dtype;
    std::size_t rank;
    std::size_t shape[2];

    std::size_t elements() const noexcept { return rank == 1 ? shape[0] : shape[0] * shape[1]; }
    std::size_t bytes() const noexcept { return elements() * dtype_size(dtype); }
};

/// Every tensor docs/model.md lists for `geometry`, its optional front-ends and heads as it says.
std::vector<tensor_plan_t> checkpoint_plan(geometry_t const &geometry);

/// The safetensors header (JSON, padded with spaces to a multiple of 8 bytes) of `plan` laid out in order, with
/// `geometry`'s `__metadata__`.
std::string checkpoint_header(geometry_t const &geometry, std::span<tensor_plan_t const> plan);

/// Checks that a checkpoint of `geometry` would load: its header goes through the very reader `load_ram` uses, so a
/// trainer's configuration and the checkpoint reader share one set of bounds. `invalid-argument` with the reader's
/// message (naming the metadata key) when it would not.
uform_status_t checkpoint_check_geometry(geometry_t const &geometry, char const **message) noexcept;

/// Fills `bytes` (exactly `plan.bytes()` of them) with one tensor's values, little-endian.
using tensor_fill_t = void (*)(void *context, tensor_plan_t const &plan, std::byte *bytes) noexcept;

/// Writes a safetensors file of `plan` with `geometry`'s `__metadata__` to `path` (the OS's bytes),
/// through a temporary file beside it renamed into place. Answers `io` when the file cannot be created (its
/// directory missing, say) or written, `out-of-memory` when staging a tensor fails.
uform_status_t checkpoint_write(char const *path, std::size_t path_length, geometry_t const &geometry,
                                std::span<tensor_plan_t const> plan, tensor_fill_t fill, void *context,
                                char const **message) noexcept;

} // namespace uform

#endif // UFORM_COMMON_CHECKPOINT_WRITER_HPP
