// Audio through libavformat, libavcodec and libswresample: every decoded frame averaged to mono by hand (whatever its
// sample format and layout), then streamed through one resampler, so that only the mono signal at the model's rate
// is kept. WASI builds no FFmpeg: there a file answers `unsupported`, and samples are taken at the model's rate only.
#include "cpp/media/audio_decode.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>

#include "common/media_geometry.hpp"
#if defined(__wasi__)
#include "common/fail.hpp"
#else
#include "cpp/media/ffmpeg.hpp"

extern "C" {
#include <libavutil/channel_layout.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
}
#endif

namespace uform::media {
#if !defined(__wasi__)
namespace {

/// A mono float resampler, or a pass-through when both rates agree.
class resampler_t {
  public:
    resampler_t() noexcept = default;
    resampler_t(resampler_t const &) = delete;
    resampler_t &operator=(resampler_t const &) = delete;
    ~resampler_t() { swr_free(&context_); }

    uform_status_t open(std::size_t from, std::size_t to, char const **message) noexcept {
        if (from == to) return uform_status_ok_k;
        if (from > INT_MAX || to > INT_MAX)
            return fail(message, uform_status_invalid_argument_k, "a sample rate is too large to resample");
        AVChannelLayout mono{};
        av_channel_layout_default(&mono, 1);
        if (swr_alloc_set_opts2(&context_, &mono, AV_SAMPLE_FMT_FLT, int(to), &mono, AV_SAMPLE_FMT_FLT, int(from), 0,
                                nullptr) < 0 ||
            swr_init(context_) < 0)
            return fail(message, uform_status_invalid_argument_k, "libswresample refuses the sample rates");
        return uform_status_ok_k;
    }

    /// Appends what `count` more samples (none: the flush at the end) resample to.
    uform_status_t push(float const *samples, std::size_t count, std::vector<float> &out,
                        char const **message) noexcept {
        if (context_ == nullptr) {
            if (count) out.insert(out.end(), samples, samples + count);
            return uform_status_ok_k;
        }
        if (count > INT_MAX / 4)
            return fail(message, uform_status_limit_exceeded_k, "a recording is too long to resample at once");
        int const room = swr_get_out_samples(context_, int(count));
        if (room < 0) return fail(message, uform_status_invalid_argument_k, "libswresample failed");
        std::size_t const at = out.size();
        out.resize(at + std::size_t(room));
        auto *target = reinterpret_cast<std::uint8_t *>(out.data() + at);
        auto const *source = reinterpret_cast<std::uint8_t const *>(samples);
        int const made = swr_convert(context_, &target, room, count ? &source : nullptr, int(count));
        if (made < 0) return fail(message, uform_status_invalid_argument_k, "libswresample failed");
        out.resize(at + std::size_t(made));
        return uform_status_ok_k;
    }

    /// The resampler, or null for a pass-through.
    SwrContext *context() const noexcept { return context_; }

