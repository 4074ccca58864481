// The ceiling of the path a CPU class's products take, for the benchmarks' reports. BF16 products: AMX tiles
// (`tdpbf16ps`) on the Sapphire Rapids class where the OS grants the tile state, `vdpbf16ps` pairs on Genoa and Turin,
// the F32 FMA on the other x86 classes (AVX-512 from Skylake on, AVX2 on Haswell). Int8 products (`Scalar::I8`
// models): AMX INT8 tiles (`tdpbssd`) where granted, AVX-512 VNNI's `vpdpbusd` on Ice Lake, Sapphire Rapids, Genoa and
// Turin. None is measured elsewhere. Each is a loop of independent chains of its instruction on every thread, its
// GFLOP/s (GOP/s for int8: a multiply and an add each) over each thread's CPU time, summed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif
#endif

#include <uform/types.h>

#include "tools/bench/report.hpp"

namespace uform::bench {

/// The instruction a class's BF16 products run on.
enum class product_path_t { amx_tiles, bf16_pairs, f32_fma_avx512, f32_fma_avx2, amx_int8, i8_vnni, unmeasured };

/// The path's name in reports.
inline char const *product_path_name(product_path_t path) {
    switch (path) {
    case product_path_t::amx_tiles: return "amx-tiles";
    case product_path_t::bf16_pairs: return "vdpbf16ps";
    case product_path_t::f32_fma_avx512: return "f32-fma-avx512";
    case product_path_t::f32_fma_avx2: return "f32-fma-avx2";
    case product_path_t::amx_int8: return "amx-int8";
    case product_path_t::i8_vnni: return "vpdpbusd";
    default: return "unmeasured";
    }
}

/// Whether the CPU has AMX BF16 and INT8 tiles and the OS grants this process their state (Linux's
/// ARCH_REQ_XCOMP_PERM), as the library asks before it uses them.
inline bool amx_tiles_granted() {
#if defined(__x86_64__) && defined(__linux__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
    bool const tiles = (d >> 24) & 1u, bf16 = (d >> 22) & 1u, int8 = (d >> 25) & 1u;
    constexpr long request_permission = 0x1023, tile_data = 18; // ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA
    return tiles && bf16 && int8 && syscall(SYS_arch_prctl, request_permission, tile_data) == 0;
#else
    return false;
#endif
}

/// The path the products of `cpu_class` (a resolved class) take on this machine.
inline product_path_t product_path(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case uform_cpu_class_intel_sapphire_rapids_k:
        return amx_tiles_granted() ? product_path_t::amx_tiles : product_path_t::f32_fma_avx512;
    case uform_cpu_class_amd_genoa_k:
    case uform_cpu_class_amd_turin_k: return product_path_t::bf16_pairs;
    case uform_cpu_class_intel_skylake_k:
    case uform_cpu_class_intel_icelake_k: return product_path_t::f32_fma_avx512;
    case uform_cpu_class_intel_haswell_k: return product_path_t::f32_fma_avx2;
    default: return product_path_t::unmeasured;
    }
}

/// The path the int8 products of `cpu_class` (a resolved class) take on this machine.
inline product_path_t int8_path(uform_cpu_class_t cpu_class) {
    switch (cpu_class) {
    case uform_cpu_class_intel_sapphire_rapids_k:
        return amx_tiles_granted() ? product_path_t::amx_int8 : product_path_t::i8_vnni;
    case uform_cpu_class_intel_icelake_k:
    case uform_cpu_class_amd_genoa_k:
    case uform_cpu_class_amd_turin_k: return product_path_t::i8_vnni;
    default: return product_path_t::unmeasured;
    }
}

#if defined(__x86_64__)
/// GOP/s of four independent `tdpbssd` accumulators (16 x 16 results of 64 byte products: 32,768 operations each).
__attribute__((target("amx-tile,amx-int8"))) inline double amx_int8_peak_thread(std::size_t iterations) {
    alignas(64) std::uint8_t config[64] = {1};
    for (int t = 0; t != 8; ++t) config[16 + 2 * t] = 64, config[48 + t] = 16;
    alignas(64) std::int8_t values[1024];
    for (std::int8_t &value : values) value = 1; // sums stay far from wrapping around
    _tile_loadconfig(config);
    _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3);
    _tile_loadd(4, values, 64), _tile_loadd(5, values, 64), _tile_loadd(6, values, 64), _tile_loadd(7, values, 64);
    double const start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        _tile_dpbssd(0, 4, 6), _tile_dpbssd(1, 4, 7);
        _tile_dpbssd(2, 5, 6), _tile_dpbssd(3, 5, 7);
    }
    double const seconds = thread_cpu_now() - start;
    _tile_release();
    return double(iterations) * 4 * 32768 / seconds * 1e-9;
}

/// GOP/s of 24 independent chains of `vpdpbusd` (16 lanes, 4 byte products a lane: 128 operations each).
__attribute__((target("avx512f,avx512vnni"))) inline double vnni_peak_thread(std::size_t iterations) {
    __m512i chains[24];
    for (int i = 0; i != 24; ++i) chains[i] = _mm512_set1_epi32(i);
    __m512i const a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(-2);
    double const start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        for (int j = 0; j != 24; ++j) chains[j] = _mm512_dpbusd_epi32(chains[j], a, b);
        __asm__ volatile("" : "+v"(chains[0]), "+v"(chains[6]), "+v"(chains[12]), "+v"(chains[18]));
    }
    double const seconds = thread_cpu_now() - start;
    int sink = 0;
    for (__m512i const &chain : chains) sink += _mm512_reduce_add_epi32(chain);
    __asm__ volatile("" : : "r"(sink));
    return double(iterations) * 24 * 128 / seconds * 1e-9;
}

