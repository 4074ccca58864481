// FFmpeg's errors as statuses, its decoders opened for one thread, and its pictures as interleaved RGB.
#include "cpp/media/ffmpeg.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include <sys/stat.h>
#include <unistd.h>

extern "C" {
#include <libavutil/avstring.h>
#include <libswscale/swscale.h>
}

namespace uform::media {
namespace {

/// How many `quiet_t` live on this thread.
thread_local std::size_t quiet_depth = 0;

void drop_or_forward(void *context, int level, char const *format, std::va_list arguments) {
    if (quiet_depth == 0) av_log_default_callback(context, level, format, arguments);
}

/// The demuxers each verb takes, as FFmpeg names them (`av_match_list` matches any name of a demuxer's list).
constexpr char const *audio_formats_k = "wav,flac,mp3,ogg";
constexpr char const *video_formats_k = "mov,mp4,matroska,webm";

} // namespace

quiet_t::quiet_t() noexcept {
    static std::once_flag installed;
    std::call_once(installed, [] {
        if (std::getenv("UFORM_FFMPEG_LOG") == nullptr) av_log_set_callback(drop_or_forward);
    });
    ++quiet_depth;
}

quiet_t::~quiet_t() { --quiet_depth; }

uform_status_t open_failure(int error, char const **message) noexcept {
    if (error == AVERROR(ENOENT) || error == AVERROR(ENOTDIR))
        return fail(message, uform_status_not_found_k, "a media file does not exist");
    if (error == AVERROR(EACCES) || error == AVERROR(EISDIR) || error == AVERROR(EIO) || error == AVERROR(EPERM))
        return fail(message, uform_status_io_k, "a media file could not be opened or read");
    if (error == AVERROR(ENOMEM)) return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    return fail(message, uform_status_corrupt_k, "a media file is not in a format FFmpeg recognises");
}

uform_status_t open_media_file(char const *path, regular_file_t &file, char const **message) noexcept {
    switch (file.open(path, true)) {
    case file_open_t::ok: break;
    case file_open_t::missing:
    case file_open_t::not_folder: return fail(message, uform_status_not_found_k, "a media file does not exist");
    case file_open_t::not_regular:
        return fail(message, uform_status_io_k, "a media file is not a readable regular file");
    case file_open_t::denied:
    case file_open_t::failed: return fail(message, uform_status_io_k, "a media file could not be opened or read");
    }
    if (file.size() == 0) return fail(message, uform_status_corrupt_k, "a media file is empty");
    return uform_status_ok_k;
}

uform_status_t open_stream(char const *path, AVMediaType type, owned_t<AVFormatContext> &container, int &stream,
                           char const **message) noexcept {
    regular_file_t checked; // held open while FFmpeg opens the same path, so a regular file is what it meets
    if (uform_status_t status = open_media_file(path, checked, message)) return status;
    // `file:` keeps FFmpeg from reading a protocol out of the path; the whitelists hold for nested opens too.
    owned_t<char> url{av_asprintf("file:%s", path)};
    AVDictionary *options = nullptr;
    if (!url || av_dict_set(&options, "protocol_whitelist", "file", 0) < 0 ||
        av_dict_set(&options, "format_whitelist", type == AVMEDIA_TYPE_VIDEO ? video_formats_k : audio_formats_k, 0) <
            0) {
        av_dict_free(&options);
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    }
    AVFormatContext *opened = nullptr;
    int const error = avformat_open_input(&opened, url.get(), nullptr, &options);
    av_dict_free(&options);
    if (error == AVERROR(EINVAL))
        return fail(message, uform_status_corrupt_k,
                    type == AVMEDIA_TYPE_VIDEO ? "a media file is not an MP4 or WebM clip"
                                               : "a media file is not a WAV, FLAC, MP3 or Opus recording");
    if (error < 0) return open_failure(error, message);
    container.reset(opened);
    if (int error = avformat_find_stream_info(opened, nullptr); error < 0) return decode_failure(error, message);
    stream = av_find_best_stream(opened, type, -1, -1, nullptr, 0);
    if (stream == AVERROR_STREAM_NOT_FOUND)
        return fail(message, uform_status_unsupported_k,
                    type == AVMEDIA_TYPE_VIDEO ? "a media file has no video stream"
                                               : "a media file has no audio stream");
    if (stream < 0) return decode_failure(stream, message);
    return uform_status_ok_k;
}

bool cut_short(AVFormatContext const *container, AVStream const *stream, double decoded) noexcept {
    if (container->duration_estimation_method == AVFMT_DURATION_FROM_BITRATE) return false;
    double declared = 0;
    if (stream->duration != AV_NOPTS_VALUE && stream->duration > 0)
        declared = double(stream->duration) * av_q2d(stream->time_base);
    else if (container->duration != AV_NOPTS_VALUE && container->duration > 0)
        declared = double(container->duration) / AV_TIME_BASE;
    return decoded < declared * 0.9 - 0.1;
}

uform_status_t decode_failure(int error, char const **message) noexcept {
    if (error == AVERROR(EIO)) return fail(message, uform_status_io_k, "a media file could not be read");
    if (error == AVERROR(ENOMEM)) return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    if (error == AVERROR_DECODER_NOT_FOUND || error == AVERROR_PATCHWELCOME)
        return fail(message, uform_status_unsupported_k, "a media file uses a codec this build cannot decode");
    return fail(message, uform_status_corrupt_k, "a media file is truncated or corrupt");
}

uform_status_t open_decoder(AVCodecParameters const *parameters, std::size_t max_pixels, owned_t<AVCodecContext> &out,
                            char const **message) noexcept {
    AVCodec const *codec = avcodec_find_decoder(parameters->codec_id);
    if (codec == nullptr)
        return fail(message, uform_status_unsupported_k, "a media file uses a codec this build cannot decode");
    out.reset(avcodec_alloc_context3(codec));
    if (!out) return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    if (int error = avcodec_parameters_to_context(out.get(), parameters); error < 0)
        return decode_failure(error, message);
    out->thread_count = 1;
    out->err_recognition |= AV_EF_EXPLODE;
    if (max_pixels != 0) out->max_pixels = std::int64_t(max_pixels);
    if (int error = avcodec_open2(out.get(), codec, nullptr); error < 0) return decode_failure(error, message);
    return uform_status_ok_k;
}

namespace {

/// The byte of a gray sample of `bytes` bytes (big- or little-endian) at `source`: the most significant one.
std::uint8_t gray_byte(std::uint8_t const *source, int bytes, bool big_endian) noexcept {
    return bytes == 1 ? source[0] : big_endian ? source[0] : source[1];
}

/// Copies 8-bit RGB, with or without alpha, as it is (swscale would do the same through buffers of its own, which for a
/// picture a million rows tall take hundreds of megabytes); false for any other format.
bool copy_rgb(AVFrame const *frame, std::uint8_t *rgb) noexcept {
    auto const format = AVPixelFormat(frame->format);
    if (format != AV_PIX_FMT_RGB24 && format != AV_PIX_FMT_RGBA) return false;
    std::size_t const height = std::size_t(frame->height), width = std::size_t(frame->width);
    std::size_t const step = format == AV_PIX_FMT_RGB24 ? 3 : 4;
    for (std::size_t y = 0; y != height; ++y) {
        std::uint8_t const *row = frame->data[0] + std::ptrdiff_t(y) * frame->linesize[0];
        std::uint8_t *target = rgb + y * width * 3;
        if (step == 3) std::memcpy(target, row, width * 3);
        else
            for (std::size_t x = 0; x != width; ++x) std::memcpy(target + x * 3, row + x * 4, 3);
    }
    return true;
}

/// Replicates gray's most significant byte, with or without alpha (swscale would treat it as limited-range luma);
/// false for any other format.
bool copy_gray(AVFrame const *frame, std::uint8_t *rgb) noexcept {
    int bytes = 0, stride = 0;
    bool big_endian = false;
    switch (AVPixelFormat(frame->format)) {
    case AV_PIX_FMT_GRAY8: bytes = 1, stride = 1; break;
    case AV_PIX_FMT_YA8: bytes = 1, stride = 2; break;
    case AV_PIX_FMT_GRAY16BE: bytes = 2, stride = 2, big_endian = true; break;
    case AV_PIX_FMT_GRAY16LE: bytes = 2, stride = 2; break;
    case AV_PIX_FMT_YA16BE: bytes = 2, stride = 4, big_endian = true; break;
    case AV_PIX_FMT_YA16LE: bytes = 2, stride = 4; break;
    default: return false;
    }
    std::size_t const height = std::size_t(frame->height), width = std::size_t(frame->width);
    for (std::size_t y = 0; y != height; ++y) {
        std::uint8_t const *row = frame->data[0] + std::ptrdiff_t(y) * frame->linesize[0];
        for (std::size_t x = 0; x != width; ++x) {
            std::uint8_t const value = gray_byte(row + x * std::size_t(stride), bytes, big_endian);
            rgb[(y * width + x) * 3 + 0] = rgb[(y * width + x) * 3 + 1] = rgb[(y * width + x) * 3 + 2] = value;
        }
    }
    return true;
}

} // namespace

uform_status_t picture_to_rgb(AVFrame const *frame, std::uint8_t *rgb, char const **message) noexcept {
    if (copy_rgb(frame, rgb) || copy_gray(frame, rgb)) return uform_status_ok_k;
    auto const format = AVPixelFormat(frame->format);
    std::size_t const height = std::size_t(frame->height), width = std::size_t(frame->width);
    // Everything else through swscale, alpha dropped without compositing. Bicubic alone is the `ffmpeg` tool's
    // default conversion, which the goldens' reference decodes with: the flag picks the chroma upsampling of 4:2:0
    // pictures, and bilinear, accurate rounding or full chroma interpolation move a JPEG's embedding by ~2e-3.
    SwsContext *scaler = sws_getContext(frame->width, frame->height, format, frame->width, frame->height,
                                        AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr, nullptr);
    if (scaler == nullptr)
        return fail(message, uform_status_unsupported_k, "a picture's pixel format cannot be converted to RGB");
    // swscale's vector paths write whole blocks past a row's end, so it fills rows padded to 64 bytes in a buffer of
    // its allocator's, which are then copied out tight.
    std::size_t const row_bytes = width * 3, padded = (row_bytes + 63) / 64 * 64;
    owned_t<std::uint8_t> converted{static_cast<std::uint8_t *>(av_malloc(padded * height + 64))};
    if (!converted) {
        sws_freeContext(scaler);
        return fail(message, uform_status_out_of_memory_k, "no memory to convert a picture to RGB");
    }
    std::uint8_t *planes[4] = {converted.get(), nullptr, nullptr, nullptr};
    int const strides[4] = {int(padded), 0, 0, 0};
    int const rows = sws_scale(scaler, frame->data, frame->linesize, 0, frame->height, planes, strides);
    sws_freeContext(scaler);
    if (rows != frame->height) return fail(message, uform_status_corrupt_k, "a picture could not be converted to RGB");
    for (std::size_t y = 0; y != height; ++y) std::memcpy(rgb + y * row_bytes, converted.get() + y * padded, row_bytes);
    return uform_status_ok_k;
}

} // namespace uform::media
