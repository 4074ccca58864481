// The VRAM mesh over NCCL: the run's identity (an NCCL unique id, which host 0 publishes through the mesh's files) and
// the join, one NCCL communicator per device of this host, each a rank of one communicator spanning every device of
// every host (docs/decisions.md, "The GPU mesh over NCCL"). NCCL comes through a table of entry points (nccl.hpp) and
// the devices through `mesh_devices_t`, so that a host-side test drives the join with fakes of both.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "common/backend.hpp"

struct ncclComm; // NCCL's communicator (nccl.h's `ncclComm_t` points to it)

namespace uform::cuda {

struct nccl_t;

/// A joined VRAM mesh's communicators, one per device of this host. Freeing it finalizes them in one group (NCCL's
/// orderly end, waiting for their peers up to `finalize_timeout_k`), then destroys them; one that does not finish in
/// time, or fails, is aborted instead.
inline constexpr std::chrono::seconds finalize_timeout_k{30};

struct nccl_mesh_t {
    nccl_t const *nccl = nullptr;
    std::vector<ncclComm *> comms;

    nccl_mesh_t() noexcept = default;
    nccl_mesh_t(nccl_mesh_t const &) = delete;
    nccl_mesh_t &operator=(nccl_mesh_t const &) = delete;
    ~nccl_mesh_t() noexcept;
};

/// What the join asks of this host's devices (ordinals as `c/` numbers them).
struct mesh_devices_t {
    /// Makes the device current on the calling thread; false when the runtime refuses it.
    bool (*use)(std::size_t ordinal) noexcept;
    /// Whether the device dispatches as `gpu_class`.
    bool (*runs)(uform_gpu_class_t gpu_class, std::size_t ordinal) noexcept;
    /// Whether the device supports NVLink SHARP's multicast objects (what NCCL's NVLS algorithms need).
    bool (*multicast)(std::size_t ordinal) noexcept;
};

/// Makes a fresh identity for a run on host 0: NCCL's unique id. `unsupported` when `nccl` is null (NCCL did not
/// load).
uform_status_t mesh_identity_with(nccl_t const *nccl, unsigned char (&identity)[backend::mesh_identity_bytes_k],
                                  char const **message) noexcept;

/// Joins the run's communicator with NCCL's non-blocking initialization, polled until `join.deadline`: past it every
/// communicator this host began is aborted and the join answers `timeout`. Refuses with `invalid-argument` a device
/// that does not run the run's class (naming the class), a device named twice (NCCL refuses two ranks on one GPU), and
/// ranks that do not fit the world. `tier` answers NVLS when every device of a host of several supports multicast and
/// NCCL_NVLS_ENABLE does not turn it off, else none.
uform_status_t mesh_join_with(nccl_t const *nccl, mesh_devices_t const &devices, backend::mesh_join_t const &join,
                              std::unique_ptr<nccl_mesh_t> &mesh, uform_multimem_tier_t &tier,
                              char const **message) noexcept;

/// What a device sum asks of the CUDA stream it enqueued on: 1 once the stream finished, 0 while it runs, -1 when the
/// device failed.
using stream_state_t = int (*)(void *stream) noexcept;

/// Enqueues each array of `values` (floats in the device memory of communicator 0's GPU) as one NCCL group of in-place
/// all-reduces on `stream` and returns without waiting for it (`mesh_sum_with` with no arrays waits). An error NCCL
/// reports aborts every communicator and answers its status; a mesh aborted so answers `io`.
uform_status_t mesh_enqueue(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream,
                            char const **message) noexcept;

/// Sums each array of `values` over the mesh in place (`mesh_enqueue`), then polls NCCL's state and `stream_state`
/// until the stream finished, every group enqueued on it before included: with no arrays, it waits for those alone. An
/// error NCCL reports aborts every communicator and answers its status; past `deadline` every communicator is aborted
/// and the sum answers `timeout`; a mesh aborted so answers `io` to every later sum.
uform_status_t mesh_sum_with(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream,
                             stream_state_t stream_state, std::chrono::steady_clock::time_point deadline,
                             char const **message) noexcept;

/// `mesh_sum_with` the CUDA runtime's stream query, `timeout` from now.
uform_status_t mesh_sum(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream,
                        std::chrono::milliseconds timeout, char const **message) noexcept;

/// Whether NCCL loaded (a build without nccl.h: never), what a VRAM mesh's transport needs.
bool nccl_available() noexcept;

/// The UUID of the process's GPU `ordinal` (what tells two processes they share a GPU); false when the runtime refused.
bool device_uuid(std::size_t ordinal, unsigned char (&uuid)[16]) noexcept;

/// `mesh_identity_with` the loaded NCCL; `unsupported` naming what is missing (nccl.h at build time, or the library).
uform_status_t mesh_identity(unsigned char (&identity)[backend::mesh_identity_bytes_k], char const **message) noexcept;

/// `mesh_join_with` the loaded NCCL and the CUDA runtime's devices, restoring the caller's current device after.
uform_status_t mesh_join(backend::mesh_join_t const &join, std::unique_ptr<nccl_mesh_t> &mesh,
                         uform_multimem_tier_t &tier, char const **message) noexcept;

} // namespace uform::cuda
