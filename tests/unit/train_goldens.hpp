// Reading the training goldens of tests/data/train/ (tools/reference/README.md, "The training goldens") in the C++
// tests: the tensors of train.safetensors as doubles, batch.json as a tree of values, and the count sketch that
// compares a large gradient with its golden.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cpp/train/random.hpp"

namespace goldens {

/// The directory of the training goldens: `$UFORM_TEST_DATA/train`, else `tests/data/train` (from the repository
/// root, where ctest runs).
inline std::string directory() {
    char const *root = std::getenv("UFORM_TEST_DATA");
    return std::string(root && *root ? root : "tests/data") + "/train";
}

/// A whole file's bytes; exits the test when it cannot be read.
inline std::string read_file(std::string const &path) {
    std::FILE *file = std::fopen(path.c_str(), "rb");
    if (!file) {
        std::fprintf(stderr, "cannot open %s: run from the repository root or set UFORM_TEST_DATA\n", path.c_str());
        std::exit(2);
    }
    std::string bytes;
    char chunk[65536];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, file)) != 0;) bytes.append(chunk, got);
    std::fclose(file);
    return bytes;
}

/// A JSON value of batch.json: numbers as doubles, the rest as usual. Test code: trusts its input.
struct json_t {
    enum kind_t { null_, boolean, number, string, array, object } kind = null_;
    double value = 0;
    std::string text;
    std::vector<json_t> items;
    std::vector<std::string> keys;

    json_t const &operator[](std::string_view key) const {
        for (std::size_t i = 0; i != keys.size(); ++i)
            if (keys[i] == key) return items[i];
        std::fprintf(stderr, "batch.json: no key %.*s\n", int(key.size()), key.data());
        std::exit(2);
    }
    json_t const &operator[](std::size_t i) const { return items[i]; }
    bool has(std::string_view key) const {
        for (auto const &k : keys)
            if (k == key) return true;
        return false;
    }
    std::size_t size() const { return items.size(); }
    std::size_t index() const { return static_cast<std::size_t>(value); }
};

/// Parses the JSON `text` from `at` (a recursive descent over what Python's json.dumps writes).
inline json_t parse_json(std::string_view text, std::size_t &at) {
    auto skip = [&] {
        while (at < text.size() && std::strchr(" \t\r\n", text[at])) ++at;
    };
    skip();
    json_t out;
    char const c = text[at];
    if (c == '{' || c == '[') {
        out.kind = c == '{' ? json_t::object : json_t::array;
        ++at;
        skip();
        if (text[at] == (c == '{' ? '}' : ']')) return ++at, out;
        for (;;) {
            if (c == '{') {
                out.keys.push_back(parse_json(text, at).text);
                skip();
                ++at; // ':'
            }
            out.items.push_back(parse_json(text, at));
            skip();
            if (text[at++] != ',') break;
        }
        return out;
    }
    if (c == '"') {
        out.kind = json_t::string;
        for (++at; text[at] != '"'; ++at) {
            if (text[at] != '\\') {
                out.text += text[at];
                continue;
            }
            char const e = text[++at];
            if (e == 'u') {
                unsigned code =
                    static_cast<unsigned>(std::strtoul(std::string(text.substr(at + 1, 4)).c_str(), nullptr, 16));
                at += 4;
                if (code < 0x80) out.text += char(code);
                else if (code < 0x800) out.text += char(0xC0 | code >> 6), out.text += char(0x80 | (code & 63));
                else
                    out.text += char(0xE0 | code >> 12), out.text += char(0x80 | (code >> 6 & 63)),
                        out.text += char(0x80 | (code & 63));
            } else
                out.text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
        }
        ++at;
        return out;
    }
    if (text.substr(at, 4) == "null") return at += 4, out;
    if (text.substr(at, 4) == "true") return at += 4, out.kind = json_t::boolean, out.value = 1, out;
    if (text.substr(at, 5) == "false") return at += 5, out.kind = json_t::boolean, out;
    out.kind = json_t::number;
    char *end = nullptr;
    std::string const rest(text.substr(at, 64));
    out.value = std::strtod(rest.c_str(), &end);
    at += static_cast<std::size_t>(end - rest.c_str());
    return out;
}

