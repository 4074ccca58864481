// The CUDA residency through the public C API. Everywhere (CI has no GPU): a CUDA build names itself "ram,cuda",
// drives no device when none is present, and refuses VRAM executors and loads with `unsupported`; then, without a
// device, the test says so and exits 77, which ctest reports as skipped. On a GPU (scripts/gpu-check.sh): the VRAM
// model against the PyTorch goldens and the RAM residency with docs/model.md's bounds (row cosine >= 0.999, relative
// Frobenius <= 1e-2, embeddings >= 0.9999, choices within 2e-3; E4M3 embeddings >= 0.99), narrow output scalars, VRAM
// arenas (device pointers, residency), deferred calls and contention, calls without an executor, a steady loop that
// allocates no device memory, and image pixels through the host front-end against the RAM residency.
#include "tests/c/common.h"
#include "tests/c/goldens.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr int skip_k = 77;
constexpr uform_outputs_t all_outputs_k =
    uform_outputs_t(uform_outputs_embeddings_k | uform_outputs_states_k | uform_outputs_token_vectors_k);

/// `bytes` of device memory copied to the host.
std::vector<unsigned char> from_device(void const *source, std::size_t bytes) {
    std::vector<unsigned char> host(bytes);
    if (bytes != 0 && cudaMemcpy(host.data(), source, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) host.clear();
    return host;
}

/// A VRAM rows view copied to the host, with a host view over the copy.
struct host_rows_t {
    std::vector<unsigned char> data;
    std::vector<std::size_t> offsets;
    uform_rows_t view{};

    explicit host_rows_t(uform_rows_t const &rows) : view(rows) {
        data = from_device(rows.data, rows.count * rows.stride);
        view.data = data.data();
        view.residency = uform_residency_ram_k;
        if (rows.offsets != nullptr) {
            auto bytes = from_device(rows.offsets, (rows.items + 1) * sizeof(std::size_t));
            offsets.resize(rows.items + 1);
            if (bytes.size() == offsets.size() * sizeof(std::size_t))
                std::memcpy(offsets.data(), bytes.data(), bytes.size());
            view.offsets = offsets.data();
        }
    }
};

/// The lowest cosine between rows of `a` and `b` (host views of the same shape); -2 when the shapes differ.
double worst_row_cosine(uform_rows_t const &a, uform_rows_t const &b, int &zero_mismatch) {
    if (a.count != b.count || a.columns != b.columns || a.columns > 512) return -2;
    double worst = 1;
    std::vector<float> x(a.columns), y(a.columns);
    for (std::size_t r = 0; r != a.count; ++r) {
        row_f32(&a, r, x.data());
        row_f32(&b, r, y.data());
        double aa = 0, bb = 0;
        double const cosine = cosine_f64(x.data(), y.data(), a.columns, &aa, &bb);
        if (aa == 0 || bb == 0) {
            zero_mismatch += (aa == 0) != (bb == 0);
            continue;
        }
        worst = std::min(worst, cosine);
    }
    return worst;
}

/// Relative Frobenius error of `a` against `b` over all rows.
double frobenius(uform_rows_t const &a, uform_rows_t const &b) {
    double difference = 0, reference = 0;
    std::vector<float> x(a.columns), y(a.columns);
    for (std::size_t r = 0; r != a.count && r != b.count; ++r) {
        row_f32(&a, r, x.data());
        row_f32(&b, r, y.data());
        for (std::size_t c = 0; c != a.columns; ++c) {
            difference += (double(x[c]) - y[c]) * (double(x[c]) - y[c]);
            reference += double(y[c]) * y[c];
        }
    }
    return reference > 0 ? std::sqrt(difference / reference) : std::sqrt(difference);
}

/// Checks what a CUDA build answers where no device is present.
void without_device() {
    char const *flavor = uform_build_flavor();
    CHECK(flavor != nullptr && std::strstr(flavor, "cuda") != nullptr);
    std::size_t devices[1] = {0}, count = 1;
    CHECK_OK(uform_gpu_devices(nullptr, 0, &count, MSG));
    CHECK_SIZE(count, 0);
    uform_executor_t executor = nullptr;
    CHECK_STATUS(uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, nullptr, 0, nullptr, nullptr, 0, 0,
                                          &executor, MSG),
                 uform_status_unsupported_k);
    uform_model_load_vram_args_t args{};
    char const *path = "tests/data/tiny.safetensors";
    args.path = path;
    args.path_length = std::strlen(path);
    uform_model_t model = nullptr;
    CHECK_STATUS(uform_model_load_vram(&args, &model, MSG), uform_status_unsupported_k);
}

