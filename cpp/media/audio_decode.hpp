// Recordings (WAV, FLAC, MP3, Opus and whatever else FFmpeg reads) decoded to mono (channels averaged) and
// resampled to the model's rate by libswresample at its default settings, as docs/model.md's audio features say.
#pragma once

#include <cstddef>
#include <vector>

#include <uform/types.h>

namespace uform::media {

/// The most samples `resample_mono` makes of `count` samples from `from` Hz to `to` Hz.
std::size_t resampled_capacity(std::size_t count, std::size_t from, std::size_t to) noexcept;

/// Input samples at `from` Hz whose resampling to `to` Hz fixes the first `outputs` samples: their span and the
/// reach of libswresample's default filter, with room to spare. Resampling more of the input changes none of them.
std::size_t resampling_reach(std::size_t outputs, std::size_t from, std::size_t to) noexcept;

/// Resamples `count` mono samples from `from` Hz to `to` Hz with libswresample's defaults (flushed at the end) into
/// `out`, which holds `resampled_capacity(count, from, to)` values; `produced` receives how many it made.
/// `invalid-argument` for a rate libswresample refuses. Nonempty input that resamples to nothing (a few samples at a
/// higher rate) makes one zero sample, so that a nonempty clip never becomes an empty item.
uform_status_t resample_mono(float const *samples, std::size_t count, std::size_t from, std::size_t to, float *out,
                             std::size_t &produced, char const **message) noexcept;

/// Decodes the best audio stream of the file at `path` (NUL-terminated) into `mono` at `rate` Hz, and the seconds
/// it read at its own rate. Decoding stops once `mono` holds more than `limit` samples (the patch budget's, see
/// common/media_geometry.hpp), so a long file costs no more than its budget; a file cut short past that point goes
/// unnoticed. `corrupt` for an unreadable, truncated, non-finite or huge-valued stream (beyond 2^32), `unsupported`
/// for a file without audio or at a rate outside 1 kHz to 384 kHz.
uform_status_t decode_audio_file(char const *path, std::size_t rate, std::size_t limit, std::vector<float> &mono,
                                 double &seconds, char const **message) noexcept;

} // namespace uform::media
