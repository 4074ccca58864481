// Unit tests of the JSON parser and the checkpoint validator (common/json.*, common/checkpoint.*).
//
// Builds tiny-geometry headers in memory (docs/model.md, "The tiny geometry"), valid and broken one way at a
// time, and asserts the exact status of each. Prints "N passed, M failed" and exits nonzero on a failure.
// Build: clang++-22 -std=c++23 -fsanitize=address,undefined -Iinclude -I. common/checkpoint.cpp common/json.cpp
//        tests/unit/checkpoint_test.cpp
// Also reads $UFORM_TEST_DATA/tiny.safetensors (default tests/data/, from the repository root) if it exists.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

#include "common/checkpoint.hpp"
#include "common/json.hpp"

namespace {

using namespace std::string_literals;
using namespace std::string_view_literals;

int passed = 0, failed = 0;

/// Counts one assertion, printing it when it fails.
void check(bool ok, std::string_view what, int line) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::printf("FAILED (line %d): %.*s\n", line, int(what.size()), what.data());
}

#define CHECK(cond) check((cond), #cond, __LINE__)
#define CHECK_LABEL(cond, label) check((cond), std::string(label) + ": " #cond, __LINE__)

// region: building headers

/// One tensor of a header under construction; offsets are laid out unless overridden.
struct tensor_t {
    std::string name;
    std::string dtype;
    std::vector<std::uint64_t> shape;
    std::optional<std::pair<std::uint64_t, std::uint64_t>> offsets; // overrides the laid-out span
    std::string raw;                                                // replaces the whole entry when not empty
    std::string extra;                                              // appended inside the entry, e.g. ,"x":1
};

/// A header under construction: ordered metadata and tensors.
struct spec_t {
    std::vector<std::pair<std::string, std::string>> metadata;
    std::vector<tensor_t> tensors;
    bool with_metadata = true;

    /// Sets (or adds) a metadata key.
    spec_t &set(std::string const &key, std::string const &value) {
        for (auto &[k, v] : metadata)
            if (k == key) {
                v = value;
                return *this;
            }
        metadata.emplace_back(key, value);
        return *this;
    }
    /// Removes a metadata key.
    spec_t &unset(std::string const &key) {
        std::erase_if(metadata, [&](auto const &kv) { return kv.first == key; });
        return *this;
    }
    /// The tensor named `name` (which must exist).
    tensor_t &tensor(std::string const &name) {
        for (tensor_t &t : tensors)
            if (t.name == name) return t;
        std::printf("test bug: no tensor %s\n", name.c_str());
        std::abort();
    }
    /// Removes a tensor.
    spec_t &drop(std::string const &name) {
        std::erase_if(tensors, [&](tensor_t const &t) { return t.name == name; });
        return *this;
    }
    /// Removes every metadata key and tensor whose name starts with `prefix`.
    spec_t &drop_prefix(std::string const &meta_prefix, std::vector<std::string> const &names) {
        std::erase_if(metadata, [&](auto const &kv) { return kv.first.starts_with(meta_prefix); });
        for (auto const &n : names) drop(n);
        return *this;
    }
};

/// Bytes per element of a safetensors dtype name (0 for unknown names).
std::uint64_t dtype_bytes(std::string_view dtype) {
    if (dtype == "BF16" || dtype == "F16" || dtype == "I16") return 2;
    if (dtype == "F32" || dtype == "I32") return 4;
    if (dtype == "F64" || dtype == "I64") return 8;
    if (dtype == "F8_E4M3" || dtype == "F8_E5M2" || dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
    return 2;
}

/// The tiny geometry of docs/model.md with every modality and head.
spec_t tiny() {
    spec_t s;
    s.metadata = {
        {"format", "uform"},
        {"uform.version", "1"},
        {"uform.depth", "2"},
        {"uform.hidden", "64"},
        {"uform.heads", "2"},
        {"uform.head_dim", "32"},
        {"uform.ffn_hidden", "192"},
        {"uform.norm_eps", "1e-06"},
        {"uform.rope.theta", "10000"},
        {"uform.rope.sections", "4,6,6"},
        {"uform.dimensions", "64"},
        {"uform.token_width", "32"},
        {"uform.choice.groups", "2"},
        {"uform.image.patch_side", "8"},
        {"uform.image.channels", "3"},
        {"uform.image.max_patches", "64"},
        {"uform.image.mean", "0.5,0.5,0.5"},
        {"uform.image.std", "0.5,0.5,0.5"},
        {"uform.video.tubelet_frames", "2"},
        {"uform.video.fps", "1"},
        {"uform.video.max_frames", "4"},
        {"uform.video.max_patches_per_frame", "16"},
        {"uform.audio.sample_rate", "16000"},
        {"uform.audio.n_fft", "400"},
        {"uform.audio.hop", "160"},
        {"uform.audio.mel_bins", "80"},
        {"uform.audio.frames_per_patch", "4"},
        {"uform.audio.max_patches", "256"},
    };
    auto add = [&](std::string name, std::vector<std::uint64_t> shape, std::string dtype = "BF16") {
        s.tensors.push_back({std::move(name), std::move(dtype), std::move(shape), std::nullopt, {}, {}});
    };
    add("embed.byte.weight", {258, 64});
    add("embed.image.weight", {64, 192});
    add("embed.image.bias", {64});
    add("embed.video.weight", {64, 384});
    add("embed.video.bias", {64});
    add("embed.audio.weight", {64, 320});
    add("embed.audio.bias", {64});
    add("frontend.audio.mel_filters", {80, 201}, "F32");
    for (int i = 0; i != 2; ++i) {
        std::string const p = "blocks." + std::to_string(i) + ".";
        add(p + "attn_norm.weight", {64});
        add(p + "attn.qkv.weight", {192, 64});
        add(p + "attn.out.weight", {64, 64});
        add(p + "mlp_norm.weight", {64});
        add(p + "mlp.gate_up.weight", {384, 64});
        add(p + "mlp.down.weight", {64, 192});
    }
    add("final_norm.weight", {64});
    add("head.embedding.weight", {64, 64});
    add("head.token.weight", {32, 64});
    add("head.byte.weight", {256, 64});
    add("head.choice.temperatures", {2}, "F32");
    return s;
}

std::vector<std::string> const image_tensors = {"embed.image.weight", "embed.image.bias"};
std::vector<std::string> const video_tensors = {"embed.video.weight", "embed.video.bias"};
std::vector<std::string> const audio_tensors = {"embed.audio.weight", "embed.audio.bias", "frontend.audio.mel_filters"};

/// Quotes a string for JSON, escaping quotes only: a backslash in `text` starts a JSON escape.
std::string quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"') out.push_back('\\');
        out.push_back(c);
    }
    return out + "\"";
}

/// A rendered header: its JSON and the size of the data section its offsets need.
struct header_t {
    std::string json;
    std::uint64_t data_size = 0;
    /// The file size of a checkpoint with this header and its data section.
    std::uint64_t file_size() const { return 8 + json.size() + data_size; }
};