uform_model_t load(bool vram, uform_scalar_t quantization, uform_executor_t executor) {
    char const *path = "tests/data/tiny.safetensors";
    uform_model_t model = nullptr;
    if (vram) {
        uform_model_load_vram_args_t args{};
        args.path = path;
        args.path_length = std::strlen(path);
        args.quantization = quantization;
        args.executor = executor;
        if (!CHECK_OK(uform_model_load_vram(&args, &model, MSG))) return nullptr;
    } else {
        uform_model_load_ram_args_t args{};
        args.path = path;
        args.path_length = std::strlen(path);
        if (!CHECK_OK(uform_model_load_ram(&args, &model, MSG))) return nullptr;
    }
    return model;
}

/// The golden texts: bytes, offsets, and the PyTorch reference's surfaces.
struct texts_t {
    golden_file_t file{};
    std::vector<unsigned char> bytes;
    std::vector<std::size_t> offsets;
    std::vector<float> states, token_vectors, embeddings;
};

bool read_texts(texts_t &t) {
    if (!golden_file_open(&t.file, "text.safetensors")) return false;
    auto copy = [&](char const *name, char const *dtype, std::size_t size, auto &out) {
        std::size_t count = 0;
        void *data = golden_file_copy(&t.file, name, dtype, size, &count, 0);
        if (data == nullptr) return false;
        using value_t = typename std::remove_reference_t<decltype(out)>::value_type;
        if constexpr (sizeof(value_t) == 8) {
            out.resize(count);
            for (std::size_t i = 0; i != count; ++i) out[i] = std::size_t(static_cast<std::int64_t *>(data)[i]);
        } else {
            out.assign(static_cast<value_t *>(data), static_cast<value_t *>(data) + count);
        }
        std::free(data);
        return true;
    };
    bool const ok = copy("bytes", "U8", 1, t.bytes) && copy("offsets", "I64", 8, t.offsets) &&
                    copy("states", "F32", 4, t.states) && copy("token_vectors", "F32", 4, t.token_vectors) &&
                    copy("embeddings", "F32", 4, t.embeddings);
    golden_file_close(&t.file);
    return ok && t.offsets.size() >= 2;
}

/// Rows of F32 values as a host view.
uform_rows_t golden_view(std::vector<float> const &values, std::size_t columns, std::size_t rows) {
    uform_rows_t view{};
    view.data = const_cast<float *>(values.data()); // the view is only read
    view.count = rows;
    view.items = rows;
    view.columns = columns;
    view.stride = columns * sizeof(float);
    view.scalar = uform_scalar_f32_k;
    return view;
}

/// Encodes the golden texts with `model` on `executor` into `arena`.
bool encode(uform_model_t model, uform_executor_t executor, uform_arena_t arena, texts_t const &t, std::size_t items,
            uform_scalar_t scalar, uform_encoded_t &encoded) {
    uform_text_encode_args_t args{};
    args.scalar = scalar;
    return CHECK_OK(uform_text_encode(model, executor, reinterpret_cast<char const *>(t.bytes.data()), t.bytes.size(),
                                      t.offsets.data(), items, all_outputs_k, &args, arena, &encoded, nullptr, MSG));
}

