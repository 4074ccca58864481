// `media::resampling_reach`: resampling only the input it names gives the same first outputs, bit for bit, as
// resampling the whole clip (libswresample's flush changes the last outputs it makes, so the reach must leave room
// for its filter), from every kind of rate to the model's 16 kHz.
//
// Prints "N passed, M failed" and exits nonzero on a failure. RAM build only (it includes cpp/).
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cpp/media/audio_decode.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, std::string const &what) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::printf("FAILED: %s\n", what.c_str());
}

/// Resamples the first `count` samples of `x` from `from` Hz to 16 kHz.
std::vector<float> resampled(std::vector<float> const &x, std::size_t count, std::size_t from) {
    using namespace uform::media;
    std::vector<float> out(resampled_capacity(count, from, 16000));
    std::size_t made = 0;
    char const *message = nullptr;
    if (resample_mono(x.data(), count, from, 16000, out.data(), made, &message) != uform_status_ok_k) made = 0;
    out.resize(made);
    return out;
}

} // namespace

int main() {
    // The tiny checkpoint's budget (256 patches of 4 frames, hop 160) and one sample more: what the audio verb keeps.
    std::size_t const outputs = 256 * 4 * 160 + 1;
    for (std::size_t const from : {1000, 8000, 22050, 44100, 48000, 96000, 384000}) {
        std::size_t const reach = uform::media::resampling_reach(outputs, from, 16000);
        std::size_t const length = reach + reach / 4 + 1000;
        std::vector<float> x(length);
        for (std::size_t i = 0; i != length; ++i)
            x[i] = float(0.4 * std::sin(double(i) * 0.013) + 0.3 * std::sin(double(i) * 1.7 + 0.5));
        std::vector<float> const whole = resampled(x, length, from), part = resampled(x, reach, from);
        std::string const label = "from " + std::to_string(from) + " Hz";
        check(whole.size() > outputs && part.size() >= outputs, label + ": both make the outputs kept");
        bool same = part.size() >= outputs && whole.size() >= outputs;
        for (std::size_t i = 0; same && i != outputs; ++i) same = part[i] == whole[i];
        check(same, label + ": the first outputs agree bit for bit");
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
