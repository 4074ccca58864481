// uform_vram_bench: the CUDA residency's text forward through the public C API, as an application calls it: a model
// loaded onto GPU 0, a VRAM executor and arena, embeddings of `--texts` texts of `--bytes` bytes per call (the same
// printable bytes as uform_bench and tools/bench/text_worker.py: byte k is `32 + splitmix64(k) % 95`). Prints one JSON
// object: the median seconds per call after warm-up calls, tokens per second, the trunk's useful TFLOP/s, and the
// device memory the timed calls took (zero in a steady loop).
//
//   uform_vram_bench --checkpoint build/gpu/small.safetensors [--texts 256] [--bytes 256] [--repeats 20] [--e4m3]
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <uform/uform.h>

#include "tools/bench/arguments.hpp"
#include "tools/bench/report.hpp"

namespace {

using namespace uform::bench;

struct options_t {
    std::string checkpoint;
    std::size_t texts = 256, bytes = 256, repeats = 20;
    bool e4m3 = false;
};

/// Reads the command line into `options`; false when the bench should exit with `exit_code` (`--help`, or an error
/// already on standard error).
bool parse(int argc, char **argv, options_t &options, int &exit_code) {
    arguments_t arguments("uform_vram_bench");
    arguments.text("--checkpoint", options.checkpoint, "the checkpoint (required)")
        .count("--texts", options.texts, "texts a call (not 0)", 0)
        .count("--bytes", options.bytes, "bytes a text", 0)
        .count("--repeats", options.repeats, "calls timed per median (not 0)", 0)
        .flag("--e4m3", options.e4m3, "quantizes the trunk to E4M3 at load");
    if (!arguments.parse(argc, argv, exit_code)) return false;
    exit_code = 2;
    if (options.checkpoint.empty() || options.texts == 0 || options.repeats == 0) {
        arguments.print_help(stderr);
        return false;
    }
    return true;
}

/// Useful FLOPs of the trunk over `texts` texts of `length` tokens: the linears on every token, attention's two
/// products over each text's square, and the embedding head per text.
double trunk_flops(uform_model_description_t const &d, double texts, double length) {
    double const attention = double(d.heads * d.head_dim), hidden = double(d.hidden), ffn = double(d.ffn_hidden);
    double const per_token = 2 * hidden * (3 * attention + 2 * ffn) + 2 * attention * hidden + 2 * ffn * hidden;
    double const tokens = texts * length;
    return double(d.depth) * (tokens * per_token + texts * 4 * length * length * attention) +
           texts * 2 * hidden * double(d.dimensions);
}

int fail(char const *what, char const *message) {
    std::fprintf(stderr, "uform_vram_bench: %s: %s\n", what, message ? message : "no message");
    return 1;
}

} // namespace

int main(int argc, char **argv) {
    options_t options;
    if (int exit_code = 0; !parse(argc, argv, options, exit_code)) return exit_code;
    char const *message = nullptr;
    std::size_t const devices[1] = {0};
    uform_executor_t executor = nullptr;
    if (uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, nullptr, 0, nullptr, nullptr, 0, 0, &executor,
                                 &message))
        return fail("for_vram", message);
    uform_model_load_vram_args_t load{};
    load.path = options.checkpoint.c_str();
    load.path_length = options.checkpoint.size();
    load.executor = executor;
    load.quantization = options.e4m3 ? uform_scalar_e4m3_k : uform_scalar_bf16_k;
    uform_model_t model = nullptr;
    if (uform_model_load_vram(&load, &model, &message)) return fail("load_vram", message);
    uform_model_description_t description{};
    uform_model_describe(model, &description, &message);
    uform_arena_t arena = nullptr;
    if (uform_arena_init(executor, &arena, &message)) return fail("arena", message);

    std::vector<std::uint8_t> bytes;
    std::vector<std::size_t> offsets;
    make_texts(options.texts, options.bytes, bytes, offsets);
    uform_text_encode_args_t args{};
    uform_encoded_t encoded{};
    auto call = [&] {
        return uform_text_encode(model, executor, reinterpret_cast<char const *>(bytes.data()), bytes.size(),
                                 offsets.data(), options.texts, uform_outputs_embeddings_k, &args, arena, &encoded,
                                 nullptr, &message);
    };
    for (int warm = 0; warm != 3; ++warm)
        if (call()) return fail("text_encode", message);
    std::size_t free_before = 0, free_after = 0, total = 0;
    cudaMemGetInfo(&free_before, &total);
    std::vector<double> seconds;
    for (std::size_t i = 0; i != options.repeats; ++i) {
        double const start = wall_now();
        if (call()) return fail("text_encode", message);
        seconds.push_back(wall_now() - start);
    }
    cudaMemGetInfo(&free_after, &total);
    double const best = median(seconds), tokens = double(options.texts * options.bytes);
    std::printf("{\"texts\": %zu, \"bytes\": %zu, \"quantization\": \"%s\", \"seconds\": %.6e, \"tokens_per_second\": "
                "%.6e, \"tflops\": %.3f, \"device_bytes_taken\": %lld}\n",
                options.texts, options.bytes, options.e4m3 ? "e4m3" : "bf16", best, tokens / best,
                trunk_flops(description, double(options.texts), double(options.bytes)) / best / 1e12,
                static_cast<long long>(free_before) - static_cast<long long>(free_after));
    uform_arena_free(arena);
    uform_model_free(model);
    uform_executor_free(executor);
    return 0;
}