void numerics(uform_model_t vram, uform_model_t e4m3, uform_model_t ram, uform_executor_t executor) {
    texts_t t;
    if (!CHECK(read_texts(t))) return;
    std::size_t const items = t.offsets.size() - 1, tokens = t.offsets.back();
    uform_arena_t device_arena = nullptr, host_arena = nullptr;
    if (!CHECK_OK(uform_arena_init(executor, &device_arena, MSG)) ||
        !CHECK_OK(uform_arena_init(nullptr, &host_arena, MSG)))
        return;
    uform_encoded_t gpu{}, cpu{};
    if (encode(vram, executor, device_arena, t, items, uform_scalar_f32_k, gpu) &&
        encode(ram, nullptr, host_arena, t, items, uform_scalar_f32_k, cpu)) {
        CHECK(gpu.states.residency == uform_residency_vram_k && gpu.states.device == 0);
        cudaPointerAttributes attributes{};
        CHECK(cudaPointerGetAttributes(&attributes, gpu.embeddings.data) == cudaSuccess &&
              attributes.type == cudaMemoryTypeDevice);
        host_rows_t states(gpu.states), vectors(gpu.token_vectors), embeddings(gpu.embeddings);
        int zeros = 0;
        double const golden_states = worst_row_cosine(states.view, golden_view(t.states, 64, tokens), zeros);
        double const golden_embeddings = worst_row_cosine(embeddings.view, golden_view(t.embeddings, 64, items), zeros);
        std::size_t const vector_rows = t.token_vectors.size() / 32; // the golden leaves out the 2 KiB text
        uform_rows_t vectors_head = vectors.view;
        vectors_head.count = std::min(vector_rows, vectors_head.count);
        double const golden_vectors =
            worst_row_cosine(vectors_head, golden_view(t.token_vectors, 32, vector_rows), zeros);
        double const golden_frobenius = frobenius(states.view, golden_view(t.states, 64, tokens));
        double const ram_states = worst_row_cosine(states.view, cpu.states, zeros);
        double const ram_embeddings = worst_row_cosine(embeddings.view, cpu.embeddings, zeros);
        std::printf("vram vs goldens: states row cosine >= %.6f (Frobenius %.2e), token vectors >= %.6f, "
                    "embeddings >= %.7f; vs RAM: states >= %.6f, embeddings >= %.7f\n",
                    golden_states, golden_frobenius, golden_vectors, golden_embeddings, ram_states, ram_embeddings);
        CHECK(golden_states >= 0.999 && golden_vectors >= 0.999 && golden_frobenius <= 1e-2);
        CHECK(golden_embeddings >= 0.9999 && ram_states >= 0.999 && ram_embeddings >= 0.9999);
        CHECK(zeros == 0);
        CHECK(states.offsets.size() == items + 1 && states.offsets.back() == tokens);
    }
    // A narrow scalar: the F32 rows converted (BF16 here), so within BF16's rounding of them.
    uform_encoded_t narrow{};
    if (encode(vram, executor, device_arena, t, items, uform_scalar_bf16_k, narrow)) {
        host_rows_t embeddings(narrow.embeddings);
        int zeros = 0;
        double const cosine = worst_row_cosine(embeddings.view, golden_view(t.embeddings, 64, items), zeros);
        std::printf("vram bf16 rows: embeddings cosine >= %.6f\n", cosine);
        CHECK(narrow.embeddings.scalar == uform_scalar_bf16_k && cosine >= 0.999);
    }
    // E4M3 weights.
    uform_encoded_t quantized{};
    if (encode(e4m3, executor, device_arena, t, items, uform_scalar_f32_k, quantized)) {
        host_rows_t embeddings(quantized.embeddings);
        int zeros = 0;
        double const cosine = worst_row_cosine(embeddings.view, golden_view(t.embeddings, 64, items), zeros);
        std::printf("vram e4m3: embeddings cosine >= %.5f\n", cosine);
        CHECK(cosine >= 0.99);
    }
    // No executor: the model's own stream.
    uform_encoded_t local{};
    if (encode(vram, nullptr, device_arena, t, items, uform_scalar_f32_k, local)) {
        host_rows_t embeddings(local.embeddings);
        int zeros = 0;
        CHECK(worst_row_cosine(embeddings.view, golden_view(t.embeddings, 64, items), zeros) >= 0.9999);
    }
    uform_arena_free(device_arena);
    uform_arena_free(host_arena);
}

