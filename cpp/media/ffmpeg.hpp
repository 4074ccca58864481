// What the decoders share over FFmpeg: owning handles for its objects, the mapping of its errors onto statuses, and
// the conversion of a decoded picture into interleaved 8-bit RGB (grayscale replicated, alpha dropped).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
}

#include <uform/types.h>

#include "common/fail.hpp"
#include "common/regular_file.hpp"

namespace uform::media {

/// Frees an FFmpeg object through its own release function.
struct ffmpeg_free_t {
    void operator()(AVFormatContext *context) const noexcept { avformat_close_input(&context); }
    void operator()(AVCodecContext *context) const noexcept { avcodec_free_context(&context); }
    void operator()(AVFrame *frame) const noexcept { av_frame_free(&frame); }
    void operator()(AVPacket *packet) const noexcept { av_packet_free(&packet); }
    void operator()(std::uint8_t *bytes) const noexcept { av_free(bytes); }
    void operator()(char *text) const noexcept { av_free(text); }
};

/// An owned FFmpeg object.
template <typename object_type_>
using owned_t = std::unique_ptr<object_type_, ffmpeg_free_t>;

/// While one lives on a thread, what FFmpeg logs from that thread is dropped: the library prints nothing. The first
/// one installs FFmpeg's log callback (which hands other threads' lines to FFmpeg's default, stderr), unless the
/// environment variable `UFORM_FFMPEG_LOG` is set, which leaves FFmpeg's logging as it is.
class quiet_t {
  public:
    quiet_t() noexcept;
    ~quiet_t();
    quiet_t(quiet_t const &) = delete;
    quiet_t &operator=(quiet_t const &) = delete;
};

/// Maps the error of opening a file (the OS's or FFmpeg's) onto `not-found`, `io`, `out-of-memory` or `corrupt`.
uform_status_t open_failure(int error, char const **message) noexcept;

/// Opens `path` (NUL-terminated) as a nonempty regular file without ever blocking (a FIFO, a device or a socket is
/// refused at once, before anything reads it): `not-found`, `io` or `corrupt` (empty) if not. Every decoder opens its
/// file through here.
uform_status_t open_media_file(char const *path, regular_file_t &file, char const **message) noexcept;

/// Opens the container at `path` through the `file` protocol alone and finds its best stream of `type`: `not-found`
/// and `io` as the file is, `corrupt` for a container FFmpeg cannot read or one the verb does not take (audio: WAV,
/// FLAC, MP3, Ogg; video: MP4 and its family, Matroska and WebM; never playlists, concatenations or images),
/// `unsupported` when it has no stream of `type` or no decoder for it.
uform_status_t open_stream(char const *path, AVMediaType type, owned_t<AVFormatContext> &container, int &stream,
                           char const **message) noexcept;

/// Whether a stream that declares its length (not guessed from the bit rate) decoded to clearly less, `decoded`
/// seconds: less than 90% of it, less a tenth of a second (codecs' padding and priming make up the slack).
bool cut_short(AVFormatContext const *container, AVStream const *stream, double decoded) noexcept;

/// Maps an error while reading or decoding a stream onto `io`, `out-of-memory`, `unsupported` or `corrupt`.
uform_status_t decode_failure(int error, char const **message) noexcept;

/// Opens the decoder of `parameters` for one thread (the executor parallelises across items), refusing pictures of
/// more than `max_pixels` pixels (zero: no picture limit).
uform_status_t open_decoder(AVCodecParameters const *parameters, std::size_t max_pixels, owned_t<AVCodecContext> &out,
                            char const **message) noexcept;

/// Converts a decoded picture into `frame->height * frame->width * 3` bytes of interleaved RGB at `rgb`.
uform_status_t picture_to_rgb(AVFrame const *frame, std::uint8_t *rgb, char const **message) noexcept;

} // namespace uform::media