/// Renders a spec as safetensors JSON, laying tensors out back to back, padded with spaces to 8.
header_t render(spec_t const &s) {
    header_t h;
    std::string &j = h.json;
    j = "{";
    bool first = true;
    if (s.with_metadata) {
        j += "\"__metadata__\":{";
        for (std::size_t i = 0; i != s.metadata.size(); ++i)
            j += (i ? "," : "") + quote(s.metadata[i].first) + ":" + quote(s.metadata[i].second);
        j += "}";
        first = false;
    }
    std::uint64_t cursor = 0;
    for (tensor_t const &t : s.tensors) {
        j += (first ? "" : ",") + quote(t.name) + ":";
        first = false;
        if (!t.raw.empty()) {
            j += t.raw;
            continue;
        }
        std::uint64_t bytes = dtype_bytes(t.dtype);
        std::string shape = "[";
        for (std::size_t i = 0; i != t.shape.size(); ++i) {
            bytes *= t.shape[i];
            shape += (i ? "," : "") + std::to_string(t.shape[i]);
        }
        shape += "]";
        auto [begin, end] = t.offsets.value_or(std::pair{cursor, cursor + bytes});
        if (!t.offsets) cursor += bytes;
        h.data_size = std::max({h.data_size, cursor, end});
        j += "{\"dtype\":" + quote(t.dtype) + ",\"shape\":" + shape + ",\"data_offsets\":[" + std::to_string(begin) +
             "," + std::to_string(end) + "]" + t.extra + "}";
    }
    j += "}";
    while (j.size() % 8 != 0) j.push_back(' ');
    return h;
}

/// A whole checkpoint file in memory: the length prefix, the header and a zeroed data section.
std::string file_bytes(header_t const &h) {
    std::string out(8, '\0');
    std::uint64_t const n = h.json.size();
    for (int i = 0; i != 8; ++i) out[std::size_t(i)] = char((n >> (8 * i)) & 0xFF);
    out += h.json;
    out.append(std::size_t(h.data_size), '\0');
    return out;
}

// endregion

// region: running

/// Parses `json` for a file of `file_size` bytes; asserts the status, a message on failure, `out` kept.
uform::checkpoint_t expect_parse(uform_status_t want, std::string_view json, std::uint64_t file_size,
                                 std::string const &label, char const *want_message = nullptr) {
    uform::checkpoint_t c{};
    c.file_size = 12345; // a sentinel: a failure must leave `out` untouched
    char const *message = nullptr;
    uform_status_t const got = uform::checkpoint_parse(json, file_size, c, &message);
    bool ok = got == want;
    if (want != uform_status_ok_k)
        ok = ok && message != nullptr && std::string_view(message).starts_with("checkpoint: ") && c.file_size == 12345;
    if (ok && want_message) ok = message && std::string_view(message) == want_message;
    check(ok,
          label + " (got status " + std::to_string(int(got)) + ", want " + std::to_string(int(want)) +
              ", message: " + (message ? message : "none") + ")",
          __LINE__);
    return c;
}

/// Renders `s` and expects `want` from parsing it with a matching file size.
uform::checkpoint_t expect_spec(uform_status_t want, spec_t const &s, std::string const &label,
                                char const *want_message = nullptr) {
    header_t const h = render(s);
    return expect_parse(want, h.json, h.file_size(), label, want_message);
}

/// Expects `want` from `checkpoint_read_buffer` over `bytes`.
void expect_buffer(uform_status_t want, std::string const &bytes, std::string const &label) {
    uform::checkpoint_t c{};
    char const *message = nullptr;
    uform_status_t const got = uform::checkpoint_read_buffer(bytes.data(), bytes.size(), c, &message);
    check(got == want && (want == uform_status_ok_k || message != nullptr),
          label + " (got status " + std::to_string(int(got)) + ", message: " + (message ? message : "none") + ")",
          __LINE__);
}

/// Expects `want` from `checkpoint_read_file` over `path`.
uform::checkpoint_t expect_file(uform_status_t want, std::string_view path, std::string const &label) {
    uform::checkpoint_t c{};
    char const *message = nullptr;
    uform_status_t const got = uform::checkpoint_read_file(path.data(), path.size(), c, &message);
    check(got == want && (want == uform_status_ok_k || message != nullptr),
          label + " (got status " + std::to_string(int(got)) + ", message: " + (message ? message : "none") + ")",
          __LINE__);
    return c;
}

/// A little-endian length prefix followed by `rest`.
std::string prefixed(std::uint64_t length, std::string_view rest) {
    std::string out(8, '\0');
    for (int i = 0; i != 8; ++i) out[std::size_t(i)] = char((length >> (8 * i)) & 0xFF);
    return out.append(rest);
}

constexpr uform_status_t ok = uform_status_ok_k;
constexpr uform_status_t corrupt = uform_status_corrupt_k;
constexpr uform_status_t mismatch = uform_status_shape_mismatch_k;
constexpr uform_status_t unsupported = uform_status_unsupported_k;
constexpr uform_status_t invalid = uform_status_invalid_argument_k;

// endregion

// region: JSON

/// Parses `text` as JSON and expects `want`.
void expect_json(uform::json::error_t want, std::string_view text, uform::json::limits_t limits = {}) {
    uform::json::value_t v;
    uform::json::error_t const got = uform::json::parse(text, v, limits);
    check(got == want,
          "json " + std::string(text.substr(0, 60)) + " -> " + std::to_string(int(got)) + ", want " +
              std::to_string(int(want)),
          __LINE__);
}