void choices(uform_model_t vram, uform_model_t ram, uform_executor_t executor) {
    char const *const prompts[] = {"Is the sky blue? yes or no:", "The capital of France is A) Paris B) Rome:", "2+2="};
    std::string texts;
    std::size_t text_offsets[4] = {0, 0, 0, 0};
    for (std::size_t i = 0; i != 3; ++i) text_offsets[i + 1] = (texts += prompts[i]).size();
    char const legal[] = "ynAB0123456789";
    std::size_t const legal_offsets[] = {0, 2, 4, 14};
    std::size_t const groups[] = {0, 1, 0};
    uform_text_choose_args_t args{};
    args.temperature_groups = groups;
    args.temperature_groups_count = 3;
    uform_arena_t device_arena = nullptr, host_arena = nullptr;
    if (!CHECK_OK(uform_arena_init(executor, &device_arena, MSG)) ||
        !CHECK_OK(uform_arena_init(nullptr, &host_arena, MSG)))
        return;
    uform_tape_t gpu{}, cpu{};
    if (CHECK_OK(uform_text_choose(vram, executor, texts.data(), text_offsets[3], text_offsets, 3, legal,
                                   legal_offsets[3], legal_offsets, 3, &args, device_arena, &gpu, nullptr, MSG)) &&
        CHECK_OK(uform_text_choose(ram, nullptr, texts.data(), text_offsets[3], text_offsets, 3, legal,
                                   legal_offsets[3], legal_offsets, 3, &args, host_arena, &cpu, nullptr, MSG))) {
        CHECK(gpu.residency == uform_residency_vram_k);
        auto bytes = from_device(gpu.data, 14 * sizeof(float));
        double worst = 0;
        if (CHECK(bytes.size() == 14 * sizeof(float)))
            for (std::size_t i = 0; i != 14; ++i) {
                float value;
                std::memcpy(&value, bytes.data() + 4 * i, 4);
                worst = std::max(worst, std::fabs(double(value) - static_cast<float const *>(cpu.data)[i]));
            }
        std::printf("vram choices: largest difference from RAM %.2e\n", worst);
        CHECK(worst <= 2e-3);
    }
    uform_arena_free(device_arena);
    uform_arena_free(host_arena);
}

void arenas_and_deferred(uform_model_t vram, uform_executor_t executor) {
    uform_arena_t arena = nullptr, second = nullptr;
    if (!CHECK_OK(uform_arena_init(executor, &arena, MSG)) || !CHECK_OK(uform_arena_init(executor, &second, MSG)))
        return;
    uform_residency_t residency = uform_residency_ram_k;
    CHECK_OK(uform_arena_residency(arena, &residency, MSG));
    CHECK(residency == uform_residency_vram_k);
    char const texts[] = "a deferred call on the GPU";
    std::size_t const offsets[] = {0, sizeof(texts) - 1};
    uform_text_encode_args_t args{};
    uform_encoded_t first{}, other{};
    uform_outcome_t outcome = nullptr, refused = nullptr;
    CHECK_STATUS(uform_text_encode(vram, executor, texts, offsets[1], offsets, 1, uform_outputs_embeddings_k, &args,
                                   arena, &first, &outcome, MSG),
                 uform_status_deferred_k);
    // The executor serves that call: a second one on it is contended (or already finished behind it).
    uform_status_t const second_status =
        uform_text_encode(vram, executor, texts, offsets[1], offsets, 1, uform_outputs_embeddings_k, &args, second,
                          &other, &refused, MSG);
    CHECK(second_status == uform_status_contended_k || second_status == uform_status_deferred_k);
    if (outcome) {
        CHECK_OK(uform_outcome_wait(outcome, MSG));
        uform_outcome_release(outcome);
    }
    if (refused) {
        CHECK_OK(uform_outcome_wait(refused, MSG));
        uform_outcome_release(refused);
    }
    CHECK(first.embeddings.residency == uform_residency_vram_k && first.embeddings.count == 1);

    // A steady loop: no device memory taken after the first calls.
    for (int warm = 0; warm != 2; ++warm)
        CHECK_OK(uform_text_encode(vram, executor, texts, offsets[1], offsets, 1, all_outputs_k, &args, arena, &first,
                                   nullptr, MSG));
    std::size_t free_before = 0, free_after = 0, total = 0, capacity_before = 0, capacity_after = 0;
    CHECK_OK(uform_arena_capacity(arena, &capacity_before, MSG));
    CHECK(cudaMemGetInfo(&free_before, &total) == cudaSuccess);
    int failures = 0;
    for (int i = 0; i != 50; ++i)
        failures += uform_text_encode(vram, executor, texts, offsets[1], offsets, 1, all_outputs_k, &args, arena,
                                      &first, nullptr, MSG) != uform_status_ok_k;
    CHECK(cudaMemGetInfo(&free_after, &total) == cudaSuccess);
    CHECK_OK(uform_arena_capacity(arena, &capacity_after, MSG));
    std::printf("steady loop: %d failures, device free memory %zu -> %zu, arena %zu -> %zu bytes\n", failures,
                free_before, free_after, capacity_before, capacity_after);
    CHECK(failures == 0 && free_after == free_before && capacity_after == capacity_before);
    uform_arena_free(arena);
    uform_arena_free(second);
}

