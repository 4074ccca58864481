// NumKong's AMX BF16 GEMM behind the core's GEMM conventions: row blocks per thread, BF16 A, merges into C.
#include "cpp/kernels/amx.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include <numkong/numkong.h>

#include "cpp/kernels/gemm.hpp"
#include "common/scalars.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#endif

#if !defined(NK_TARGET_SAPPHIREAMX)
#define NK_TARGET_SAPPHIREAMX 0
#endif

namespace uform::ram {
namespace {

/// Rows NumKong's AMX kernel takes at once: two 16-row tiles.
constexpr std::size_t row_unit_k = 32;

/// Most rows of A one task converts and multiplies: whole row units, the C tile within ~1 MiB.
std::size_t row_block(std::size_t columns) noexcept {
    std::size_t const rows = (256 * 1024) / std::max<std::size_t>(columns, 1) / row_unit_k * row_unit_k;
    return std::clamp<std::size_t>(rows, row_unit_k, 256);
}

/// Floats holding `rows x depth` BF16 values, rounded up to whole cache lines.
std::size_t bf16_floats(std::size_t rows, std::size_t depth) noexcept { return (rows * depth + 31) / 32 * 16; }

} // namespace

#if NK_TARGET_SAPPHIREAMX && (defined(__x86_64__) || defined(_M_X64))

namespace {

/// Rounds `count` F32 values to BF16 bits, nearest even, with AVX-512 BF16's conversion (every AMX CPU has it):
/// NaN stays NaN; subnormal inputs, below 1.2e-38 in magnitude, become zero.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) void to_bf16(float const *in, std::uint16_t *out,
                                                                             std::size_t count) noexcept {
    std::size_t i = 0;
    for (; i + 32 <= count; i += 32)
        _mm512_storeu_si512(out + i, reinterpret_cast<__m512i>(
                                         _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + i + 16), _mm512_loadu_ps(in + i))));
    for (; i < count; i += 16) {
        __mmask16 const mask =
            count - i >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (count - i)) - 1u);
        __m256i const half = reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(mask, in + i)));
        _mm256_mask_storeu_epi16(out + i, mask, half);
    }
}

} // namespace

// Probes the CPU and asks the OS for the tile state once.
bool amx_available() noexcept {
    static bool const available = [] {
        nk_capability_t const capabilities = nk_capabilities();
        if ((capabilities & nk_cap_sapphireamx_k) == 0) return false;
        return nk_configure_thread(capabilities) != 0;
    }();
    return available;
}

// NumKong's size of the tile layout.
std::size_t amx_packed_bytes(std::size_t columns, std::size_t depth) noexcept {
    return nk_dots_packed_size_bf16_sapphireamx(columns, depth);
}

// NumKong's tile packing.
void amx_pack(std::uint16_t const *rows, std::size_t columns, std::size_t depth, std::size_t stride,
              void *packed) noexcept {
    nk_dots_pack_bf16_sapphireamx(reinterpret_cast<nk_bf16_t const *>(rows), columns, depth,
                                  stride * sizeof(std::uint16_t), packed);
}

// NumKong's tile product.
void amx_multiply(std::uint16_t const *a, std::size_t lda, std::size_t rows, void const *packed, std::size_t columns,
                  std::size_t depth, float *c, std::size_t ldc) noexcept {
    if (rows == 0 || columns == 0) return;
    if (depth == 0) {
        for (std::size_t r = 0; r != rows; ++r) std::fill_n(c + r * ldc, columns, 0.0f);
        return;
    }
    nk_dots_packed_bf16_sapphireamx(reinterpret_cast<nk_bf16_t const *>(a), packed, c, rows, columns, depth,
                                    lda * sizeof(std::uint16_t), ldc * sizeof(float));
}

// The vector conversion.
void amx_to_bf16(float const *in, std::uint16_t *out, std::size_t count) noexcept { to_bf16(in, out, count); }

// Copies the weights to aligned BF16, then lets NumKong lay out each slice's tiles.
bool amx_matrix_t::pack(void const *weights, std::size_t columns, std::size_t depth) noexcept {
    if (!amx_available()) return false;
    std::free(data_);
    data_ = nullptr;
    // At least one slice, so a matrix without columns still holds NumKong's header.
    std::size_t const slices = std::max<std::size_t>(1, (columns + amx_slice_columns_k - 1) / amx_slice_columns_k);
    auto const slice_bytes = [depth](std::size_t width) {
        return (nk_dots_packed_size_bf16_sapphireamx(width, depth) + 63) / 64 * 64;
    };
    std::size_t const stride = slice_bytes(std::min(columns, amx_slice_columns_k));
    std::size_t const size = (slices - 1) * stride + slice_bytes(columns - (slices - 1) * amx_slice_columns_k);
    void *packed = std::aligned_alloc(64, size);
    std::unique_ptr<std::uint16_t[]> aligned(new (std::nothrow)
                                                 std::uint16_t[std::max<std::size_t>(columns * depth, 1)]);
    if (packed == nullptr || !aligned) {
        std::free(packed);
        return false;
    }
    std::memcpy(aligned.get(), weights, columns * depth * sizeof(std::uint16_t));
    for (std::size_t slice = 0; slice != slices; ++slice) {
        std::size_t const first = slice * amx_slice_columns_k;
        nk_dots_pack_bf16_sapphireamx(reinterpret_cast<nk_bf16_t const *>(aligned.get() + first * depth),
                                      std::min(amx_slice_columns_k, columns - first), depth,
                                      depth * sizeof(std::uint16_t), static_cast<char *>(packed) + slice * stride);
    }
    data_ = packed;
    columns_ = columns;
    depth_ = depth;
    bytes_ = size;
    stride_ = stride;
    return true;
}