/// The JSON parser on its own: grammar, escapes, UTF-8, numbers, limits.
void test_json() {
    using uform::json::error_t;
    using uform::json::kind_t;
    using uform::json::parse;
    using uform::json::value_t;

    for (auto text : {"{}"sv, "[]"sv, " {\"a\" : [1, 2.5e3, -0, true, false, null, \"\"]}\t\r\n"sv, "0"sv, "\"x\""sv,
                      "[[[]]]"sv, "-1.5E-3"sv, "1e+2"sv, "{\"a\":{\"a\":1}}"sv})
        expect_json(error_t::none, text);
    expect_json(error_t::empty, "");
    expect_json(error_t::empty, " \n ");
    expect_json(error_t::trailing_garbage, "{} x");
    expect_json(error_t::trailing_garbage, "{}{}");
    expect_json(error_t::trailing_garbage, "{}\x00"sv);
    expect_json(error_t::unexpected_char, "\xEF\xBB\xBF{}"); // a BOM
    expect_json(error_t::unexpected_end, "{");
    expect_json(error_t::unexpected_end, "{\"a\":");
    expect_json(error_t::unexpected_end, "[1,");
    expect_json(error_t::unexpected_end, "\"abc");
    expect_json(error_t::unexpected_char, "[1,]");
    expect_json(error_t::unexpected_char, "{\"a\":1,}");
    expect_json(error_t::unexpected_char, "{\"a\" 1}");
    expect_json(error_t::unexpected_char, "{a:1}");
    expect_json(error_t::unexpected_char, "['a']");
    expect_json(error_t::unexpected_char, "[1 2]");
    expect_json(error_t::invalid_literal, "tru");
    expect_json(error_t::invalid_literal, "nul");
    expect_json(error_t::unexpected_char, "True");
    expect_json(error_t::unexpected_char, "NaN");
    for (auto text : {"01"sv, "-"sv, "1."sv, "-01"sv, "1e"sv, "1e+"sv, "+1"sv, ".5"sv, "0x10"sv}) {
        value_t v;
        check(parse(text, v) != error_t::none, "json number " + std::string(text), __LINE__);
    }
    expect_json(error_t::invalid_number, "01");
    expect_json(error_t::invalid_number, "1.");
    expect_json(error_t::control_in_string, "\"a\nb\"");
    expect_json(error_t::control_in_string, "\"\t\"");
    expect_json(error_t::invalid_escape, "\"\\x\"");
    expect_json(error_t::invalid_escape, "\"\\u12\"");
    expect_json(error_t::invalid_escape, "\"\\u12G4\"");
    expect_json(error_t::invalid_escape, "\"\\'\"");
    expect_json(error_t::lone_surrogate, "\"\\ud83d\"");
    expect_json(error_t::lone_surrogate, "\"\\ude00\"");
    expect_json(error_t::lone_surrogate, "\"\\ud83d\\u0041\"");
    expect_json(error_t::lone_surrogate, "\"\\ud83dx\"");
    expect_json(error_t::invalid_escape, "\"\\ud83d\\uZZZZ\"");
    expect_json(error_t::invalid_utf8, "\"\xC0\x80\"");         // overlong NUL
    expect_json(error_t::invalid_utf8, "\"\xE0\x80\xAF\"");     // overlong slash
    expect_json(error_t::invalid_utf8, "\"\xED\xA0\x80\"");     // an encoded surrogate
    expect_json(error_t::invalid_utf8, "\"\xF4\x90\x80\x80\""); // past U+10FFFF
    expect_json(error_t::invalid_utf8, "\"\xFF\"");
    expect_json(error_t::invalid_utf8, "\"\x80\"");
    expect_json(error_t::invalid_utf8, "\"\xC3\x28\"");
    expect_json(error_t::unexpected_end, "\"\xC3");
    expect_json(error_t::none, "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xF4\x8F\xBF\xBF\"");
    expect_json(error_t::duplicate_key, "{\"a\":1,\"b\":2,\"a\":3}");
    expect_json(error_t::duplicate_key, "[{\"x\":{\"k\":1,\"k\":1}}]");
    expect_json(error_t::duplicate_key, "{\"\\u0061\":1,\"a\":2}"); // equal after decoding
    expect_json(error_t::none, "{\"a\":1,\"A\":2,\"a \":3}");

    // Depth and value limits.
    std::string deep(64, '[');
    deep += std::string(64, ']');
    expect_json(error_t::none, deep);
    expect_json(error_t::too_deep, "[" + deep + "]");
    expect_json(error_t::too_deep, "{\"a\":" + deep + "}");
    expect_json(error_t::too_deep, std::string(100000, '[')); // no stack overflow
    expect_json(error_t::none, "[1,2,3]", {64, 4});
    expect_json(error_t::too_many_values, "[1,2,3,4]", {64, 4});

    // Decoded values.
    value_t v;
    CHECK(parse("\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u00e9\\u20AC\\ud83d\\ude00z\"", v) == error_t::none);
    CHECK(v.kind == kind_t::string && v.string == "a\"\\/\b\f\n\r\t\0\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80z"s);
    CHECK(parse("[0, 18446744073709551615, 18446744073709551616, -0, 1e2, 1.0, 42]", v) == error_t::none);
    CHECK(v.kind == kind_t::array && v.items.size() == 7);
    if (v.items.size() == 7) {
        CHECK(v.items[0].is_integer && v.items[0].integer == 0);
        CHECK(v.items[1].is_integer && v.items[1].integer == 18446744073709551615ull);
        CHECK(v.items[2].kind == kind_t::number && !v.items[2].is_integer); // overflow detected
        CHECK(!v.items[3].is_integer && !v.items[4].is_integer && !v.items[5].is_integer);
        CHECK(v.items[6].is_integer && v.items[6].integer == 42);
    }
    CHECK(parse("{\"b\":true,\"a\":null}", v) == error_t::none);
    CHECK(v.kind == kind_t::object && v.keys.size() == 2 && v.keys[0] == "b");
    CHECK(v.find("b") && v.find("b")->kind == kind_t::boolean && v.find("b")->boolean);
    CHECK(v.find("a") && v.find("a")->kind == kind_t::null_);
    CHECK(v.find("c") == nullptr);
    CHECK(v.items[0].find("x") == nullptr); // find on a non-object
}

// endregion

// region: checkpoints

/// A directory of this process's own under the system's temporary one, so that concurrent runs never share files.
std::filesystem::path scratch_directory() {
    return std::filesystem::temp_directory_path() / ("uform_checkpoint_test_" + std::to_string(::getpid()));
}