/// GFLOP/s of four independent `tdpbf16ps` accumulators (16 x 16 results of 16 pairs: 16,384 flops each).
__attribute__((target("amx-tile,amx-bf16"))) inline double amx_peak_thread(std::size_t iterations) {
    alignas(64) std::uint8_t config[64] = {1};
    for (int t = 0; t != 8; ++t) config[16 + 2 * t] = 64, config[48 + t] = 16;
    alignas(64) std::uint16_t values[512];
    for (std::uint16_t &value : values) value = 0x3A80; // 2^-10: sums stay finite
    _tile_loadconfig(config);
    _tile_zero(0), _tile_zero(1), _tile_zero(2), _tile_zero(3);
    _tile_loadd(4, values, 64), _tile_loadd(5, values, 64), _tile_loadd(6, values, 64), _tile_loadd(7, values, 64);
    double const start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        _tile_dpbf16ps(0, 4, 6), _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6), _tile_dpbf16ps(3, 5, 7);
    }
    double const seconds = thread_cpu_now() - start;
    _tile_release();
    return double(iterations) * 4 * 16384 / seconds * 1e-9;
}

/// GFLOP/s of 24 independent chains of `vdpbf16ps` (16 lanes, 2 pairs a lane: 64 flops each).
__attribute__((target("avx512f,avx512bf16"))) inline double pairs_peak_thread(std::size_t iterations) {
    __m512 chains[24];
    for (int i = 0; i != 24; ++i) chains[i] = _mm512_set1_ps(0.001f * float(i));
    __m512bh const a = (__m512bh)_mm512_set1_epi32(0x3F7F3F7F), b = (__m512bh)_mm512_set1_epi32(0x38003800);
    double const start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        for (int j = 0; j != 24; ++j) chains[j] = _mm512_dpbf16_ps(chains[j], a, b);
        __asm__ volatile("" : "+v"(chains[0]), "+v"(chains[6]), "+v"(chains[12]), "+v"(chains[18]));
    }
    double const seconds = thread_cpu_now() - start;
    float sink = 0;
    for (__m512 const &chain : chains) sink += _mm512_reduce_add_ps(chain);
    __asm__ volatile("" : : "x"(sink));
    return double(iterations) * 24 * 64 / seconds * 1e-9;
}

/// GFLOP/s of 12 independent chains of 16-lane F32 FMAs (AVX-512).
__attribute__((target("avx512f"))) inline double avx512_peak_thread(std::size_t iterations) {
    __m512 chains[12];
    for (int i = 0; i != 12; ++i) chains[i] = _mm512_set1_ps(0.001f * float(i));
    __m512 const b = _mm512_set1_ps(0.9999f), c = _mm512_set1_ps(1e-5f);
    double const start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        for (int j = 0; j != 12; ++j) chains[j] = _mm512_fmadd_ps(chains[j], b, c);
        __asm__ volatile("" : "+v"(chains[0]), "+v"(chains[4]), "+v"(chains[8]));
    }
    double const seconds = thread_cpu_now() - start;
    float sink = 0;
    for (__m512 const &chain : chains) sink += _mm512_reduce_add_ps(chain);
    __asm__ volatile("" : : "x"(sink));
    return double(iterations) * 12 * 16 * 2 / seconds * 1e-9;
}

/// GFLOP/s of 12 independent chains of 8-lane F32 FMAs (AVX2).
__attribute__((target("avx2,fma"))) inline double avx2_peak_thread(std::size_t iterations) {
    __m256 chains[12];
    for (int i = 0; i != 12; ++i) chains[i] = _mm256_set1_ps(0.001f * float(i));
    __m256 const b = _mm256_set1_ps(0.9999f), c = _mm256_set1_ps(1e-5f);
    double const start = thread_cpu_now();
    for (std::size_t i = 0; i != iterations; ++i) {
        for (int j = 0; j != 12; ++j) chains[j] = _mm256_fmadd_ps(chains[j], b, c);
        __asm__ volatile("" : "+x"(chains[0]), "+x"(chains[4]), "+x"(chains[8]));
    }
    double const seconds = thread_cpu_now() - start;
    float sink = 0;
    for (__m256 const &chain : chains) sink += chain[0];
    __asm__ volatile("" : : "x"(sink));
    return double(iterations) * 12 * 8 * 2 / seconds * 1e-9;
}
#endif

/// One thread's GFLOP/s on `path`; 0 for `unmeasured` or off x86-64.
inline double path_peak_thread(product_path_t path) {
#if defined(__x86_64__)
    switch (path) {
    case product_path_t::amx_tiles: return amx_peak_thread(2'000'000);
    case product_path_t::bf16_pairs: return pairs_peak_thread(40'000'000);
    case product_path_t::f32_fma_avx512: return avx512_peak_thread(50'000'000);
    case product_path_t::f32_fma_avx2: return avx2_peak_thread(50'000'000);
    case product_path_t::amx_int8: return amx_int8_peak_thread(2'000'000);
    case product_path_t::i8_vnni: return vnni_peak_thread(40'000'000);
    default: return 0;
    }
#else
    (void)path;
    return 0;
#endif
}

/// The ceiling of `path` in GFLOP/s on `threads` threads, each thread's CPU-time rate summed.
inline double path_peak(product_path_t path, std::size_t threads) {
    std::vector<double> rates(threads);
    std::vector<std::thread> workers;
    for (std::size_t t = 1; t < threads; ++t) workers.emplace_back([&, t] { rates[t] = path_peak_thread(path); });
    rates[0] = path_peak_thread(path);
    for (std::thread &worker : workers) worker.join();
    double sum = 0;
    for (double rate : rates) sum += rate;
    return sum;
}

} // namespace uform::bench
