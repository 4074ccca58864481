// The VRAM mesh over NCCL (mesh.hpp): the identity, the non-blocking join polled under the mesh's deadline, the class
// and rank checks, the multimem tier, and the gradients' sums on the device. A build whose toolkit had no nccl.h
// compiles the refusals at the end.
#include "cuda/mesh.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "common/fail.hpp"
#include "cuda/device.hpp"

#if __has_include(<nccl.h>)
#include "cuda/nccl.hpp"

namespace uform::cuda {
namespace {

static_assert(sizeof(ncclUniqueId) == backend::mesh_identity_bytes_k, "the mesh's identity is NCCL's unique id");

/// The status and message of an NCCL failure.
uform_status_t nccl_failure(ncclResult_t result, char const **message) noexcept {
    switch (result) {
    case ncclUnhandledCudaError:
        return fail(message, uform_status_device_k, "NCCL failed: a CUDA call of its own failed");
    case ncclSystemError:
        return fail(message, uform_status_io_k, "NCCL failed: a system call or a connection to a peer failed");
    case ncclRemoteError: return fail(message, uform_status_io_k, "NCCL failed: a peer of the mesh failed or left");
    case ncclInvalidArgument:
    case ncclInvalidUsage:
        return fail(message, uform_status_invalid_argument_k, "NCCL refused the mesh's ranks or identity");
    default: return fail(message, uform_status_internal_k, "NCCL failed inside");
    }
}

/// The refusal of a host whose devices do not run the run's class, naming the class.
uform_status_t other_class(uform_gpu_class_t gpu_class, char const **message) noexcept {
    switch (gpu_class) {
    case uform_gpu_class_nvidia_ampere_k:
        return fail(message, uform_status_invalid_argument_k,
                    "this host's GPUs do not all run the mesh's class, nvidia-ampere (host 0's)");
    case uform_gpu_class_nvidia_ada_k:
        return fail(message, uform_status_invalid_argument_k,
                    "this host's GPUs do not all run the mesh's class, nvidia-ada (host 0's)");
    case uform_gpu_class_nvidia_hopper_k:
        return fail(message, uform_status_invalid_argument_k,
                    "this host's GPUs do not all run the mesh's class, nvidia-hopper (host 0's)");
    case uform_gpu_class_nvidia_blackwell_k:
        return fail(message, uform_status_invalid_argument_k,
                    "this host's GPUs do not all run the mesh's class, nvidia-blackwell (host 0's)");
    default:
        return fail(message, uform_status_invalid_argument_k,
                    "the mesh's class (host 0's) is not an NVIDIA one, which NCCL joins");
    }
}

/// The checks before any NCCL call: ranks that fit the world and an int, each device once, of the run's class.
uform_status_t check_join(mesh_devices_t const &devices, backend::mesh_join_t const &join,
                          char const **message) noexcept {
    std::size_t const count = join.devices.size();
    if (count == 0) return fail(message, uform_status_invalid_argument_k, "a VRAM mesh needs a device on every host");
    if (join.world_devices > std::size_t(std::numeric_limits<int>::max()) || join.first_rank > join.world_devices ||
        count > join.world_devices - join.first_rank)
        return fail(message, uform_status_invalid_argument_k, "this host's ranks do not fit the mesh's world");
    for (std::size_t i = 0; i != count; ++i)
        for (std::size_t j = 0; j != i; ++j)
            if (join.devices[i] == join.devices[j])
                return fail(message, uform_status_invalid_argument_k,
                            "a device is named twice: NCCL refuses two ranks on one GPU");
    for (std::size_t ordinal : join.devices)
        if (!devices.runs(join.gpu_class, ordinal)) return other_class(join.gpu_class, message);
    return uform_status_ok_k;
}

/// Starts every communicator of this host in one NCCL group, non-blocking; on failure aborts what it began.
uform_status_t start_comms(nccl_t const &nccl, mesh_devices_t const &devices, backend::mesh_join_t const &join,
                           nccl_mesh_t &mesh, char const **message) noexcept {
    ncclUniqueId id;
    std::memcpy(&id, join.identity, sizeof(id));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t result = nccl.group_start();
    if (result != ncclSuccess) return nccl_failure(result, message);
    bool used = true;
    for (std::size_t i = 0; used && result == ncclSuccess && i != join.devices.size(); ++i) {
        used = devices.use(join.devices[i]);
        if (!used) break;
        ncclComm_t comm = nullptr;
        result = nccl.init_rank_config(&comm, int(join.world_devices), id, int(join.first_rank + i), &config);
        if (result == ncclInProgress) result = ncclSuccess;
        mesh.comms.push_back(comm);
    }
    ncclResult_t const ended = nccl.group_end();
    if (result == ncclSuccess && ended != ncclInProgress) result = ended;
    if (used && result == ncclSuccess) return uform_status_ok_k;
    for (ncclComm_t &comm : mesh.comms)
        if (comm) nccl.abort(comm), comm = nullptr;
    mesh.comms.clear();
    if (!used) return fail(message, uform_status_device_k, "the CUDA runtime refused a device of the mesh");
    return nccl_failure(result, message);
}

/// Polls the communicators until each connected, one failed, or the deadline passed (then aborts them all).
uform_status_t await_comms(nccl_t const &nccl, backend::mesh_join_t const &join, nccl_mesh_t &mesh,
                           char const **message) noexcept {
    auto const abort_all = [&] {
        for (ncclComm_t &comm : mesh.comms)
            if (comm) nccl.abort(comm), comm = nullptr;
        mesh.comms.clear();
    };
    for (;;) {
        bool pending = false;
        for (ncclComm_t comm : mesh.comms) {
            ncclResult_t state = ncclSuccess;
            ncclResult_t const asked = nccl.get_async_error(comm, &state);
            if (asked != ncclSuccess) state = asked;
            if (state == ncclInProgress) pending = true;
            else if (state != ncclSuccess) {
                abort_all();
                return nccl_failure(state, message);
            }
        }
        if (!pending) return uform_status_ok_k;
        if (std::chrono::steady_clock::now() >= join.deadline) {
            abort_all();
            return fail(message, uform_status_timeout_k, "the mesh's GPUs did not all connect in time over NCCL");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

/// Whether NCCL's NVLS algorithms apply: several devices on this host, each with multicast, not turned off.
uform_multimem_tier_t tier_of(mesh_devices_t const &devices, backend::mesh_join_t const &join) noexcept {
    char const *enable = std::getenv("NCCL_NVLS_ENABLE");
    if (join.devices.size() < 2 || (enable && std::strcmp(enable, "0") == 0)) return uform_multimem_tier_none_k;
    for (std::size_t ordinal : join.devices)
        if (!devices.multicast(ordinal)) return uform_multimem_tier_none_k;
    return uform_multimem_tier_nvls_k;
}

/// The CUDA runtime's answer for `stream`: finished, running, or failed.
int runtime_stream_state(void *stream) noexcept {
    cudaError_t const state = cudaStreamQuery(static_cast<cudaStream_t>(stream));
    if (state == cudaSuccess) return 1;
    if (state == cudaErrorNotReady) return 0;
    (void)cudaGetLastError();
    return -1;
}

/// Aborts every communicator of `mesh`, which answers `io` to every later sum.
void abort_mesh(nccl_mesh_t &mesh) noexcept {
    for (ncclComm_t &comm : mesh.comms)
        if (comm) mesh.nccl->abort(comm), comm = nullptr;
    mesh.comms.clear();
}

/// Enqueues the group of in-place all-reduces of `values` on communicator 0.
ncclResult_t enqueue_sums(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream) noexcept {
    nccl_t const &nccl = *mesh.nccl;
    ncclResult_t result = nccl.group_start();
    if (result != ncclSuccess) return result;
    for (std::span<float> const array : values) {
        result = nccl.all_reduce(array.data(), array.data(), array.size(), ncclFloat, ncclSum, mesh.comms[0],
                                 static_cast<cudaStream_t>(stream));
        if (result != ncclSuccess && result != ncclInProgress) break;
        result = ncclSuccess;
    }
    ncclResult_t const ended = nccl.group_end();
    return result != ncclSuccess ? result : ended;
}

bool runtime_use(std::size_t ordinal) noexcept { return cudaSetDevice(device_of(ordinal)) == cudaSuccess; }

bool runtime_runs(uform_gpu_class_t gpu_class, std::size_t ordinal) noexcept {
    return backend::gpu_class_available(gpu_class, std::span<std::size_t const>(&ordinal, 1));
}

bool runtime_multicast(std::size_t ordinal) noexcept {
    using get_attribute_t = CUresult (*)(int *, CUdevice_attribute, CUdevice);
    void *entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuDeviceGetAttribute", &entry, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess || entry == nullptr)
        return false;
    int supported = 0;
    auto const get_attribute = reinterpret_cast<get_attribute_t>(entry);
    return get_attribute(&supported, CU_DEVICE_ATTRIBUTE_MULTICAST_SUPPORTED, device_of(ordinal)) == CUDA_SUCCESS &&
           supported != 0;
}

} // namespace

nccl_mesh_t::~nccl_mesh_t() noexcept {
    if (comms.empty()) return;
    bool finalized = nccl->group_start() == ncclSuccess;
    for (ncclComm *comm : comms) {
        ncclResult_t const result = nccl->finalize(comm);
        finalized = finalized && (result == ncclSuccess || result == ncclInProgress);
    }
    ncclResult_t const ended = nccl->group_end();
    finalized = finalized && (ended == ncclSuccess || ended == ncclInProgress);
    auto const deadline = std::chrono::steady_clock::now() + finalize_timeout_k;
    for (ncclComm *comm : comms) {
        ncclResult_t state = ncclInProgress;
        while (finalized && nccl->get_async_error(comm, &state) == ncclSuccess && state == ncclInProgress &&
               std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        finalized = finalized && state == ncclSuccess;
    }
    for (ncclComm *comm : comms) finalized ? nccl->destroy(comm) : nccl->abort(comm);
}

uform_status_t mesh_identity_with(nccl_t const *nccl, unsigned char (&identity)[backend::mesh_identity_bytes_k],
                                  char const **message) noexcept {
    if (!nccl)
        return fail(message, uform_status_unsupported_k, "a VRAM mesh needs NCCL (libnccl.so.2), which did not load");
    ncclUniqueId id;
    if (ncclResult_t const result = nccl->get_unique_id(&id); result != ncclSuccess)
        return nccl_failure(result, message);
    std::memcpy(identity, &id, sizeof(id));
    return uform_status_ok_k;
}

uform_status_t mesh_join_with(nccl_t const *nccl, mesh_devices_t const &devices, backend::mesh_join_t const &join,
                              std::unique_ptr<nccl_mesh_t> &mesh, uform_multimem_tier_t &tier,
                              char const **message) noexcept {
    mesh.reset();
    tier = uform_multimem_tier_none_k;
    if (!nccl)
        return fail(message, uform_status_unsupported_k, "a VRAM mesh needs NCCL (libnccl.so.2), which did not load");
    if (uform_status_t status = check_join(devices, join, message)) return status;
    auto made = std::unique_ptr<nccl_mesh_t>(new (std::nothrow) nccl_mesh_t);
    if (!made) return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    made->nccl = nccl;
    try {
        made->comms.reserve(join.devices.size());
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory joining the mesh");
    }
    if (uform_status_t status = start_comms(*nccl, devices, join, *made, message)) return status;
    if (uform_status_t status = await_comms(*nccl, join, *made, message)) return status;
    tier = tier_of(devices, join);
    mesh = std::move(made);
    return uform_status_ok_k;
}

uform_status_t mesh_identity(unsigned char (&identity)[backend::mesh_identity_bytes_k], char const **message) noexcept {
    return mesh_identity_with(nccl(), identity, message);
}

uform_status_t mesh_enqueue(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream,
                            char const **message) noexcept {
    if (mesh.comms.empty())
        return fail(message, uform_status_io_k, "the mesh's NCCL communicators were aborted by an earlier failure");
    if (values.empty()) return uform_status_ok_k;
    ncclResult_t const enqueued = enqueue_sums(mesh, values, stream);
    if (enqueued != ncclSuccess && enqueued != ncclInProgress) {
        abort_mesh(mesh);
        return nccl_failure(enqueued, message);
    }
    return uform_status_ok_k;
}

uform_status_t mesh_sum_with(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream,
                             stream_state_t stream_state, std::chrono::steady_clock::time_point deadline,
                             char const **message) noexcept {
    if (uform_status_t status = mesh_enqueue(mesh, values, stream, message)) return status;
    for (;;) {
        ncclResult_t state = ncclSuccess;
        ncclResult_t const asked = mesh.nccl->get_async_error(mesh.comms[0], &state);
        if (asked != ncclSuccess) state = asked;
        if (state != ncclSuccess && state != ncclInProgress) {
            abort_mesh(mesh);
            return nccl_failure(state, message);
        }
        int const finished = state == ncclSuccess ? stream_state(stream) : 0;
        if (finished > 0) return uform_status_ok_k;
        if (finished < 0) {
            abort_mesh(mesh);
            return fail(message, uform_status_device_k, "the device failed summing over the mesh");
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            abort_mesh(mesh);
            return fail(message, uform_status_timeout_k, "a peer of the mesh did not sum in time over NCCL");
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
}

uform_status_t mesh_sum(nccl_mesh_t &mesh, std::span<std::span<float> const> values, void *stream,
                        std::chrono::milliseconds timeout, char const **message) noexcept {
    return mesh_sum_with(mesh, values, stream, &runtime_stream_state, std::chrono::steady_clock::now() + timeout,
                         message);
}

bool nccl_available() noexcept { return nccl() != nullptr; }

uform_status_t mesh_join(backend::mesh_join_t const &join, std::unique_ptr<nccl_mesh_t> &mesh,
                         uform_multimem_tier_t &tier, char const **message) noexcept {
    static mesh_devices_t const devices{&runtime_use, &runtime_runs, &runtime_multicast};
    int previous = -1;
    bool const saved = cudaGetDevice(&previous) == cudaSuccess;
    uform_status_t const status = mesh_join_with(nccl(), devices, join, mesh, tier, message);
    if (saved) cudaSetDevice(previous);
    return status;
}

} // namespace uform::cuda

#else // a toolkit without nccl.h: the mesh says so

namespace uform::cuda {

uform_status_t mesh_enqueue(nccl_mesh_t &, std::span<std::span<float> const>, void *, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "a VRAM mesh sums over NCCL: this build was made without nccl.h");
}

uform_status_t mesh_sum(nccl_mesh_t &, std::span<std::span<float> const>, void *, std::chrono::milliseconds,
                        char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "a VRAM mesh sums over NCCL: this build was made without nccl.h");
}

bool nccl_available() noexcept { return false; }

nccl_mesh_t::~nccl_mesh_t() noexcept {}

uform_status_t mesh_identity(unsigned char (&)[backend::mesh_identity_bytes_k], char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "a VRAM mesh needs NCCL: this build was made without nccl.h");
}

uform_status_t mesh_join(backend::mesh_join_t const &, std::unique_ptr<nccl_mesh_t> &mesh, uform_multimem_tier_t &tier,
                         char const **message) noexcept {
    mesh.reset();
    tier = uform_multimem_tier_none_k;
    return fail(message, uform_status_unsupported_k, "a VRAM mesh needs NCCL: this build was made without nccl.h");
}

} // namespace uform::cuda
#endif

namespace uform::cuda {

bool device_uuid(std::size_t ordinal, unsigned char (&uuid)[16]) noexcept {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, device_of(ordinal)) != cudaSuccess) {
        (void)cudaGetLastError();
        return false;
    }
    static_assert(sizeof(properties.uuid.bytes) == sizeof(uuid));
    std::memcpy(uuid, properties.uuid.bytes, sizeof(uuid));
    return true;
}

} // namespace uform::cuda
