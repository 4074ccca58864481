// The strict JSON parser declared in json.hpp: a recursive descent over bytes, bounded in depth.
#include "common/json.hpp"

#include <algorithm>
#include <limits>

namespace uform::json {

/// Linear search over an object's keys; objects in safetensors headers are small or scanned once.
value_t const *value_t::find(std::string_view key) const noexcept {
    if (kind != kind_t::object) return nullptr;
    for (std::size_t i = 0; i != keys.size(); ++i)
        if (keys[i] == key) return &items[i];
    return nullptr;
}

namespace {

/// Whether `c` is JSON whitespace (RFC 8259 `ws`).
bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// Whether `c` is an ASCII decimal digit.
bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// The value of a hexadecimal digit, or -1.
int hex_value(char c) noexcept {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/// Appends the UTF-8 encoding of a scalar value (not a surrogate, at most U+10FFFF).
void append_utf8(std::string &out, std::uint32_t code) {
    if (code < 0x80) {
        out.push_back(char(code));
    } else if (code < 0x800) {
        out.push_back(char(0xC0 | (code >> 6)));
        out.push_back(char(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
        out.push_back(char(0xE0 | (code >> 12)));
        out.push_back(char(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(char(0x80 | (code & 0x3F)));
    } else {
        out.push_back(char(0xF0 | (code >> 18)));
        out.push_back(char(0x80 | ((code >> 12) & 0x3F)));
        out.push_back(char(0x80 | ((code >> 6) & 0x3F)));
        out.push_back(char(0x80 | (code & 0x3F)));
    }
}

/// The parser's state: the text, the cursor and the budget of values.
class parser_t {
  public:
    /// Starts a parse of `text` under `limits`.
    parser_t(std::string_view text, limits_t limits) noexcept : text_(text), limits_(limits) {}

    /// Parses the whole text as one value surrounded by optional whitespace.
    error_t parse_document(value_t &out) {
        skip_space();
        if (at_end()) return error_t::empty;
        if (error_t e = parse_value(out, 1); e != error_t::none) return e;
        skip_space();
        return at_end() ? error_t::none : error_t::trailing_garbage;
    }

  private:
    std::string_view text_;
    limits_t limits_;
    std::size_t pos_ = 0;
    std::size_t values_ = 0;

    /// Whether the cursor is past the last byte.
    bool at_end() const noexcept { return pos_ >= text_.size(); }

    /// The byte under the cursor; only when not at the end.
    char peek() const noexcept { return text_[pos_]; }

    /// Moves the cursor past whitespace.
    void skip_space() noexcept {
        while (!at_end() && is_space(peek())) ++pos_;
    }

    /// The error for a missing expected character: the end of the text, or something else.
    error_t unexpected() const noexcept { return at_end() ? error_t::unexpected_end : error_t::unexpected_char; }

    /// Parses one value starting at the cursor (after whitespace), at nesting `depth`.
    error_t parse_value(value_t &out, std::size_t depth) {
        skip_space();
        if (at_end()) return error_t::unexpected_end;
        if (++values_ > limits_.max_values) return error_t::too_many_values;
        char const c = peek();
        if (c == '{') return parse_object(out, depth);
        if (c == '[') return parse_array(out, depth);
        if (c == '"') {
            out.kind = kind_t::string;
            return parse_string(out.string);
        }
        if (c == '-' || is_digit(c)) return parse_number(out);
        if (c == 't') return parse_literal(out, "true", kind_t::boolean, true);
        if (c == 'f') return parse_literal(out, "false", kind_t::boolean, false);
        if (c == 'n') return parse_literal(out, "null", kind_t::null_, false);
        return error_t::unexpected_char;
    }

    /// Parses `true`, `false` or `null`, whose first letter is under the cursor.
    error_t parse_literal(value_t &out, std::string_view word, kind_t kind, bool boolean) noexcept {
        if (text_.substr(pos_, word.size()) != word) return error_t::invalid_literal;
        pos_ += word.size();
        out.kind = kind;
        out.boolean = boolean;
        return error_t::none;
    }

    /// Parses a number by the RFC grammar, keeping its value when it is a 64-bit unsigned integer.
    error_t parse_number(value_t &out) noexcept {
        out.kind = kind_t::number;
        bool const negative = peek() == '-';
        if (negative) ++pos_;
        if (at_end() || !is_digit(peek())) return error_t::invalid_number;
        std::uint64_t value = 0;
        bool fits = true;
        if (peek() == '0') {
            ++pos_;
            if (!at_end() && is_digit(peek())) return error_t::invalid_number; // a leading zero
        } else {
            while (!at_end() && is_digit(peek())) {
                std::uint64_t const digit = std::uint64_t(peek() - '0');
                if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) fits = false;
                else value = value * 10 + digit;
                ++pos_;
            }
        }
        bool fraction_or_exponent = false;
        if (!at_end() && peek() == '.') {
            ++pos_;
            if (at_end() || !is_digit(peek())) return error_t::invalid_number;
            while (!at_end() && is_digit(peek())) ++pos_;
            fraction_or_exponent = true;
        }
        if (!at_end() && (peek() == 'e' || peek() == 'E')) {
            ++pos_;
            if (!at_end() && (peek() == '+' || peek() == '-')) ++pos_;
            if (at_end() || !is_digit(peek())) return error_t::invalid_number;
            while (!at_end() && is_digit(peek())) ++pos_;
            fraction_or_exponent = true;
        }
        out.is_integer = !negative && !fraction_or_exponent && fits;
        out.integer = out.is_integer ? value : 0;
        return error_t::none;
    }

    /// Reads 4 hex digits of a `\u` escape at the cursor.
    error_t parse_hex4(std::uint32_t &code) noexcept {
        if (text_.size() - pos_ < 4) return error_t::invalid_escape;
        code = 0;
        for (int i = 0; i != 4; ++i) {
            int const digit = hex_value(text_[pos_ + std::size_t(i)]);
            if (digit < 0) return error_t::invalid_escape;
            code = code * 16 + std::uint32_t(digit);
        }
        pos_ += 4;
        return error_t::none;
    }

    /// Parses an escape after its backslash, appending the character it names.
    error_t parse_escape(std::string &out) {
        if (at_end()) return error_t::unexpected_end;
        char const c = text_[pos_++];
        switch (c) {
        case '"': out.push_back('"'); return error_t::none;
        case '\\': out.push_back('\\'); return error_t::none;
        case '/': out.push_back('/'); return error_t::none;
        case 'b': out.push_back('\b'); return error_t::none;
        case 'f': out.push_back('\f'); return error_t::none;
        case 'n': out.push_back('\n'); return error_t::none;
        case 'r': out.push_back('\r'); return error_t::none;
        case 't': out.push_back('\t'); return error_t::none;
        case 'u': break;
        default: return error_t::invalid_escape;
        }
        std::uint32_t code = 0;
        if (error_t e = parse_hex4(code); e != error_t::none) return e;
        if (code >= 0xDC00 && code <= 0xDFFF) return error_t::lone_surrogate;
        if (code >= 0xD800 && code <= 0xDBFF) {
            if (text_.substr(pos_, 2) != "\\u") return error_t::lone_surrogate;
            pos_ += 2;
            std::uint32_t low = 0;
            if (error_t e = parse_hex4(low); e != error_t::none) return e;
            if (low < 0xDC00 || low > 0xDFFF) return error_t::lone_surrogate;
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        }
        append_utf8(out, code);
        return error_t::none;
    }

    /// Checks one multi-byte UTF-8 sequence whose lead byte is under the cursor, and copies it.
    error_t parse_utf8(std::string &out) {
        auto const byte = [&](std::size_t i) { return std::uint8_t(text_[pos_ + i]); };
        std::uint8_t const lead = byte(0);
        std::size_t length = 0;
        std::uint8_t low = 0x80, high = 0xBF; // the bounds of the second byte
        if (lead >= 0xC2 && lead <= 0xDF) length = 2;
        else if (lead == 0xE0) length = 3, low = 0xA0;
        else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) length = 3;
        else if (lead == 0xED) length = 3, high = 0x9F;
        else if (lead == 0xF0) length = 4, low = 0x90;
        else if (lead >= 0xF1 && lead <= 0xF3) length = 4;
        else if (lead == 0xF4) length = 4, high = 0x8F;
        else return error_t::invalid_utf8;
        if (text_.size() - pos_ < length) return error_t::unexpected_end;
        if (byte(1) < low || byte(1) > high) return error_t::invalid_utf8;
        for (std::size_t i = 2; i < length; ++i)
            if (byte(i) < 0x80 || byte(i) > 0xBF) return error_t::invalid_utf8;
        out.append(text_.substr(pos_, length));
        pos_ += length;
        return error_t::none;
    }

    /// Parses a string whose opening quote is under the cursor, decoding it into `out`.
    error_t parse_string(std::string &out) {
        ++pos_;
        while (true) {
            std::size_t run = pos_; // copy runs of plain ASCII at once
            while (run < text_.size()) {
                auto const c = std::uint8_t(text_[run]);
                if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
                ++run;
            }
            out.append(text_.substr(pos_, run - pos_));
            pos_ = run;
            if (at_end()) return error_t::unexpected_end;
            auto const c = std::uint8_t(peek());
            if (c == '"') {
                ++pos_;
                return error_t::none;
            }
            if (c < 0x20) return error_t::control_in_string;
            if (c == '\\') {
                ++pos_;
                if (error_t e = parse_escape(out); e != error_t::none) return e;
            } else if (error_t e = parse_utf8(out); e != error_t::none) {
                return e;
            }
        }
    }

    /// Parses an array whose `[` is under the cursor.
    error_t parse_array(value_t &out, std::size_t depth) {
        if (depth > limits_.max_depth) return error_t::too_deep;
        out.kind = kind_t::array;
        ++pos_;
        skip_space();
        if (!at_end() && peek() == ']') {
            ++pos_;
            return error_t::none;
        }
        while (true) {
            out.items.emplace_back();
            if (error_t e = parse_value(out.items.back(), depth + 1); e != error_t::none) return e;
            skip_space();
            if (at_end()) return error_t::unexpected_end;
            char const c = text_[pos_++];
            if (c == ']') return error_t::none;
            if (c != ',') return error_t::unexpected_char;
        }
    }

    /// Parses an object whose `{` is under the cursor, refusing duplicate keys.
    error_t parse_object(value_t &out, std::size_t depth) {
        if (depth > limits_.max_depth) return error_t::too_deep;
        out.kind = kind_t::object;
        ++pos_;
        skip_space();
        if (!at_end() && peek() == '}') {
            ++pos_;
            return error_t::none;
        }
        while (true) {
            skip_space();
            if (at_end() || peek() != '"') return unexpected();
            out.keys.emplace_back();
            if (error_t e = parse_string(out.keys.back()); e != error_t::none) return e;
            skip_space();
            if (at_end() || peek() != ':') return unexpected();
            ++pos_;
            out.items.emplace_back();
            if (error_t e = parse_value(out.items.back(), depth + 1); e != error_t::none) return e;
            skip_space();
            if (at_end()) return error_t::unexpected_end;
            char const c = text_[pos_++];
            if (c == '}') break;
            if (c != ',') return error_t::unexpected_char;
        }
        return has_duplicates(out.keys) ? error_t::duplicate_key : error_t::none;
    }

    /// Whether two keys are equal: sorts pointers to them, then compares neighbours.
    static bool has_duplicates(std::vector<std::string> const &keys) {
        if (keys.size() < 2) return false;
        std::vector<std::string const *> sorted(keys.size());
        for (std::size_t i = 0; i != keys.size(); ++i) sorted[i] = &keys[i];
        std::sort(sorted.begin(), sorted.end(), [](auto a, auto b) { return *a < *b; });
        for (std::size_t i = 1; i != sorted.size(); ++i)
            if (*sorted[i - 1] == *sorted[i]) return true;
        return false;
    }
};

} // namespace

/// Parses a whole document with a fresh parser; see json.hpp.
error_t parse(std::string_view text, value_t &out, limits_t limits) {
    out = value_t{};
    parser_t parser(text, limits);
    return parser.parse_document(out);
}

} // namespace uform::json
