// Images and video on WASI, where FFmpeg is not built: the decoders of cpp/media/image_decode.hpp and
// cpp/media/video_decode.hpp answer `unsupported` with the reason, so that files and encoded bytes are refused while
// pixels given as such still encode. The other builds decode in image_decode.cpp and video_decode.cpp.
#if defined(__wasi__)

#include "common/fail.hpp"
#include "cpp/media/video_decode.hpp"

namespace uform::media {

uform_status_t decode_image_bytes(std::uint8_t const *, std::size_t, std::size_t, rgb_image_t &,
                                  char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "decoding images needs FFmpeg, which the WASI build lacks");
}

uform_status_t decode_image_file(char const *, std::size_t, rgb_image_t &, char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "decoding images needs FFmpeg, which the WASI build lacks");
}

uform_status_t decode_video_file(char const *, double, std::size_t, std::size_t, frame_sink_t,
                                 char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "decoding video needs FFmpeg, which the WASI build lacks");
}

} // namespace uform::media

#endif // defined(__wasi__)
