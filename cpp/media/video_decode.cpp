// Video through libavformat, libavcodec and libswscale, streamed: the decoder's latest frame is held (by reference)
// until a later one passes the next sampling time, and only sampled frames are converted and kept.
//
// Times follow docs/model.md's video geometry to the bit: a frame's time is its distance from the first decoded
// frame, an exact difference of ticks, converted to seconds with one rounding (`ticks * num / den`), and the clip's
// end `D` likewise from the last frame's ticks plus its duration; sampling times are compared with those doubles
// directly, so a sampling time that falls exactly on a frame takes that frame, and one at `D` is outside the clip.
#include "cpp/media/video_decode.hpp"

#include <cstdint>

#include "cpp/media/ffmpeg.hpp"

namespace uform::media {
namespace {

/// A frame's duration in its stream's time base, as this FFmpeg names it (0 when unknown).
std::int64_t frame_ticks(AVFrame const *frame) noexcept {
#if LIBAVUTIL_VERSION_MAJOR >= 58
    return frame->duration;
#else
    return frame->pkt_duration;
#endif
}

/// The stream's average frame interval in its time base, rounded to the nearest tick (0 when unknown): the duration
/// of a frame that does not state its own.
std::int64_t average_interval(AVStream const *stream) noexcept {
    AVRational const rate = stream->avg_frame_rate;
    if (rate.num <= 0 || rate.den <= 0 || stream->time_base.num <= 0 || stream->time_base.den <= 0) return 0;
    return av_rescale_q(1, av_inv_q(rate), stream->time_base);
}

/// One clip being decoded: its container and decoder, the frames in flight and how far the sampling has come.
struct clip_t {
    double fps;
    std::size_t max_frames, max_pixels;
    frame_sink_t sink;
    char const **message;
    owned_t<AVFormatContext> container;
    int index = -1;
    AVStream const *stream = nullptr;
    owned_t<AVCodecContext> decoder;
    owned_t<AVPacket> packet;
    owned_t<AVFrame> incoming, held, first;
    std::int64_t interval = 0; // the duration of a frame that does not state its own, in ticks
    std::int64_t origin = 0;   // the first decoded frame's presentation time, in ticks
    std::int64_t end = 0;      // D in ticks after `origin`: the last decoded frame's time plus its duration
    bool any = false;          // whether `held` holds a frame
    std::size_t k = 0;         // frames kept
    rgb_image_t image;         // the frame being handed on, its bytes reused

    /// A clip sampled at `fps`, at most `max_frames` frames of at most `max_pixels` pixels, handed to `sink`.
    clip_t(double fps, std::size_t max_frames, std::size_t max_pixels, frame_sink_t sink, char const **message) noexcept
        : fps(fps), max_frames(max_frames), max_pixels(max_pixels), sink(sink), message(message) {}

    /// Opens the file's video stream and its decoder, refusing oversized frames and a stream without a time base.
    uform_status_t open(char const *path) noexcept {
        if (uform_status_t status = open_stream(path, AVMEDIA_TYPE_VIDEO, container, index, message)) return status;
        stream = container->streams[index];
        AVCodecParameters const *parameters = stream->codecpar;
        if (parameters->width > 0 && parameters->height > 0 &&
            std::size_t(parameters->height) > max_pixels / std::size_t(parameters->width))
            return fail(message, uform_status_limit_exceeded_k, "a video frame has more pixels than allowed");
        if (stream->time_base.num <= 0 || stream->time_base.den <= 0)
            return fail(message, uform_status_corrupt_k, "a video stream has no time base");
        if (uform_status_t status = open_decoder(parameters, max_pixels, decoder, message)) return status;
        packet.reset(av_packet_alloc());
        incoming.reset(av_frame_alloc());
        held.reset(av_frame_alloc());
        first.reset(av_frame_alloc());
        if (!packet || !incoming || !held || !first)
            return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
        interval = average_interval(stream);
        return uform_status_ok_k;
    }

    /// Seconds in `ticks` of the time base: the product is exact (below 2^53), the division rounds once.
    double seconds(std::int64_t ticks) const noexcept {
        double const num = stream->time_base.num, den = stream->time_base.den;
        return double(ticks) * num / den;
    }

    /// The time of the next frame to keep, `(k + 0.5) / fps`.
    double sample_time() const noexcept { return (double(k) + 0.5) / fps; }