/// Valid headers: the full tiny geometry and its legal variations.
void test_valid() {
    uform::checkpoint_t c = expect_spec(ok, tiny(), "tiny");
    uform::geometry_t const &g = c.geometry;
    CHECK(c.tensors.size() == 25);
    CHECK(g.version == 1 && g.depth == 2 && g.hidden == 64 && g.heads == 2 && g.head_dim == 32);
    CHECK(g.ffn_hidden == 192 && g.norm_eps == 1e-6f && g.rope_theta == 10000.0f);
    CHECK(g.rope_sections[0] == 4 && g.rope_sections[1] == 6 && g.rope_sections[2] == 6);
    CHECK(g.dimensions == 64 && g.token_width == 32 && g.choice_groups == 2);
    CHECK(g.has_image && g.has_video && g.has_audio && g.has_token_head && g.has_byte_head);
    CHECK(g.image_patch_side == 8 && g.image_channels == 3 && g.image_max_patches == 64);
    CHECK(g.image_mean[0] == 0.5f && g.image_mean[2] == 0.5f && g.image_std[1] == 0.5f);
    CHECK(g.video_tubelet_frames == 2 && g.video_fps == 1.0f && g.video_max_frames == 4);
    CHECK(g.video_max_patches_per_frame == 16);
    CHECK(g.audio_sample_rate == 16000 && g.audio_n_fft == 400 && g.audio_hop == 160 && g.audio_mel_bins == 80);
    CHECK(g.audio_frames_per_patch == 4 && g.audio_max_patches == 256);
    header_t const h = render(tiny());
    CHECK(c.data_offset == 8 + h.json.size() && c.file_size == h.file_size());
    CHECK(h.data_size == 471112); // the same layout as tests/data/tiny.safetensors
    CHECK(std::is_sorted(c.tensors.begin(), c.tensors.end(),
                         [](auto const &a, auto const &b) { return a.name < b.name; }));
    uform::tensor_entry_t const *qkv = c.find("blocks.1.attn.qkv.weight");
    CHECK(qkv && qkv->dtype == uform::dtype_t::bf16 && qkv->shape == std::vector<std::size_t>({192, 64}));
    CHECK(qkv && qkv->end - qkv->begin == 192 * 64 * 2);
    uform::tensor_entry_t const *mel = c.find("frontend.audio.mel_filters");
    CHECK(mel && mel->dtype == uform::dtype_t::f32 && mel->shape == std::vector<std::size_t>({80, 201}));
    CHECK(c.find("blocks.2.attn.qkv.weight") == nullptr && c.find("") == nullptr && c.find("zzz") == nullptr);
    for (auto const &t : c.tensors) CHECK_LABEL(c.find(t.name) == &t, t.name);

    // Text only: modality tensors and keys gone; or tensors gone and keys kept (ignored, still valid).
    spec_t text = tiny();
    text.drop_prefix("uform.image.", image_tensors)
        .drop_prefix("uform.video.", video_tensors)
        .drop_prefix("uform.audio.", audio_tensors);
    c = expect_spec(ok, text, "text only");
    CHECK(!c.geometry.has_image && !c.geometry.has_video && !c.geometry.has_audio);
    CHECK(c.geometry.image_patch_side == 0 && c.geometry.video_fps == 0 && c.geometry.audio_n_fft == 0);
    CHECK(c.tensors.size() == 18);
    spec_t text_keys = tiny();
    for (auto const &n : image_tensors) text_keys.drop(n);
    for (auto const &n : video_tensors) text_keys.drop(n);
    for (auto const &n : audio_tensors) text_keys.drop(n);
    c = expect_spec(ok, text_keys, "text only with modality keys");
    CHECK(!c.geometry.has_image && c.geometry.image_patch_side == 0 && c.geometry.audio_mel_bins == 0);

    // Each modality alone; video alone keeps the image keys it needs.
    c = expect_spec(ok, spec_t(text_keys).set("x", "y"), "text only, extra non-uform metadata");
    spec_t video = tiny();
    video.drop_prefix("uform.audio.", audio_tensors);
    for (auto const &n : image_tensors) video.drop(n);
    c = expect_spec(ok, video, "video without image embedding");
    CHECK(!c.geometry.has_image && c.geometry.has_video && c.geometry.image_patch_side == 8);
    CHECK(c.geometry.video_tubelet_frames == 2 && c.geometry.image_std[0] == 0.5f);
    spec_t audio = tiny();
    audio.drop_prefix("uform.video.", video_tensors);
    for (auto const &n : image_tensors) audio.drop(n);
    c = expect_spec(ok, audio, "audio only");
    CHECK(c.geometry.has_audio && !c.geometry.has_image && c.geometry.image_channels == 0);

    // Optional heads.
    c = expect_spec(ok, spec_t(tiny()).drop("head.token.weight").unset("uform.token_width"), "no token head");
    CHECK(!c.geometry.has_token_head && c.geometry.token_width == 0);
    c = expect_spec(ok, spec_t(tiny()).drop("head.token.weight").set("uform.token_width", "0"), "token width 0");
    CHECK(!c.geometry.has_token_head && c.geometry.token_width == 0);
    spec_t no_byte = tiny();
    no_byte.drop("head.byte.weight").drop("head.choice.temperatures").unset("uform.choice.groups");
    c = expect_spec(ok, no_byte, "no byte head");
    CHECK(!c.geometry.has_byte_head && c.geometry.choice_groups == 0);
    c = expect_spec(ok, spec_t(no_byte).set("uform.choice.groups", "0"), "no byte head, groups 0");
    c = expect_spec(ok, spec_t(tiny()).drop("head.choice.temperatures").set("uform.choice.groups", "0"),
                    "byte head without choices");
    CHECK(c.geometry.has_byte_head && c.geometry.choice_groups == 0);
    spec_t bare = text;
    bare.drop("head.token.weight").drop("head.byte.weight").drop("head.choice.temperatures");
    bare.unset("uform.token_width").unset("uform.choice.groups");
    c = expect_spec(ok, bare, "the smallest checkpoint");
    CHECK(c.tensors.size() == 15);

    // Free order, gaps, padding, other metadata, other valid spellings of values.
    spec_t reversed = tiny();
    std::reverse(reversed.tensors.begin(), reversed.tensors.end());
    std::reverse(reversed.metadata.begin(), reversed.metadata.end());
    expect_spec(ok, reversed, "reversed order");
    {
        spec_t no_meta = tiny();
        no_meta.with_metadata = false;
        header_t body = render(no_meta);
        std::string meta_json = render(spec_t{tiny().metadata, {}, true}).json; // {"__metadata__":{...}}
        while (meta_json.back() == ' ') meta_json.pop_back();
        while (body.json.back() == ' ') body.json.pop_back();
        std::string json = body.json.substr(0, body.json.size() - 1) + "," + meta_json.substr(1);
        expect_parse(ok, json, 8 + json.size() + body.data_size, "metadata after the tensors");
    }
    spec_t gaps = tiny();
    std::uint64_t cursor = 0;
    for (tensor_t &t : gaps.tensors) {
        std::uint64_t bytes = dtype_bytes(t.dtype);
        for (auto d : t.shape) bytes *= d;
        cursor += 64; // a 64-byte gap before each tensor
        t.offsets = std::pair{cursor, cursor + bytes};
        cursor += bytes;
    }
    expect_spec(ok, gaps, "gaps between tensors");
    expect_parse(ok, h.json + "   \t\n\r ", h.file_size() + 7, "trailing JSON whitespace");
    expect_parse(ok, " \n" + h.json, h.file_size() + 2, "leading JSON whitespace");
    expect_parse(ok, h.json, h.file_size() + 1000, "data section longer than the tensors");
    expect_spec(ok, spec_t(tiny()).set("note", "caf\\u00e9 \\ud83d\\ude00"), "escapes in other metadata");
    expect_spec(ok, spec_t(tiny()).set("uform.norm_eps", "0.000001").set("uform.rope.theta", "1e4"), "float forms");
    expect_spec(ok, spec_t(tiny()).set("uform.image.mean", "-0.5,0,1e-3"), "negative and zero means");
    expect_spec(ok, spec_t(tiny()).set("uform.rope.sections", "16,0,0"), "empty rope sections");
    expect_spec(ok, spec_t(tiny()).set("uform.depth", "0002"), "leading zeros in a count");

    // The same through read_buffer and read_file.
    std::string const bytes = file_bytes(h);
    expect_buffer(ok, bytes, "read_buffer tiny");
    std::filesystem::path const dir = scratch_directory();
    std::filesystem::create_directories(dir);
    std::filesystem::path const path = dir / "tiny.safetensors";
    std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
    c = expect_file(ok, path.string(), "read_file tiny");
    CHECK(c.tensors.size() == 25 && c.file_size == bytes.size());
}

/// The 8-byte prefix and the bounds of the header length.
void test_prefix() {
    header_t const h = render(tiny());
    std::string const bytes = file_bytes(h);
    expect_buffer(corrupt, "", "empty buffer");
    expect_buffer(corrupt, bytes.substr(0, 7), "7 bytes");
    expect_buffer(corrupt, bytes.substr(0, 8), "only the prefix");
    expect_buffer(corrupt, bytes.substr(0, 8 + h.json.size() - 1), "header cut short");
    expect_buffer(corrupt, bytes.substr(0, 8 + h.json.size()), "no data section");
    expect_buffer(corrupt, bytes.substr(0, bytes.size() - 1), "data section one byte short");
    expect_buffer(corrupt, prefixed(0, "{}"), "header length 0");
    expect_buffer(corrupt, prefixed((100ull << 20) + 1, std::string(16, ' ')), "header length past 100 MiB");
    expect_buffer(corrupt, prefixed(~0ull, "{}"), "header length 2^64-1");
    expect_buffer(corrupt, prefixed(1ull << 63, "{}"), "header length 2^63");
    expect_buffer(corrupt, prefixed(3, "{}"), "header length past the end");
    expect_buffer(unsupported, prefixed(2, "{}"), "an empty object");
    expect_buffer(unsupported, prefixed(19, "{\"__metadata__\":{}}"), "empty metadata");
    expect_buffer(corrupt, prefixed(19, "{\"__metadata__\":[]}"), "metadata an array");
    uform::checkpoint_t c{};
    char const *message = nullptr;
    CHECK(uform::checkpoint_read_buffer(nullptr, 8, c, &message) == invalid && message);
    CHECK(uform::checkpoint_read_buffer(nullptr, 0, c, nullptr) == corrupt); // a NULL message pointer is fine
    expect_parse(corrupt, "", 100, "checkpoint_parse of an empty header");
    expect_parse(corrupt, "{}", 9, "checkpoint_parse past the file size");
    expect_parse(corrupt, "{}", 0, "checkpoint_parse of a zero-byte file");
}

