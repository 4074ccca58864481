// Image files (JPEG, PNG, WebP) decoded into interleaved 8-bit RGB, their size checked against a pixel limit from
// the header before any picture is allocated.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <uform/types.h>

namespace uform::media {

/// A decoded image: `height * width * 3` bytes of interleaved RGB.
struct rgb_image_t {
    std::vector<std::uint8_t> pixels;
    std::size_t height = 0, width = 0;
};

/// Decodes the image in `bytes`: `corrupt` for anything but a whole JPEG, PNG or WebP with a nonzero size,
/// `limit-exceeded` for more than `max_pixels` pixels (refused from the header, before decoding), `unsupported` for
/// an animated WebP.
uform_status_t decode_image_bytes(std::uint8_t const *bytes, std::size_t length, std::size_t max_pixels,
                                  rgb_image_t &image, char const **message) noexcept;

/// Reads the file at `path` (NUL-terminated) and decodes it as `decode_image_bytes` does; `not-found` or `io` when the
/// file cannot be read.
uform_status_t decode_image_file(char const *path, std::size_t max_pixels, rgb_image_t &image,
                                 char const **message) noexcept;

} // namespace uform::media
