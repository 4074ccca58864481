// The safetensors header reader and docs/model.md validator declared in checkpoint.hpp.
//
// The order of the checks decides the status of a file with several faults: the prefix and the JSON
// (`corrupt`), `format` and `uform.version` (`unsupported`), each tensor entry on its own (`corrupt`),
// overlaps (`corrupt`), the metadata values (`corrupt`), then the tensors docs/model.md lists: missing
// (`corrupt`), wrong dtype or shape (`shape-mismatch`), and last any tensor nobody asked for (`corrupt`).
#include "common/checkpoint.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <new>
#include <system_error>
#include <utility>

#include "common/json.hpp"
#include "common/media_geometry.hpp"
#include "common/regular_file.hpp"

namespace uform {

/// Bytes per element of each dtype.
std::size_t dtype_size(dtype_t dtype) noexcept {
    switch (dtype) {
    case dtype_t::bf16: return 2;
    case dtype_t::f16: return 2;
    case dtype_t::f32: return 4;
    case dtype_t::f64: return 8;
    case dtype_t::f8_e4m3: return 1;
    case dtype_t::f8_e5m2: return 1;
    case dtype_t::i8: return 1;
    case dtype_t::u8: return 1;
    case dtype_t::i16: return 2;
    case dtype_t::i32: return 4;
    case dtype_t::i64: return 8;
    case dtype_t::bool_: return 1;
    }
    return 0;
}

/// Binary search over the name-sorted tensors.
tensor_entry_t const *checkpoint_t::find(std::string_view name) const noexcept {
    auto it = std::lower_bound(tensors.begin(), tensors.end(), name,
                               [](tensor_entry_t const &t, std::string_view n) { return t.name < n; });
    return it != tensors.end() && it->name == name ? &*it : nullptr;
}

namespace {

/// A status with its static message; `ok` carries no message.
struct verdict_t {
    uform_status_t status = uform_status_ok_k;
    char const *message = nullptr;
    explicit operator bool() const noexcept { return status != uform_status_ok_k; }
};

/// A `corrupt` verdict.
constexpr verdict_t corrupt(char const *message) noexcept { return {uform_status_corrupt_k, message}; }
/// A `shape-mismatch` verdict.
constexpr verdict_t mismatch(char const *message) noexcept { return {uform_status_shape_mismatch_k, message}; }
/// An `unsupported` verdict.
constexpr verdict_t unsupported(char const *message) noexcept { return {uform_status_unsupported_k, message}; }

/// The largest integer a metadata value may hold, so that products of two fit 64 bits easily.
constexpr std::uint64_t max_count_k = (std::uint64_t(1) << 31) - 1;

/// `a * b` into `out`, false on 64-bit overflow.
bool checked_mul(std::uint64_t a, std::uint64_t b, std::uint64_t &out) noexcept {
    if (a != 0 && b > std::numeric_limits<std::uint64_t>::max() / a) return false;
    out = a * b;
    return true;
}

/// The message for each JSON error, all `corrupt`.
char const *json_message(json::error_t error) noexcept {
    switch (error) {
    case json::error_t::none: break;
    case json::error_t::empty: return "checkpoint: the header is empty";
    case json::error_t::unexpected_end: return "checkpoint: the header JSON ends too early";
    case json::error_t::unexpected_char: return "checkpoint: the header JSON has an unexpected character";
    case json::error_t::trailing_garbage: return "checkpoint: the header JSON has garbage after its value";
    case json::error_t::invalid_literal: return "checkpoint: the header JSON has an invalid literal";
    case json::error_t::invalid_number: return "checkpoint: the header JSON has an invalid number";
    case json::error_t::control_in_string: return "checkpoint: the header JSON has a control character in a string";
    case json::error_t::invalid_escape: return "checkpoint: the header JSON has an invalid escape";
    case json::error_t::lone_surrogate: return "checkpoint: the header JSON has a lone surrogate escape";
    case json::error_t::invalid_utf8: return "checkpoint: the header JSON is not valid UTF-8";
    case json::error_t::duplicate_key: return "checkpoint: the header JSON has a duplicate key";
    case json::error_t::too_deep: return "checkpoint: the header JSON nests too deeply";
    case json::error_t::too_many_values: return "checkpoint: the header JSON has too many values";
    }
    return "checkpoint: the header is not valid JSON";
}

/// The safetensors name of each dtype.
constexpr std::pair<std::string_view, dtype_t> dtype_names_k[] = {
    {"BF16", dtype_t::bf16},       {"F16", dtype_t::f16},         {"F32", dtype_t::f32}, {"F64", dtype_t::f64},
    {"F8_E4M3", dtype_t::f8_e4m3}, {"F8_E5M2", dtype_t::f8_e5m2}, {"I8", dtype_t::i8},   {"U8", dtype_t::u8},
    {"I16", dtype_t::i16},         {"I32", dtype_t::i32},         {"I64", dtype_t::i64}, {"BOOL", dtype_t::bool_},
};

// region: metadata keys

/// A metadata key with its static messages.
struct metadata_key_t {
    std::string_view name;
    char const *missing;
    char const *malformed;
    char const *out_of_range;
};

#define UFORM_KEY(name)                                                                                                \
    metadata_key_t{name, "checkpoint: metadata " name " is missing", "checkpoint: metadata " name " is malformed",     \
                   "checkpoint: metadata " name " is out of range"}

constexpr metadata_key_t key_version_k = UFORM_KEY("uform.version");
constexpr metadata_key_t key_depth_k = UFORM_KEY("uform.depth");
constexpr metadata_key_t key_hidden_k = UFORM_KEY("uform.hidden");
constexpr metadata_key_t key_heads_k = UFORM_KEY("uform.heads");
constexpr metadata_key_t key_head_dim_k = UFORM_KEY("uform.head_dim");
constexpr metadata_key_t key_ffn_hidden_k = UFORM_KEY("uform.ffn_hidden");
constexpr metadata_key_t key_norm_eps_k = UFORM_KEY("uform.norm_eps");
constexpr metadata_key_t key_rope_theta_k = UFORM_KEY("uform.rope.theta");
constexpr metadata_key_t key_rope_sections_k = UFORM_KEY("uform.rope.sections");
constexpr metadata_key_t key_dimensions_k = UFORM_KEY("uform.dimensions");
constexpr metadata_key_t key_token_width_k = UFORM_KEY("uform.token_width");
constexpr metadata_key_t key_choice_groups_k = UFORM_KEY("uform.choice.groups");
constexpr metadata_key_t key_image_patch_side_k = UFORM_KEY("uform.image.patch_side");
constexpr metadata_key_t key_image_channels_k = UFORM_KEY("uform.image.channels");
constexpr metadata_key_t key_image_max_patches_k = UFORM_KEY("uform.image.max_patches");
constexpr metadata_key_t key_image_mean_k = UFORM_KEY("uform.image.mean");
constexpr metadata_key_t key_image_std_k = UFORM_KEY("uform.image.std");
constexpr metadata_key_t key_video_tubelet_frames_k = UFORM_KEY("uform.video.tubelet_frames");
constexpr metadata_key_t key_video_fps_k = UFORM_KEY("uform.video.fps");
constexpr metadata_key_t key_video_max_frames_k = UFORM_KEY("uform.video.max_frames");
constexpr metadata_key_t key_video_max_patches_per_frame_k = UFORM_KEY("uform.video.max_patches_per_frame");
constexpr metadata_key_t key_audio_sample_rate_k = UFORM_KEY("uform.audio.sample_rate");
constexpr metadata_key_t key_audio_n_fft_k = UFORM_KEY("uform.audio.n_fft");
constexpr metadata_key_t key_audio_hop_k = UFORM_KEY("uform.audio.hop");
constexpr metadata_key_t key_audio_mel_bins_k = UFORM_KEY("uform.audio.mel_bins");
constexpr metadata_key_t key_audio_frames_per_patch_k = UFORM_KEY("uform.audio.frames_per_patch");
constexpr metadata_key_t key_audio_max_patches_k = UFORM_KEY("uform.audio.max_patches");

#undef UFORM_KEY

/// Every key of the `uform.` namespace that version 1 knows.
constexpr metadata_key_t const *known_keys_k[] = {
    &key_version_k,
    &key_depth_k,
    &key_hidden_k,
    &key_heads_k,
    &key_head_dim_k,
    &key_ffn_hidden_k,
    &key_norm_eps_k,
    &key_rope_theta_k,
    &key_rope_sections_k,
    &key_dimensions_k,
    &key_token_width_k,
    &key_choice_groups_k,
    &key_image_patch_side_k,
    &key_image_channels_k,
    &key_image_max_patches_k,
    &key_image_mean_k,
    &key_image_std_k,
    &key_video_tubelet_frames_k,
    &key_video_fps_k,
    &key_video_max_frames_k,
    &key_video_max_patches_per_frame_k,
    &key_audio_sample_rate_k,
    &key_audio_n_fft_k,
    &key_audio_hop_k,
    &key_audio_mel_bins_k,
    &key_audio_frames_per_patch_k,
    &key_audio_max_patches_k,
};

/// Parses a whole decimal integer: digits only, no sign, no spaces, at most `max_count_k`.
bool parse_count(std::string_view text, std::uint64_t &out, bool &in_range) noexcept {
    in_range = true;
    if (text.empty()) return false;
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return false;
        if (value <= max_count_k) value = value * 10 + std::uint64_t(c - '0'); // stops growing past the bound
    }
    in_range = value <= max_count_k;
    out = value;
    return true;
}

/// Parses a whole finite decimal float, as `strtof` would but refusing leftovers, spaces and `+`.
bool parse_float(std::string_view text, float &out) noexcept {
    if (text.empty()) return false;
    float value = 0;
    auto const [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || !std::isfinite(value)) return false;
    out = value;
    return true;
}

/// Splits `a,b,c` into exactly three non-empty parts.
bool split_three(std::string_view text, std::string_view (&parts)[3]) noexcept {
    for (int i = 0; i != 3; ++i) {
        std::size_t const comma = text.find(',');
        if ((i == 2) != (comma == std::string_view::npos)) return false;
        parts[i] = text.substr(0, comma);
        if (parts[i].empty()) return false;
        if (i != 2) text.remove_prefix(comma + 1);
    }
    return true;
}

/// The `__metadata__` object, read key by key with the messages of each key.
class metadata_t {
  public:
    /// Wraps an object whose values are all strings.
    explicit metadata_t(json::value_t const &object) noexcept : object_(object) {}

