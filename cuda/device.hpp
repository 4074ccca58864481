// The CUDA residency's host-side pieces shared by its files: the devices the process drives, memory grown to a
// high-water mark (device and pinned host), and one device's stream with its cuBLASLt handle and scratch, which a
// VRAM executor holds per device (`streams_t`, what `call_t::device_state` answers) and a model holds for calls
// without an executor.
#pragma once

#include <cstddef>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <uform/types.h>

namespace uform::cuda {

/// Bytes of cuBLASLt's workspace per stream.
inline constexpr std::size_t workspace_bytes_k = std::size_t(32) << 20;

/// The CUDA ordinal of the process's GPU `ordinal` (below `backend::gpu_count()`): devices older than Ampere, which
/// no GPU class names, are left out of the ordinals `c/` uses.
int device_of(std::size_t ordinal) noexcept;

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

/// One device's stream, cuBLASLt handle and workspace, activation scratch and pinned staging.
struct stream_t {
    std::size_t ordinal = 0; // the process's GPU ordinal
    int device = 0;          // its CUDA ordinal
    cudaStream_t stream = nullptr;
    cublasLtHandle_t blas = nullptr;
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

/// A VRAM executor's device side: one stream per device, in the executor's order.
struct streams_t {
    std::vector<stream_t> devices;
};

} // namespace uform::cuda
