// The media verbs of the RAM residency. `c/` has already refused a checkpoint without the modality (with its own
// `unsupported` message). Past that check, the file verbs open every file first, so that a missing, unreadable or
// empty file answers as it will once decoders exist (`not-found`, `io`, `corrupt`); then, since decoding and the
// image and audio front-ends land with the media issue, every verb answers `unsupported` with a message saying so.
#include <cerrno>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../c/checks.hpp"
#include "ram.hpp"

namespace uform::backend {
namespace {

/// Opens every file of a path tape, in order: the first missing, unreadable or empty one fails the call.
uform_status_t check_files(tape_view_t<char> const &paths, char const **message) noexcept {
    for (std::size_t i = 0; i != paths.count; ++i) {
        char path[max_path_bytes_k + 1];
        std::span<char const> const bytes = paths.item(i);
        path_terminated(bytes.data(), bytes.size(), path);
        int const descriptor = ::open(path, O_RDONLY | O_CLOEXEC);
        if (descriptor < 0)
            return errno == ENOENT || errno == ENOTDIR
                       ? ram::backend_fail(message, uform_status_not_found_k, "a media file does not exist")
                       : ram::backend_fail(message, uform_status_io_k, "a media file could not be opened");
        struct stat status{};
        bool const stated = ::fstat(descriptor, &status) == 0;
        ::close(descriptor);
        if (!stated || S_ISDIR(status.st_mode))
            return ram::backend_fail(message, uform_status_io_k, "a media file could not be read");
        if (S_ISREG(status.st_mode) && status.st_size == 0)
            return ram::backend_fail(message, uform_status_corrupt_k, "a media file is empty");
    }
    return uform_status_ok_k;
}

} // namespace

uform_status_t image_encode(model_t const &, call_t &, tape_view_t<char> paths, std::size_t, std::size_t,
                            encode_request_t, uform_encoded_t &, uform_image_encode_stats_t &,
                            char const **message) noexcept {
    if (uform_status_t status = check_files(paths, message)) return status;
    return ram::backend_fail(message, uform_status_unsupported_k,
                             "the RAM residency does not decode images yet: decoding lands with the media issue");
}

uform_status_t image_encode_pixels(model_t const &, call_t &, tape_view_t<std::uint8_t>, std::size_t const *,
                                   std::size_t const *, std::size_t, encode_request_t, uform_encoded_t &,
                                   uform_image_encode_stats_t &, char const **message) noexcept {
    return ram::backend_fail(message, uform_status_unsupported_k,
                             "the RAM residency has no image front-end yet: it lands with the media issue");
}

uform_status_t video_encode(model_t const &, call_t &, tape_view_t<char> paths, std::size_t, std::size_t,
                            encode_request_t, uform_encoded_t &, uform_video_encode_stats_t &,
                            char const **message) noexcept {
    if (uform_status_t status = check_files(paths, message)) return status;
    return ram::backend_fail(message, uform_status_unsupported_k,
                             "the RAM residency does not decode video yet: decoding lands with the media issue");
}

uform_status_t audio_encode(model_t const &, call_t &, tape_view_t<char> paths, std::size_t, encode_request_t,
                            uform_encoded_t &, uform_audio_encode_stats_t &, char const **message) noexcept {
    if (uform_status_t status = check_files(paths, message)) return status;
    return ram::backend_fail(message, uform_status_unsupported_k,
                             "the RAM residency does not decode audio yet: decoding lands with the media issue");
}

uform_status_t audio_encode_samples(model_t const &, call_t &, tape_view_t<float>, std::size_t, std::size_t,
                                    encode_request_t, uform_encoded_t &, uform_audio_encode_stats_t &,
                                    char const **message) noexcept {
    return ram::backend_fail(message, uform_status_unsupported_k,
                             "the RAM residency has no audio front-end yet: it lands with the media issue");
}

} // namespace uform::backend