    /// The string value of `name`, or `nullptr`.
    std::string const *get(std::string_view name) const noexcept {
        json::value_t const *value = object_.find(name);
        return value ? &value->string : nullptr;
    }

    /// Whether `key` is present.
    bool has(metadata_key_t const &key) const noexcept { return get(key.name) != nullptr; }

    /// Reads an integer in `[min, max]`; an absent key is an error only when `required`.
    verdict_t count(metadata_key_t const &key, bool required, std::uint64_t min, std::size_t &out,
                    std::uint64_t max = max_count_k) const noexcept {
        std::string const *text = get(key.name);
        if (!text) return required ? corrupt(key.missing) : verdict_t{};
        std::uint64_t value = 0;
        bool in_range = true;
        if (!parse_count(*text, value, in_range)) return corrupt(key.malformed);
        if (!in_range || value < min || value > max) return corrupt(key.out_of_range);
        out = std::size_t(value);
        return {};
    }

    /// Reads a finite float in `[low, high]`.
    verdict_t real(metadata_key_t const &key, bool required, float low, float high, float &out) const noexcept {
        std::string const *text = get(key.name);
        if (!text) return required ? corrupt(key.missing) : verdict_t{};
        float value = 0;
        if (!parse_float(*text, value)) return corrupt(key.malformed);
        if (!(value >= low && value <= high)) return corrupt(key.out_of_range);
        out = value;
        return {};
    }

