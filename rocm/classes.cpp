// The AMD residency's devices: those whose architecture a GPU class names (gfx90a, gfx942), their classes, the build's
// flavor, and the products' set-up, which is nothing: the products are the residency's own kernel (rocm/products.cu,
// docs/decisions.md).
#include "rocm/classes.hpp"

#include <cstring>

#include "common/backend.hpp"
#include "cuda/device.hpp"

namespace uform::rocm {

uform_gpu_class_t class_of_architecture(char const *name) noexcept {
    if (name == nullptr) return uform_gpu_class_auto_k;
    // The processor's name ends at the first target feature.
    std::size_t const length = std::strcspn(name, ":");
    auto const is = [&](char const *processor) {
        return length == std::strlen(processor) && std::strncmp(name, processor, length) == 0;
    };
    if (is("gfx90a")) return uform_gpu_class_amd_cdna2_k;
    if (is("gfx942")) return uform_gpu_class_amd_cdna3_k;
    return uform_gpu_class_auto_k;
}

} // namespace uform::rocm

namespace uform::cuda {

uform_gpu_class_t class_of_device(int device) noexcept {
    hipDeviceProp_t properties{};
    if (hipGetDeviceProperties(&properties, device) != hipSuccess) {
        (void)hipGetLastError();
        return uform_gpu_class_auto_k;
    }
    return rocm::class_of_architecture(properties.gcnArchName);
}

bool device_driven(int device) noexcept { return class_of_device(device) != uform_gpu_class_auto_k; }

uform_status_t blas_open(stream_t &, char const **) noexcept { return uform_status_ok_k; }

void blas_close(stream_t &) noexcept {}

} // namespace uform::cuda

namespace uform::backend {

char const *flavor() noexcept { return "ram,rocm"; }

} // namespace uform::backend
