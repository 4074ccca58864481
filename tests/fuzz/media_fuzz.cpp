/**
 * @file media_fuzz.cpp
 * @brief libFuzzer targets of the media decoders (cpp/media/): one binary per entry point, chosen when it is
 * built: `-DUFORM_FUZZ_IMAGE` (the input as an image file's bytes), `-DUFORM_FUZZ_VIDEO` or `-DUFORM_FUZZ_AUDIO`
 * (the input written to a file, which the decoder opens by path, as the verbs do).
 *
 * Besides crashes and sanitizer reports, it aborts when a result breaks the decoders' promises: a failure without a
 * message or with a status they never answer, or a success whose pixels or samples disagree with its sizes or
 * limits. Build and run: tests/fuzz/run.sh image|video|audio SECONDS
 */
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

extern "C" {
#include <libavutil/log.h>
}

#include "cpp/media/audio_decode.hpp"
#include "cpp/media/video_decode.hpp"

namespace {

/** @brief Aborts, so that libFuzzer keeps the input, unless `condition` holds. */
void require(bool condition) {
    if (!condition) std::abort();
}

/** @brief Samples a recording keeps at 16 kHz (decoding stops past them): the tiny model's budget, 256 patches of 640.
 */
constexpr std::size_t max_samples_k = 256 * 4 * 160;

/** @brief Pixels per picture at most: small, so that a legal but large header is refused instead of decoded. */
constexpr std::size_t max_pixels_k = 1 << 22;

/** @brief A failure answers a status the decoders answer, with a message. */
void check_failure(uform_status_t status, char const *message) {
    require(message != nullptr && message[0] != '\0');
    require(status == uform_status_corrupt_k || status == uform_status_unsupported_k ||
            status == uform_status_limit_exceeded_k || status == uform_status_io_k ||
            status == uform_status_out_of_memory_k || status == uform_status_invalid_argument_k);
}

void check_image(uform::media::rgb_image_t const &image) {
    require(image.height != 0 && image.width != 0 && image.height * image.width <= max_pixels_k);
    require(image.pixels.size() == image.height * image.width * 3);
}

/** @brief A file for the input, unique to this process, removed at exit. */
std::string const &scratch_path() {
    static std::string const path = [] {
        char const *root = std::getenv("TMPDIR");
        return std::string(root && *root ? root : "/tmp") + "/uform-media-fuzz-" + std::to_string(::getpid());
    }();
    return path;
}

bool write_input(std::uint8_t const *data, std::size_t size) {
    std::FILE *file = std::fopen(scratch_path().c_str(), "wb");
    if (file == nullptr) return false;
    bool const written = std::fwrite(data, 1, size, file) == size;
    return std::fclose(file) == 0 && written;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    av_log_set_level(AV_LOG_QUIET);
    std::atexit([] { std::remove(scratch_path().c_str()); });
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const *data, std::size_t size) {
    char const *message = nullptr;
#if defined(UFORM_FUZZ_IMAGE)
    uform::media::rgb_image_t image;
    uform_status_t const status = uform::media::decode_image_bytes(data, size, max_pixels_k, image, &message);
    if (status != uform_status_ok_k) check_failure(status, message);
    else check_image(image);
#elif defined(UFORM_FUZZ_VIDEO)
    if (!write_input(data, size)) return 0;
    std::size_t frames = 0;
    auto const keep = [](void *context, uform::media::rgb_image_t const &frame, char const **) noexcept {
        check_image(frame);
        ++*static_cast<std::size_t *>(context);
        return uform_status_ok_k;
    };
    uform_status_t const status =
        uform::media::decode_video_file(scratch_path().c_str(), 1.0, 4, max_pixels_k, {keep, &frames}, &message);
    if (status != uform_status_ok_k) check_failure(status, message);
    else require(frames != 0 && frames <= 4);
#elif defined(UFORM_FUZZ_AUDIO)
    if (!write_input(data, size)) return 0;
    std::vector<float> mono;
    double seconds = 0;
    uform_status_t const status =
        uform::media::decode_audio_file(scratch_path().c_str(), 16000, max_samples_k, mono, seconds, &message);
    if (status != uform_status_ok_k) check_failure(status, message);
    else {
        require(seconds >= 0 && std::isfinite(seconds));
        for (float sample : mono) require(std::isfinite(sample));
    }
#else
#error "define UFORM_FUZZ_IMAGE, UFORM_FUZZ_VIDEO or UFORM_FUZZ_AUDIO"
#endif
    return 0;
}
