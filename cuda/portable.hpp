// The GPU sources' dialect on either vendor: cuda/ is written once, in CUDA's names, and this header carries them onto
// HIP when the AMD residency builds it (UFORM_HIP, set by cmake/UformRocm.cmake). Host side: the runtime API's
// types, constants and calls the sources use, each CUDA name defined as HIP's (HIP keeps its own names, so nothing
// clashes). Device side (a kernel file, under nvcc or Clang's HIP): the warp's width (32 lanes on NVIDIA, a
// wavefront of 64 on AMD's CDNA), a butterfly shuffle over all of it, barriers for the warp's and the block's
// shared-memory exchanges, and BF16 rounding to nearest even (NVIDIA's intrinsic; the same bits by integer arithmetic
// on AMD).
#pragma once

#if defined(UFORM_HIP)

#include <hip/hip_runtime_api.h>

#define cudaDevAttrComputeCapabilityMajor hipDeviceAttributeComputeCapabilityMajor
#define cudaDevAttrComputeCapabilityMinor hipDeviceAttributeComputeCapabilityMinor
#define cudaDeviceGetAttribute hipDeviceGetAttribute
#define cudaDeviceGetPCIBusId hipDeviceGetPCIBusId
#define cudaDeviceProp hipDeviceProp_t
#define cudaError_t hipError_t
#define cudaErrorNotReady hipErrorNotReady
#define cudaEventCreateWithFlags hipEventCreateWithFlags
#define cudaEventDestroy hipEventDestroy
#define cudaEventDisableTiming hipEventDisableTiming
#define cudaEventRecord hipEventRecord
#define cudaEvent_t hipEvent_t
#define cudaFree hipFree
#define cudaFreeHost hipHostFree
#define cudaFuncAttributes hipFuncAttributes
#define cudaGetDevice hipGetDevice
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaGetLastError hipGetLastError
#define cudaMalloc hipMalloc
#define cudaMallocHost hipHostMalloc
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyDefault hipMemcpyDefault
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyHostToDevice hipMemcpyHostToDevice
#define cudaMemcpyKind hipMemcpyKind
#define cudaMemsetAsync hipMemsetAsync
#define cudaSetDevice hipSetDevice
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamDestroy hipStreamDestroy
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamQuery hipStreamQuery
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamWaitEvent hipStreamWaitEvent
#define cudaStream_t hipStream_t
#define cudaSuccess hipSuccess

/// `cudaFuncGetAttributes` of a kernel: HIP takes the kernel's address as `void const *`.
template <typename kernel_type_>
inline hipError_t uform_hip_function_attributes(hipFuncAttributes *attributes, kernel_type_ *kernel) noexcept {
    return hipFuncGetAttributes(attributes, reinterpret_cast<void const *>(kernel));
}
#define cudaFuncGetAttributes uform_hip_function_attributes

#else

#include <cuda_runtime_api.h>

#endif

#if defined(__CUDACC__) || defined(__HIP__)

#include <cstdint>

#if defined(UFORM_HIP)
#include <hip/hip_runtime.h>
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_NAN_F __builtin_nanf("")
#else
#include <cuda_bf16.h>
#include <math_constants.h>
#endif

namespace uform::cuda {

#if defined(UFORM_HIP)

/// Lanes that run in lockstep: a CDNA wavefront (gfx90a, gfx942).
inline constexpr unsigned warp_k = 64;

/// `value` (F32 or F64) of the lane whose index differs from this one's in the bits of `mask`, over the whole
/// wavefront.
template <typename value_type_>
__device__ inline value_type_ shuffle_xor(value_type_ value, unsigned mask) {
    return __shfl_xor(value, int(mask), int(warp_k));
}

/// Orders the wavefront's shared-memory writes before its lanes' later reads (its lanes already run together).
__device__ inline void warp_sync() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
    __builtin_amdgcn_wave_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}

/// A barrier of the block's threads that orders their shared-memory writes before their later reads (the fences and
/// barrier HIP's `__syncthreads` makes in newer releases; the older headers call an OpenCL built-in that the device
/// libraries paired with gfx942 no longer define outside opencl.bc, which HIP does not link).
__device__ inline void block_sync() {
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/// The BF16 bits nearest to `value` (ties to even; NaN stays a quiet NaN of the same sign).
__device__ inline std::uint16_t bf16_bits(float value) {
    std::uint32_t const bits = __float_as_uint(value);
    if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return std::uint16_t((bits >> 16) | 0x40u);
    return std::uint16_t((bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16);
}

/// `value` rounded to BF16 and back to F32.
__device__ inline float round_bf16(float value) { return __uint_as_float(std::uint32_t(bf16_bits(value)) << 16); }

#else

/// Lanes that run in lockstep: an NVIDIA warp.
inline constexpr unsigned warp_k = 32;

/// `value` (F32 or F64) of the lane whose index differs from this one's in the bits of `mask`, over the whole warp.
template <typename value_type_>
__device__ inline value_type_ shuffle_xor(value_type_ value, unsigned mask) {
    return __shfl_xor_sync(0xFFFFFFFFu, value, mask);
}

/// Orders the warp's shared-memory writes before its lanes' later reads, and reconverges it.
__device__ inline void warp_sync() { __syncwarp(); }

/// A barrier of the block's threads that orders their shared-memory writes before their later reads.
__device__ inline void block_sync() { __syncthreads(); }

/// The BF16 bits nearest to `value` (ties to even; NaN stays NaN).
__device__ inline std::uint16_t bf16_bits(float value) {
    __nv_bfloat16 const rounded = __float2bfloat16_rn(value);
    return *reinterpret_cast<std::uint16_t const *>(&rounded);
}

/// `value` rounded to BF16 and back to F32.
__device__ inline float round_bf16(float value) { return __bfloat162float(__float2bfloat16_rn(value)); }

#endif

} // namespace uform::cuda

#endif
