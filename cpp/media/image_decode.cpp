// Images through FFmpeg's own decoders (mjpeg, png, webp), one packet holding the whole file, no demuxer: the
// format is recognised from its signature and the size from its header, so that a file claiming more pixels than
// allowed is refused before the decoder allocates anything.
#include "cpp/media/image_decode.hpp"

#include <cerrno>
#include <climits>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpp/media/ffmpeg.hpp"

namespace uform::media {
namespace {

std::uint32_t big16(std::uint8_t const *p) noexcept { return std::uint32_t(p[0]) << 8 | p[1]; }
std::uint32_t big32(std::uint8_t const *p) noexcept { return big16(p) << 16 | big16(p + 2); }
std::uint32_t little16(std::uint8_t const *p) noexcept { return std::uint32_t(p[1]) << 8 | p[0]; }
std::uint32_t little24(std::uint8_t const *p) noexcept { return little16(p) | std::uint32_t(p[2]) << 16; }
std::uint32_t little32(std::uint8_t const *p) noexcept { return little16(p) | little16(p + 2) << 16; }

/// The image formats this verb reads.
enum class image_format_t { none, jpeg, png, webp };

/// The start-of-frame markers of JPEG, which carry the picture's size: C0 to CF but DHT (C4), JPG (C8) and DAC (CC).
bool start_of_frame(std::uint8_t marker) noexcept {
    return marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
}

image_format_t sniff(std::uint8_t const *b, std::size_t n, std::size_t &width, std::size_t &height,
                     bool &animated) noexcept {
    animated = false;
    static constexpr std::uint8_t png_signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    if (n >= 24 && std::memcmp(b, png_signature, 8) == 0) {
        if (std::memcmp(b + 12, "IHDR", 4) != 0) return image_format_t::none;
        width = big32(b + 16), height = big32(b + 20);
        return image_format_t::png;
    }
    if (n >= 30 && std::memcmp(b, "RIFF", 4) == 0 && std::memcmp(b + 8, "WEBP", 4) == 0) {
        std::uint8_t const *chunk = b + 12, *data = b + 20;
        if (std::memcmp(chunk, "VP8 ", 4) == 0) { // lossy: a key frame's start code, then 14-bit sizes
            if (data[3] != 0x9D || data[4] != 0x01 || data[5] != 0x2A) return image_format_t::none;
            width = little16(data + 6) & 0x3FFF, height = little16(data + 8) & 0x3FFF;
        } else if (std::memcmp(chunk, "VP8L", 4) == 0) { // lossless: a signature byte, then 14-bit sizes less one
            if (data[0] != 0x2F) return image_format_t::none;
            std::uint32_t const bits = little32(data + 1);
            width = (bits & 0x3FFF) + 1, height = (bits >> 14 & 0x3FFF) + 1;
        } else if (std::memcmp(chunk, "VP8X", 4) == 0) { // extended: flags, then 24-bit canvas sizes less one
            animated = (data[0] & 0x02) != 0;
            width = std::size_t(little24(data + 4)) + 1, height = std::size_t(little24(data + 7)) + 1;
        } else {
            return image_format_t::none;
        }
        return image_format_t::webp;
    }
    if (n >= 4 && b[0] == 0xFF && b[1] == 0xD8) {
        std::size_t at = 2;
        while (at + 4 <= n) {
            if (b[at] != 0xFF) return image_format_t::none;
            std::uint8_t const marker = b[at + 1];
            if (marker == 0xFF) { // fill byte
                ++at;
                continue;
            }
            if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD7)) { // standalone markers
                at += 2;
                continue;
            }
            if (marker == 0xD9 || marker == 0xDA) return image_format_t::none; // end or scan before any frame
            std::size_t const length = big16(b + at + 2);
            if (length < 2) return image_format_t::none;
            if (start_of_frame(marker)) {
                if (at + 9 > n) return image_format_t::none;
                height = big16(b + at + 5), width = big16(b + at + 7);
                return image_format_t::jpeg;
            }
            at += 2 + length;
        }
    }
    return image_format_t::none;
}