// Tasks of row blocks by ranges of column slices: A's rows rounded to BF16 into scratch, tiles into C or into a tile
// buffer merged into C.
void amx_gemm(kernels_t const &kernels, parallel_t const &parallel, float const *a, std::size_t lda, std::size_t rows,
              amx_matrix_t const &b, float *c, std::size_t ldc, unsigned flags, float *scratch) noexcept {
    std::size_t const columns = b.columns(), depth = b.depth();
    if (rows == 0 || columns == 0) return;
    // Blocks of whole row units, their count a multiple of the threads (at least two each) and their units spread
    // evenly, so no thread idles at the end and only the last block has a partial unit. Too few units for that:
    // each block's columns split into ranges of slices as well, each range converting its rows again.
    std::size_t const threads = std::max<std::size_t>(parallel.threads, 1);
    std::size_t const units = (rows + row_unit_k - 1) / row_unit_k, units_max = row_block(columns) / row_unit_k;
    std::size_t blocks = (units + units_max - 1) / units_max;
    if (threads > 1) blocks = (std::max(blocks, 2 * threads) + threads - 1) / threads * threads;
    blocks = std::min(blocks, units);
    std::size_t const ranges =
        threads == 1 || blocks >= 2 * threads ? 1 : std::min(b.slices(), (2 * threads + blocks - 1) / blocks);
    std::size_t const scratch_floats = amx_scratch_floats(depth, columns);
    std::size_t const tile_stride = gemm_padded_stride(columns);
    parallel(blocks * ranges, [&](std::size_t task, std::size_t thread) noexcept {
        std::size_t const block = task / ranges, range = task % ranges;
        std::size_t const row = units * block / blocks * row_unit_k;
        std::size_t const count = std::min(rows, units * (block + 1) / blocks * row_unit_k) - row;
        std::size_t const slice_begin = b.slices() * range / ranges, slice_end = b.slices() * (range + 1) / ranges;
        std::size_t const first = slice_begin * amx_slice_columns_k;
        std::size_t const width = std::min(columns, slice_end * amx_slice_columns_k) - first;
        float *mine = scratch + thread * scratch_floats;
        auto *a16 = reinterpret_cast<std::uint16_t *>(mine);
        float *tile = mine + bf16_floats(row_block(columns), depth);
        for (std::size_t r = 0; r != count; ++r) to_bf16(a + (row + r) * lda, a16 + r * depth, depth);
        if (depth == 0) {
            for (std::size_t r = 0; r != count; ++r) std::fill_n(tile + r * tile_stride, width, 0.0f);
        } else {
            for (std::size_t slice = slice_begin; slice != slice_end; ++slice) {
                std::size_t const column = slice * amx_slice_columns_k;
                float *out = flags == 0 ? c + row * ldc + column : tile + (column - first);
                nk_dots_packed_bf16_sapphireamx(reinterpret_cast<nk_bf16_t const *>(a16), b.slice(slice), out, count,
                                                std::min(amx_slice_columns_k, columns - column), depth,
                                                depth * sizeof(std::uint16_t),
                                                (flags == 0 ? ldc : tile_stride) * sizeof(float));
            }
            if (flags == 0) return;
        }
        for (std::size_t r = 0; r != count; ++r)
            kernels.merge(tile + r * tile_stride, c + (row + r) * ldc + first, width, flags);
    });
}

#else

// Without NumKong's AMX kernels there is nothing to run.
bool amx_available() noexcept { return false; }
std::size_t amx_packed_bytes(std::size_t, std::size_t) noexcept { return 0; }
void amx_pack(std::uint16_t const *, std::size_t, std::size_t, std::size_t, void *) noexcept {}
void amx_multiply(std::uint16_t const *, std::size_t, std::size_t, void const *, std::size_t, std::size_t, float *,
                  std::size_t) noexcept {}
void amx_to_bf16(float const *in, std::uint16_t *out, std::size_t count) noexcept {
    for (std::size_t i = 0; i != count; ++i) out[i] = f32_to_bf16(in[i]);
}
bool amx_matrix_t::pack(void const *, std::size_t, std::size_t) noexcept { return false; }
void amx_gemm(kernels_t const &, parallel_t const &, float const *, std::size_t, std::size_t, amx_matrix_t const &,
              float *, std::size_t, unsigned, float *) noexcept {}

#endif

// Moves the tiles.
amx_matrix_t::amx_matrix_t(amx_matrix_t &&other) noexcept
    : data_(std::exchange(other.data_, nullptr)), columns_(std::exchange(other.columns_, 0)),
      depth_(std::exchange(other.depth_, 0)), bytes_(std::exchange(other.bytes_, 0)),
      stride_(std::exchange(other.stride_, 0)) {}

// Moves the tiles, freeing ours.
amx_matrix_t &amx_matrix_t::operator=(amx_matrix_t &&other) noexcept {
    if (this != &other) {
        std::free(data_);
        data_ = std::exchange(other.data_, nullptr);
        columns_ = std::exchange(other.columns_, 0);
        depth_ = std::exchange(other.depth_, 0);
        bytes_ = std::exchange(other.bytes_, 0);
        stride_ = std::exchange(other.stride_, 0);
    }
    return *this;
}

// Frees the tiles.
amx_matrix_t::~amx_matrix_t() noexcept { std::free(data_); }

// Converted rows of A and a C tile for the largest row block.
std::size_t amx_scratch_floats(std::size_t depth, std::size_t columns) noexcept {
    return bf16_floats(row_block(columns), depth) + row_block(columns) * gemm_padded_stride(columns);
}

} // namespace uform::ram
