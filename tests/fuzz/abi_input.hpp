/**
 * @file abi_input.hpp
 * @brief What the fuzz targets of the C API (abi_fuzz.cpp, reentry_fuzz.cpp) share: reading the input as a stream
 * of choices, buffers exactly as large as they claim, the tiny checkpoint, and the promises every call keeps.
 */
#ifndef UFORM_TESTS_FUZZ_ABI_INPUT_HPP
#define UFORM_TESTS_FUZZ_ABI_INPUT_HPP

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <vector>

#include <uform/uform.h>

namespace fuzz {

/** @brief Aborts, so that libFuzzer keeps the input, unless `condition` holds; says which requirement failed. */
inline void require(bool condition, std::source_location where = std::source_location::current()) {
    if (condition) return;
    std::fprintf(stderr, "requirement failed: %s:%u\n", where.file_name(), unsigned(where.line()));
    std::abort();
}

/** @brief A failure carries a non-empty static message and one of `allowed`. */
inline void require_failure(uform_status_t status, char const *message, std::initializer_list<uform_status_t> allowed,
                            std::source_location where = std::source_location::current()) {
    require(message != nullptr && message[0] != '\0', where);
    bool known = false;
    for (uform_status_t s : allowed) known |= s == status;
    if (!known) std::fprintf(stderr, "status %s: %s\n", uform_status_name(status), message);
    require(known, where);
}

/** @brief The input as a stream of choices; past its end every read answers zero. */
struct reader_t {
    std::uint8_t const *data;
    std::size_t size;
    std::size_t at = 0;

    std::uint8_t byte() noexcept { return at < size ? data[at++] : 0; }
    /** @brief A value below `bound` (nonzero). */
    std::size_t below(std::size_t bound) noexcept { return byte() % bound; }
    bool flag() noexcept { return byte() & 1; }
    std::uint64_t u64() noexcept {
        std::uint64_t value = 0;
        for (int i = 0; i != 8; ++i) value = value << 8 | byte();
        return value;
    }
    /** @brief A size: mostly small, sometimes at the edges of `size_t`. */
    std::size_t size_value(std::size_t small) noexcept {
        switch (byte() % 16) {
        case 0: return 0;
        case 1: return SIZE_MAX - below(4);
        case 2: return std::size_t(1) << below(64);
        case 3: return (std::size_t(1) << below(64)) + 1;
        case 4: return std::size_t(u64());
        default: return below(small + 1);
        }
    }
    /** @brief A float: mostly ordinary, sometimes zero, negative, tiny, huge or not finite. */
    float real() noexcept {
        static constexpr float table[] = {0.0f,     1.0f,  -1.0f, 0.5f, 0.25f, 1e-45f, -1e-45f, 3.4e38f,
                                          -3.4e38f, 1e30f, 1e-3f, 2.0f, 100.f, -0.0f,  1.0e20f, 0.75f};
        std::uint8_t const pick = byte();
        if (pick < 0xF0) return table[pick % 16];
        if (pick == 0xF0) return __builtin_nanf("");
        if (pick == 0xF1) return __builtin_inff();
        if (pick == 0xF2) return -__builtin_inff();
        std::uint32_t bits = std::uint32_t(u64());
        float value;
        std::memcpy(&value, &bits, sizeof(value));
        return value;
    }
};

/** @brief An array of exactly `count` values (a heap block of that size, so that reading past it is reported). */
template <typename value_type_>
struct exact_t {
    std::unique_ptr<value_type_[]> values;
    std::size_t count = 0;
    bool null = false; // passed as `NULL`, whatever `count` says

    void resize(std::size_t n) {
        values.reset(new value_type_[n]());
        count = n;
    }
    value_type_ const *pointer() const noexcept { return null ? nullptr : values.get(); }
    value_type_ &operator[](std::size_t i) noexcept { return values[i]; }
};

/**
 * @brief An input tape: `count` items whose offsets ascend from an arbitrary start, with data exactly `length`
 * values long, then perhaps one lie the library must refuse before reading: offsets that fall or leave the data,
 * null data or offsets, or offsets at the edge of `size_t`. `item_length(i)` picks each item's length.
 */
template <typename value_type_>
struct tape_t {
    exact_t<value_type_> data;
    exact_t<std::size_t> offsets;
    std::size_t count = 0;
    bool honest = true; // no lie was told

