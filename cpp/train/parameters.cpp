// The trainer's parameters: the tensor list of a geometry, loaded from a checkpoint or seeded, and refreshed copies.
#include "cpp/train/parameters.hpp"

#include <cmath>
#include <cstring>
#include <new>

#include "common/fail.hpp"
#include "common/scalars.hpp"
#include "cpp/kernels/amx_product.hpp"
#include "cpp/mapped_file.hpp"
#include "cpp/weights.hpp"
#include "cpp/train/random.hpp"

namespace uform::train {
namespace {

/// The `trainer.*` scalars' initial values (docs/model.md): InfoNCE ln(1/0.07) and 0, sigmoid ln 10 and -10; the late
/// interaction's ln(1/0.07) either way.
void scalar_inits(uform_pair_loss_form_t form, float values[3]) noexcept {
    bool const sigmoid = form == uform_pair_loss_form_sigmoid_k;
    values[0] = static_cast<float>(sigmoid ? std::log(10.0) : std::log(1 / 0.07));
    values[1] = sigmoid ? -10.0f : 0.0f;
    values[2] = static_cast<float>(std::log(1 / 0.07));
}

/// Names of the three scalars, in the parameters' order.
constexpr std::string_view scalar_names_k[3] = {"trainer.contrastive.log_scale", "trainer.contrastive.bias",
                                                "trainer.late_interaction.log_scale"};

/// Appends a tensor of `rows x columns` (`columns` 0: rank 1 of `rows`) with zeroed buffers.
void add_tensor(std::vector<tensor_t> &tensors, std::string name, std::size_t rows, std::size_t columns) {
    tensor_t t;
    t.rank = columns == 0 ? 1 : 2;
    t.shape[0] = rows, t.shape[1] = columns == 0 ? 1 : columns;
    t.decays = t.rank == 2 && name != "embed.byte.weight";
    t.panelled = t.decays;
    t.name = std::move(name);
    std::size_t const count = t.count();
    t.master.assign(count, 0.0f), t.grad.assign(count, 0.0f);
    if (!t.panelled) t.copy.assign(count, 0.0f);
    t.moment1.assign(count, 0.0f), t.moment2.assign(count, 0.0f);
    tensors.push_back(std::move(t));
}

/// Every trained tensor of `g` in docs/model.md's order, zero; the scalars last.
std::vector<tensor_t> tensor_list(geometry_t const &g) {
    std::vector<tensor_t> t;
    std::size_t const hidden = g.hidden, attention = g.heads * g.head_dim,
                      pixels = g.image_patch_side * g.image_patch_side * g.image_channels;
    add_tensor(t, "embed.byte.weight", 258, hidden);
    if (g.has_image) add_tensor(t, "embed.image.weight", hidden, pixels), add_tensor(t, "embed.image.bias", hidden, 0);
    if (g.has_video)
        add_tensor(t, "embed.video.weight", hidden, g.video_tubelet_frames * pixels),
            add_tensor(t, "embed.video.bias", hidden, 0);
    if (g.has_audio)
        add_tensor(t, "embed.audio.weight", hidden, g.audio_frames_per_patch * g.audio_mel_bins),
            add_tensor(t, "embed.audio.bias", hidden, 0);
    for (std::size_t i = 0; i != g.depth; ++i) {
        std::string const p = "blocks." + std::to_string(i) + ".";
        add_tensor(t, p + "attn_norm.weight", hidden, 0);
        add_tensor(t, p + "attn.qkv.weight", 3 * attention, hidden);
        add_tensor(t, p + "attn.out.weight", hidden, attention);
        add_tensor(t, p + "mlp_norm.weight", hidden, 0);
        add_tensor(t, p + "mlp.gate_up.weight", 2 * g.ffn_hidden, hidden);
        add_tensor(t, p + "mlp.down.weight", hidden, g.ffn_hidden);
    }
    add_tensor(t, "final_norm.weight", hidden, 0);
    add_tensor(t, "head.embedding.weight", g.dimensions, hidden);
    if (g.has_token_head) add_tensor(t, "head.token.weight", g.token_width, hidden);
    if (g.has_byte_head) add_tensor(t, "head.byte.weight", 256, hidden);
    for (std::string_view name : scalar_names_k) add_tensor(t, std::string(name), 1, 0);
    return t;
}

/// Whether `name` is one of the `trainer.*` scalars.
bool is_scalar(std::string_view name) noexcept { return name.starts_with("trainer."); }

/// librosa's Slaney mel scale, as tools/checkpoint/write_checkpoint.py computes it in double.
double hz_to_mel(double f) noexcept {
    double const f_sp = 200.0 / 3, min_log_mel = 1000.0 / f_sp, log_step = std::log(6.4) / 27.0;
    return f >= 1000.0 ? min_log_mel + std::log(f / 1000.0) / log_step : f / f_sp;
}
double mel_to_hz(double m) noexcept {
    double const f_sp = 200.0 / 3, min_log_mel = 1000.0 / f_sp, log_step = std::log(6.4) / 27.0;
    return m >= min_log_mel ? 1000.0 * std::exp(log_step * (m - min_log_mel)) : f_sp * m;
}
/// numpy's linspace: `start + k * step`, the last value `stop`.
double linspace(double start, double stop, std::size_t num, std::size_t k) noexcept {
    return k + 1 == num ? stop : static_cast<double>(k) * ((stop - start) / static_cast<double>(num - 1)) + start;
}

/// `librosa.filters.mel(sr, n_fft, n_mels)` (Slaney, F32) as write_checkpoint.py writes it, row-major.
std::vector<float> mel_filters(std::size_t rate, std::size_t n_fft, std::size_t mels) {
    std::size_t const bins = n_fft / 2 + 1;
    std::vector<double> mel_f(mels + 2);
    double const top = hz_to_mel(static_cast<double>(rate) / 2);
    for (std::size_t k = 0; k != mels + 2; ++k) mel_f[k] = mel_to_hz(linspace(hz_to_mel(0.0), top, mels + 2, k));
    std::vector<float> out(mels * bins);
    for (std::size_t i = 0; i != mels; ++i) {
        double const enorm = 2.0 / (mel_f[i + 2] - mel_f[i]);
        double const lower_diff = mel_f[i + 1] - mel_f[i], upper_diff = mel_f[i + 2] - mel_f[i + 1];
        for (std::size_t b = 0; b != bins; ++b) {
            double const f = linspace(0.0, static_cast<double>(rate) / 2, bins, b);
            double const w = std::min(-(mel_f[i] - f) / lower_diff, (mel_f[i + 2] - f) / upper_diff);
            out[i * bins + b] = static_cast<float>(static_cast<double>(static_cast<float>(w >= 0.0 ? w : 0.0)) * enorm);
        }
    }
    return out;
}

/// Reads `count` values of tensor `name` (BF16 or F32 in the file) into `out` as F32; false with `status` set.
bool read_values(checkpoint_t const &checkpoint, ram::mapped_file_t const &file, std::string_view name,
                 std::size_t count, float *out, uform_status_t &status, char const *&message) noexcept {
    tensor_entry_t const *entry = checkpoint.find(name);
    if (entry == nullptr || (entry->dtype != dtype_t::bf16 && entry->dtype != dtype_t::f32)) {
        status = uform_status_corrupt_k, message = "a trained tensor is missing or neither BF16 nor F32";
        return false;
    }
    std::byte const *bytes =
        ram::tensor_bytes(checkpoint, file.bytes(), &file, name, entry->dtype, count, status, message);
    if (bytes == nullptr) return false;
    for (std::size_t i = 0; i != count; ++i) {
        if (entry->dtype == dtype_t::f32) std::memcpy(out + i, bytes + 4 * i, 4);
        else {
            std::uint16_t bits;
            std::memcpy(&bits, bytes + 2 * i, 2);
            out[i] = bf16_to_f32(bits);
        }
    }
    return true;
}

} // namespace

tensor_t *parameters_t::find(std::string_view name) noexcept {
    for (tensor_t &t : tensors)
        if (t.name == name) return &t;
    return nullptr;
}

tensor_t const *parameters_t::find(std::string_view name) const noexcept {
    return const_cast<parameters_t *>(this)->find(name);
}

// The tensor list of the checkpoint's geometry, each read from the file; absent scalars from `form`.
uform_status_t parameters_load(char const *path, std::size_t path_length, checkpoint_t const &checkpoint,
                               uform_pair_loss_form_t form, parameters_t &out, char const **message) noexcept {
    try {
        ram::mapped_file_t file;
        if (uform_status_t const status = file.open(path, path_length, message); status != uform_status_ok_k)
            return status;
        parameters_t p;
        p.geometry = checkpoint.geometry;
        p.tensors = tensor_list(p.geometry);
        geometry_t const &g = p.geometry;
        float inits[3];
        scalar_inits(form, inits);
        uform_status_t status = uform_status_ok_k;
        char const *text = nullptr;
        for (tensor_t &t : p.tensors) {
            if (is_scalar(t.name) && checkpoint.find(t.name) == nullptr) {
                for (std::size_t s = 0; s != 3; ++s)
                    if (t.name == scalar_names_k[s]) t.master[0] = inits[s];
                continue;
            }
            if (!read_values(checkpoint, file, t.name, t.count(), t.master.data(), status, text))
                return fail(message, status, text);
        }
        if (g.has_audio) {
            p.mel_filters.resize(g.audio_mel_bins * (g.audio_n_fft / 2 + 1));
            if (!read_values(checkpoint, file, "frontend.audio.mel_filters", p.mel_filters.size(), p.mel_filters.data(),
                             status, text))
                return fail(message, status, text);
        }
        p.temperatures.assign(g.choice_groups, 1.0f);
        if (g.choice_groups != 0 && !read_values(checkpoint, file, "head.choice.temperatures", g.choice_groups,
                                                 p.temperatures.data(), status, text))
            return fail(message, status, text);
        out = std::move(p);
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the trainer's parameters");
    }
}

// Per tensor its stream's normals, scaled in double; the fixed tensors as docs/model.md computes them.
uform_status_t parameters_seeded(geometry_t const &geometry, std::uint64_t seed, uform_pair_loss_form_t form,
                                 parameters_t &out, char const **message) noexcept {
    try {
        parameters_t p;
        p.geometry = geometry;
        p.tensors = tensor_list(geometry);
        float inits[3];
        scalar_inits(form, inits);
        for (tensor_t &t : p.tensors) {
            if (is_scalar(t.name)) {
                for (std::size_t s = 0; s != 3; ++s)
                    if (t.name == scalar_names_k[s]) t.master[0] = inits[s];
            } else if (t.name.ends_with(".bias")) std::fill(t.master.begin(), t.master.end(), 0.0f);
            else if (t.rank == 1) std::fill(t.master.begin(), t.master.end(), 1.0f);
            else {
                stream_t const stream(seed, t.name);
                double const scale =
                    t.name == "embed.byte.weight" ? 1.0 : 1.0 / std::sqrt(static_cast<double>(t.shape[1]));
                for (std::size_t e = 0; e != t.count(); ++e) t.master[e] = static_cast<float>(stream.normal(e) * scale);
            }
        }
        if (geometry.has_audio)
            p.mel_filters = mel_filters(geometry.audio_sample_rate, geometry.audio_n_fft, geometry.audio_mel_bins);
        p.temperatures.assign(geometry.choice_groups, 1.0f);
        out = std::move(p);
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the trainer's parameters");
    }
}

// BF16 copies of the masters, each panelled weight's packed for `y = x W^T` instead (rounded as packed), one tensor per
// task.
uform_status_t parameters_refresh(parameters_t &p, ram::parallel_t const &parallel, char const **message) noexcept {
    try {
        if (p.kernels == nullptr) p.kernels = ram::kernels_for_training();
        if (p.kernels == nullptr) return fail(message, uform_status_unsupported_k, "no kernels for this machine");
        ram::kernels_t const &k = *p.kernels;
        p.panel_data.resize(p.tensors.size());
        p.panels.resize(p.tensors.size());
        for (std::size_t i = 0; i != p.tensors.size(); ++i) {
            tensor_t const &t = p.tensors[i];
            if (t.panelled) p.panel_data[i].resize(ram::panels_floats(k, t.shape[1], t.shape[0]));
        }
        parallel(p.tensors.size(), [&](std::size_t i, std::size_t) noexcept {
            tensor_t &t = p.tensors[i];
            if (!t.panelled) return k.round_bf16(t.master.data(), t.copy.data(), t.count());
            ram::operand_t const weight{t.master.data(), t.shape[1], true};
            p.panels[i] =
                ram::pack_panels(k, ram::parallel_t{}, weight, t.shape[1], t.shape[0], p.panel_data[i].data());
        });
        return uform_status_ok_k;
    } catch (std::bad_alloc const &) {
        return fail(message, uform_status_out_of_memory_k, "out of memory for the trainer's weight panels");
    }
}

} // namespace uform::train
