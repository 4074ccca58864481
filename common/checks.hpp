// Argument checks every entry point shares: tapes, paths, handles, outputs and scalars.
//
// The classes of bad input and their statuses, the same in every entry point:
// - a null handle, out-pointer, or array that is counted (data of nonzero length, offsets of nonzero count,
//   per-item arrays of nonzero items): `invalid-argument`;
// - a tape's offsets that fall (`offsets[i] > offsets[i + 1]`) or leave the data
//   (`offsets[count] > length`): `shape-mismatch`;
// - counts that disagree with each other (choices against texts, bags against items, an edge set's offsets
//   against the items, weights against ids, pixels against heights and widths): `shape-mismatch`;
// - a single value out of its range (an unknown enumerator or flag, a zero height, a group past the model's,
//   an edge to an item outside the batch or to itself, a NaN sample, an empty or repeated choice byte):
//   `invalid-argument`;
// - what the model, the build or the residency lacks: `unsupported`.
// Checks run in that order of kinds: handles and pointers, enumerators, tapes, per-item values, then what
// the model carries, so that a binding checking the same before the call answers the same status.
#ifndef UFORM_COMMON_CHECKS_HPP
#define UFORM_COMMON_CHECKS_HPP

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <uform/uform.h>

#include "common/fail.hpp"

namespace uform {

/// The bits of an enumerator as the caller passed them. C callers may pass any `int` where a C enum is
/// expected, while C++ may assume a value in the enum's range, so every enum that crosses the ABI is read
/// through this before it is checked; once checked, it is used as is.
template <typename enum_type_>
std::uint64_t raw_enum(enum_type_ const &value) noexcept {
    static_assert(std::is_enum_v<enum_type_>);
    using bits_t = std::make_unsigned_t<std::underlying_type_t<enum_type_>>;
    bits_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

/// Whether an enumerator passed across the ABI is one of `0` up to `last`.
template <typename enum_type_>
bool known_enum(enum_type_ const &value, enum_type_ last) noexcept {
    return raw_enum(value) <= std::uint64_t(last);
}

/// `a * b`, or `false` on overflow.
inline bool multiply(std::size_t a, std::size_t b, std::size_t &result) noexcept {
    return !__builtin_mul_overflow(a, b, &result);
}

/// The messages of one tape's refusals.
struct tape_messages_t {
    char const *null_data;
    char const *null_offsets;
    char const *fall;
    char const *leave;
};

#define UFORM_TAPE_MESSAGES(name)                                                                                      \
    tape_messages_t{name "'s data is null but its length is not zero", name "'s offsets are null but it counts items", \
                    name "'s offsets fall", name "'s offsets leave its data"}

/// Checks an input tape: `data` may be null only when `length` is zero; offsets ascend inside the data.
template <typename value_type_>
uform_status_t check_tape(value_type_ const *data, std::size_t length, std::size_t const *offsets, std::size_t count,
                          tape_messages_t const &messages, char const **message) noexcept {
    if (!data && length) return fail(message, uform_status_invalid_argument_k, messages.null_data);
    if (!offsets) {
        if (count) return fail(message, uform_status_invalid_argument_k, messages.null_offsets);
        return uform_status_ok_k;
    }
    for (std::size_t i = 0; i != count; ++i)
        if (offsets[i] > offsets[i + 1]) return fail(message, uform_status_shape_mismatch_k, messages.fall);
    if (offsets[count] > length) return fail(message, uform_status_shape_mismatch_k, messages.leave);
    return uform_status_ok_k;
}

/// The longest path accepted, in bytes.
inline constexpr std::size_t max_path_bytes_k = 4095;

/// Checks that every item of a tape of paths is a nonempty path without NUL, within 4095 bytes.
inline uform_status_t check_paths(char const *data, std::size_t const *offsets, std::size_t count,
                                  char const **message) noexcept {
    for (std::size_t i = 0; i != count; ++i) {
        std::size_t const length = offsets[i + 1] - offsets[i];
        if (length == 0) return fail(message, uform_status_invalid_argument_k, "a path is empty");
        if (length > max_path_bytes_k)
            return fail(message, uform_status_invalid_argument_k, "a path is longer than 4095 bytes");
        if (std::memchr(data + offsets[i], 0, length))
            return fail(message, uform_status_invalid_argument_k, "a path holds a NUL byte");
    }
    return uform_status_ok_k;
}

/// Copies a path into a NUL-terminated buffer of `max_path_bytes_k + 1` bytes.
inline void path_terminated(char const *path, std::size_t length, char (&buffer)[max_path_bytes_k + 1]) noexcept {
    std::memcpy(buffer, path, length);
    buffer[length] = '\0';
}

/// Resolves and checks the outputs flags: unknown bits are refused; zero means embeddings.
inline uform_status_t check_outputs(uform_outputs_t &outputs, char const **message) noexcept {
    std::uint64_t const known = uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k;
    std::uint64_t const bits = raw_enum(outputs);
    if (bits & ~known) return fail(message, uform_status_invalid_argument_k, "unknown bits in the outputs");
    if (bits == 0) outputs = uform_outputs_embeddings_k;
    return uform_status_ok_k;
}

/// Resolves and checks an output scalar against the surfaces asked for.
inline uform_status_t check_output_scalar(uform_scalar_t &scalar, uform_outputs_t outputs,
                                          char const **message) noexcept {
    if (!known_enum(scalar, uform_scalar_b1_k))
        return fail(message, uform_status_invalid_argument_k, "unknown output scalar");
    if (scalar == uform_scalar_auto_k) scalar = uform_scalar_f32_k;
    if ((scalar == uform_scalar_i8_k || scalar == uform_scalar_b1_k) && (outputs & uform_outputs_states_k))
        return fail(message, uform_status_invalid_argument_k, "i8 and b1 suit unit rows only, not states");
    return uform_status_ok_k;
}

} // namespace uform

#endif // UFORM_COMMON_CHECKS_HPP
