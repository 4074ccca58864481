// Clips (MP4, WebM and whatever else FFmpeg reads) streamed frame by frame, keeping only the frames MODEL.md's
// video geometry samples, each converted to interleaved 8-bit RGB.
#pragma once

#include <cstddef>
#include <vector>

#include "image_decode.hpp"

namespace uform::media {

/// Decodes the best video stream of the file at `path` (NUL-terminated) and keeps the frames at `(k + 0.5) / fps`
/// seconds from its start while inside the clip, at most `max_frames`: each the last decoded frame whose presentation
/// time is at most that time; a clip shorter than one interval gives its first frame. Frames of more than
/// `max_pixels` pixels answer `limit-exceeded`; a file without video, `unsupported`.
uform_status_t decode_video_file(char const *path, double fps, std::size_t max_frames, std::size_t max_pixels,
                                 std::vector<rgb_image_t> &frames, char const **message) noexcept;

} // namespace uform::media