AVCodecID codec_of(image_format_t format) noexcept {
    switch (format) {
    case image_format_t::jpeg: return AV_CODEC_ID_MJPEG;
    case image_format_t::png: return AV_CODEC_ID_PNG;
    case image_format_t::webp: return AV_CODEC_ID_WEBP;
    case image_format_t::none: break;
    }
    return AV_CODEC_ID_NONE;
}

/// Decodes the whole file held by `packet` (its data padded as FFmpeg wants).
uform_status_t decode_packet(AVPacket *packet, std::size_t max_pixels, rgb_image_t &image,
                             char const **message) noexcept {
    std::size_t width = 0, height = 0;
    bool animated = false;
    image_format_t const format = sniff(packet->data, std::size_t(packet->size), width, height, animated);
    if (format == image_format_t::none)
        return fail(message, uform_status_corrupt_k, "an image file is not a JPEG, PNG or WebP");
    if (width == 0 || height == 0) return fail(message, uform_status_corrupt_k, "an image has a zero size");
    if (animated) return fail(message, uform_status_unsupported_k, "an animated WebP is not an image");
    if (height > max_pixels / width)
        return fail(message, uform_status_limit_exceeded_k, "an image has more pixels than max_pixels");

    AVCodecParameters parameters{};
    parameters.codec_type = AVMEDIA_TYPE_VIDEO;
    parameters.codec_id = codec_of(format);
    owned_t<AVCodecContext> decoder;
    if (uform_status_t status = open_decoder(&parameters, max_pixels, decoder, message)) return status;
    owned_t<AVFrame> frame(av_frame_alloc());
    if (!frame) return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    int error = avcodec_send_packet(decoder.get(), packet);
    if (error >= 0) error = avcodec_send_packet(decoder.get(), nullptr);
    if (error >= 0 || error == AVERROR_EOF) error = avcodec_receive_frame(decoder.get(), frame.get());
    if (error < 0) return decode_failure(error, message);
    if (frame->decode_error_flags != 0 || (frame->flags & AV_FRAME_FLAG_CORRUPT) != 0)
        return fail(message, uform_status_corrupt_k, "a media file is truncated or corrupt");
    if (frame->width <= 0 || frame->height <= 0 || std::size_t(frame->height) > max_pixels / std::size_t(frame->width))
        return fail(message, uform_status_corrupt_k, "an image decodes to another size than its header's");
    try {
        image.height = std::size_t(frame->height), image.width = std::size_t(frame->width);
        image.pixels.resize(image.height * image.width * 3);
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    }
    return picture_to_rgb(frame.get(), image.pixels.data(), message);
}

} // namespace

uform_status_t decode_image_bytes(std::uint8_t const *bytes, std::size_t length, std::size_t max_pixels,
                                  rgb_image_t &image, char const **message) noexcept {
    quiet_t const quiet;
    if (length > std::size_t(INT_MAX) - AV_INPUT_BUFFER_PADDING_SIZE)
        return fail(message, uform_status_limit_exceeded_k, "an image file is larger than 2 GiB");
    owned_t<AVPacket> packet(av_packet_alloc());
    if (!packet || av_new_packet(packet.get(), int(length)) < 0)
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    if (length != 0) std::memcpy(packet->data, bytes, length);
    return decode_packet(packet.get(), max_pixels, image, message);
}

uform_status_t decode_image_file(char const *path, std::size_t max_pixels, rgb_image_t &image,
                                 char const **message) noexcept {
    quiet_t const quiet;
    regular_file_t file;
    if (uform_status_t status = open_media_file(path, file, message)) return status;
    auto const length = std::size_t(file.size());
    if (length > std::size_t(INT_MAX) - AV_INPUT_BUFFER_PADDING_SIZE)
        return fail(message, uform_status_limit_exceeded_k, "an image file is larger than 2 GiB");
    owned_t<AVPacket> packet(av_packet_alloc());
    if (!packet || av_new_packet(packet.get(), int(length)) < 0)
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    std::int64_t const got = file.read_at(packet->data, length, 0);
    if (got < 0) return fail(message, uform_status_io_k, "a media file could not be read");
    if (std::size_t(got) != length) return fail(message, uform_status_io_k, "a media file shrank while it was read");
    return decode_packet(packet.get(), max_pixels, image, message);
}

} // namespace uform::media