/// Headers that are not JSON, or not the JSON safetensors expects at the top.
void test_json_headers() {
    header_t const h = render(tiny());
    auto const bad = [&](std::string const &json, std::string const &label) {
        expect_parse(corrupt, json, 8 + json.size() + h.data_size, label);
    };
    bad("not json", "not json");
    bad("[]", "an array");
    bad("\"text\"", "a string");
    bad(h.json + "x", "trailing garbage");
    bad(h.json + std::string(1, '\0'), "a trailing NUL");
    bad(h.json.substr(0, h.json.size() / 2), "truncated");
    bad("\xEF\xBB\xBF" + h.json, "a BOM");
    std::string dup = h.json;
    dup.insert(1, "\"final_norm.weight\":{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[0,128]},");
    bad(dup, "a duplicate tensor");
    std::string dup_meta = h.json;
    dup_meta.insert(dup_meta.find("\"format\""), "\"format\":\"uform\",");
    bad(dup_meta, "a duplicate metadata key");
    bad(render(spec_t(tiny()).set("note", "\\ud800")).json, "a lone surrogate");
    bad(render(spec_t(tiny()).set("note", "\\x")).json, "a bad escape");
    bad(render(spec_t(tiny()).set("note", "a\tb")).json, "a raw tab");
    bad(render(spec_t(tiny()).set("note", "\xC0\xAF")).json, "overlong UTF-8");
    bad(render(spec_t(tiny()).set("note", "\xED\xA0\x80")).json, "an encoded surrogate");
    std::string deep(70, '[');
    bad("{\"__metadata__\":{\"format\":\"uform\"},\"x\":" + deep + std::string(70, ']') + "}", "too deep");
    // The exact message of a JSON failure.
    expect_parse(corrupt, "{\"a\":1,\"a\":1}", 100, "duplicate key message",
                 "checkpoint: the header JSON has a duplicate key");
}

/// `__metadata__`, `format`, `uform.version` and unknown keys.
void test_metadata() {
    spec_t none = tiny();
    none.with_metadata = false;
    expect_spec(unsupported, none, "no __metadata__");
    expect_spec(unsupported, spec_t(tiny()).set("format", "pt"), "format pt");
    expect_spec(unsupported, spec_t(tiny()).set("format", "UFORM"), "format UFORM");
    expect_spec(unsupported, spec_t(tiny()).unset("format"), "no format");
    expect_spec(unsupported, spec_t(tiny()).set("uform.version", "2"), "version 2");
    expect_spec(unsupported, spec_t(tiny()).set("uform.version", "01"), "version 01");
    expect_spec(unsupported, spec_t(tiny()).set("uform.version", "1.0"), "version 1.0");
    expect_spec(unsupported, spec_t(tiny()).set("uform.version", "0"), "version 0");
    expect_spec(corrupt, spec_t(tiny()).unset("uform.version"), "no version");
    expect_spec(corrupt, spec_t(tiny()).set("uform.depht", "2"), "an unknown uform. key");
    expect_spec(corrupt, spec_t(tiny()).set("uform.", "2"), "the bare uform. prefix");
    expect_spec(ok, spec_t(tiny()).set("uform", "2").set("uformat", "x"), "keys outside the namespace");
    header_t const h = render(tiny());
    std::string json = h.json;
    std::size_t const at = json.find("\"format\"");
    json.insert(at, "\"n\":1,");
    expect_parse(corrupt, json, 8 + json.size() + h.data_size, "a number in __metadata__");
    json = h.json;
    json.insert(at, "\"n\":[\"x\"],");
    expect_parse(corrupt, json, 8 + json.size() + h.data_size, "an array in __metadata__");
    std::string const not_object = "{\"__metadata__\":[],\"x\":{}}";
    expect_parse(corrupt, not_object, 1000, "__metadata__ is an array");
    std::string const string_meta = "{\"__metadata__\":\"uform\"}";
    expect_parse(corrupt, string_meta, 1000, "__metadata__ is a string");
}

