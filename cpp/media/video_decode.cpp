// Video through libavformat, libavcodec and libswscale, streamed: the decoder's latest frame is held (by reference)
// until a later one passes the next sampling time, and only sampled frames are converted and kept.
#include "video_decode.hpp"

#include <cmath>

#include "ffmpeg.hpp"

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

} // namespace

uform_status_t decode_video_file(char const *path, double fps, std::size_t max_frames, std::size_t max_pixels,
                                 frame_sink_t sink, char const **message) noexcept {
    quiet_t const quiet;
    if (!(fps > 0) || max_frames == 0)
        return fail(message, uform_status_unsupported_k, "the model's video front-end samples no frames");
    owned_t<AVFormatContext> container;
    int index = -1;
    if (uform_status_t status = open_stream(path, AVMEDIA_TYPE_VIDEO, container, index, message)) return status;
    AVStream const *stream = container->streams[index];
    AVCodecParameters const *parameters = stream->codecpar;
    if (parameters->width > 0 && parameters->height > 0 &&
        std::size_t(parameters->height) > max_pixels / std::size_t(parameters->width))
        return fail(message, uform_status_limit_exceeded_k, "a video frame has more pixels than allowed");
    owned_t<AVCodecContext> decoder;
    if (uform_status_t status = open_decoder(parameters, max_pixels, decoder, message)) return status;
    owned_t<AVPacket> packet(av_packet_alloc());
    owned_t<AVFrame> incoming(av_frame_alloc()), held(av_frame_alloc()), first(av_frame_alloc());
    if (!packet || !incoming || !held || !first)
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");

    double const unit = av_q2d(stream->time_base);
    std::int64_t const start = stream->start_time != AV_NOPTS_VALUE ? stream->start_time : 0;
    double end = 0;    // the clip's end in seconds: the latest frame's time plus its duration
    bool any = false;  // whether `held` holds a frame
    std::size_t k = 0; // frames kept
    auto sample_time = [&]() noexcept { return (double(k) + 0.5) / fps; };
    rgb_image_t image; // the frame being handed on, its bytes reused
    // Keeps `held` as the frame for time k.
    auto keep = [&]() -> uform_status_t {
        image.height = std::size_t(held->height), image.width = std::size_t(held->width);
        if (image.height == 0 || image.width == 0 || image.height > max_pixels / image.width)
            return fail(message, uform_status_corrupt_k, "a video frame has a bad size");
        image.pixels.resize(image.height * image.width * 3);
        ++k;
        if (uform_status_t status = picture_to_rgb(held.get(), image.pixels.data(), message)) return status;
        return sink.keep(sink.context, image, message);
    };
    auto drain = [&]() -> uform_status_t {
        for (;;) {
            int const error = avcodec_receive_frame(decoder.get(), incoming.get());
            if (error == AVERROR(EAGAIN) || error == AVERROR_EOF) return uform_status_ok_k;
            if (error < 0) return decode_failure(error, message);
            if (incoming->decode_error_flags != 0 || (incoming->flags & AV_FRAME_FLAG_CORRUPT) != 0)
                return fail(message, uform_status_corrupt_k, "a media file is truncated or corrupt");
            std::int64_t const pts = incoming->best_effort_timestamp;
            double const time = pts == AV_NOPTS_VALUE ? end : double(pts - start) * unit;
            std::int64_t const ticks = frame_ticks(incoming.get());
            double const duration = ticks > 0                        ? double(ticks) * unit
                                    : stream->avg_frame_rate.num > 0 ? 1 / av_q2d(stream->avg_frame_rate)
                                                                     : 0.0;
            // The held frame serves every sampling time before this one's.
            while (any && k != max_frames && sample_time() < time)
                if (uform_status_t status = keep()) return status;
            end = std::max(end, time + duration);
            if (!any)
                if (int error = av_frame_ref(first.get(), incoming.get()); error < 0)
                    return decode_failure(error, message);
            av_frame_unref(held.get());
            av_frame_move_ref(held.get(), incoming.get());
            any = true;
            if (k == max_frames) return uform_status_ok_k;
        }
    };
    try {
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
        if (k != max_frames) { // read to the end: flush, and check the clip was whole
            if (int error = avcodec_send_packet(decoder.get(), nullptr); error < 0)
                return decode_failure(error, message);
            if (uform_status_t status = drain()) return status;
            if (cut_short(container.get(), stream, end))
                return fail(message, uform_status_corrupt_k, "a clip is shorter than its header says");
        }
        if (!any) return fail(message, uform_status_corrupt_k, "a video stream decodes to no frames");
        // The last frame serves the sampling times left inside the clip; a clip shorter than one interval gives its
        // first frame.
        while (k != max_frames && sample_time() < end)
            if (uform_status_t status = keep()) return status;
        if (k == 0) {
            av_frame_unref(held.get());
            av_frame_move_ref(held.get(), first.get());
            if (uform_status_t status = keep()) return status;
        }
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    }
    return uform_status_ok_k;
}

} // namespace uform::media
