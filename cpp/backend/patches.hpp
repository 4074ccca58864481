// The front-ends' patch vectors of docs/model.md from decoded media: images resized into patches, video frames into
// tubelets, recordings into log-mel patches. The media verbs (media.cpp) and the trainer (train.cpp) both build their
// tokens' inputs here, so training sees exactly what inference encodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/checkpoint.hpp"
#include "common/media_geometry.hpp"
#include "cpp/media/fft.hpp"
#include "cpp/media/image_decode.hpp"

namespace uform::backend {

/// Bytes of one image's resize work from `width` columns to `out_height x out_width`: one row resized along its
/// width, the sums of the output, both axes and a cache of row weights. None of it grows with the input's height,
/// and only the cache with its width, by the taps of one output column.
std::size_t image_work_bytes(std::size_t width, std::size_t out_height, std::size_t out_width) noexcept;

/// Resizes one RGB image to `grid.rows * p x grid.columns * p` and writes its normalised patch vectors, `stride`
/// floats apart, row-major over the grid.
/// Along each row, then along each column, on the float values of the 8-bit pixels: each input row is resized along
/// its width and added, weighted, to the output rows whose taps cover it (in input order, as a gather would), a
/// block of output columns at a time: as many as the cache holds the row weights of (all of them, but for images
/// thousands of times wider than their grid).
void image_patches(geometry_t const &g, std::uint8_t const *pixels, std::size_t height, std::size_t width,
                   image_grid_t grid, std::byte *work, float *patches, std::size_t stride) noexcept;

/// Writes the `(time, row, column)` positions of a grid's cells, row-major.
void grid_positions(image_grid_t grid, std::size_t time, std::uint32_t *positions) noexcept;

/// Resizes a decoded image to `grid` and appends its patch vectors to `vectors`, growing `work` as it needs: what a
/// file verb keeps of a picture once it is decoded, so that a batch never holds its pictures.
uform_status_t append_patches(geometry_t const &g, media::rgb_image_t const &image, image_grid_t grid,
                              std::vector<float> &vectors, std::vector<std::byte> &work, char const **message) noexcept;

/// One clip's sampled frames, each resized to the grid of its first frame as soon as it is decoded, so that a clip
/// holds its patch vectors and never its frames.
struct clip_t {
    geometry_t const *geometry = nullptr;
    std::size_t max_patches = 0; // per frame
    image_grid_t grid;
    std::size_t frames = 0;
    std::vector<float> patches;  // [frames x grid cells x p * p * 3], normalised
    std::vector<std::byte> work; // the resize's work
};

/// A `media::frame_sink_t` into a `clip_t`: resizes the frame to the clip's grid and appends its patch vectors.
uform_status_t keep_frame(void *context, media::rgb_image_t const &frame, char const **message) noexcept;

/// Writes a clip's tubelet vectors (frame `f` of a tubelet at `f * p * p * 3`) and `(tubelet, row, column)` positions,
/// tubelet-major; a last incomplete tubelet repeats its final frame.
void clip_tubelets(geometry_t const &g, clip_t const &clip, float *patches, std::uint32_t *positions) noexcept;

/// The periodic Hann window of `n` points the log-mel frames are weighted by, as `torch.hann_window(n)`.
void periodic_hann(std::size_t n, float *window) noexcept;

/// Bytes of the work `audio_patches` takes for one recording of `shape`.
std::size_t audio_work_bytes(geometry_t const &g, audio_shape_t const &shape) noexcept;

/// One recording's log-mel patches (Whisper's recipe over the samples its shape keeps, then patches) into `patches`,
/// its samples at the model's rate, through `mel_filters` `[mel_bins x (n_fft / 2 + 1)]` and the periodic Hann window
/// `hann` `[n_fft]`; `fft` is a KissFFT real-transform plan of `n_fft` points.
void audio_patches(geometry_t const &g, float const *mel_filters, float const *hann, float const *samples,
                   audio_shape_t const &shape, kiss_fftr_cfg fft, std::byte *work, float *patches) noexcept;

} // namespace uform::backend
