// The tensor plan of a geometry and the atomic safetensors writer.
#include "common/checkpoint_writer.hpp"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "common/fail.hpp"

namespace uform {

namespace {

tensor_plan_t plan_of(char const *name, dtype_t dtype, std::size_t rows, std::size_t columns = 0) {
    tensor_plan_t plan{};
    std::snprintf(plan.name, sizeof(plan.name), "%s", name);
    plan.dtype = dtype;
    plan.rank = columns ? 2 : 1;
    plan.shape[0] = rows;
    plan.shape[1] = columns;
    return plan;
}

char const *dtype_name(dtype_t dtype) noexcept {
    switch (dtype) {
    case dtype_t::bf16: return "BF16";
    case dtype_t::f16: return "F16";
    case dtype_t::f32: return "F32";
    case dtype_t::f64: return "F64";
    case dtype_t::f8_e4m3: return "F8_E4M3";
    case dtype_t::f8_e5m2: return "F8_E5M2";
    case dtype_t::i8: return "I8";
    case dtype_t::u8: return "U8";
    case dtype_t::i16: return "I16";
    case dtype_t::i32: return "I32";
    case dtype_t::i64: return "I64";
    case dtype_t::bool_: return "BOOL";
    }
    return "U8";
}

void add(std::string &json, char const *key, std::size_t value) {
    char text[96];
    std::snprintf(text, sizeof(text), ",\"%s\":\"%zu\"", key, value);
    json += text;
}

void add(std::string &json, char const *key, float value) {
    char text[96];
    std::snprintf(text, sizeof(text), ",\"%s\":\"%.9g\"", key, double(value));
    json += text;
}

void add3(std::string &json, char const *key, float const (&values)[3]) {
    char text[160];
    std::snprintf(text, sizeof(text), ",\"%s\":\"%.9g,%.9g,%.9g\"", key, double(values[0]), double(values[1]),
                  double(values[2]));
    json += text;
}

std::string metadata_of(geometry_t const &g) {
    std::string json = "\"__metadata__\":{\"format\":\"uform\"";
    add(json, "uform.version", std::size_t(g.version ? g.version : 1));
    add(json, "uform.depth", g.depth);
    add(json, "uform.hidden", g.hidden);
    add(json, "uform.heads", g.heads);
    add(json, "uform.head_dim", g.head_dim);
    add(json, "uform.ffn_hidden", g.ffn_hidden);
    add(json, "uform.norm_eps", g.norm_eps);
    add(json, "uform.rope.theta", g.rope_theta);
    char text[160];
    std::snprintf(text, sizeof(text), ",\"uform.rope.sections\":\"%zu,%zu,%zu\"", g.rope_sections[0],
                  g.rope_sections[1], g.rope_sections[2]);
    json += text;
    add(json, "uform.dimensions", g.dimensions);
    add(json, "uform.token_width", g.has_token_head ? g.token_width : 0);
    add(json, "uform.choice.groups", g.has_byte_head ? g.choice_groups : 0);
    if (g.has_image || g.has_video) {
        add(json, "uform.image.patch_side", g.image_patch_side);
        add(json, "uform.image.channels", g.image_channels);
        add(json, "uform.image.max_patches", g.image_max_patches);
        add3(json, "uform.image.mean", g.image_mean);
        add3(json, "uform.image.std", g.image_std);
    }
    if (g.has_video) {
        add(json, "uform.video.tubelet_frames", g.video_tubelet_frames);
        add(json, "uform.video.fps", g.video_fps);
        add(json, "uform.video.max_frames", g.video_max_frames);
        add(json, "uform.video.max_patches_per_frame", g.video_max_patches_per_frame);
    }
    if (g.has_audio) {
        add(json, "uform.audio.sample_rate", g.audio_sample_rate);
        add(json, "uform.audio.n_fft", g.audio_n_fft);
        add(json, "uform.audio.hop", g.audio_hop);
        add(json, "uform.audio.mel_bins", g.audio_mel_bins);
        add(json, "uform.audio.frames_per_patch", g.audio_frames_per_patch);
        add(json, "uform.audio.max_patches", g.audio_max_patches);
    }
    json += "}";
    return json;
}

uform_status_t open_failure(char const **message) noexcept {
    if (errno == ENOENT || errno == ENOTDIR)
        return fail(message, uform_status_io_k, "the checkpoint's directory does not exist");
    return fail(message, uform_status_io_k, "the checkpoint could not be created");
}

std::atomic<unsigned> temporaries{0};

} // namespace

std::vector<tensor_plan_t> checkpoint_plan(geometry_t const &g) {
    std::vector<tensor_plan_t> plan;
    std::size_t const hidden = g.hidden;
    plan.push_back(plan_of("embed.byte.weight", dtype_t::bf16, 258, hidden));
    std::size_t const p = g.image_patch_side, channels = g.image_channels;
    if (g.has_image) {
        plan.push_back(plan_of("embed.image.weight", dtype_t::bf16, hidden, p * p * channels));
        plan.push_back(plan_of("embed.image.bias", dtype_t::bf16, hidden));
    }
    if (g.has_video) {
        plan.push_back(plan_of("embed.video.weight", dtype_t::bf16, hidden, g.video_tubelet_frames * p * p * channels));
        plan.push_back(plan_of("embed.video.bias", dtype_t::bf16, hidden));
    }
    if (g.has_audio) {
        plan.push_back(
            plan_of("embed.audio.weight", dtype_t::bf16, hidden, g.audio_frames_per_patch * g.audio_mel_bins));
        plan.push_back(plan_of("embed.audio.bias", dtype_t::bf16, hidden));
        plan.push_back(plan_of("frontend.audio.mel_filters", dtype_t::f32, g.audio_mel_bins, g.audio_n_fft / 2 + 1));
    }
    std::size_t const attention = g.heads * g.head_dim;
    for (std::size_t i = 0; i != g.depth; ++i) {
        char name[64];
        std::snprintf(name, sizeof(name), "blocks.%zu.attn_norm.weight", i);
        plan.push_back(plan_of(name, dtype_t::bf16, hidden));
        std::snprintf(name, sizeof(name), "blocks.%zu.attn.qkv.weight", i);
        plan.push_back(plan_of(name, dtype_t::bf16, 3 * attention, hidden));
        std::snprintf(name, sizeof(name), "blocks.%zu.attn.out.weight", i);
        plan.push_back(plan_of(name, dtype_t::bf16, hidden, attention));
        std::snprintf(name, sizeof(name), "blocks.%zu.mlp_norm.weight", i);
        plan.push_back(plan_of(name, dtype_t::bf16, hidden));
        std::snprintf(name, sizeof(name), "blocks.%zu.mlp.gate_up.weight", i);
        plan.push_back(plan_of(name, dtype_t::bf16, 2 * g.ffn_hidden, hidden));
        std::snprintf(name, sizeof(name), "blocks.%zu.mlp.down.weight", i);
        plan.push_back(plan_of(name, dtype_t::bf16, hidden, g.ffn_hidden));
    }
    plan.push_back(plan_of("final_norm.weight", dtype_t::bf16, hidden));
    plan.push_back(plan_of("head.embedding.weight", dtype_t::bf16, g.dimensions, hidden));
    if (g.has_token_head) plan.push_back(plan_of("head.token.weight", dtype_t::bf16, g.token_width, hidden));
    if (g.has_byte_head) {
        plan.push_back(plan_of("head.byte.weight", dtype_t::bf16, 256, hidden));
        if (g.choice_groups) plan.push_back(plan_of("head.choice.temperatures", dtype_t::f32, g.choice_groups));
    }
    return plan;
}

std::string checkpoint_header(geometry_t const &geometry, std::span<tensor_plan_t const> plan) {
    std::string json = "{";
    std::uint64_t offset = 0;
    for (tensor_plan_t const &tensor : plan) {
        char text[256];
        std::uint64_t const end = offset + tensor.bytes();
        if (tensor.rank == 1)
            std::snprintf(text, sizeof(text), "\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu],\"data_offsets\":[%llu,%llu]},",
                          tensor.name, dtype_name(tensor.dtype), tensor.shape[0], (unsigned long long)offset,
                          (unsigned long long)end);
        else
            std::snprintf(text, sizeof(text),
                          "\"%s\":{\"dtype\":\"%s\",\"shape\":[%zu,%zu],\"data_offsets\":[%llu,%llu]},", tensor.name,
                          dtype_name(tensor.dtype), tensor.shape[0], tensor.shape[1], (unsigned long long)offset,
                          (unsigned long long)end);
        json += text;
        offset = end;
    }
    json += metadata_of(geometry);
    json += "}";
    while (json.size() % 8) json += ' ';
    return json;
}

uform_status_t checkpoint_check_geometry(geometry_t const &geometry, char const **message) noexcept {
    try {
        std::vector<tensor_plan_t> const plan = checkpoint_plan(geometry);
        std::string const header = checkpoint_header(geometry, plan);
        std::uint64_t data = 0;
        for (tensor_plan_t const &tensor : plan) data += tensor.bytes();
        checkpoint_t parsed;
        char const *why = nullptr;
        if (checkpoint_parse(header, 8 + header.size() + data, parsed, &why) == uform_status_ok_k)
            return uform_status_ok_k;
        return fail(message, uform_status_invalid_argument_k, why);
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory checking the model's geometry");
    }
}

uform_status_t checkpoint_write(char const *path, std::size_t path_length, geometry_t const &geometry,
                                std::span<tensor_plan_t const> plan, tensor_fill_t fill, void *context,
                                char const **message) noexcept {
    try {
        std::string const target(path, path_length);
        std::string const json = checkpoint_header(geometry, plan);

        char suffix[64];
        std::snprintf(suffix, sizeof(suffix), ".tmp-%u", temporaries.fetch_add(1, std::memory_order_relaxed));
        std::string const temporary = target + suffix;
        std::FILE *file = std::fopen(temporary.c_str(), "wb");
        if (!file) return open_failure(message);
        bool ok = true;
        unsigned char prefix[8];
        for (int i = 0; i != 8; ++i) prefix[i] = static_cast<unsigned char>(std::uint64_t(json.size()) >> (8 * i));
        ok = ok && std::fwrite(prefix, 1, 8, file) == 8;
        ok = ok && std::fwrite(json.data(), 1, json.size(), file) == json.size();
        std::vector<std::byte> staging;
        for (tensor_plan_t const &tensor : plan) {
            if (!ok) break;
            staging.assign(tensor.bytes(), std::byte{0});
            fill(context, tensor, staging.data());
            ok = std::fwrite(staging.data(), 1, staging.size(), file) == staging.size();
        }
        ok = std::fflush(file) == 0 && ok;
        ok = std::fclose(file) == 0 && ok;
        if (!ok) {
            std::remove(temporary.c_str());
            return fail(message, uform_status_io_k, "writing the checkpoint failed");
        }
        if (std::rename(temporary.c_str(), target.c_str()) != 0) {
            std::remove(temporary.c_str());
            return fail(message, uform_status_io_k, "renaming the checkpoint into place failed");
        }
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory writing the checkpoint");
    } catch (...) {
        return fail(message, uform_status_internal_k, "writing the checkpoint threw");
    }
}

} // namespace uform
