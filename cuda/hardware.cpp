// The GPU residencies' half of common/backend.hpp's hardware: the GPUs the process drives (those the vendor's file
// says, cuda/classes.cpp or rocm/classes.cpp), their classes, executors' streams, and VRAM arenas' memory. Without a
// driver or a device, every count is zero, and `c/` answers `unsupported` for every VRAM request before it reaches
// this file.
#include <cstring>
#include <new>
#include <utility>

#include "common/backend.hpp"
#include "common/fail.hpp"
#include "cuda/device.hpp"
#include "cuda/kernels.hpp"

namespace uform::cuda {
namespace {

/// The CUDA ordinals of the devices the process drives, probed once.
struct devices_t {
    std::vector<int> ordinals;

    devices_t() noexcept {
        int count = 0;
        if (cudaGetDeviceCount(&count) != cudaSuccess) {
            (void)cudaGetLastError(); // no driver or no device: nothing to drive
            return;
        }
        try {
            for (int device = 0; device != count; ++device)
                if (device_driven(device)) ordinals.push_back(device);
        } catch (...) {
            ordinals.clear();
        }
    }
};

devices_t const &devices() noexcept {
    static devices_t const probed;
    return probed;
}

} // namespace

int device_of(std::size_t ordinal) noexcept { return devices().ordinals[ordinal]; }

device_guard_t::device_guard_t(int device) noexcept {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    ok_ = cudaSetDevice(device) == cudaSuccess;
    if (!ok_) (void)cudaGetLastError();
}

device_guard_t::~device_guard_t() noexcept {
    if (previous_ >= 0) (void)cudaSetDevice(previous_);
}

bool device_buffer_t::reserve(std::size_t bytes) noexcept {
    if (bytes <= size) return true;
    release();
    if (cudaMalloc(&data, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        data = nullptr;
        return false;
    }
    size = bytes;
    return true;
}

void device_buffer_t::release() noexcept {
    if (data != nullptr) (void)cudaFree(data);
    data = nullptr;
    size = 0;
}

bool pinned_buffer_t::reserve(std::size_t bytes) noexcept {
    if (bytes <= size) return true;
    release();
    if (cudaMallocHost(&data, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        data = nullptr;
        return false;
    }
    size = bytes;
    return true;
}

void pinned_buffer_t::release() noexcept {
    if (data != nullptr) (void)cudaFreeHost(data);
    data = nullptr;
    size = 0;
}

uform_status_t stream_t::open(std::size_t gpu, std::size_t scratch, std::size_t pinned, char const **message) noexcept {
    ordinal = gpu;
    device = device_of(gpu);
    device_guard_t const guard(device);
    if (!guard.ok()) return fail(message, uform_status_not_found_k, "the GPU runtime refused to select the device");
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        (void)cudaGetLastError();
        stream = nullptr;
        return fail(message, uform_status_out_of_memory_k, "the GPU runtime refused to make a stream");
    }
    if (uform_status_t status = blas_open(*this, message)) {
        close();
        return status;
    }
    if (!workspace.reserve(workspace_bytes_k) || (scratch != 0 && !activations.reserve(scratch)) ||
        (pinned != 0 && !staging.reserve(pinned))) {
        close();
        return fail(message, uform_status_out_of_memory_k, "out of device or pinned memory for the executor");
    }
    return uform_status_ok_k;
}

void stream_t::close() noexcept {
    if (stream == nullptr) return; // blas_open runs once the stream is made
    device_guard_t const guard(device);
    (void)cudaStreamSynchronize(stream);
    workspace.release();
    activations.release();
    staging.release();
    blas_close(*this);
    (void)cudaStreamDestroy(stream);
    stream = nullptr;
}

} // namespace uform::cuda

namespace uform::backend {

std::size_t gpu_count() noexcept { return cuda::devices().ordinals.size(); }

void gpu_describe(std::size_t ordinal, uform_gpu_device_t &device) noexcept {
    device = uform_gpu_device_t{};
    int const cuda_device = cuda::device_of(ordinal);
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, cuda_device) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    std::strncpy(device.name, properties.name, sizeof(device.name) - 1);
    device.gpu_class = cuda::class_of_device(cuda_device);
    device.memory_bytes = properties.totalGlobalMem;
    device.multiprocessors = std::size_t(properties.multiProcessorCount);
    if (cudaDeviceGetPCIBusId(device.pci_bus_id, int(sizeof(device.pci_bus_id)), cuda_device) != cudaSuccess)
        (void)cudaGetLastError();
}

bool gpu_class_available(uform_gpu_class_t gpu_class, std::span<std::size_t const> devices) noexcept {
    for (std::size_t ordinal : devices) {
        int const device = cuda::device_of(ordinal);
        if (cuda::class_of_device(device) != gpu_class || !cuda::kernels_run_on(device)) return false;
    }
    return !devices.empty();
}

uform_status_t vram_open(std::span<std::size_t const> devices, std::span<std::size_t const> scratch_bytes,
                         std::size_t pinned_bytes, void *&state, char const **message) noexcept {
    state = nullptr;
    auto *streams = new (std::nothrow) cuda::streams_t;
    if (streams == nullptr) return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    try {
        streams->devices = std::vector<cuda::stream_t>(devices.size());
    } catch (...) {
        delete streams;
        return fail(message, uform_status_out_of_memory_k, "out of memory making an executor");
    }
    for (std::size_t i = 0; i != devices.size(); ++i)
        if (uform_status_t status = streams->devices[i].open(devices[i], scratch_bytes.empty() ? 0 : scratch_bytes[i],
                                                             pinned_bytes, message)) {
            delete streams;
            return status;
        }
    state = streams;
    return uform_status_ok_k;
}

void vram_close(void *state) noexcept { delete static_cast<cuda::streams_t *>(state); }

void *vram_allocate(std::size_t device, std::size_t bytes) noexcept {
    void *pointer = nullptr;
    cuda::device_guard_t const guard(cuda::device_of(device));
    if (!guard.ok() || cudaMalloc(&pointer, bytes) != cudaSuccess) {
        (void)cudaGetLastError();
        return nullptr;
    }
    return pointer;
}

void vram_free(std::size_t device, void *pointer, std::size_t) noexcept {
    if (pointer == nullptr) return;
    cuda::device_guard_t const guard(cuda::device_of(device));
    (void)cudaFree(pointer);
}

} // namespace uform::backend