    /// Reads three integers `a,b,c`, each in `[0, max_count_k]`.
    verdict_t counts3(metadata_key_t const &key, bool required, std::size_t (&out)[3]) const noexcept {
        std::string const *text = get(key.name);
        if (!text) return required ? corrupt(key.missing) : verdict_t{};
        std::string_view parts[3];
        if (!split_three(*text, parts)) return corrupt(key.malformed);
        for (int i = 0; i != 3; ++i) {
            std::uint64_t value = 0;
            bool in_range = true;
            if (!parse_count(parts[i], value, in_range)) return corrupt(key.malformed);
            if (!in_range) return corrupt(key.out_of_range);
            out[i] = std::size_t(value);
        }
        return {};
    }

    /// Reads three finite floats `a,b,c`, each in `[low, high]`.
    verdict_t reals3(metadata_key_t const &key, bool required, float low, float high, float (&out)[3]) const noexcept {
        std::string const *text = get(key.name);
        if (!text) return required ? corrupt(key.missing) : verdict_t{};
        std::string_view parts[3];
        if (!split_three(*text, parts)) return corrupt(key.malformed);
        for (int i = 0; i != 3; ++i) {
            float value = 0;
            if (!parse_float(parts[i], value)) return corrupt(key.malformed);
            if (!(value >= low && value <= high)) return corrupt(key.out_of_range);
            out[i] = value;
        }
        return {};
    }