    /// Converts `held` and hands it to the sink as the frame for time k.
    uform_status_t keep() {
        image.height = std::size_t(held->height), image.width = std::size_t(held->width);
        if (image.height == 0 || image.width == 0 || image.height > max_pixels / image.width)
            return fail(message, uform_status_corrupt_k, "a video frame has a bad size");
        image.pixels.resize(image.height * image.width * 3);
        ++k;
        if (uform_status_t status = picture_to_rgb(held.get(), image.pixels.data(), message)) return status;
        return sink.keep(sink.context, image, message);
    }

    /// Times the decoded `incoming` frame, keeps `held` for every sampling time before it, then holds it instead.
    uform_status_t take() {
        if (incoming->decode_error_flags != 0 || (incoming->flags & AV_FRAME_FLAG_CORRUPT) != 0)
            return fail(message, uform_status_corrupt_k, "a media file is truncated or corrupt");
        // The frame's ticks after the first frame (a frame without a time starts where the previous one ended), and
        // where it ends: exact integers, refused where they would overflow.
        std::int64_t const pts = incoming->best_effort_timestamp;
        if (!any && pts != AV_NOPTS_VALUE) origin = pts;
        std::int64_t offset = end, ends = 0;
        std::int64_t const ticks = frame_ticks(incoming.get());
        if ((pts != AV_NOPTS_VALUE && __builtin_sub_overflow(pts, origin, &offset)) ||
            __builtin_add_overflow(offset, ticks > 0 ? ticks : interval, &ends))
            return fail(message, uform_status_corrupt_k, "a video frame's time is out of range");
        double const time = seconds(offset);
        // The held frame serves every sampling time before this one's.
        while (any && k != max_frames && sample_time() < time)
            if (uform_status_t status = keep()) return status;
        end = ends;
        if (!any)
            if (int error = av_frame_ref(first.get(), incoming.get()); error < 0) return decode_failure(error, message);
        av_frame_unref(held.get());
        av_frame_move_ref(held.get(), incoming.get());
        any = true;
        return uform_status_ok_k;
    }

    /// Takes every frame the decoder has ready, stopping early once `max_frames` are kept.
    uform_status_t drain() {
        for (;;) {
            int const error = avcodec_receive_frame(decoder.get(), incoming.get());
            if (error == AVERROR(EAGAIN) || error == AVERROR_EOF) return uform_status_ok_k;
            if (error < 0) return decode_failure(error, message);
            if (uform_status_t status = take()) return status;
            if (k == max_frames) return uform_status_ok_k;
        }
    }

    /// Feeds the decoder the stream's packets until the file ends or `max_frames` are kept.
    uform_status_t read() {
        while (k != max_frames) {
            int const error = av_read_frame(container.get(), packet.get());
            if (error == AVERROR_EOF) break;
            if (error < 0) return decode_failure(error, message);
            bool const ours = packet->stream_index == index;
            int const sent = ours ? avcodec_send_packet(decoder.get(), packet.get()) : 0;
            av_packet_unref(packet.get());
            if (sent < 0) return decode_failure(sent, message);
            if (uform_status_t status = drain()) return status;
        }
        return uform_status_ok_k;
    }

    /// After a read to the end: flushes the decoder, and checks the clip was as long as its header says.
    uform_status_t flush() {
        if (int error = avcodec_send_packet(decoder.get(), nullptr); error < 0) return decode_failure(error, message);
        if (uform_status_t status = drain()) return status;
        if (cut_short(container.get(), stream, seconds(end)))
            return fail(message, uform_status_corrupt_k, "a clip is shorter than its header says");
        return uform_status_ok_k;
    }

    /// The clip's end: the last frame serves the sampling times left inside the clip (`t < D`); a clip shorter than
    /// one interval gives its first frame.
    uform_status_t finish() {
        if (!any) return fail(message, uform_status_corrupt_k, "a video stream decodes to no frames");
        while (k != max_frames && sample_time() < seconds(end))
            if (uform_status_t status = keep()) return status;
        if (k == 0) {
            av_frame_unref(held.get());
            av_frame_move_ref(held.get(), first.get());
            if (uform_status_t status = keep()) return status;
        }
        return uform_status_ok_k;
    }
};

} // namespace

uform_status_t decode_video_file(char const *path, double fps, std::size_t max_frames, std::size_t max_pixels,
                                 frame_sink_t sink, char const **message) noexcept {
    quiet_t const quiet;
    if (!(fps > 0) || max_frames == 0)
        return fail(message, uform_status_unsupported_k, "the model's video front-end samples no frames");
    clip_t clip(fps, max_frames, max_pixels, sink, message);
    if (uform_status_t status = clip.open(path)) return status;
    try {
        if (uform_status_t status = clip.read()) return status;
        if (clip.k != max_frames)
            if (uform_status_t status = clip.flush()) return status;
        return clip.finish();
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    }
}

} // namespace uform::media