/// Image pixels: embedded on the host by the RAM front-end, the trunk on the device; held to the RAM residency.
void images(uform_model_t vram, uform_model_t ram, uform_executor_t executor) {
    std::size_t const height = 37, width = 53;
    std::vector<std::uint8_t> pixels(height * width * 3);
    for (std::size_t i = 0; i != pixels.size(); ++i) pixels[i] = std::uint8_t((i * 2654435761u) >> 24);
    std::size_t const offsets[] = {0, pixels.size()};
    uform_image_encode_args_t args{};
    uform_arena_t device_arena = nullptr, host_arena = nullptr;
    if (!CHECK_OK(uform_arena_init(executor, &device_arena, MSG)) ||
        !CHECK_OK(uform_arena_init(nullptr, &host_arena, MSG)))
        return;
    uform_encoded_t gpu{}, cpu{};
    if (CHECK_OK(uform_image_encode_pixels(vram, executor, pixels.data(), pixels.size(), offsets, 1, &height, &width,
                                           all_outputs_k, &args, device_arena, &gpu, nullptr, MSG)) &&
        CHECK_OK(uform_image_encode_pixels(ram, nullptr, pixels.data(), pixels.size(), offsets, 1, &height, &width,
                                           all_outputs_k, &args, host_arena, &cpu, nullptr, MSG))) {
        host_rows_t states(gpu.states), embeddings(gpu.embeddings);
        int zeros = 0;
        double const state_cosine = worst_row_cosine(states.view, cpu.states, zeros);
        double const embedding_cosine = worst_row_cosine(embeddings.view, cpu.embeddings, zeros);
        std::printf("vram image: states cosine >= %.6f, embedding %.7f against RAM\n", state_cosine, embedding_cosine);
        CHECK(state_cosine >= 0.999 && embedding_cosine >= 0.9999 && zeros == 0);
    }
    uform_arena_free(device_arena);
    uform_arena_free(host_arena);
}

} // namespace

int main() {
    std::size_t count = 0;
    if (!CHECK_OK(uform_gpu_devices(nullptr, 0, &count, MSG))) return test_report("vram");
    if (count == 0) {
        without_device();
        if (test_failed_ != 0) return test_report("vram");
        std::printf("SKIPPED: no CUDA device is present; the VRAM numerics, arenas, deferred calls and steady loop run "
                    "where one is (scripts/gpu-check.sh). %d host-side checks passed.\n",
                    test_passed_);
        return skip_k;
    }
    uform_gpu_device_t device{};
    CHECK_OK(uform_gpu_devices(&device, 1, &count, MSG));
    std::printf("device 0: %s, class %s, %zu multiprocessors\n", device.name, uform_gpu_class_name(device.gpu_class),
                device.multiprocessors);
    std::size_t const devices[1] = {0};
    uform_executor_t executor = nullptr;
    if (!CHECK_OK(uform_executor_init_vram(devices, 1, uform_gpu_class_auto_k, nullptr, 0, nullptr, nullptr, 0, 0,
                                           &executor, MSG)))
        return test_report("vram");
    uform_model_t vram = load(true, uform_scalar_bf16_k, executor), e4m3 = load(true, uform_scalar_e4m3_k, executor);
    uform_model_t ram = load(false, uform_scalar_bf16_k, nullptr);
    if (vram && e4m3 && ram) {
        uform_model_description_t description{};
        CHECK_OK(uform_model_describe(vram, &description, MSG));
        CHECK(description.residency == uform_residency_vram_k && description.gpu_class == device.gpu_class &&
              description.placement_count == 1 && description.placement[0] == 0 && description.weight_bytes > 0);
        numerics(vram, e4m3, ram, executor);
        choices(vram, ram, executor);
        images(vram, ram, executor);
        arenas_and_deferred(vram, executor);
    }
    uform_model_free(vram);
    uform_model_free(e4m3);
    uform_model_free(ram);
    uform_executor_free(executor);
    return test_report("vram");
}