  private:
    json::value_t const &object_;
};

// endregion

// region: tensors

/// A tensor docs/model.md lists, with its static messages; `N` stands for a block index.
struct tensor_kind_t {
    char const *missing;
    char const *wrong_dtype;
    char const *wrong_shape;
};

#define UFORM_KIND(name)                                                                                               \
    tensor_kind_t{"checkpoint: tensor " name " is missing", "checkpoint: tensor " name " has the wrong dtype",         \
                  "checkpoint: tensor " name " has the wrong shape"}

constexpr tensor_kind_t kind_embed_byte_k = UFORM_KIND("embed.byte.weight");
constexpr tensor_kind_t kind_embed_image_k = UFORM_KIND("embed.image.weight");
constexpr tensor_kind_t kind_embed_image_bias_k = UFORM_KIND("embed.image.bias");
constexpr tensor_kind_t kind_embed_video_k = UFORM_KIND("embed.video.weight");
constexpr tensor_kind_t kind_embed_video_bias_k = UFORM_KIND("embed.video.bias");
constexpr tensor_kind_t kind_embed_audio_k = UFORM_KIND("embed.audio.weight");
constexpr tensor_kind_t kind_embed_audio_bias_k = UFORM_KIND("embed.audio.bias");
constexpr tensor_kind_t kind_mel_filters_k = UFORM_KIND("frontend.audio.mel_filters");
constexpr tensor_kind_t kind_attn_norm_k = UFORM_KIND("blocks.N.attn_norm.weight");
constexpr tensor_kind_t kind_qkv_k = UFORM_KIND("blocks.N.attn.qkv.weight");
constexpr tensor_kind_t kind_out_k = UFORM_KIND("blocks.N.attn.out.weight");
constexpr tensor_kind_t kind_mlp_norm_k = UFORM_KIND("blocks.N.mlp_norm.weight");
constexpr tensor_kind_t kind_gate_up_k = UFORM_KIND("blocks.N.mlp.gate_up.weight");
constexpr tensor_kind_t kind_down_k = UFORM_KIND("blocks.N.mlp.down.weight");
constexpr tensor_kind_t kind_final_norm_k = UFORM_KIND("final_norm.weight");
constexpr tensor_kind_t kind_head_embedding_k = UFORM_KIND("head.embedding.weight");
constexpr tensor_kind_t kind_head_token_k = UFORM_KIND("head.token.weight");
constexpr tensor_kind_t kind_head_byte_k = UFORM_KIND("head.byte.weight");
constexpr tensor_kind_t kind_temperatures_k = UFORM_KIND("head.choice.temperatures");
constexpr tensor_kind_t kind_contrastive_scale_k = UFORM_KIND("trainer.contrastive.log_scale");
constexpr tensor_kind_t kind_contrastive_bias_k = UFORM_KIND("trainer.contrastive.bias");
constexpr tensor_kind_t kind_late_scale_k = UFORM_KIND("trainer.late_interaction.log_scale");
constexpr tensor_kind_t kind_trainer_step_k = UFORM_KIND("trainer.step");

#undef UFORM_KIND

/// Checks one tensor entry on its own: fields, dtype, shape, offsets inside the data, byte span.
verdict_t read_entry(std::string const &name, json::value_t const &entry, std::uint64_t data_size,
                     tensor_entry_t &out) {
    if (entry.kind != json::kind_t::object) return corrupt("checkpoint: a tensor entry is not an object");
    json::value_t const *dtype = entry.find("dtype");
    json::value_t const *shape = entry.find("shape");
    json::value_t const *offsets = entry.find("data_offsets");
    if (!dtype || !shape || !offsets) return corrupt("checkpoint: a tensor entry lacks dtype, shape or data_offsets");
    if (entry.keys.size() != 3) return corrupt("checkpoint: a tensor entry has an unknown field");
    if (dtype->kind != json::kind_t::string) return corrupt("checkpoint: a tensor's dtype is not a string");
    auto const known = std::find_if(std::begin(dtype_names_k), std::end(dtype_names_k),
                                    [&](auto const &pair) { return pair.first == dtype->string; });
    if (known == std::end(dtype_names_k)) return corrupt("checkpoint: a tensor has an unknown dtype");
    if (shape->kind != json::kind_t::array)
        return corrupt("checkpoint: a tensor's shape is not a list of non-negative integers");
    std::uint64_t bytes = dtype_size(known->second);
    out.shape.clear();
    out.shape.reserve(shape->items.size());
    for (json::value_t const &dim : shape->items) {
        bool const fits = dim.kind == json::kind_t::number && dim.is_integer &&
                          dim.integer <= std::numeric_limits<std::size_t>::max();
        if (!fits) return corrupt("checkpoint: a tensor's shape is not a list of non-negative integers");
        if (!checked_mul(bytes, dim.integer, bytes)) return corrupt("checkpoint: a tensor's size overflows");
        out.shape.push_back(std::size_t(dim.integer));
    }
    if (offsets->kind != json::kind_t::array || offsets->items.size() != 2)
        return corrupt("checkpoint: a tensor's data_offsets is not a pair of non-negative integers");
    for (json::value_t const &offset : offsets->items)
        if (offset.kind != json::kind_t::number || !offset.is_integer)
            return corrupt("checkpoint: a tensor's data_offsets is not a pair of non-negative integers");
    std::uint64_t const begin = offsets->items[0].integer, end = offsets->items[1].integer;
    if (begin > end) return corrupt("checkpoint: a tensor's data_offsets are reversed");
    if (end > data_size) return corrupt("checkpoint: a tensor's data lies past the end of the file");
    if (end - begin != bytes) return corrupt("checkpoint: a tensor's byte span disagrees with its dtype and shape");
    out.name = name;
    out.dtype = known->second;
    out.begin = begin;
    out.end = end;
    return {};
}

/// Refuses two tensors sharing a byte; an empty tensor strictly inside another counts as sharing.
verdict_t check_overlaps(std::vector<tensor_entry_t> const &tensors) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> spans;
    spans.reserve(tensors.size());
    for (tensor_entry_t const &t : tensors) spans.emplace_back(t.begin, t.end);
    std::sort(spans.begin(), spans.end());
    for (std::size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first < spans[i - 1].second) return corrupt("checkpoint: two tensors' data overlap");
    return {};
}

/// Matches the tensors docs/model.md lists against the header, counting those it found.
class expectations_t {
  public:
    /// Starts over the name-sorted tensors of `checkpoint`.
    explicit expectations_t(checkpoint_t const &checkpoint) noexcept : checkpoint_(checkpoint) {}

    /// Requires `name` with `dtype` and the shape `dims`; checks products for overflow on the way.
    verdict_t expect(std::string_view name, tensor_kind_t const &kind, dtype_t dtype,
                     std::initializer_list<std::uint64_t> dims) {
        tensor_entry_t const *tensor = checkpoint_.find(name);
        if (!tensor) return corrupt(kind.missing);
        ++matched_;
        if (tensor->dtype != dtype) return mismatch(kind.wrong_dtype);
        if (tensor->shape.size() != dims.size()) return mismatch(kind.wrong_shape);
        std::size_t i = 0;
        for (std::uint64_t dim : dims)
            if (std::uint64_t(tensor->shape[i++]) != dim) return mismatch(kind.wrong_shape);
        return {};
    }

    /// Tensors matched so far.
    std::size_t matched() const noexcept { return matched_; }

  private:
    checkpoint_t const &checkpoint_;
    std::size_t matched_ = 0;
};

// endregion

/// The smallest positive normal float: the least `norm_eps`, `rope.theta` or `video.fps` may be.
constexpr float positive_min_k = std::numeric_limits<float>::min();
/// The largest `norm_eps`: past it RMSNorm stops normalising (and huge values flush activations to denormals).
constexpr float norm_eps_max_k = 1.0f;
/// The largest finite float.
constexpr float float_max_k = std::numeric_limits<float>::max();
/// Bounds of `video.fps`: frames a second apart from a millisecond to over a quarter hour.
constexpr float video_fps_min_k = 1e-3f, video_fps_max_k = 1e3f;

