// The masking sampler (train_batch.sample_mask): spans of geometric length from a named stream, then the tokens.
#include "cpp/train/masking.hpp"

#include <cmath>
#include <cstdio>
#include <new>
#include <string_view>

#include "common/fail.hpp"
#include "cpp/train/random.hpp"

namespace uform::train {

uform_status_t sample_mask(std::uint64_t seed, std::size_t step, std::size_t item, std::string_view text, float ratio,
                           float mean_span, mask_t &mask, char const **message) noexcept {
    if (!(ratio > 0 && ratio <= 1))
        return fail(message, uform_status_invalid_argument_k, "the masking ratio must be in (0, 1]");
    if (!(mean_span >= 1 && std::isfinite(mean_span)))
        return fail(message, uform_status_invalid_argument_k, "the masking mean span must be finite and at least 1");
    try {
        mask.positions.clear();
        mask.tokens.clear();
        std::size_t const n = text.size();
        if (n == 0) return uform_status_ok_k;
        double const floor_target = std::floor(double(ratio) * double(n));
        std::size_t const target = floor_target < 1 ? 1 : static_cast<std::size_t>(floor_target);
        double const keep_going = 1.0 - 1.0 / double(mean_span);
        char label[64];
        int const length = std::snprintf(label, sizeof label, "mask/%zu/%zu", step, item);
        stream_t rng(seed, std::string_view(label, std::size_t(length)));
        std::vector<char> &chosen = mask.chosen;
        chosen.assign(n, 0);
        std::size_t count = 0;
        while (count < target) {
            std::size_t const start = rng.below(n);
            std::size_t length = 1;
            while (rng.real() < keep_going) ++length;
            for (std::size_t pos = start; pos < n && pos - start < length && count < target; ++pos)
                if (!chosen[pos]) chosen[pos] = 1, ++count;
        }
        mask.positions.reserve(target);
        mask.tokens.reserve(target);
        for (std::size_t pos = 0; pos != n; ++pos) {
            if (!chosen[pos]) continue;
            double const u = rng.real();
            std::uint16_t const token = u < 0.8   ? mask_token
                                        : u < 0.9 ? static_cast<std::uint16_t>(rng.below(256))
                                                  : static_cast<unsigned char>(text[pos]);
            mask.positions.push_back(pos);
            mask.tokens.push_back(token);
        }
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory masking a text");
    }
}

} // namespace uform::train
