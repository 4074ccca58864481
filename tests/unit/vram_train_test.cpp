// The CUDA trainer's pieces on a device (scripts/gpu-check.sh runs it; without a device it says so and exits 77,
// which ctest reports as skipped): the update on tiny.safetensors' tensors, three steps of made-up gradients with the
// clip engaged, against the RAM kernels (cpp/train/kernels.hpp): the norm within 1e-9 relative, masters and moments
// bit for bit (the same per-element maths, cpp/train/maths.hpp), the `trainer.*` scalars back on the host, one device
// allocation in all; and cuBLASLt's products as the trainer's forward and backward read them (`x W^T`, `dY W`,
// `dW += dY^T X`, operands transposed through their layouts) against a double reference within 1e-3 relative.
//
// Run from the repository root (or with UFORM_TEST_DATA naming tests/data).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"
#include "common/scalars.hpp"
#include "cpp/train/kernels.hpp"
#include "cuda/train/parameters.hpp"
#include "cuda/train/products.hpp"

namespace {

constexpr int skip_k = 77;
int failures = 0, passes = 0;

void check(bool ok, std::string const &what, double a = 0, double b = 0) {
    if (ok) {
        ++passes;
        return;
    }
    ++failures;
    std::printf("FAIL %s (%.12g vs %.12g)\n", what.c_str(), a, b);
}

/// tiny.safetensors' tensors, refreshed for the RAM kernels.
bool load_tiny(uform::train::parameters_t &p) {
    char const *root = std::getenv("UFORM_TEST_DATA");
    std::string const path = std::string(root && *root ? root : "tests/data") + "/tiny.safetensors";
    char const *message = nullptr;
    uform::checkpoint_t checkpoint;
    if (uform::checkpoint_read_file(path.data(), path.size(), checkpoint, &message) ||
        uform::train::parameters_load(path.data(), path.size(), checkpoint, uform_pair_loss_form_info_nce_k, p,
                                      &message)) {
        std::printf("cannot load %s: %s\n", path.c_str(), message);
        return false;
    }
    return true;
}

/// Step `k`'s made-up gradient of element `e` of tensor `t`.
float gradient(std::size_t k, std::size_t t, std::size_t e) {
    return float(std::sin(double(e) * 0.37 + double(t) + double(k) * 1.9) * std::pow(10.0, double((e + t) % 5) - 4));
}

void update_matches_the_ram_kernels(uform::cuda::stream_t &stream) {
    uform::train::parameters_t host, device_side;
    if (!load_tiny(host) || !load_tiny(device_side)) return ++failures, void();
    uform::train::ram_kernels_t ram;
    uform::cuda::train::device_parameters_t device;
    char const *message = nullptr;
    uform::ram::parallel_t const serial{};
    check(device.open(stream, device_side, &message) == uform_status_ok_k, "the device parameters open");
    for (std::size_t k = 0; k != 3; ++k) {
        double const lr = 1e-3, wd = 0.1;
        check(device.zero_gradients(device_side, &message) == uform_status_ok_k, "gradients zeroed on the device");
        // The trainer's stream does not wait for the default one the test copies on: let the zeroing finish first.
        check(cudaStreamSynchronize(stream.stream) == cudaSuccess, "the zeroing finishes");
        for (std::size_t t = 0; t != host.tensors.size(); ++t) {
            auto &a = host.tensors[t], &b = device_side.tensors[t];
            for (std::size_t e = 0; e != a.count(); ++e) a.grad[e] = b.grad[e] = gradient(k, t, e);
            auto const &d = device.tensor(t);
            if (!d.scalar)
                check(cudaMemcpy(d.grad, b.grad.data(), b.count() * sizeof(float), cudaMemcpyHostToDevice) ==
                          cudaSuccess,
                      "a gradient uploaded");
        }
        double norm_ram = 0, norm_device = 0;
        bool finite = false;
        ram.gradient_norm(host, norm_ram, &message);
        check(device.gradient_norm(device_side, norm_device, &message) == uform_status_ok_k, "the device's norm");
        check(std::fabs(norm_device - norm_ram) <= 1e-9 * norm_ram, "the norm", norm_device, norm_ram);
        double const factor = uform::train::clip_factor(norm_ram, 0.5 * norm_ram);
        check(ram.scale_gradients(host, factor, serial, &message) == uform_status_ok_k, "the RAM clip");
        check(device.scale(factor, &message) == uform_status_ok_k, "the device's clip");
        bool ram_finite = false;
        check(ram.update_stays_finite(host, k, lr, wd, serial, ram_finite, &message) == uform_status_ok_k && ram_finite,
              "the RAM update stays finite");
        check(device.stays_finite(k, lr, wd, finite, &message) == uform_status_ok_k && finite,
              "the device's update stays finite");
        check(ram.update(host, k, lr, wd, serial, &message) == uform_status_ok_k, "the RAM update");
        check(device.update(k, lr, wd, &message) == uform_status_ok_k, "the device's update");
        check(device.refresh(device_side, &message) == uform_status_ok_k, "the device's BF16 copies");
    }
    check(device.to_host(device_side, &message) == uform_status_ok_k, "the tensors back on the host");
    for (std::size_t t = 0; t != host.tensors.size(); ++t) {
        auto const &a = host.tensors[t], &b = device_side.tensors[t];
        check(a.master == b.master && a.moment1 == b.moment1 && a.moment2 == b.moment2,
              a.name + ": the device's AdamW is the RAM kernels', bit for bit");
    }
    check(device.allocations() == 1, "one device allocation for three steps", double(device.allocations()));
}

/// `n` BF16 values, made up, as bits and as floats.
void operand(std::size_t n, std::size_t seed, std::vector<std::uint16_t> &bits, std::vector<float> &values) {
    bits.resize(n), values.resize(n);
    for (std::size_t i = 0; i != n; ++i) {
        bits[i] = uform::f32_to_bf16(float(std::sin(double(i * 7 + seed) * 0.13)));
        values[i] = uform::bf16_to_f32(bits[i]);
    }
}

/// One product on the device against the double reference: `c[m x n] = op(a) op(b)`.
void product_case(uform::cuda::stream_t &stream, std::size_t m, std::size_t n, std::size_t k, bool ta, bool tb,
                  char const *what) {
    std::vector<std::uint16_t> abits, bbits;
    std::vector<float> a, b, c(m * n);
    operand(m * k, 1, abits, a), operand(k * n, 2, bbits, b);
    void *da = nullptr, *db = nullptr, *dc = nullptr;
    cudaMalloc(&da, abits.size() * 2), cudaMalloc(&db, bbits.size() * 2), cudaMalloc(&dc, c.size() * 4);
    cudaMemcpy(da, abits.data(), abits.size() * 2, cudaMemcpyHostToDevice);
    cudaMemcpy(db, bbits.data(), bbits.size() * 2, cudaMemcpyHostToDevice);
    uform::cuda::train::operand_t const oa{static_cast<std::uint16_t *>(da), ta ? m : k, ta};
    uform::cuda::train::operand_t const ob{static_cast<std::uint16_t *>(db), tb ? k : n, tb};
    check(uform::cuda::train::product(stream, oa, ob, m, n, k, static_cast<float *>(dc), n, false),
          std::string(what) + ": cuBLASLt takes the product");
    cudaMemcpy(c.data(), dc, c.size() * 4, cudaMemcpyDeviceToHost);
    double worst = 0;
    for (std::size_t i = 0; i != m; ++i)
        for (std::size_t j = 0; j != n; ++j) {
            double expected = 0;
            for (std::size_t p = 0; p != k; ++p)
                expected += double(ta ? a[p * m + i] : a[i * k + p]) * double(tb ? b[j * k + p] : b[p * n + j]);
            worst = std::max(worst, std::fabs(c[i * n + j] - expected) / (1 + std::fabs(expected)));
        }
    check(worst <= 1e-3, std::string(what) + ": within 1e-3 of the reference", worst, 1e-3);
    cudaFree(da), cudaFree(db), cudaFree(dc);
}

} // namespace

int main() {
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
        std::printf("SKIPPED: no CUDA device is present; the CUDA trainer's update and products run where one is "
                    "(scripts/gpu-check.sh).\n");
        return skip_k;
    }
    uform::cuda::stream_t stream;
    char const *message = nullptr;
    if (stream.open(0, 0, 0, &message) != uform_status_ok_k) {
        std::printf("FAIL the stream: %s\n", message);
        return 1;
    }
    update_matches_the_ram_kernels(stream);
    product_case(stream, 37, 96, 64, false, true, "forward x W^T");
    product_case(stream, 37, 64, 96, false, false, "input gradient dY W");
    product_case(stream, 96, 64, 37, true, false, "weight gradient dY^T X");
    std::printf("vram_train: %d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