/// Reads the trunk's keys into `g`.
verdict_t read_trunk(metadata_t const &meta, geometry_t &g) {
    if (verdict_t v = meta.count(key_depth_k, true, 1, g.depth)) return v;
    if (verdict_t v = meta.count(key_hidden_k, true, 1, g.hidden)) return v;
    if (verdict_t v = meta.count(key_heads_k, true, 1, g.heads)) return v;
    if (verdict_t v = meta.count(key_head_dim_k, true, 2, g.head_dim)) return v;
    if (g.head_dim % 2 != 0) return corrupt("checkpoint: metadata uform.head_dim must be even");
    if (std::uint64_t(g.heads) * g.head_dim > max_count_k)
        return corrupt("checkpoint: metadata uform.heads * uform.head_dim is too large");
    if (verdict_t v = meta.count(key_ffn_hidden_k, true, 1, g.ffn_hidden)) return v;
    if (verdict_t v = meta.real(key_norm_eps_k, true, positive_min_k, norm_eps_max_k, g.norm_eps)) return v;
    if (verdict_t v = meta.real(key_rope_theta_k, true, positive_min_k, float_max_k, g.rope_theta)) return v;
    if (verdict_t v = meta.counts3(key_rope_sections_k, true, g.rope_sections)) return v;
    if (std::uint64_t(g.rope_sections[0]) + g.rope_sections[1] + g.rope_sections[2] != g.head_dim / 2)
        return corrupt("checkpoint: metadata uform.rope.sections must sum to uform.head_dim / 2");
    if (verdict_t v = meta.count(key_dimensions_k, true, 1, g.dimensions)) return v;
    return {};
}

/// Reads the image keys (required for images and videos, validated whenever present).
verdict_t read_image(metadata_t const &meta, bool required, geometry_t &g) {
    if (verdict_t v = meta.count(key_image_patch_side_k, required, 1, g.image_patch_side)) return v;
    if (verdict_t v = meta.count(key_image_channels_k, required, 3, g.image_channels)) return v;
    if (meta.has(key_image_channels_k) && g.image_channels != 3) return corrupt(key_image_channels_k.out_of_range);
    if (verdict_t v = meta.count(key_image_max_patches_k, required, 1, g.image_max_patches, max_item_tokens_k))
        return v;
    if (verdict_t v = meta.reals3(key_image_mean_k, required, -image_mean_bound_k, image_mean_bound_k, g.image_mean))
        return v;
    if (verdict_t v = meta.reals3(key_image_std_k, required, image_std_min_k, image_std_max_k, g.image_std)) return v;
    return {};
}

/// Reads the video keys (required for videos, validated whenever present).
verdict_t read_video(metadata_t const &meta, bool required, geometry_t &g) {
    if (verdict_t v = meta.count(key_video_tubelet_frames_k, required, 1, g.video_tubelet_frames)) return v;
    if (verdict_t v = meta.real(key_video_fps_k, required, video_fps_min_k, video_fps_max_k, g.video_fps)) return v;
    if (verdict_t v = meta.count(key_video_max_frames_k, required, 1, g.video_max_frames, max_video_frames_k)) return v;
    if (verdict_t v = meta.count(key_video_max_patches_per_frame_k, required, 1, g.video_max_patches_per_frame,
                                 max_item_tokens_k))
        return v;
    std::uint64_t const tubelets =
        g.video_tubelet_frames ? (g.video_max_frames + g.video_tubelet_frames - 1) / g.video_tubelet_frames : 0;
    if (tubelets * g.video_max_patches_per_frame > max_item_tokens_k) // both factors bounded: no overflow
        return corrupt("checkpoint: metadata uform.video.max_frames and max_patches_per_frame allow too many tokens");
    return {};
}

/// Reads the audio keys (required for audio, validated whenever present).
verdict_t read_audio(metadata_t const &meta, bool required, geometry_t &g) {
    if (verdict_t v = meta.count(key_audio_sample_rate_k, required, 1, g.audio_sample_rate)) return v;
    if (verdict_t v = meta.count(key_audio_n_fft_k, required, 2, g.audio_n_fft, max_n_fft_k)) return v;
    if (g.audio_n_fft % 2 != 0) return corrupt(key_audio_n_fft_k.out_of_range);
    if (verdict_t v = meta.count(key_audio_hop_k, required, 1, g.audio_hop, max_n_fft_k)) return v;
    if (g.audio_n_fft != 0 && g.audio_hop > g.audio_n_fft) return corrupt(key_audio_hop_k.out_of_range);
    if (verdict_t v = meta.count(key_audio_mel_bins_k, required, 1, g.audio_mel_bins, max_n_fft_k)) return v;
    if (verdict_t v = meta.count(key_audio_frames_per_patch_k, required, 1, g.audio_frames_per_patch, max_n_fft_k))
        return v;
    if (verdict_t v = meta.count(key_audio_max_patches_k, required, 1, g.audio_max_patches, max_item_tokens_k))
        return v;
    // Absent keys (allowed without audio tensors) read as zero and pass.
    if (meta.has(key_audio_sample_rate_k) && !sample_rate_accepted(g.audio_sample_rate))
        return corrupt(key_audio_sample_rate_k.out_of_range);
    if (audio_sample_budget(g, g.audio_max_patches) > max_audio_samples_k) // each factor bounded: no overflow
        return corrupt("checkpoint: metadata uform.audio.max_patches * frames_per_patch * hop exceeds 2^24 samples");
    return {};
}

