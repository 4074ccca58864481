// The GPU residencies' host-side pieces shared by their files: the devices the process drives, memory grown to a
// high-water mark (device and pinned host), and one device's stream with its product library's handle and scratch,
// which a VRAM executor holds per device (`streams_t`, what `call_t::device_state` answers) and a model holds for calls
// without an executor. Written in CUDA's names (cuda/portable.hpp carries them onto HIP); each vendor says which
// devices it drives and their classes (cuda/classes.cpp, rocm/classes.cpp) and opens its products (cuda/blas.cpp,
// rocm/classes.cpp).
#pragma once

#include <cstddef>
#include <vector>

#if !defined(UFORM_HIP)
#include <cublasLt.h>
#endif

#include "cuda/portable.hpp"

#include <uform/types.h>

namespace uform::cuda {

/// Bytes of cuBLASLt's workspace per stream.
inline constexpr std::size_t workspace_bytes_k = std::size_t(32) << 20;

/// The runtime's ordinal of the process's GPU `ordinal` (below `backend::gpu_count()`): devices the residency does
/// not drive (`device_driven`) are left out of the ordinals `c/` uses.
int device_of(std::size_t ordinal) noexcept;

/// Whether the residency drives runtime device `device`: one a GPU class names (NVIDIA Ampere and newer; AMD gfx90a
/// and gfx942).
bool device_driven(int device) noexcept;

/// The class of runtime device `device`; `uform_gpu_class_auto_k` when the runtime cannot say or no class names it.
uform_gpu_class_t class_of_device(int device) noexcept;

/// Makes CUDA device `device` current on the calling thread for the guard's life, then restores the thread's own: a
/// blocking call runs on the caller's thread, whose current device belongs to the caller. `ok()` says whether the
/// runtime accepted the device.
class device_guard_t {
  public:
    explicit device_guard_t(int device) noexcept;
    ~device_guard_t() noexcept;
    device_guard_t(device_guard_t const &) = delete;
    device_guard_t &operator=(device_guard_t const &) = delete;
    bool ok() const noexcept { return ok_; }

  private:
    int previous_ = -1;
    bool ok_ = false;
};

/// Device memory on the current device, grown to a high-water mark (contents discarded when it grows).
struct device_buffer_t {
    void *data = nullptr;
    std::size_t size = 0;

    device_buffer_t() noexcept = default;
    device_buffer_t(device_buffer_t const &) = delete;
    device_buffer_t &operator=(device_buffer_t const &) = delete;
    ~device_buffer_t() noexcept { release(); }

    /// Ensures `bytes`; false when the device ran out. Runs on the device the buffer lives on.
    bool reserve(std::size_t bytes) noexcept;
    void release() noexcept;
};

/// Pinned host memory, grown to a high-water mark.
struct pinned_buffer_t {
    void *data = nullptr;
    std::size_t size = 0;

    pinned_buffer_t() noexcept = default;
    pinned_buffer_t(pinned_buffer_t const &) = delete;
    pinned_buffer_t &operator=(pinned_buffer_t const &) = delete;
    ~pinned_buffer_t() noexcept { release(); }

    bool reserve(std::size_t bytes) noexcept;
    void release() noexcept;
};

/// One device's stream, cuBLASLt handle (NVIDIA) and workspace, activation scratch and pinned staging.
struct stream_t {
    std::size_t ordinal = 0; // the process's GPU ordinal
    int device = 0;          // its CUDA ordinal
    cudaStream_t stream = nullptr;
#if !defined(UFORM_HIP)
    cublasLtHandle_t blas = nullptr;
#endif
    device_buffer_t workspace, activations;
    pinned_buffer_t staging;

    stream_t() noexcept = default;
    stream_t(stream_t const &) = delete;
    stream_t &operator=(stream_t const &) = delete;
    ~stream_t() noexcept { close(); }

    /// Opens the stream on GPU `ordinal` with `scratch` activation bytes and `pinned` staging bytes reserved up
    /// front (zero: grown on demand). Answers `not-found`, `out-of-memory` or `internal` with a message.
    uform_status_t open(std::size_t ordinal, std::size_t scratch, std::size_t pinned, char const **message) noexcept;
    /// Waits for the stream's work and frees everything; safe on a stream never opened.
    void close() noexcept;
};

/// Readies `stream`'s matrix products once its stream is made: cuBLASLt's handle on NVIDIA (`unsupported` naming the
/// library when it does not load, `internal` when it refuses the device); nothing on AMD, whose products are the
/// residency's own kernel (rocm/products.cu).
uform_status_t blas_open(stream_t &stream, char const **message) noexcept;

/// Releases what `blas_open` readied; safe when it readied nothing.
void blas_close(stream_t &stream) noexcept;

/// A VRAM executor's device side: one stream per device, in the executor's order.
struct streams_t {
    std::vector<stream_t> devices;
};

} // namespace uform::cuda
