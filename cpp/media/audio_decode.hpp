// Recordings (WAV, FLAC, MP3, Opus and whatever else FFmpeg reads) decoded to mono (channels averaged) and
// resampled to the model's rate by libswresample at its default settings, as MODEL.md's audio features say.
#pragma once

#include <cstddef>
#include <vector>

#include "uform/types.h"

namespace uform::media {

/// The most samples `resample_mono` makes of `count` samples from `from` Hz to `to` Hz.
std::size_t resampled_capacity(std::size_t count, std::size_t from, std::size_t to) noexcept;

/// Resamples `count` mono samples from `from` Hz to `to` Hz with libswresample's defaults (flushed at the end) into
/// `out`, which holds `resampled_capacity(count, from, to)` values; `produced` receives how many it made.
/// `invalid-argument` for a rate libswresample refuses.
uform_status_t resample_mono(float const *samples, std::size_t count, std::size_t from, std::size_t to, float *out,
                             std::size_t &produced, char const **message) noexcept;

/// Decodes the best audio stream of the file at `path` (NUL-terminated) into `mono` at `rate` Hz, and the seconds
/// it holds at its own rate. `corrupt` for an unreadable, truncated or non-finite stream, `unsupported` for a file
/// without audio.
uform_status_t decode_audio_file(char const *path, std::size_t rate, std::vector<float> &mono, double &seconds,
                                 char const **message) noexcept;

} // namespace uform::media