/// Reads the heads' keys, whose presence follows the head tensors.
verdict_t read_heads(metadata_t const &meta, geometry_t &g) {
    if (g.has_token_head) {
        if (verdict_t v = meta.count(key_token_width_k, true, 1, g.token_width)) return v;
    } else {
        std::size_t width = 0;
        if (verdict_t v = meta.count(key_token_width_k, false, 0, width)) return v;
        if (width != 0) return corrupt(kind_head_token_k.missing);
        g.token_width = 0;
    }
    std::size_t groups = 0;
    if (verdict_t v = meta.count(key_choice_groups_k, g.has_byte_head, 0, groups)) return v;
    if (!g.has_byte_head && groups != 0) return corrupt(kind_head_byte_k.missing);
    g.choice_groups = groups;
    return {};
}

/// Requires the front-ends' tensors of the geometry `g`: the byte embedding, and each present modality's linear and
/// bias (and the audio's mel filters).
verdict_t expect_front_ends(geometry_t const &g, expectations_t &e) {
    std::uint64_t const hidden = g.hidden;
    constexpr dtype_t bf16 = dtype_t::bf16, f32 = dtype_t::f32;
    char const *const overflow = "checkpoint: the geometry's tensor sizes overflow";
    if (verdict_t v = e.expect("embed.byte.weight", kind_embed_byte_k, bf16, {258, hidden})) return v;
    std::uint64_t patch = 0;
    if (!checked_mul(g.image_patch_side, g.image_patch_side, patch) || !checked_mul(patch, g.image_channels, patch))
        return corrupt(overflow);
    if (g.has_image) {
        if (verdict_t v = e.expect("embed.image.weight", kind_embed_image_k, bf16, {hidden, patch})) return v;
        if (verdict_t v = e.expect("embed.image.bias", kind_embed_image_bias_k, bf16, {hidden})) return v;
    }
    if (g.has_video) {
        std::uint64_t tubelet = 0;
        if (!checked_mul(patch, g.video_tubelet_frames, tubelet)) return corrupt(overflow);
        if (verdict_t v = e.expect("embed.video.weight", kind_embed_video_k, bf16, {hidden, tubelet})) return v;
        if (verdict_t v = e.expect("embed.video.bias", kind_embed_video_bias_k, bf16, {hidden})) return v;
    }
    if (g.has_audio) {
        std::uint64_t const frames = std::uint64_t(g.audio_frames_per_patch) * g.audio_mel_bins;
        if (verdict_t v = e.expect("embed.audio.weight", kind_embed_audio_k, bf16, {hidden, frames})) return v;
        if (verdict_t v = e.expect("embed.audio.bias", kind_embed_audio_bias_k, bf16, {hidden})) return v;
        std::uint64_t const bins = g.audio_n_fft / 2 + 1;
        if (verdict_t v = e.expect("frontend.audio.mel_filters", kind_mel_filters_k, f32, {g.audio_mel_bins, bins}))
            return v;
    }
    return {};
}

/// Requires every block's norms, attention and feed-forward tensors of the geometry `g`.
verdict_t expect_blocks(geometry_t const &g, expectations_t &e) {
    std::uint64_t const hidden = g.hidden;
    constexpr dtype_t bf16 = dtype_t::bf16;
    std::uint64_t const inner = std::uint64_t(g.heads) * g.head_dim; // both bounded: no overflow
    std::string name;
    for (std::size_t i = 0; i < g.depth; ++i) {
        std::string const prefix = "blocks." + std::to_string(i) + ".";
        auto const named = [&](char const *suffix) -> std::string_view { return name = prefix + suffix; };
        if (verdict_t v = e.expect(named("attn_norm.weight"), kind_attn_norm_k, bf16, {hidden})) return v;
        if (verdict_t v = e.expect(named("attn.qkv.weight"), kind_qkv_k, bf16, {3 * inner, hidden})) return v;
        if (verdict_t v = e.expect(named("attn.out.weight"), kind_out_k, bf16, {hidden, inner})) return v;
        if (verdict_t v = e.expect(named("mlp_norm.weight"), kind_mlp_norm_k, bf16, {hidden})) return v;
        if (verdict_t v =
                e.expect(named("mlp.gate_up.weight"), kind_gate_up_k, bf16, {2 * std::uint64_t(g.ffn_hidden), hidden}))
            return v;
        if (verdict_t v = e.expect(named("mlp.down.weight"), kind_down_k, bf16, {hidden, g.ffn_hidden})) return v;
    }
    return {};
}

/// Requires the final norm and the heads of the geometry, and the choice temperatures exactly when it has groups.
verdict_t expect_heads(checkpoint_t const &c, expectations_t &e) {
    geometry_t const &g = c.geometry;
    std::uint64_t const hidden = g.hidden;
    constexpr dtype_t bf16 = dtype_t::bf16, f32 = dtype_t::f32;
    if (verdict_t v = e.expect("final_norm.weight", kind_final_norm_k, bf16, {hidden})) return v;
    if (verdict_t v = e.expect("head.embedding.weight", kind_head_embedding_k, bf16, {g.dimensions, hidden})) return v;
    if (g.has_token_head)
        if (verdict_t v = e.expect("head.token.weight", kind_head_token_k, bf16, {g.token_width, hidden})) return v;
    if (g.has_byte_head)
        if (verdict_t v = e.expect("head.byte.weight", kind_head_byte_k, bf16, {256, hidden})) return v;
    if (g.choice_groups != 0) {
        if (verdict_t v = e.expect("head.choice.temperatures", kind_temperatures_k, f32, {g.choice_groups})) return v;
    } else if (c.find("head.choice.temperatures")) {
        return corrupt("checkpoint: tensor head.choice.temperatures is present but uform.choice.groups is zero");
    }
    return {};
}