/// batch.json as a tree.
inline json_t batch() {
    std::string const text = read_file(directory() + "/batch.json");
    std::size_t at = 0;
    return parse_json(text, at);
}

/// One tensor of train.safetensors: its shape and its values widened to double.
struct tensor_t {
    std::vector<std::size_t> shape;
    std::vector<double> values;
    std::size_t count() const { return values.size(); }
};

/// Every tensor of a safetensors file (dtypes U8, I64, F32, F64), by name.
inline std::map<std::string, tensor_t> read_safetensors(std::string const &path) {
    std::string const bytes = read_file(path);
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    std::size_t at = 0;
    json_t const tree = parse_json(std::string_view(bytes).substr(8, header), at);
    char const *data = bytes.data() + 8 + header;
    std::map<std::string, tensor_t> out;
    for (std::size_t i = 0; i != tree.keys.size(); ++i) {
        if (tree.keys[i] == "__metadata__") continue;
        json_t const &entry = tree.items[i];
        tensor_t t;
        std::size_t count = 1;
        for (auto const &d : entry["shape"].items) t.shape.push_back(d.index()), count *= d.index();
        std::size_t const begin = entry["data_offsets"][0].index();
        std::string const &dtype = entry["dtype"].text;
        t.values.resize(count);
        for (std::size_t e = 0; e != count; ++e) {
            if (dtype == "F32") {
                float v;
                std::memcpy(&v, data + begin + 4 * e, 4);
                t.values[e] = v;
            } else if (dtype == "F64") std::memcpy(&t.values[e], data + begin + 8 * e, 8);
            else if (dtype == "I64") {
                std::int64_t v;
                std::memcpy(&v, data + begin + 8 * e, 8);
                t.values[e] = double(v);
            } else if (dtype == "U8") t.values[e] = static_cast<unsigned char>(data[begin + e]);
            else {
                std::fprintf(stderr, "%s: unexpected dtype %s\n", path.c_str(), dtype.c_str());
                std::exit(2);
            }
        }
        out.emplace(tree.keys[i], std::move(t));
    }
    return out;
}

/// The goldens' count sketch of `count` values named `name` (tools/reference/README.md): element `e` goes to bucket
/// `below(draw e, 1024)` of the stream (0, "sketch/" + name), negated when the draw is odd.
template <typename value_type_>
std::vector<double> sketch(std::string const &name, value_type_ const *values, std::size_t count) {
    std::vector<double> out(1024, 0.0);
    uform::train::stream_t const stream(0, "sketch/" + name);
    for (std::size_t e = 0; e != count; ++e) {
        std::uint64_t const w = stream.draw(e);
        out[uform::train::uniform_below(w, 1024)] += (w & 1 ? -1.0 : 1.0) * double(values[e]);
    }
    return out;
}

/// How close `a` is to the golden `b`: their cosine and `|a - b| / |b|`.
struct closeness_t {
    double cosine, relative;
};

template <typename value_type_>
closeness_t compare(value_type_ const *a, double const *b, std::size_t count) {
    double ab = 0, aa = 0, bb = 0, dd = 0;
    for (std::size_t i = 0; i != count; ++i) {
        double const x = double(a[i]), y = b[i];
        ab += x * y, aa += x * x, bb += y * y, dd += (x - y) * (x - y);
    }
    double const cosine = aa == 0 && bb == 0 ? 1 : ab / std::sqrt(aa * bb);
    double const relative = bb == 0 ? std::sqrt(dd) : std::sqrt(dd / bb);
    return {cosine, relative};
}

} // namespace goldens
