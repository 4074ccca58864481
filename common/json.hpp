// A small strict JSON (RFC 8259) parser into a tree of values, for safetensors headers.
//
// Strict: UTF-8 only (no BOM, no overlong forms, no encoded surrogates), every escape including `\uXXXX`
// surrogate pairs (a lone surrogate is refused), no control characters inside strings, duplicate object
// keys refused, a depth limit and a value-count limit, nothing after the value but JSON whitespace.
// Numbers follow the RFC grammar; a number is kept as a value only when it is a non-negative integer
// literal (no sign, fraction or exponent) that fits 64 bits, which is all a safetensors header needs.
#ifndef UFORM_COMMON_JSON_HPP
#define UFORM_COMMON_JSON_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace uform::json {

/// The kind of a JSON value.
enum class kind_t : std::uint8_t { null_, boolean, number, string, array, object };

/// One JSON value; arrays and objects own their children.
struct value_t {
    kind_t kind = kind_t::null_;
    /// For `boolean`: its value.
    bool boolean = false;
    /// For `number`: whether it is a non-negative integer literal that fits `integer`.
    bool is_integer = false;
    /// For `number` with `is_integer`: the value.
    std::uint64_t integer = 0;
    /// For `string`: the decoded UTF-8 text.
    std::string string;
    /// For `array`: the elements; for `object`: the members' values, parallel to `keys`.
    std::vector<value_t> items;
    /// For `object`: the members' keys in document order, all distinct.
    std::vector<std::string> keys;

    /// The member named `key` of an object, or `nullptr` (also for a non-object).
    value_t const *find(std::string_view key) const noexcept;
};

/// Why a text is not accepted.
enum class error_t : std::uint8_t {
    none,
    empty,             // nothing but whitespace
    unexpected_end,    // the text ends inside a value
    unexpected_char,   // a character no value can start with or continue with
    trailing_garbage,  // something after the value other than whitespace
    invalid_literal,   // a misspelled true, false or null
    invalid_number,    // a number outside the RFC grammar, such as 01, 1., -, .5
    control_in_string, // an unescaped character below U+0020 in a string
    invalid_escape,    // a backslash followed by something else than "\/bfnrtu, or a bad \u
    lone_surrogate,    // a \uD800-\uDFFF escape without its pair
    invalid_utf8,      // bytes that are not well-formed UTF-8
    duplicate_key,     // an object naming one key twice
    too_deep,          // nesting beyond the depth limit
    too_many_values,   // more values than the value limit
};

/// Bounds on what a parse may build.
struct limits_t {
    /// Nesting of arrays and objects; the root value is depth 1.
    std::size_t max_depth = 64;
    /// Values in all, the root included; keys do not count.
    std::size_t max_values = std::size_t(1) << 20;
};

/// Parses `text` into `out`. Answers `error_t::none` on success; otherwise `out` is unspecified.
/// May throw `std::bad_alloc`; nothing else.
error_t parse(std::string_view text, value_t &out, limits_t limits = {});

} // namespace uform::json

#endif // UFORM_COMMON_JSON_HPP