/// Requires each tensor docs/model.md lists for the geometry, checks the trainer's scalars where present (inference
/// ignores them), then refuses any other.
verdict_t check_tensors(checkpoint_t const &c) {
    expectations_t e(c);
    if (verdict_t v = expect_front_ends(c.geometry, e)) return v;
    if (verdict_t v = expect_blocks(c.geometry, e)) return v;
    if (verdict_t v = expect_heads(c, e)) return v;
    // The trainer's scalars (docs/model.md, "Training") and its step count (docs/decisions.md): optional, each F32 [1],
    // ignored by inference.
    for (auto const &[trainer_name, kind] : {std::pair{"trainer.contrastive.log_scale", &kind_contrastive_scale_k},
                                             std::pair{"trainer.contrastive.bias", &kind_contrastive_bias_k},
                                             std::pair{"trainer.late_interaction.log_scale", &kind_late_scale_k},
                                             std::pair{"trainer.step", &kind_trainer_step_k}})
        if (c.find(trainer_name))
            if (verdict_t v = e.expect(trainer_name, *kind, dtype_t::f32, {1})) return v;
    if (e.matched() != c.tensors.size())
        return corrupt("checkpoint: an unexpected tensor: an unknown name, or one of a modality without its "
                       "embedding weight");
    return {};
}

/// Checks the header's `__metadata__`: an object of strings whose format is uform, version 1, without unknown keys in
/// the uform. namespace. A file of another format answers `unsupported`.
verdict_t check_metadata(json::value_t const *metadata) {
    if (!metadata) return unsupported("checkpoint: no __metadata__, so not a UForm checkpoint");
    if (metadata->kind != json::kind_t::object) return corrupt("checkpoint: __metadata__ is not an object");
    for (json::value_t const &value : metadata->items)
        if (value.kind != json::kind_t::string) return corrupt("checkpoint: a __metadata__ value is not a string");
    metadata_t const meta(*metadata);
    std::string const *format = meta.get("format");
    if (!format || *format != "uform") return unsupported("checkpoint: metadata format is not uform");
    std::string const *version = meta.get(key_version_k.name);
    if (!version) return corrupt(key_version_k.missing);
    if (*version != "1") return unsupported("checkpoint: unsupported uform.version (this build reads version 1)");
    for (std::string const &key : metadata->keys)
        if (key.starts_with("uform.") && std::none_of(std::begin(known_keys_k), std::end(known_keys_k),
                                                      [&](metadata_key_t const *known) { return known->name == key; }))
            return corrupt("checkpoint: metadata has an unknown key in the uform. namespace");
    return {};
}

/// Reads each tensor entry of the header on its own, then checks them together and sorts them by name.
verdict_t read_tensors(json::value_t const &root, std::uint64_t data_size, checkpoint_t &c) {
    c.tensors.clear();
    c.tensors.reserve(root.keys.size());
    for (std::size_t i = 0; i != root.keys.size(); ++i) {
        if (root.keys[i] == "__metadata__") continue;
        c.tensors.emplace_back();
        if (verdict_t v = read_entry(root.keys[i], root.items[i], data_size, c.tensors.back())) return v;
    }
    if (verdict_t v = check_overlaps(c.tensors)) return v;
    std::sort(c.tensors.begin(), c.tensors.end(), [](auto const &a, auto const &b) { return a.name < b.name; });
    return {};
}

/// The geometry: the trunk always, modalities and heads as the tensors say; keys of absent modalities were validated
/// when present, and their fields read as zero.
verdict_t read_geometry(metadata_t const &meta, checkpoint_t &c) {
    geometry_t &g = c.geometry;
    g = geometry_t{};
    g.version = 1;
    g.has_image = c.find("embed.image.weight") != nullptr;
    g.has_video = c.find("embed.video.weight") != nullptr;
    g.has_audio = c.find("embed.audio.weight") != nullptr;
    g.has_token_head = c.find("head.token.weight") != nullptr;
    g.has_byte_head = c.find("head.byte.weight") != nullptr;
    if (verdict_t v = read_trunk(meta, g)) return v;
    if (verdict_t v = read_heads(meta, g)) return v;
    if (verdict_t v = read_image(meta, g.has_image || g.has_video, g)) return v;
    if (verdict_t v = read_video(meta, g.has_video, g)) return v;
    if (verdict_t v = read_audio(meta, g.has_audio, g)) return v;
    if (!g.has_image && !g.has_video) {
        g.image_patch_side = g.image_channels = g.image_max_patches = 0;
        std::fill(std::begin(g.image_mean), std::end(g.image_mean), 0.0f);
        std::fill(std::begin(g.image_std), std::end(g.image_std), 0.0f);
    }
    if (!g.has_video) {
        g.video_tubelet_frames = g.video_max_frames = g.video_max_patches_per_frame = 0;
        g.video_fps = 0;
    }
    if (!g.has_audio)
        g.audio_sample_rate = g.audio_n_fft = g.audio_hop = g.audio_mel_bins = g.audio_frames_per_patch =
            g.audio_max_patches = 0;
    return {};
}

