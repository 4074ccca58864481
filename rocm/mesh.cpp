// The AMD residency's half of the VRAM mesh (cuda/mesh.hpp): no NCCL transport. NCCL's AMD counterpart, RCCL, is not
// loaded, so NCCL reports absent (a mesh's hosts then stage their sums through host memory over Gloo, as a CUDA build
// without NCCL does), and a join or sum over NCCL answers `unsupported` saying so. The devices' UUIDs come from HIP.
#include <chrono>
#include <cstring>
#include <memory>
#include <span>

#include "common/fail.hpp"
#include "cuda/device.hpp"
#include "cuda/mesh.hpp"

namespace uform::cuda {
namespace {

constexpr char const *unbuilt_k = "NCCL's transport over AMD GPUs needs RCCL, which this build does not load";

} // namespace

nccl_mesh_t::~nccl_mesh_t() noexcept {}

bool nccl_available() noexcept { return false; }

uform_status_t mesh_identity(unsigned char (&)[backend::mesh_identity_bytes_k], char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, unbuilt_k);
}

uform_status_t mesh_join(backend::mesh_join_t const &, std::unique_ptr<nccl_mesh_t> &mesh, uform_multimem_tier_t &tier,
                         char const **message) noexcept {
    mesh.reset();
    tier = uform_multimem_tier_none_k;
    return fail(message, uform_status_unsupported_k, unbuilt_k);
}

uform_status_t mesh_enqueue(nccl_mesh_t &, std::span<std::span<float> const>, void *, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, unbuilt_k);
}

uform_status_t mesh_sum(nccl_mesh_t &, std::span<std::span<float> const>, void *, std::chrono::milliseconds,
                        char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, unbuilt_k);
}

bool device_uuid(std::size_t ordinal, unsigned char (&uuid)[16]) noexcept {
    hipDevice_t device = 0;
    hipUUID identity{};
    if (hipDeviceGet(&device, device_of(ordinal)) != hipSuccess || hipDeviceGetUuid(&identity, device) != hipSuccess) {
        (void)hipGetLastError();
        return false;
    }
    static_assert(sizeof(identity.bytes) == sizeof(uuid));
    std::memcpy(uuid, identity.bytes, sizeof(uuid));
    return true;
}

} // namespace uform::cuda