  private:
    SwrContext *context_ = nullptr;
};

/// Sample `i` of channel `c` of a decoded frame, as a float.
float sample_at(AVFrame const *frame, int channels, int c, std::size_t i) noexcept {
    auto const format = AVSampleFormat(frame->format);
    bool const planar = av_sample_fmt_is_planar(format);
    std::uint8_t const *base = planar ? frame->extended_data[c] : frame->extended_data[0];
    std::size_t const index = planar ? i : i * std::size_t(channels) + std::size_t(c);
    switch (av_get_packed_sample_fmt(format)) {
    case AV_SAMPLE_FMT_U8: return (float(base[index]) - 128.0f) / 128.0f;
    case AV_SAMPLE_FMT_S16: return float(reinterpret_cast<std::int16_t const *>(base)[index]) / 32768.0f;
    case AV_SAMPLE_FMT_S32: return float(double(reinterpret_cast<std::int32_t const *>(base)[index]) / 2147483648.0);
    case AV_SAMPLE_FMT_S64:
        return float(double(reinterpret_cast<std::int64_t const *>(base)[index]) / 9223372036854775808.0);
    case AV_SAMPLE_FMT_FLT: return reinterpret_cast<float const *>(base)[index];
    case AV_SAMPLE_FMT_DBL: return float(reinterpret_cast<double const *>(base)[index]);
    default: return NAN;
    }
}

/// Averages a decoded frame's channels into `mono`, refusing non-finite samples and magnitudes beyond 2^32.
uform_status_t average_channels(AVFrame const *frame, std::vector<float> &mono, char const **message) noexcept {
    int const channels = frame->ch_layout.nb_channels;
    if (channels <= 0) return fail(message, uform_status_corrupt_k, "an audio frame has no channels");
    std::size_t const count = std::size_t(frame->nb_samples);
    mono.resize(count);
    for (std::size_t i = 0; i != count; ++i) {
        float sum = 0;
        for (int c = 0; c != channels; ++c) sum += sample_at(frame, channels, c, i);
        mono[i] = sum / float(channels);
        if (!(std::fabs(mono[i]) <= max_sample_magnitude_k))
            return fail(message, uform_status_corrupt_k, "a recording holds NaN, infinite or huge samples");
    }
    return uform_status_ok_k;
}

} // namespace
#endif // !defined(__wasi__)

std::size_t resampled_capacity(std::size_t count, std::size_t from, std::size_t to) noexcept {
    // The exact ratio, rounded up, and room for the filter's tail a flush may add: libswresample's default filter
    // spans 32 taps at the lower rate (swr_convert never writes past the room it is given, whatever this says).
    double const ratio = double(to) / double(std::max<std::size_t>(from, 1));
    return std::size_t(std::ceil(double(count) * ratio)) + 64 * (std::size_t(std::ceil(ratio)) + 1);
}

std::size_t resampling_reach(std::size_t outputs, std::size_t from, std::size_t to) noexcept {
    // libswresample's default filter spans 32 taps at the lower rate, ceil(32 / 0.97 * from / to) input samples when
    // shrinking: four times that on top of the outputs' own span.
    double const ratio = double(from) / double(std::max<std::size_t>(to, 1));
    double const reach = std::ceil(double(outputs) * ratio) + 128 * (std::ceil(ratio) + 1);
    return reach >= double(SIZE_MAX) ? SIZE_MAX : std::size_t(reach);
}

#if defined(__wasi__)

uform_status_t resample_mono(float const *samples, std::size_t count, std::size_t from, std::size_t to, float *out,
                             std::size_t &produced, char const **message) noexcept {
    if (from != to)
        return fail(message, uform_status_unsupported_k,
                    "resampling needs FFmpeg, which the WASI build lacks: give samples at the model's rate");
    if (count != 0) std::memcpy(out, samples, count * sizeof(float));
    produced = count;
    return uform_status_ok_k;
}

uform_status_t decode_audio_file(char const *, std::size_t, std::size_t, std::vector<float> &, double &,
                                 char const **message) noexcept {
    return fail(message, uform_status_unsupported_k, "decoding audio files needs FFmpeg, which the WASI build lacks");
}

#else

uform_status_t resample_mono(float const *samples, std::size_t count, std::size_t from, std::size_t to, float *out,
                             std::size_t &produced, char const **message) noexcept {
    quiet_t const quiet;
    resampler_t resampler;
    if (uform_status_t status = resampler.open(from, to, message)) return status;
    std::size_t const capacity = resampled_capacity(count, from, to);
    if (capacity > INT_MAX || count > INT_MAX)
        return fail(message, uform_status_limit_exceeded_k, "a recording is too long to resample at once");
    SwrContext *context = resampler.context();
    auto *target = reinterpret_cast<std::uint8_t *>(out);
    auto const *source = reinterpret_cast<std::uint8_t const *>(samples);
    int const made = context ? swr_convert(context, &target, int(capacity), &source, int(count)) : 0;
    if (made < 0) return fail(message, uform_status_invalid_argument_k, "libswresample failed");
    target += std::size_t(made) * sizeof(float);
    int const flushed = context ? swr_convert(context, &target, int(capacity) - made, nullptr, 0) : 0;
    if (flushed < 0) return fail(message, uform_status_invalid_argument_k, "libswresample failed");
    produced = std::size_t(made) + std::size_t(flushed);
    if (context == nullptr) std::memcpy(out, samples, count * sizeof(float)), produced = count;
    if (count != 0 && produced == 0) out[0] = 0.0f, produced = 1; // capacity holds at least 64
    return uform_status_ok_k;
}

namespace {

/// A recording's decoded frames on their way to mono samples at the model's rate: the first frame fixes the source
/// rate, each frame's channels are averaged, then resampled.
struct audio_sink_t {
    std::size_t rate = 0;
    AVCodecContext *decoder = nullptr;
    AVFrame *frame = nullptr;
    resampler_t resampler;
    std::vector<float> chunk;
    int source_rate = 0;
    std::size_t source_samples = 0;