/// Every geometry key: missing, malformed, out of range, inconsistent.
void test_geometry() {
    char const *trunk[] = {"uform.depth",
                           "uform.hidden",
                           "uform.heads",
                           "uform.head_dim",
                           "uform.ffn_hidden",
                           "uform.norm_eps",
                           "uform.rope.theta",
                           "uform.rope.sections",
                           "uform.dimensions",
                           "uform.token_width",
                           "uform.choice.groups",
                           "uform.image.patch_side",
                           "uform.image.channels",
                           "uform.image.max_patches",
                           "uform.image.mean",
                           "uform.image.std",
                           "uform.video.tubelet_frames",
                           "uform.video.fps",
                           "uform.video.max_frames",
                           "uform.video.max_patches_per_frame",
                           "uform.audio.sample_rate",
                           "uform.audio.n_fft",
                           "uform.audio.hop",
                           "uform.audio.mel_bins",
                           "uform.audio.frames_per_patch",
                           "uform.audio.max_patches"};
    for (char const *key : trunk) {
        expect_spec(corrupt, spec_t(tiny()).unset(key), "missing "s + key,
                    ("checkpoint: metadata "s + key + " is missing").c_str());
        for (char const *value : {"", " ", "x", "1 ", "nan", "inf", "-inf", "1e99", "1,2,3,4", "0x10"})
            expect_spec(corrupt, spec_t(tiny()).set(key, value), key + " = '"s + value + "'");
    }
    char const *counts[] = {"uform.depth",
                            "uform.hidden",
                            "uform.heads",
                            "uform.head_dim",
                            "uform.ffn_hidden",
                            "uform.dimensions",
                            "uform.token_width",
                            "uform.choice.groups",
                            "uform.image.patch_side",
                            "uform.image.channels",
                            "uform.image.max_patches",
                            "uform.video.tubelet_frames",
                            "uform.video.max_frames",
                            "uform.video.max_patches_per_frame",
                            "uform.audio.sample_rate",
                            "uform.audio.n_fft",
                            "uform.audio.hop",
                            "uform.audio.mel_bins",
                            "uform.audio.frames_per_patch",
                            "uform.audio.max_patches"};
    for (char const *key : counts)
        for (char const *value : {"+2", "-2", "2.0", "2e0", " 2", "2 ", "٢", "18446744073709551617", "2147483648",
                                  "99999999999999999999999999999"})
            expect_spec(corrupt, spec_t(tiny()).set(key, value), key + " = '"s + value + "'");
    for (char const *key :
         {"uform.depth", "uform.hidden", "uform.heads", "uform.head_dim", "uform.ffn_hidden", "uform.dimensions",
          "uform.token_width", "uform.image.patch_side", "uform.image.channels", "uform.image.max_patches",
          "uform.video.tubelet_frames", "uform.video.max_frames", "uform.video.max_patches_per_frame",
          "uform.audio.sample_rate", "uform.audio.n_fft", "uform.audio.hop", "uform.audio.mel_bins",
          "uform.audio.frames_per_patch", "uform.audio.max_patches"})
        expect_spec(corrupt, spec_t(tiny()).set(key, "0"), key + " = 0"s);
    char const *positive_floats[] = {"uform.norm_eps", "uform.rope.theta", "uform.video.fps"};
    for (char const *key : positive_floats)
        for (char const *value : {"0", "-1", "-0", "1e-50", "+1", "1e", ".", "1,0", "0x1p3", "1e39"})
            expect_spec(corrupt, spec_t(tiny()).set(key, value), key + " = '"s + value + "'");
    for (char const *key : {"uform.image.mean", "uform.image.std"})
        for (char const *value : {"0.5,0.5", "0.5,0.5,0.5,0.5", "0.5,,0.5", ",0.5,0.5", "0.5,0.5,", "0.5, 0.5,0.5",
                                  "0.5;0.5;0.5", "0.5,nan,0.5", "0.5,inf,0.5"})
            expect_spec(corrupt, spec_t(tiny()).set(key, value), key + " = '"s + value + "'");
    expect_spec(corrupt, spec_t(tiny()).set("uform.image.std", "0.5,0,0.5"), "a zero std");
    expect_spec(corrupt, spec_t(tiny()).set("uform.image.std", "0.5,-1,0.5"), "a negative std");
    expect_spec(corrupt, spec_t(tiny()).set("uform.image.channels", "1"), "one channel");
    expect_spec(corrupt, spec_t(tiny()).set("uform.image.channels", "4"), "four channels");
    for (char const *value : {"4,6", "4,6,6,0", "4,6,7", "4,6,5", "16,0,1", "4,-6,6", "4,6,x", "", "4.0,6,6"})
        expect_spec(corrupt, spec_t(tiny()).set("uform.rope.sections", value), "rope.sections = "s + value);
    expect_spec(corrupt, spec_t(tiny()).set("uform.head_dim", "33").set("uform.rope.sections", "4,6,6"), "odd head_dim",
                "checkpoint: metadata uform.head_dim must be even");
    expect_spec(corrupt, spec_t(tiny()).set("uform.rope.sections", "4,6,7"), "sections sum",
                "checkpoint: metadata uform.rope.sections must sum to uform.head_dim / 2");
    expect_spec(corrupt, spec_t(tiny()).set("uform.heads", "65536").set("uform.head_dim", "65536"),
                "heads * head_dim too large", "checkpoint: metadata uform.heads * uform.head_dim is too large");
    spec_t huge_video = tiny();
    for (auto const &n : image_tensors) huge_video.drop(n);
    huge_video.set("uform.image.patch_side", "2147483647").set("uform.video.tubelet_frames", "2147483647");
    expect_spec(corrupt, huge_video, "patch products overflow", "checkpoint: the geometry's tensor sizes overflow");
    // Geometry keys that disagree with the tensors are shape mismatches.
    expect_spec(mismatch, spec_t(tiny()).set("uform.hidden", "65"), "hidden 65");
    expect_spec(mismatch, spec_t(tiny()).set("uform.image.patch_side", "4"), "patch side 4");
    expect_spec(mismatch, spec_t(tiny()).set("uform.audio.n_fft", "512"), "n_fft 512");
    // Budgets and values that would make a call's memory or time unbounded, or its outputs NaN, are refused at load.
    expect_spec(corrupt, spec_t(tiny()).set("uform.audio.n_fft", "401"), "an odd n_fft",
                "checkpoint: metadata uform.audio.n_fft is out of range");
    for (auto const &[key, value] :
         std::initializer_list<std::pair<char const *, char const *>>{{"uform.image.max_patches", "65537"},
                                                                      {"uform.image.max_patches", "2147483647"},
                                                                      {"uform.audio.max_patches", "65537"},
                                                                      {"uform.audio.sample_rate", "999"},
                                                                      {"uform.audio.sample_rate", "384001"},
                                                                      {"uform.audio.hop", "401"},
                                                                      {"uform.video.max_frames", "1025"},
                                                                      {"uform.norm_eps", "3.4e38"},
                                                                      {"uform.norm_eps", "1.5"},
                                                                      {"uform.image.mean", "0.5,3e38,0.5"},
                                                                      {"uform.image.mean", "-1001,0.5,0.5"},
                                                                      {"uform.image.std", "0.5,0.5,3e38"},
                                                                      {"uform.image.std", "0.0001,0.5,0.5"}})
        expect_spec(corrupt, spec_t(tiny()).set(key, value), key + " = "s + value,
                    ("checkpoint: metadata "s + key + " is out of range").c_str());
    expect_spec(corrupt, spec_t(tiny()).set("uform.audio.max_patches", "30000"), "audio budget past 2^24 samples",
                "checkpoint: metadata uform.audio.max_patches * frames_per_patch * hop exceeds 2^24 samples");
    expect_spec(corrupt, spec_t(tiny()).set("uform.video.max_patches_per_frame", "40000"), "video budget",
                "checkpoint: metadata uform.video.max_frames and max_patches_per_frame allow too many tokens");
    expect_spec(ok,
                spec_t(tiny())
                    .set("uform.image.max_patches", "65536")
                    .set("uform.audio.sample_rate", "384000")
                    .set("uform.norm_eps", "1")
                    .set("uform.image.std", "0.001,1000,0.5"),
                "budgets and values at their bounds");
    expect_spec(corrupt, spec_t(tiny()).set("uform.video.fps", "1e-4"), "video fps 1e-4",
                "checkpoint: metadata uform.video.fps is out of range");
    expect_spec(corrupt, spec_t(tiny()).set("uform.video.fps", "2000"), "video fps 2000");
    expect_spec(corrupt, spec_t(tiny()).set("uform.depth", "3"), "depth 3 misses blocks.2",
                "checkpoint: tensor blocks.N.attn_norm.weight is missing");
    expect_spec(corrupt, spec_t(tiny()).set("uform.depth", "1"), "depth 1 leaves blocks.1 over");
    expect_spec(corrupt, spec_t(tiny()).set("uform.depth", "2147483647"), "depth 2^31-1");

    // Modality keys are required with the modality, one at a time.
    for (auto const &[prefix, tensors] :
         {std::pair{"uform.image."s, image_tensors}, std::pair{"uform.video."s, video_tensors},
          std::pair{"uform.audio."s, audio_tensors}})
        for (auto const &[key, value] : tiny().metadata)
            if (key.starts_with(prefix)) expect_spec(corrupt, spec_t(tiny()).unset(key), "missing " + key);
    spec_t video = tiny();
    for (auto const &n : image_tensors) video.drop(n);
    expect_spec(corrupt, spec_t(video).unset("uform.image.patch_side"), "video needs the image patch side");
    expect_spec(corrupt, spec_t(video).unset("uform.image.mean"), "video needs the image mean");
    spec_t text = tiny();
    text.drop_prefix("uform.image.", image_tensors)
        .drop_prefix("uform.video.", video_tensors)
        .drop_prefix("uform.audio.", audio_tensors);
    expect_spec(corrupt, spec_t(text).set("uform.image.channels", "x"), "a malformed key of an absent modality");
    expect_spec(ok, spec_t(text).set("uform.image.channels", "3"), "a lone key of an absent modality");

    // Heads and their keys.
    expect_spec(corrupt, spec_t(tiny()).set("uform.token_width", "0"), "token head with width 0");
    expect_spec(corrupt, spec_t(tiny()).unset("uform.token_width"), "token head without width");
    expect_spec(corrupt, spec_t(tiny()).drop("head.token.weight"), "token width without head",
                "checkpoint: tensor head.token.weight is missing");
    expect_spec(corrupt, spec_t(tiny()).unset("uform.choice.groups"), "byte head without groups");
    spec_t no_byte = tiny();
    no_byte.drop("head.byte.weight").drop("head.choice.temperatures");
    expect_spec(corrupt, no_byte, "groups without byte head", "checkpoint: tensor head.byte.weight is missing");
    expect_spec(corrupt, spec_t(tiny()).drop("head.choice.temperatures"), "groups without temperatures",
                "checkpoint: tensor head.choice.temperatures is missing");
    expect_spec(corrupt, spec_t(tiny()).set("uform.choice.groups", "0"), "temperatures with zero groups");
}

