// Fitting the choice groups' temperatures by bisection (train_calibrate.fit_temperatures).
#include "cpp/train/calibrate.hpp"

#include <algorithm>
#include <cmath>

#include "common/fail.hpp"

namespace uform::train {
namespace {

/// The derivative of the group's cross-entropy in beta = 1 / T: `sum_items (E_p[z] - E_t[z])`, p the softmax of
/// `beta z`, in double.
double slope(calibration_items_t const &items, std::size_t group, double beta) noexcept {
    double total = 0;
    for (std::size_t i = 0; i != items.items; ++i) {
        if (items.groups[i] != group) continue;
        float const *z = items.logits + items.offsets[i];
        float const *t = items.targets + items.offsets[i];
        std::size_t const count = items.offsets[i + 1] - items.offsets[i];
        double top = -INFINITY;
        for (std::size_t k = 0; k != count; ++k) top = std::max(top, beta * double(z[k]));
        double sum = 0, expected = 0, target = 0;
        for (std::size_t k = 0; k != count; ++k) {
            double const p = std::exp(beta * double(z[k]) - top);
            sum += p;
            expected += p * double(z[k]);
            target += double(t[k]) * double(z[k]);
        }
        total += expected / sum - target;
    }
    return total;
}

} // namespace

uform_status_t fit_temperatures(calibration_items_t const &items, std::size_t groups, float *temperatures,
                                char const **message) noexcept {
    for (std::size_t i = 0; i != items.items; ++i)
        if (items.groups[i] >= groups)
            return fail(message, uform_status_invalid_argument_k, "a calibration item's group is out of range");
    for (std::size_t g = 0; g != groups; ++g) {
        temperatures[g] = 1.0f;
        if (std::none_of(items.groups, items.groups + items.items, [g](std::size_t v) { return v == g; })) continue;
        double lo = std::log(1 / 100.0), hi = std::log(1 / 0.01), beta = 0;
        if (slope(items, g, std::exp(lo)) >= 0) beta = std::exp(lo);
        else if (slope(items, g, std::exp(hi)) <= 0) beta = std::exp(hi);
        else {
            for (int halving = 0; halving != 200; ++halving) {
                double const mid = (lo + hi) / 2;
                (slope(items, g, std::exp(mid)) < 0 ? lo : hi) = mid;
            }
            beta = std::exp((lo + hi) / 2);
        }
        temperatures[g] = static_cast<float>(1 / beta);
    }
    return uform_status_ok_k;
}

} // namespace uform::train