    /// Drains the decoder's frames into `mono`, until it asks for more input or ends.
    uform_status_t drain(std::vector<float> &mono, char const **message) {
        for (;;) {
            int const error = avcodec_receive_frame(decoder, frame);
            if (error == AVERROR(EAGAIN) || error == AVERROR_EOF) return uform_status_ok_k;
            if (error < 0) return decode_failure(error, message);
            if (frame->sample_rate <= 0 || (source_rate != 0 && frame->sample_rate != source_rate))
                return fail(message, uform_status_unsupported_k, "a recording changes its sample rate");
            if (source_rate == 0) {
                source_rate = frame->sample_rate;
                if (!sample_rate_accepted(std::size_t(source_rate)))
                    return fail(message, uform_status_unsupported_k,
                                "a recording's sample rate is outside 1 kHz to 384 kHz");
                if (uform_status_t status = resampler.open(std::size_t(source_rate), rate, message)) return status;
            }
            if (uform_status_t status = average_channels(frame, chunk, message)) return status;
            source_samples += chunk.size();
            if (uform_status_t status = resampler.push(chunk.data(), chunk.size(), mono, message)) return status;
            av_frame_unref(frame);
        }
    }

    /// Seconds of the source read so far.
    double seconds() const noexcept { return source_rate ? double(source_samples) / double(source_rate) : 0.0; }
};

/// Reads packets of stream `index` into `sink` until `mono` passes `limit` samples or the container ends; then, unless
/// the budget was passed, flushes the decoder and the resampler.
uform_status_t decode_packets(AVFormatContext *container, int index, AVPacket *packet, std::size_t limit,
                              audio_sink_t &sink, std::vector<float> &mono, char const **message) {
    while (mono.size() <= limit) {
        int const error = av_read_frame(container, packet);
        if (error == AVERROR_EOF) break;
        if (error < 0) return decode_failure(error, message);
        bool const ours = packet->stream_index == index;
        int const sent = ours ? avcodec_send_packet(sink.decoder, packet) : 0;
        av_packet_unref(packet);
        if (sent < 0) return decode_failure(sent, message);
        if (uform_status_t status = sink.drain(mono, message)) return status;
    }
    if (mono.size() > limit) return uform_status_ok_k; // the rest lies past the budget: never read
    if (int error = avcodec_send_packet(sink.decoder, nullptr); error < 0) return decode_failure(error, message);
    if (uform_status_t status = sink.drain(mono, message)) return status;
    if (sink.source_rate != 0)
        if (uform_status_t status = sink.resampler.push(nullptr, 0, mono, message)) return status;
    return uform_status_ok_k;
}

} // namespace

uform_status_t decode_audio_file(char const *path, std::size_t rate, std::size_t limit, std::vector<float> &mono,
                                 double &seconds, char const **message) noexcept {
    quiet_t const quiet;
    owned_t<AVFormatContext> container;
    int index = -1;
    if (uform_status_t status = open_stream(path, AVMEDIA_TYPE_AUDIO, container, index, message)) return status;
    AVStream const *stream = container->streams[index];
    owned_t<AVCodecContext> decoder;
    if (uform_status_t status = open_decoder(stream->codecpar, 0, decoder, message)) return status;
    owned_t<AVPacket> packet(av_packet_alloc());
    owned_t<AVFrame> frame(av_frame_alloc());
    if (!packet || !frame) return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    try {
        mono.clear();
        audio_sink_t sink;
        sink.rate = rate, sink.decoder = decoder.get(), sink.frame = frame.get();
        uform_status_t const status = decode_packets(container.get(), index, packet.get(), limit, sink, mono, message);
        seconds = sink.seconds();
        if (status != uform_status_ok_k || mono.size() > limit) return status;
        if (sink.source_samples != 0 && mono.empty()) mono.push_back(0.0f); // a nonempty recording is never empty
        if (cut_short(container.get(), stream, seconds))
            return fail(message, uform_status_corrupt_k, "a recording is shorter than its header says");
    } catch (...) {
        return fail(message, uform_status_out_of_memory_k, "out of memory decoding");
    }
    return uform_status_ok_k;
}

#endif // defined(__wasi__)

} // namespace uform::media
