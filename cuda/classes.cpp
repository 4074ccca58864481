// The NVIDIA residency's devices: those of compute capability 8.0 and newer (Ampere on), their classes by compute
// capability, and the build's flavor.
#include "common/backend.hpp"
#include "cuda/device.hpp"

namespace uform::cuda {
namespace {

/// The class of a compute capability: 8.0-8.7 Ampere, 8.9 Ada, 9.x Hopper, 10.x-12.x Blackwell.
uform_gpu_class_t class_of(int major, int minor) noexcept {
    if (major == 8) return minor == 9 ? uform_gpu_class_nvidia_ada_k : uform_gpu_class_nvidia_ampere_k;
    if (major == 9) return uform_gpu_class_nvidia_hopper_k;
    return uform_gpu_class_nvidia_blackwell_k;
}

} // namespace

bool device_driven(int device) noexcept {
    int major = 0;
    return cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess && major >= 8;
}

uform_gpu_class_t class_of_device(int device) noexcept {
    int major = 0, minor = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
        (void)cudaGetLastError();
        return uform_gpu_class_auto_k;
    }
    return major >= 8 ? class_of(major, minor) : uform_gpu_class_auto_k;
}

} // namespace uform::cuda

namespace uform::backend {

char const *flavor() noexcept { return "ram,cuda"; }

} // namespace uform::backend