/// Everything of `checkpoint_parse` but the exception guard and the publication of the result.
verdict_t parse(std::string_view header_json, std::uint64_t file_size, checkpoint_t &c) {
    if (header_json.empty()) return corrupt("checkpoint: the header length is zero");
    if (header_json.size() > checkpoint_max_header_k) return corrupt("checkpoint: the header exceeds 100 MiB");
    if (file_size < 8 || file_size - 8 < header_json.size())
        return corrupt("checkpoint: the header runs past the end of the file");
    c.data_offset = 8 + std::uint64_t(header_json.size());
    c.file_size = file_size;

    json::value_t root;
    if (json::error_t error = json::parse(header_json, root); error != json::error_t::none)
        return corrupt(json_message(error));
    if (root.kind != json::kind_t::object) return corrupt("checkpoint: the header is not a JSON object");
    // The metadata's format and version first, then each tensor, then the geometry they make, then the tensors again.
    json::value_t const *metadata = root.find("__metadata__");
    if (verdict_t v = check_metadata(metadata)) return v;
    if (verdict_t v = read_tensors(root, file_size - c.data_offset, c)) return v;
    if (verdict_t v = read_geometry(metadata_t(*metadata), c)) return v;
    return check_tensors(c);
}

/// Runs `body` (returning a verdict), turning exceptions into statuses and writing the message.
template <typename body_t>
uform_status_t guarded(char const **message, body_t &&body) noexcept {
    verdict_t verdict;
    try {
        verdict = body();
    } catch (std::bad_alloc const &) {
        verdict = {uform_status_out_of_memory_k, "checkpoint: out of memory while reading the header"};
    } catch (...) {
        verdict = {uform_status_internal_k, "checkpoint: an unexpected exception while reading the header"};
    }
    if (verdict && message) *message = verdict.message;
    return verdict.status;
}

/// Decodes the 8-byte little-endian header length.
std::uint64_t read_u64_le(unsigned char const *bytes) noexcept {
    std::uint64_t value = 0;
    for (int i = 7; i >= 0; --i) value = value << 8 | bytes[i];
    return value;
}

/// Checks the header length against the bounds and the file size.
verdict_t check_header_length(std::uint64_t header_length, std::uint64_t file_size) noexcept {
    if (header_length == 0) return corrupt("checkpoint: the header length is zero");
    if (header_length > checkpoint_max_header_k) return corrupt("checkpoint: the header exceeds 100 MiB");
    if (header_length > file_size - 8) return corrupt("checkpoint: the header runs past the end of the file");
    return {};
}

} // namespace

uform_status_t checkpoint_parse(std::string_view header_json, std::uint64_t file_size, checkpoint_t &out,
                                char const **message) noexcept {
    return guarded(message, [&]() -> verdict_t {
        checkpoint_t c{};
        if (verdict_t v = parse(header_json, file_size, c)) return v;
        out = std::move(c);
        return {};
    });
}

uform_status_t checkpoint_read_buffer(void const *data, std::size_t length, checkpoint_t &out,
                                      char const **message) noexcept {
    return guarded(message, [&]() -> verdict_t {
        if (!data && length != 0) return {uform_status_invalid_argument_k, "checkpoint: the buffer is NULL"};
        if (length < 8) return corrupt("checkpoint: shorter than the 8-byte header length");
        auto const *bytes = static_cast<unsigned char const *>(data);
        std::uint64_t const header_length = read_u64_le(bytes);
        if (verdict_t v = check_header_length(header_length, length)) return v;
        std::string_view const header(reinterpret_cast<char const *>(bytes) + 8, std::size_t(header_length));
        checkpoint_t c{};
        if (verdict_t v = parse(header, length, c)) return v;
        out = std::move(c);
        return {};
    });
}

uform_status_t checkpoint_read_file(char const *path, std::size_t path_length, checkpoint_t &out,
                                    char const **message) noexcept {
    return guarded(message, [&]() -> verdict_t {
        constexpr uform_status_t invalid = uform_status_invalid_argument_k;
        if (!path || path_length == 0) return {invalid, "checkpoint: the path is NULL or empty"};
        std::string const path_bytes(path, path_length);
        if (path_bytes.find('\0') != std::string::npos) return {invalid, "checkpoint: the path contains a NUL byte"};
        regular_file_t file;
        switch (file.open(path_bytes.c_str(), true)) {
        case file_open_t::ok: break;
        case file_open_t::missing: return {uform_status_not_found_k, "checkpoint: no such file"};
        case file_open_t::not_regular: return {uform_status_io_k, "checkpoint: the path is not a regular file"};
        default: return {uform_status_io_k, "checkpoint: the file cannot be opened"};
        }
        std::uint64_t const file_size = file.size();
        if (file_size < 8) return corrupt("checkpoint: shorter than the 8-byte header length");
        unsigned char prefix[8] = {};
        if (file.read_at(prefix, 8, 0) != 8) return {uform_status_io_k, "checkpoint: reading the file failed"};
        std::uint64_t const header_length = read_u64_le(prefix);
        if (verdict_t v = check_header_length(header_length, file_size)) return v;
        std::string header(std::size_t(header_length), '\0');
        if (file.read_at(header.data(), header.size(), 8) != std::int64_t(header.size()))
            return {uform_status_io_k, "checkpoint: reading the file failed"};
        checkpoint_t c{};
        if (verdict_t v = parse(header, file_size, c)) return v;
        out = std::move(c);
        return {};
    });
}

} // namespace uform