/// Every tensor: missing, wrong dtype, wrong shape; then entries, offsets, overlaps and extras.
void test_tensors() {
    spec_t const base = tiny();
    for (tensor_t const &t : base.tensors) {
        // A missing tensor is corrupt; a missing optional one switches its head or modality off, which then
        // fails elsewhere (metadata nonzero, bias without weight) but never succeeds.
        spec_t s = base;
        s.drop(t.name);
        expect_spec(corrupt, s, "missing " + t.name);

        s = base;
        s.tensor(t.name).dtype = t.dtype == "F32" ? "BF16" : "F16";
        expect_spec(mismatch, s, "wrong dtype of " + t.name);
        s = base;
        s.tensor(t.name).dtype = "F32" == t.dtype ? "F64" : "I16";
        expect_spec(mismatch, s, "other wrong dtype of " + t.name);

        s = base;
        s.tensor(t.name).shape[0] += 1;
        expect_spec(mismatch, s, "wrong first dimension of " + t.name);
        s = base;
        s.tensor(t.name).shape.back() += 1;
        expect_spec(mismatch, s, "wrong last dimension of " + t.name);
        s = base;
        s.tensor(t.name).shape.push_back(1);
        expect_spec(mismatch, s, "an extra dimension of " + t.name);
        s = base;
        std::reverse(s.tensor(t.name).shape.begin(), s.tensor(t.name).shape.end());
        if (s.tensor(t.name).shape != t.shape) expect_spec(mismatch, s, "transposed " + t.name);
    }
    expect_spec(corrupt, spec_t(base).drop("blocks.1.attn.qkv.weight"), "missing qkv",
                "checkpoint: tensor blocks.N.attn.qkv.weight is missing");
    spec_t s = base;
    s.tensor("blocks.1.attn.qkv.weight").shape = {64, 192};
    expect_spec(mismatch, s, "qkv shape message", "checkpoint: tensor blocks.N.attn.qkv.weight has the wrong shape");
    s = base;
    s.tensor("frontend.audio.mel_filters").dtype = "BF16";
    expect_spec(mismatch, s, "mel dtype message", "checkpoint: tensor frontend.audio.mel_filters has the wrong dtype");

    // Unexpected tensors.
    auto const extra = [&](std::string const &name, std::string const &label) {
        spec_t e = base;
        e.tensors.push_back({name, "BF16", {4}, std::nullopt, {}, {}});
        expect_spec(corrupt, e, label);
    };
    extra("blocks.2.attn_norm.weight", "a block past depth");
    extra("blocks.01.attn_norm.weight", "a block index with a leading zero");
    extra("blocks.0.attn_norm.bias", "a bias in the trunk");
    extra("lm_head.weight", "an unknown tensor");
    extra("", "an empty tensor name");
    extra("__metadata", "a near-miss of __metadata__");
    spec_t text = base;
    text.drop_prefix("uform.image.", image_tensors)
        .drop_prefix("uform.video.", video_tensors)
        .drop_prefix("uform.audio.", audio_tensors);
    for (auto const &[name, shape, dtype] :
         {std::tuple{"embed.image.bias"s, std::vector<std::uint64_t>{64}, "BF16"s},
          std::tuple{"embed.video.bias"s, std::vector<std::uint64_t>{64}, "BF16"s},
          std::tuple{"embed.audio.bias"s, std::vector<std::uint64_t>{64}, "BF16"s},
          std::tuple{"frontend.audio.mel_filters"s, std::vector<std::uint64_t>{80, 201}, "F32"s}}) {
        spec_t e = base;
        e.drop_prefix("uform.image.", image_tensors)
            .drop_prefix("uform.video.", video_tensors)
            .drop_prefix("uform.audio.", audio_tensors);
        e.tensors.push_back({name, dtype, shape, std::nullopt, {}, {}});
        expect_spec(corrupt, e, name + " without its modality");
    }
    spec_t no_byte = base;
    no_byte.drop("head.byte.weight").unset("uform.choice.groups");
    expect_spec(corrupt, no_byte, "temperatures without a byte head");

    // Entries.
    auto const entry = [&](std::string const &name, std::string const &raw, std::string const &extra_field,
                           std::string const &label) {
        spec_t e = base;
        e.tensor(name).raw = raw;
        e.tensor(name).extra = extra_field;
        expect_spec(corrupt, e, label);
    };
    std::string const fn = "final_norm.weight";
    entry(fn, "[]", "", "an entry that is an array");
    entry(fn, "\"BF16\"", "", "an entry that is a string");
    entry(fn, "null", "", "an entry that is null");
    entry(fn, "", ",\"extra\":1", "an entry with an extra field");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64]}", "", "an entry without offsets");
    entry(fn, "{\"shape\":[64],\"data_offsets\":[0,128]}", "", "an entry without dtype");
    entry(fn, "{\"dtype\":\"BF16\",\"data_offsets\":[0,128]}", "", "an entry without shape");
    entry(fn, "{\"dtype\":\"bf16\",\"shape\":[64],\"data_offsets\":[0,128]}", "", "a lowercase dtype");
    entry(fn, "{\"dtype\":\"Q4\",\"shape\":[64],\"data_offsets\":[0,128]}", "", "an unknown dtype");
    entry(fn, "{\"dtype\":2,\"shape\":[64],\"data_offsets\":[0,128]}", "", "a numeric dtype");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":\"64\",\"data_offsets\":[0,128]}", "", "a string shape");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64.0],\"data_offsets\":[0,128]}", "", "a fractional dimension");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[-64],\"data_offsets\":[0,128]}", "", "a negative dimension");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[\"64\"],\"data_offsets\":[0,128]}", "", "a string dimension");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[0]}", "", "one offset");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[0,128,256]}", "", "three offsets");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":{\"0\":128}}", "", "an object of offsets");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[0,1.28e2]}", "", "an exponent offset");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[-0,128]}", "", "a negative zero offset");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[64],\"data_offsets\":[18446744073709551616,128]}", "",
          "an offset past 2^64");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,128]}", "",
          "a shape whose size overflows");
    entry(fn, "{\"dtype\":\"BF16\",\"shape\":[18446744073709551615],\"data_offsets\":[0,128]}", "",
          "a dimension of 2^64-1");

    // Offsets: spans, bounds, overlaps.
    header_t const h = render(base);
    auto const offsets = [&](std::string const &name, std::uint64_t begin, std::uint64_t end,
                             std::string const &label) {
        spec_t e = base;
        e.tensor(name).offsets = std::pair{begin, end};
        header_t const eh = render(e);
        expect_parse(corrupt, eh.json, h.file_size() + eh.json.size() - h.json.size(), label);
    };
    offsets("head.choice.temperatures", 471104, 471111, "a span one byte short");
    offsets("head.choice.temperatures", 471104, 471113, "a span past the end");
    offsets("head.choice.temperatures", 471112, 471104, "reversed offsets");
    offsets("head.choice.temperatures", 471112, 471120, "a span after the data");
    offsets("head.choice.temperatures", ~0ull - 8, ~0ull, "a span at 2^64");
    offsets("head.choice.temperatures", 0, 8, "overlapping the first tensor");
    offsets("head.choice.temperatures", 471100, 471108, "overlapping the previous tensor by 4 bytes");
    offsets("embed.byte.weight", 1, 33025, "overlapping the next tensor by one byte");
    spec_t same = base;
    same.tensor("blocks.1.attn_norm.weight").offsets = std::pair{212416ull, 212544ull}; // blocks.0's span
    header_t const sh = render(same);
    expect_parse(corrupt, sh.json, 8 + sh.json.size() + h.data_size, "two tensors on one span",
                 "checkpoint: two tensors' data overlap");
    expect_parse(corrupt, h.json, h.file_size() - 1, "the data section one byte short",
                 "checkpoint: a tensor's data lies past the end of the file");
}

