// Clips (MP4, WebM and whatever else FFmpeg reads) streamed frame by frame, keeping only the frames docs/model.md's
// video geometry samples, each converted to interleaved 8-bit RGB and handed on before the next.
#pragma once

#include <cstddef>

#include "cpp/media/image_decode.hpp"

namespace uform::media {

/// Where sampled frames go, one at a time: `keep(context, frame, message)` receives each in order, its RGB bytes
/// valid for the call alone; a status other than `ok` stops the decoding and is answered.
struct frame_sink_t {
    uform_status_t (*keep)(void *context, rgb_image_t const &frame, char const **message) noexcept;
    void *context;
};

/// Decodes the best video stream of the file at `path` (NUL-terminated) and hands `sink` the frames at
/// `t = (k + 0.5) / fps` seconds after its first decoded frame while `t < D`, the last frame's time plus its duration,
/// at most `max_frames`: each the last decoded frame whose time is at most `t`; a clip shorter than one interval gives
/// its first frame. Frame times and `D` are exact tick counts converted to seconds with one rounding and compared
/// with `t` directly (docs/model.md, "Video geometry"). Only one frame is held as RGB at a time. Frames of more than
/// `max_pixels` pixels answer `limit-exceeded`; a file without video, `unsupported`; timestamps whose differences
/// overflow, `corrupt`.
uform_status_t decode_video_file(char const *path, double fps, std::size_t max_frames, std::size_t max_pixels,
                                 frame_sink_t sink, char const **message) noexcept;

} // namespace uform::media
