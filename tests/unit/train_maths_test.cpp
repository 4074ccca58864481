// The trainer's per-element maths (cpp/train/maths.hpp), which the CPU trainer runs on the host and cuda/train/
// kernels.cu compiles for the device: each backward against the derivative of its forward in double (central
// differences), RoPE's backward as the transpose of its rotation, and AdamW's element against the CPU optimiser's
// step (cpp/train/optimizer.cpp) bit for bit, decayed and not, over moments and gradients of many magnitudes.
#include <cmath>
#include <cstdio>
#include <vector>

#include "cpp/train/maths.hpp"
#include "cpp/train/optimizer.hpp"

namespace {

int failures = 0, passes = 0;

void check(bool ok, char const *what, double a = 0, double b = 0) {
    if (ok) {
        ++passes;
        return;
    }
    ++failures;
    std::printf("FAIL %s (%.9g vs %.9g)\n", what, a, b);
}

bool close(double a, double b, double tolerance) { return std::fabs(a - b) <= tolerance * (1 + std::fabs(b)); }

/// silu(x) y in double.
double silu_gate(double x, double y) { return x / (1 + std::exp(-x)) * y; }

void silu_gate_backward_matches_derivatives() {
    double const h = 1e-5;
    for (double x = -6; x <= 6; x += 0.75)
        for (double y : {-2.0, -0.5, 0.25, 3.0}) {
            float const sig = float(1 / (1 + std::exp(-x))), d = 0.7f;
            float d_gate = 0, d_up = 0;
            uform::train::maths::silu_gate_backward(float(x), float(y), sig, d, d_gate, d_up);
            double const dx = (silu_gate(x + h, y) - silu_gate(x - h, y)) / (2 * h) * d;
            double const dy = (silu_gate(x, y + h) - silu_gate(x, y - h)) / (2 * h) * d;
            check(close(d_gate, dx, 1e-5), "silu-gate's gate gradient", d_gate, dx);
            check(close(d_up, dy, 1e-5), "silu-gate's up gradient", d_up, dy);
        }
}

void unrotate_is_the_rotations_transpose() {
    for (double angle = -3; angle <= 3; angle += 0.5) {
        float const c = float(std::cos(angle)), s = float(std::sin(angle));
        // The forward rotates (a, b) to (a c - b s, b c + a s); its backward maps (dl, dh) to R^T (dl, dh).
        float const dl = 0.3f, dh = -1.7f;
        float low = 0, high = 0;
        uform::train::maths::unrotate_pair(dl, dh, c, s, low, high);
        check(close(low, double(dl) * c + double(dh) * s, 1e-6), "RoPE's backward, low half", low);
        check(close(high, double(dh) * c - double(dl) * s, 1e-6), "RoPE's backward, high half", high);
    }
}

void rms_norm_backward_matches_derivatives() {
    std::size_t const n = 8;
    double const eps = 1e-6, h = 1e-6;
    std::vector<double> x(n), w(n), dy(n);
    for (std::size_t j = 0; j != n; ++j) x[j] = std::sin(double(j) + 1) * 2, w[j] = 0.5 + 0.1 * double(j);
    for (std::size_t j = 0; j != n; ++j) dy[j] = std::cos(3.0 * double(j));
    auto loss = [&](std::vector<double> const &v) {
        double sum = 0;
        for (double value : v) sum += value * value;
        double const inverse = 1 / std::sqrt(sum / double(n) + eps);
        double total = 0;
        for (std::size_t j = 0; j != n; ++j) total += dy[j] * v[j] * inverse * w[j];
        return total;
    };
    double sum = 0, dot = 0;
    for (std::size_t j = 0; j != n; ++j) sum += x[j] * x[j], dot += dy[j] * w[j] * x[j];
    float const inverse = float(1 / std::sqrt(sum / double(n) + eps));
    float const c = inverse * inverse * inverse * float(dot) / float(n);
    for (std::size_t j = 0; j != n; ++j) {
        std::vector<double> up = x, down = x;
        up[j] += h, down[j] -= h;
        double const expected = (loss(up) - loss(down)) / (2 * h);
        float const got = uform::train::maths::rms_norm_backward(float(x[j]), float(dy[j]), float(w[j]), inverse, c);
        check(close(got, expected, 1e-4), "RMSNorm's backward", got, expected);
    }
}

void adamw_element_is_the_optimisers_step() {
    std::size_t const count = 257;
    std::vector<float> master(count), grad(count), m(count), v(count);
    for (std::size_t e = 0; e != count; ++e) {
        double const t = double(e);
        master[e] = float(std::sin(t) * std::pow(10.0, double(e % 7) - 3));
        grad[e] = float(std::cos(1.3 * t) * std::pow(10.0, double(e % 5) - 4));
        m[e] = float(std::sin(0.7 * t) * 1e-3);
        v[e] = float(std::fabs(std::cos(0.3 * t)) * 1e-6);
    }
    for (bool decays : {false, true})
        for (std::size_t k : {std::size_t(0), std::size_t(9), std::size_t(1000)}) {
            double const lr = 3e-4, wd = 0.1;
            std::vector<float> theta = master, m1 = m, m2 = v, g = grad;
            uform::train::adamw_view_t const view{theta.data(), g.data(), m1.data(), m2.data(), count, decays};
            uform::train::adamw_step({&view, 1}, k, lr, wd, {}, uform::ram::parallel_t{});
            uform::train::adamw_t const constants{};
            auto const scalars =
                uform::train::maths::adamw_scalars(k, lr, wd, constants.beta1, constants.beta2, constants.eps);
            bool same = true;
            for (std::size_t e = 0; e != count; ++e) {
                auto const next = uform::train::maths::adamw_element(scalars, decays, master[e], grad[e], m[e], v[e]);
                same = same && next.theta == theta[e] && next.m == m1[e] && next.v == m2[e];
            }
            check(same, "AdamW's element is the optimiser's step, bit for bit");
        }
}

} // namespace

int main() {
    silu_gate_backward_matches_derivatives();
    unrotate_is_the_rotations_transpose();
    rms_norm_backward_matches_derivatives();
    adamw_element_is_the_optimisers_step();
    std::printf("%d passed, %d failed\n", passes, failures);
    return failures ? 1 : 0;
}