    std::size_t item_size(std::size_t i) const noexcept { return offsets.values[i + 1] - offsets.values[i]; }

    template <typename length_type_, typename value_maker_type_>
    void make(reader_t &in, std::size_t max_count, length_type_ &&item_length, value_maker_type_ &&value) {
        count = in.below(max_count + 1);
        offsets.resize(count + 1);
        offsets[0] = in.below(4);
        for (std::size_t i = 0; i != count; ++i) offsets[i + 1] = offsets[i] + item_length(i);
        data.resize(offsets[count] + in.below(3));
        for (std::size_t i = 0; i != data.count; ++i) data[i] = value(i);
        honest = true;
        switch (in.byte() % 24) {
        case 0: // offsets that leave the data
            if (offsets[count] != 0) data.resize(offsets[count] - 1), honest = false;
            break;
        case 1: // offsets that fall
            if (count >= 1 && offsets[1] != offsets[0]) std::swap(offsets[0], offsets[1]), honest = false;
            break;
        case 2:
            if (data.count) data.null = true, honest = false;
            break;
        case 3:
            if (count) offsets.null = true, honest = false;
            break;
        case 4: // an offset at the edge of size_t
            offsets[in.below(count + 1)] = SIZE_MAX - in.below(2), honest = false;
            break;
        case 5: // offsets past the data, ascending
            for (std::size_t i = 0; i != count + 1; ++i) offsets[i] += std::size_t(1) << 62;
            honest = false;
            break;
        case 6: // no items at all, through null offsets
            count = 0, offsets.null = true;
            break;
        default: break;
        }
    }
};

/** @brief The tiny checkpoint's bytes, read once from tests/data (run from the repository's root). */
inline std::vector<unsigned char> const &tiny_checkpoint() {
    static std::vector<unsigned char> const bytes = [] {
        std::vector<unsigned char> read;
        std::FILE *file = std::fopen("tests/data/tiny.safetensors", "rb");
        if (!file) {
            std::fprintf(stderr, "run from the repository's root: tests/data/tiny.safetensors is missing\n");
            std::abort();
        }
        unsigned char block[65536];
        for (std::size_t got; (got = std::fread(block, 1, sizeof(block), file)) != 0;)
            read.insert(read.end(), block, block + got);
        std::fclose(file);
        return read;
    }();
    return bytes;
}

/** @brief Loads the tiny checkpoint into host memory. */
inline uform_model_t load_tiny() {
    uform_model_load_ram_args_t args{};
    args.buffer = tiny_checkpoint().data();
    args.buffer_length = tiny_checkpoint().size();
    uform_model_t model = nullptr;
    require(uform_model_load_ram_buffer(&args, &model, nullptr) == uform_status_ok_k);
    return model;
}

/** @brief Checks the promises of a rows view: consistent sizes, and ascending offsets from zero for a tape. */
inline void require_rows(uform_rows_t const &rows, bool wanted, std::size_t items, std::size_t columns,
                         uform_scalar_t scalar, bool tape, uform_residency_t residency = uform_residency_ram_k) {
    if (!wanted) {
        require(rows.data == nullptr && rows.count == 0 && rows.items == 0 && rows.columns == 0);
        return;
    }
    require(rows.items == items && rows.columns == columns && rows.scalar == scalar);
    require(rows.stride == uform_scalar_bytes(scalar, columns) && rows.residency == residency);
    require(rows.data != nullptr || rows.count == 0);
    if (!tape) {
        require(rows.offsets == nullptr && rows.count == items);
        return;
    }
    require(rows.offsets != nullptr && rows.offsets[0] == 0 && rows.offsets[items] == rows.count);
    for (std::size_t i = 0; i != items; ++i) require(rows.offsets[i] <= rows.offsets[i + 1]);
}

} // namespace fuzz

#endif // UFORM_TESTS_FUZZ_ABI_INPUT_HPP