/// `checkpoint_read_file`: paths, missing files, directories, short files.
void test_files() {
    std::filesystem::path const dir = scratch_directory();
    std::filesystem::create_directories(dir);
    expect_file(uform_status_not_found_k, (dir / "absent.safetensors").string(), "a missing file");
    expect_file(uform_status_io_k, dir.string(), "a directory");
    expect_file(invalid, "", "an empty path");
    std::string const with_nul = (dir / "tiny.safetensors").string() + std::string(1, '\0') + "x";
    expect_file(invalid, with_nul, "an embedded NUL");
    uform::checkpoint_t c{};
    char const *message = nullptr;
    CHECK(uform::checkpoint_read_file(nullptr, 3, c, &message) == invalid && message);
    // The path is not NUL-terminated: only path_length bytes count.
    std::string const long_path = (dir / "tiny.safetensors").string() + "garbage";
    CHECK(uform::checkpoint_read_file(long_path.data(), long_path.size() - 7, c, &message) == ok);

    auto const write = [&](std::string const &name, std::string const &bytes) {
        std::filesystem::path const p = dir / name;
        std::ofstream(p, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
        return p.string();
    };
    header_t const h = render(tiny());
    std::string const bytes = file_bytes(h);
    expect_file(corrupt, write("empty.safetensors", ""), "an empty file");
    expect_file(corrupt, write("short.safetensors", bytes.substr(0, 5)), "a 5-byte file");
    expect_file(corrupt, write("header.safetensors", bytes.substr(0, 8 + h.json.size())), "no data section");
    expect_file(corrupt, write("cut.safetensors", bytes.substr(0, 100)), "a cut header");
    expect_file(corrupt, write("huge.safetensors", prefixed(200ull << 20, "{}")), "a 200 MiB header length");
    expect_file(unsupported, write("pt.safetensors", file_bytes(render(spec_t(tiny()).set("format", "pt")))),
                "format pt on disk");
    expect_file(uform_status_io_k, (dir / "tiny.safetensors" / "x").string(), "a file used as a directory");
#if defined(__unix__)
    expect_file(uform_status_io_k, "/dev/null", "a character device");
#endif

    // The checked-in checkpoint, when it exists.
    char const *data_dir = std::getenv("UFORM_TEST_DATA"); // set by ctest; else run from the repository root
    std::string const tiny_path = std::string(data_dir && *data_dir ? data_dir : "tests/data") + "/tiny.safetensors";
    if (std::filesystem::exists(tiny_path)) {
        c = expect_file(ok, tiny_path, tiny_path);
        CHECK(c.tensors.size() == 25 && c.geometry.depth == 2 && c.geometry.token_width == 32);
        CHECK(c.geometry.has_image && c.geometry.has_video && c.geometry.has_audio && c.geometry.has_byte_head);
        std::printf("%s: %zu tensors, data at %llu of %llu bytes\n", tiny_path.c_str(), c.tensors.size(),
                    (unsigned long long)c.data_offset, (unsigned long long)c.file_size);
    } else {
        std::printf("%s: absent, skipped\n", tiny_path.c_str());
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
}

// endregion

/// The trainer's scalars (docs/model.md, "Training"): accepted and left out of the model, each still checked as F32 [1]
/// inside the file; any other `trainer.*` name is an unknown tensor.
void test_trainer_tensors() {
    spec_t base = tiny();
    for (char const *name :
         {"trainer.contrastive.log_scale", "trainer.contrastive.bias", "trainer.late_interaction.log_scale"})
        base.tensors.push_back({name, "F32", {1}, std::nullopt, {}, {}});
    uform::checkpoint_t const c = expect_spec(ok, base, "the trainer's scalars");
    CHECK(c.tensors.size() == tiny().tensors.size() + 3);
    CHECK(c.geometry.hidden == 64 && c.geometry.choice_groups == 2);

    spec_t s = tiny();
    s.tensors.push_back({"trainer.contrastive.bias", "F32", {1}, std::nullopt, {}, {}});
    expect_spec(ok, s, "one scalar of the three");

    s = base;
    s.tensor("trainer.contrastive.bias").dtype = "BF16";
    expect_spec(mismatch, s, "a trainer scalar in BF16",
                "checkpoint: tensor trainer.contrastive.bias has the wrong dtype");
    s = base;
    s.tensor("trainer.late_interaction.log_scale").shape = {2};
    expect_spec(mismatch, s, "a trainer scalar of two values",
                "checkpoint: tensor trainer.late_interaction.log_scale has the wrong shape");
    s = base;
    s.tensor("trainer.contrastive.log_scale").shape = {};
    expect_spec(mismatch, s, "a trainer scalar of rank 0");
    s = base;
    s.tensor("trainer.contrastive.log_scale").shape = {1, 1};
    expect_spec(mismatch, s, "a trainer scalar of rank 2");

    // Offsets: past the end of the file, reversed, overlapping a model tensor.
    s = base;
    header_t const h = render(s);
    s.tensor("trainer.contrastive.bias").offsets = std::pair{h.data_size, h.data_size + 4};
    header_t const past = render(s);
    expect_parse(corrupt, past.json, past.file_size() - 1, "a trainer scalar past the end of the file",
                 "checkpoint: a tensor's data lies past the end of the file");
    s = base;
    s.tensor("trainer.contrastive.bias").offsets = std::pair{8, 4};
    expect_spec(corrupt, s, "a trainer scalar's offsets reversed", "checkpoint: a tensor's data_offsets are reversed");
    s = base;
    s.tensor("trainer.contrastive.bias").offsets = std::pair{0, 4};
    expect_spec(corrupt, s, "a trainer scalar over the byte embedding", "checkpoint: two tensors' data overlap");

    s = base;
    s.tensors.push_back({"trainer.unknown", "F32", {1}, std::nullopt, {}, {}});
    expect_spec(corrupt, s, "an unknown trainer tensor");
    s = base;
    s.tensors.push_back({"trainer.contrastive.log_scale.extra", "F32", {1}, std::nullopt, {}, {}});
    expect_spec(corrupt, s, "a name that only starts like a trainer scalar");
}

} // namespace

int main() {
    test_json();
    test_valid();
    test_prefix();
    test_json_headers();
    test_metadata();
    test_geometry();
    test_tensors();
    test_trainer_tensors();
    test_files();
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
