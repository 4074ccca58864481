// The safetensors header reader and docs/model.md validator, shared by every backend.
//
// See docs/internal-interfaces.md. Every function here is `noexcept`, answers a status, and on failure
// writes a static message (when `message` is not `NULL`) and leaves `out` untouched. On success `message`
// is left untouched too.
#ifndef UFORM_COMMON_CHECKPOINT_HPP
#define UFORM_COMMON_CHECKPOINT_HPP

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <uform/types.h>

namespace uform {

/// The element types safetensors names (`BF16`, `F16`, ..., `BOOL`).
enum class dtype_t { bf16, f16, f32, f64, f8_e4m3, f8_e5m2, i8, u8, i16, i32, i64, bool_ };

/// Bytes taken by one element of `dtype`.
std::size_t dtype_size(dtype_t dtype) noexcept;

/// One tensor of the header.
struct tensor_entry_t {
    std::string name;
    dtype_t dtype;
    std::vector<std::size_t> shape;
    std::uint64_t begin, end; // byte offsets relative to the data section (after 8 + header length)
};

/// The model's geometry, from `__metadata__`; fields of an absent modality or head are zero.
struct geometry_t {
    std::uint32_t version;
    std::size_t depth, hidden, heads, head_dim, ffn_hidden;
    float norm_eps, rope_theta;
    std::size_t rope_sections[3];
    std::size_t dimensions, token_width, choice_groups; // token_width/choice_groups 0 when the head is absent
    bool has_image, has_video, has_audio, has_token_head, has_byte_head;
    std::size_t image_patch_side, image_channels, image_max_patches; // also set for video, which uses them
    float image_mean[3], image_std[3];
    std::size_t video_tubelet_frames;
    float video_fps;
    std::size_t video_max_frames, video_max_patches_per_frame;
    std::size_t audio_sample_rate, audio_n_fft, audio_hop, audio_mel_bins, audio_frames_per_patch, audio_max_patches;
};

/// A validated checkpoint header.
struct checkpoint_t {
    geometry_t geometry;
    std::vector<tensor_entry_t> tensors; // sorted by name
    std::uint64_t data_offset;           // 8 + header length: where the data section starts in the file
    std::uint64_t file_size;

    /// The tensor named `name`, or `nullptr`; a binary search.
    tensor_entry_t const *find(std::string_view name) const noexcept;
};

/// The largest header length accepted: 100 MiB.
inline constexpr std::uint64_t checkpoint_max_header_k = std::uint64_t(100) << 20;

/// Parses and validates a header (the JSON text) against docs/model.md, for a file of `file_size` bytes.
uform_status_t checkpoint_parse(std::string_view header_json, std::uint64_t file_size, checkpoint_t &out,
                                char const **message) noexcept;

/// Reads only the 8-byte length and the header of a file, then parses. Never reads the weights.
/// @param path The path's bytes, not NUL-terminated; an embedded NUL answers `invalid-argument`.
uform_status_t checkpoint_read_file(char const *path, std::size_t path_length, checkpoint_t &out,
                                    char const **message) noexcept;

/// The same over an in-memory checkpoint of `length` bytes.
uform_status_t checkpoint_read_buffer(void const *data, std::size_t length, checkpoint_t &out,
                                      char const **message) noexcept;

} // namespace uform

#endif // UFORM_COMMON_CHECKPOINT_HPP
