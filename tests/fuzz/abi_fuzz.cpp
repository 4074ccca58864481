/**
 * @file abi_fuzz.cpp
 * @brief libFuzzer target of the C API's argument checks: the input decodes into one call through
 * include/uform/uform.h alone, with tapes (arbitrary offsets, lengths and counts), per-item arrays and relations.
 *
 * The calls: `uform_text_encode` and `uform_text_choose` (texts, choices, `max_bytes`, temperature groups),
 * `uform_image_encode_pixels` (heights and widths against pixel spans), `uform_audio_encode_samples` (sample rates,
 * samples NaN or huge), and `uform_trainer_step` on a trainer over the stub's simulated GPUs (bags, the three edge
 * sets, sides, choices and choice targets). Every buffer is exactly as long as the call is told (a buffer shorter
 * than its count is the caller's fault, not a finding), and each call runs blocking or deferred, on no executor,
 * a local one or a RAM one. Besides crashes and sanitizer reports, it aborts when a call breaks the C API's
 * promises: a failure without a message or with a status the call never answers, a lie in a tape that is not
 * refused, or a success whose views disagree with their sizes (row counts, ascending offsets, token counts,
 * probabilities summing to one per item). Build and run: tests/fuzz/run.sh abi SECONDS (the stub backend).
 */
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "tests/fuzz/abi_input.hpp"

using fuzz::exact_t;
using fuzz::reader_t;
using fuzz::require;
using fuzz::tape_t;

namespace {

/** @brief What every input shares, made once: the executors, arenas, model and trainers. */
struct world_t {
    uform_model_t model = nullptr;
    uform_model_description_t description{};
    uform_executor_t local = nullptr, ram = nullptr, vram = nullptr;
    uform_arena_t host_arena = nullptr, device_arena = nullptr;
    uform_trainer_t trainers[2] = {};
    std::size_t trainer_dimensions = 8;
};

world_t &world() {
    static world_t w = [] {
        world_t made;
        made.model = fuzz::load_tiny();
        require(uform_model_describe(made.model, &made.description, nullptr) == uform_status_ok_k);
        require(uform_executor_init_local(&made.local, nullptr) == uform_status_ok_k);
        require(uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, 2, &made.ram, nullptr) ==
                uform_status_ok_k);
        std::size_t const devices[2] = {0, 1};
        require(uform_executor_init_vram(devices, 2, uform_gpu_class_auto_k, nullptr, 0, nullptr, nullptr, 0, 0,
                                         &made.vram, nullptr) == uform_status_ok_k);
        require(uform_arena_init(nullptr, &made.host_arena, nullptr) == uform_status_ok_k);
        require(uform_arena_init(made.vram, &made.device_arena, nullptr) == uform_status_ok_k);
        for (int i = 0; i != 2; ++i) {
            uform_trainer_init_vram_args_t args{};
            args.depth = 1;
            args.hidden = 16;
            args.heads = 2;
            args.dimensions = made.trainer_dimensions;
            args.late_interaction.token_width = 4;
            args.choices.groups = 2;
            args.batch.max_rows_per_device = 4;
            args.batch.max_segments_per_device = 8;
            args.batch.max_columns_per_row = 64;
            args.batch.max_bags_per_device = 4;
            args.batch.image.patch_side = 8;
            args.batch.audio.sample_rate = 16000;
            if (i == 1) {
                args.objective = uform_objective_contrastive_k;
                args.contrastive.form = uform_pair_loss_form_sigmoid_k;
                args.contrastive.negatives = uform_negatives_hard_k;
            }
            require(uform_trainer_init_vram(made.vram, &args, &made.trainers[i], nullptr) == uform_status_ok_k);
        }
        return made;
    }();
    return w;
}

/** @brief The statuses an encoding verb answers for bad arguments. */
void require_encode_failure(uform_status_t status, char const *message) {
    fuzz::require_failure(status, message,
                          {uform_status_invalid_argument_k, uform_status_shape_mismatch_k,
                           uform_status_limit_exceeded_k, uform_status_unsupported_k, uform_status_out_of_memory_k});
}

/** @brief Runs a call blocking or deferred (then waited and released): a success leaves the message alone, a
 *  refusal before the call runs takes no outcome. */
template <typename call_type_>
uform_status_t run(reader_t &in, call_type_ &&call, char const *&message) {
    bool const deferred = in.flag();
    uform_outcome_t outcome = nullptr;
    message = nullptr;
    uform_status_t status = call(deferred ? &outcome : nullptr, &message);
    if (deferred && status == uform_status_deferred_k) {
        require(outcome != nullptr && message != nullptr);
        message = nullptr;
        status = uform_outcome_wait(outcome, &message);
        require(uform_outcome_release(outcome) == uform_status_ok_k);
        require(uform_outcome_status(outcome, nullptr) == uform_status_invalid_argument_k); // released
    } else require(outcome == nullptr && status != uform_status_deferred_k);
    if (status == uform_status_ok_k) require(message == nullptr);
    return status;
}

uform_executor_t pick_executor(reader_t &in) {
    switch (in.below(4)) {
    case 0: return nullptr;
    case 1: return world().local;
    default: return world().ram;
    }
}

/** @brief Output flags as bits, rarely unknown ones: a C caller may pass any `int`, and so does this target (as
 *  bits, never read back as the enum, which C++ would not allow). */
unsigned pick_outputs(reader_t &in) {
    std::uint8_t const bits = in.byte();
    return bits < 0xF0 ? bits % 8 : bits;
}

/** @brief Writes a scalar's bits into `scalar`, rarely an unknown one. */
void pick_scalar(reader_t &in, uform_scalar_t &scalar) {
    std::uint8_t const pick = in.byte();
    int const bits = pick < 0xF8 ? pick % 8 : pick;
    std::memcpy(&scalar, &bits, sizeof(bits));
}

/** @brief The bits of an enum, read without reading it as the enum. */
template <typename enum_type_>
unsigned bits_of(enum_type_ const &value) {
    unsigned bits;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

std::size_t pick_max_bytes(reader_t &in) {
    static constexpr std::size_t table[] = {
        0, 1, 4, 16, 64, 16384, std::size_t(1) << 24, (std::size_t(1) << 24) + 1, SIZE_MAX};
    return table[in.below(std::size(table))];
}

/** @brief Text items: mostly short, sometimes past the default 16,384 bytes; the first bytes from the input. */
tape_t<char> make_texts(reader_t &in, std::size_t max_count) {
    tape_t<char> texts;
    std::uint8_t const seed = in.byte();
    texts.make(
        in, max_count, [&](std::size_t) { return in.byte() < 0xF8 ? in.below(40) : in.below(5) * 8192 + in.below(9); },
        [&](std::size_t i) { return i < 48 ? char(in.byte()) : char('a' + (i * 7 + seed) % 26); });
    return texts;
}

/** @brief The resolved outputs and scalar of a successful encoding call, checked against `encoded`. */
void require_encoded(uform_encoded_t const &encoded, unsigned outputs, uform_scalar_t const &scalar,
                     std::size_t items) {
    require((outputs & ~7u) == 0 && bits_of(scalar) <= unsigned(uform_scalar_b1_k));
    unsigned const resolved = outputs ? outputs : unsigned(uform_outputs_embeddings_k);
    uform_scalar_t const as = scalar == uform_scalar_auto_k ? uform_scalar_f32_k : scalar;
    require(!((as == uform_scalar_i8_k || as == uform_scalar_b1_k) && (resolved & uform_outputs_states_k)));
    uform_model_description_t const &d = world().description;
    fuzz::require_rows(encoded.embeddings, resolved & uform_outputs_embeddings_k, items, d.dimensions, as, false);
    fuzz::require_rows(encoded.states, resolved & uform_outputs_states_k, items, d.hidden, as, true);
    fuzz::require_rows(encoded.token_vectors, resolved & uform_outputs_token_vectors_k, items, d.token_width, as, true);
    if ((resolved & uform_outputs_states_k) && (resolved & uform_outputs_token_vectors_k))
        for (std::size_t i = 0; i <= items; ++i) require(encoded.states.offsets[i] == encoded.token_vectors.offsets[i]);
    if ((resolved & uform_outputs_embeddings_k) && as == uform_scalar_f32_k)
        for (std::size_t i = 0; i != items; ++i) {
            auto const *row = reinterpret_cast<float const *>(static_cast<std::byte const *>(encoded.embeddings.data) +
                                                              i * encoded.embeddings.stride);
            double norm = 0;
            for (std::size_t c = 0; c != d.dimensions; ++c) norm += double(row[c]) * row[c];
            require(norm == 0 || std::fabs(norm - 1) < 1e-3);
        }
}

/** @brief Tokens of item `i` of a successful call, as its states or token vectors say; `SIZE_MAX` without them. */
std::size_t tokens_of(uform_encoded_t const &encoded, std::size_t i) {
    uform_rows_t const &rows = encoded.states.data ? encoded.states : encoded.token_vectors;
    return rows.data ? rows.offsets[i + 1] - rows.offsets[i] : SIZE_MAX;
}

void fuzz_text_encode(reader_t &in) {
    tape_t<char> texts = make_texts(in, 6);
    uform_text_encode_stats_t stats{};
    uform_text_encode_args_t args{};
    pick_scalar(in, args.scalar);
    args.max_bytes = pick_max_bytes(in);
    args.stats = &stats;
    unsigned const outputs = pick_outputs(in);
    uform_executor_t const executor = pick_executor(in);
    uform_encoded_t encoded{};
    char const *message;
    uform_status_t const status = run(
        in,
        [&](uform_outcome_t *outcome, char const **m) {
            return uform_text_encode(world().model, executor, texts.data.pointer(), texts.data.count,
                                     texts.offsets.pointer(), texts.count, static_cast<uform_outputs_t>(outputs), &args,
                                     world().host_arena, &encoded, outcome, m);
        },
        message);
    if (status != uform_status_ok_k) return require_encode_failure(status, message);
    require(texts.honest);
    std::size_t const items = texts.offsets.null ? 0 : texts.count;
    std::size_t const max_bytes = args.max_bytes ? args.max_bytes : 16384;
    require(max_bytes <= (std::size_t(1) << 24));
    require_encoded(encoded, outputs, args.scalar, items);
    require(stats.items == items);
    std::size_t tokens = 0;
    for (std::size_t i = 0; i != items; ++i) {
        std::size_t const bytes = texts.item_size(i);
        require(bytes <= max_bytes);
        std::size_t const rows = tokens_of(encoded, i);
        require(rows == SIZE_MAX || rows == bytes);
        tokens += bytes;
    }
    require(stats.tokens == tokens);
}

void fuzz_text_choose(reader_t &in) {
    tape_t<char> texts = make_texts(in, 5);
    tape_t<char> choices;
    std::size_t const lie = in.below(8); // one in eight: a count other than the texts'
    std::size_t const wanted = texts.count + (lie == 0) - (lie == 1 && texts.count);
    choices.offsets.resize(wanted + 1);
    choices.count = wanted;
    choices.offsets[0] = in.below(3);
    for (std::size_t i = 0; i != wanted; ++i) choices.offsets[i + 1] = choices.offsets[i] + in.below(5);
    choices.data.resize(choices.offsets[wanted]);
    for (std::size_t i = 0; i != choices.data.count; ++i) choices.data[i] = char(in.below(6) + 'a');
    exact_t<std::size_t> groups;
    std::size_t const groups_mode = in.below(6);
    if (groups_mode >= 2) {
        groups.resize(groups_mode == 2 ? texts.count + 1 : texts.count);
        for (std::size_t i = 0; i != groups.count; ++i) groups[i] = in.byte() < 0xF0 ? in.below(2) : in.size_value(4);
        groups.null = groups_mode == 3 && groups.count;
    }
    uform_text_choose_stats_t stats{};
    uform_text_choose_args_t args{};
    args.temperature_groups = groups.pointer();
    args.temperature_groups_count = groups.count;
    args.max_bytes = pick_max_bytes(in);
    args.stats = &stats;
    uform_executor_t const executor = pick_executor(in);
    uform_tape_t probabilities{};
    char const *message;
    uform_status_t const status = run(
        in,
        [&](uform_outcome_t *outcome, char const **m) {
            return uform_text_choose(world().model, executor, texts.data.pointer(), texts.data.count,
                                     texts.offsets.pointer(), texts.count, choices.data.pointer(), choices.data.count,
                                     choices.offsets.pointer(), choices.count, &args, world().host_arena,
                                     &probabilities, outcome, m);
        },
        message);
    if (status != uform_status_ok_k) return require_encode_failure(status, message);
    require(texts.honest);
    std::size_t const items = texts.offsets.null ? 0 : texts.count;
    require(choices.count == items && probabilities.items == items && probabilities.scalar == uform_scalar_f32_k);
    require(groups.count == 0 || groups.count == items);
    require(probabilities.offsets != nullptr && probabilities.offsets[0] == 0);
    auto const *values = static_cast<float const *>(probabilities.data);
    std::size_t total = 0;
    for (std::size_t i = 0; i != items; ++i) {
        std::size_t const legal = choices.item_size(i);
        require(legal >= 1 && probabilities.offsets[i + 1] - probabilities.offsets[i] == legal);
        require(groups.count == 0 || groups[i] < world().description.choice_temperature_groups);
        bool seen[256] = {};
        for (std::size_t j = choices.offsets[i]; j != choices.offsets[i + 1]; ++j) {
            auto const byte = static_cast<unsigned char>(choices.data[j]);
            require(!seen[byte]);
            seen[byte] = true;
        }
        double sum = 0;
        for (std::size_t j = probabilities.offsets[i]; j != probabilities.offsets[i + 1]; ++j) {
            require(std::isfinite(values[j]) && values[j] >= 0 && values[j] <= 1);
            sum += values[j];
        }
        require(std::fabs(sum - 1) < 1e-4);
        total += legal;
    }
    require(stats.items == items && stats.choices == total);
}

void fuzz_image_pixels(reader_t &in) {
    std::vector<std::size_t> heights, widths;
    tape_t<std::uint8_t> pixels;
    pixels.make(
        in, 4,
        [&](std::size_t) {
            std::size_t const h = in.byte() < 0xF0 ? in.below(24) + (in.byte() < 0xF8) : in.size_value(64);
            std::size_t const w = in.byte() < 0xF0 ? in.below(24) + (in.byte() < 0xF8) : in.size_value(64);
            heights.push_back(h);
            widths.push_back(w);
            std::size_t area, bytes;
            bool const fits = !__builtin_mul_overflow(h, w, &area) && !__builtin_mul_overflow(area, 3, &bytes) &&
                              bytes <= 64 * 64 * 3;
            std::size_t const honest = fits ? bytes : in.below(16);
            switch (in.byte() % 16) { // a lying span, now and then
            case 0: return honest + 1;
            case 1: return honest ? honest - 1 : 0;
            default: return honest;
            }
        },
        [&](std::size_t i) { return std::uint8_t(i < 32 ? in.byte() : i * 13); });
    exact_t<std::size_t> h, w; // one per item (fewer would be the caller's fault), now and then null
    h.resize(heights.size());
    w.resize(widths.size());
    for (std::size_t i = 0; i != h.count; ++i) h[i] = heights[i], w[i] = widths[i];
    h.null = in.byte() == 0xFF;
    w.null = in.byte() == 0xFF;
    uform_image_encode_stats_t stats{};
    uform_image_encode_args_t args{};
    pick_scalar(in, args.scalar);
    args.max_patches = in.size_value(80);
    args.max_pixels = in.flag() ? 0 : in.size_value(600);
    args.stats = &stats;
    unsigned const outputs = pick_outputs(in);
    uform_executor_t const executor = pick_executor(in);
    uform_encoded_t encoded{};
    char const *message;
    uform_status_t const status = run(
        in,
        [&](uform_outcome_t *outcome, char const **m) {
            return uform_image_encode_pixels(world().model, executor, pixels.data.pointer(), pixels.data.count,
                                             pixels.offsets.pointer(), pixels.count, h.pointer(), w.pointer(),
                                             static_cast<uform_outputs_t>(outputs), &args, world().host_arena, &encoded,
                                             outcome, m);
        },
        message);
    if (status != uform_status_ok_k) {
        require_encode_failure(status, message);
        require(stats.failed_item == SIZE_MAX || stats.failed_item < pixels.count);
        return;
    }
    require(pixels.honest);
    std::size_t const items = pixels.offsets.null ? 0 : pixels.count;
    require_encoded(encoded, outputs, args.scalar, items);
    std::size_t const budget = args.max_patches == 0 || args.max_patches > world().description.image_max_patches
                                   ? world().description.image_max_patches
                                   : args.max_patches;
    std::size_t const max_pixels = args.max_pixels ? args.max_pixels : 100'000'000;
    std::size_t area_sum = 0;
    for (std::size_t i = 0; i != items; ++i) {
        require(h[i] != 0 && w[i] != 0 && h[i] * w[i] * 3 == pixels.item_size(i) && h[i] * w[i] <= max_pixels);
        std::size_t const tokens = tokens_of(encoded, i);
        require(tokens == SIZE_MAX || (tokens >= 1 && tokens <= budget));
        area_sum += h[i] * w[i];
    }
    require(stats.items == items && stats.pixels == area_sum && stats.failed_item == SIZE_MAX);
}

void fuzz_audio_samples(reader_t &in) {
    tape_t<float> samples;
    samples.make(
        in, 4, [&](std::size_t) { return in.byte() < 0xF0 ? in.below(64) : in.below(4) * 20000 + in.below(9); },
        [&](std::size_t i) { return i < 24 ? in.real() : float(std::sin(double(i) * 0.01)); });
    std::size_t const sample_rate = in.flag() ? 16000 : in.size_value(96000);
    uform_audio_encode_stats_t stats{};
    uform_audio_encode_args_t args{};
    pick_scalar(in, args.scalar);
    args.max_patches = in.size_value(300);
    args.stats = &stats;
    unsigned const outputs = pick_outputs(in);
    uform_executor_t const executor = pick_executor(in);
    uform_encoded_t encoded{};
    char const *message;
    uform_status_t const status = run(
        in,
        [&](uform_outcome_t *outcome, char const **m) {
            return uform_audio_encode_samples(world().model, executor, samples.data.pointer(), samples.data.count,
                                              samples.offsets.pointer(), samples.count, sample_rate,
                                              static_cast<uform_outputs_t>(outputs), &args, world().host_arena,
                                              &encoded, outcome, m);
        },
        message);
    if (status != uform_status_ok_k) {
        require_encode_failure(status, message);
        require(stats.failed_item == SIZE_MAX || stats.failed_item < samples.count);
        return;
    }
    require(samples.honest && sample_rate != 0);
    std::size_t const items = samples.offsets.null ? 0 : samples.count;
    require_encoded(encoded, outputs, args.scalar, items);
    std::size_t const budget = args.max_patches == 0 || args.max_patches > world().description.audio_max_patches
                                   ? world().description.audio_max_patches
                                   : args.max_patches;
    for (std::size_t i = 0; i != items; ++i) {
        for (std::size_t j = samples.offsets[i]; j != samples.offsets[i + 1]; ++j)
            require(std::isfinite(samples.data[j]));
        std::size_t const tokens = tokens_of(encoded, i);
        require(tokens == SIZE_MAX || tokens <= budget);
        if (samples.item_size(i) == 0) require(tokens == SIZE_MAX || tokens == 0);
    }
    require(stats.items == items && stats.failed_item == SIZE_MAX && stats.truncated_items <= items);
    require(std::isfinite(stats.seconds) && stats.seconds >= 0);
}

/** @brief An edge set over `items`: none, or CSR offsets, ids and weights, now and then lying about a count. */
struct edges_t {
    exact_t<std::size_t> offsets, ids;
    exact_t<float> weights;

    uform_edges_t make(reader_t &in, std::size_t items) {
        std::size_t const mode = in.below(8);
        if (mode < 3) return uform_edges_t{};
        std::size_t const lie = in.below(16);
        offsets.resize(items + 1 + (lie == 0) - (lie == 1));
        std::size_t cursor = in.byte() < 0xF0 ? 0 : in.below(3);
        for (std::size_t i = 0; i != offsets.count; ++i) {
            offsets[i] = cursor;
            cursor += in.below(3);
        }
        if (lie == 2 && offsets.count >= 2) std::swap(offsets[0], offsets[offsets.count - 1]);
        std::size_t const last = offsets.count ? offsets[offsets.count - 1] : 0;
        ids.resize(lie == 3 ? last + 1 : lie == 4 && last ? last - 1 : last);
        for (std::size_t i = 0; i != ids.count; ++i) ids[i] = in.byte() < 0xF8 ? in.below(items + 1) : in.size_value(4);
        if (mode >= 5) {
            weights.resize(lie == 5 ? ids.count + 1 : ids.count);
            for (std::size_t i = 0; i != weights.count; ++i)
                weights[i] = in.byte() < 0xE0 ? 1.0f + in.below(4) : in.real();
        }
        offsets.null = lie == 6 && offsets.count;
        ids.null = lie == 7 && ids.count;
        return uform_edges_t{offsets.pointer(), offsets.count,     ids.pointer(),
                             ids.count,         weights.pointer(), weights.count};
    }
};

/** @brief Whether an edge set passes the documented checks over `items`. */
bool edges_valid(uform_edges_t const &e, std::size_t items) {
    if (e.offsets_count == 0) return e.ids_count == 0 && e.weights_count == 0;
    if (!e.offsets || (!e.ids && e.ids_count) || (!e.weights && e.weights_count)) return false;
    if (e.offsets_count != items + 1 || e.offsets[items] != e.ids_count) return false;
    if (e.weights_count != 0 && e.weights_count != e.ids_count) return false;
    for (std::size_t i = 0; i != items; ++i) {
        if (e.offsets[i] > e.offsets[i + 1]) return false;
        for (std::size_t k = e.offsets[i]; k != e.offsets[i + 1]; ++k)
            if (e.ids[k] >= items || e.ids[k] == i) return false;
    }
    for (std::size_t k = 0; k != e.weights_count; ++k)
        if (!(std::isfinite(e.weights[k]) && e.weights[k] > 0)) return false;
    return true;
}

void fuzz_trainer_step(reader_t &in) {
    static constexpr std::string_view paths[] = {"tests/data/media/gray.png", "tests/data/media/photo.jpg",
                                                 "/nonexistent-uform-fuzz/item.wav", "", std::string_view("a\0b", 3)};
    // The items: modalities, then contents (texts, or one of a few harmless paths for media).
    std::size_t const n_drawn = in.below(19);
    std::vector<std::string_view> items(n_drawn);
    std::vector<std::string> texts(n_drawn);
    exact_t<uform_modality_t> modalities;
    modalities.resize(n_drawn);
    for (std::size_t i = 0; i != n_drawn; ++i) {
        std::uint8_t const pick = in.byte();
        int raw = pick < 0xC0 ? 0 : pick < 0xFE ? 1 + pick % 3 : pick == 0xFE ? 4 : -1;
        std::memcpy(&modalities[i], &raw, sizeof(raw));
        if (raw == 0) {
            std::size_t const length = in.byte() < 0xF0 ? in.below(24) : 60 + in.below(8);
            for (std::size_t j = 0; j != length; ++j) texts[i].push_back(char(j < 8 ? in.byte() : 'a' + j % 26));
            items[i] = texts[i];
        } else items[i] = paths[in.below(std::size(paths))];
    }
    modalities.null = n_drawn && in.byte() == 0xFF;
    tape_t<char> contents;
    contents.offsets.resize(n_drawn + 1);
    contents.count = n_drawn;
    contents.offsets[0] = in.below(2);
    for (std::size_t i = 0; i != n_drawn; ++i) contents.offsets[i + 1] = contents.offsets[i] + items[i].size();
    contents.data.resize(contents.offsets[n_drawn]);
    for (std::size_t i = 0; i != n_drawn; ++i)
        std::memcpy(contents.data.values.get() + contents.offsets[i], items[i].data(), items[i].size());
    std::size_t const n = n_drawn;

    uform_trainer_step_args_t args{};
    exact_t<std::size_t> bags;
    if (std::size_t const mode = in.below(6); mode >= 2) {
        bags.resize(mode == 2 ? n + 1 : n);
        for (std::size_t i = 0; i != bags.count; ++i) bags[i] = in.byte() < 0xF8 ? in.below(6) : in.size_value(8);
        bags.null = mode == 3 && bags.count;
    }
    args.bags = bags.pointer();
    args.bags_count = bags.count;
    edges_t attract, repel, ignore;
    args.relations.attract = attract.make(in, n);
    args.relations.repel = repel.make(in, n);
    args.relations.ignore = ignore.make(in, n);
    exact_t<uform_late_interaction_side_t> sides;
    if (std::size_t const mode = in.below(6); mode >= 2) {
        sides.resize(mode == 2 ? n + 1 : n);
        for (std::size_t i = 0; i != sides.count; ++i) {
            int const raw = in.byte() < 0xF8 ? int(in.below(3)) : int(in.u64());
            std::memcpy(&sides[i], &raw, sizeof(raw));
        }
        sides.null = mode == 3 && sides.count;
    }
    args.sides = sides.pointer();
    args.sides_count = sides.count;
    tape_t<char> choices;
    tape_t<float> targets;
    if (in.below(3) == 0) {
        std::size_t const lie = in.below(8);
        std::size_t const count = n + (lie == 0) - (lie == 1 && n);
        choices.offsets.resize(count + 1);
        targets.offsets.resize(count + 1);
        choices.count = targets.count = count;
        choices.offsets[0] = targets.offsets[0] = 0;
        for (std::size_t i = 0; i != count; ++i) {
            std::size_t const legal = in.byte() < 0x80 ? 0 : in.below(4);
            choices.offsets[i + 1] = choices.offsets[i] + legal;
            targets.offsets[i + 1] = targets.offsets[i] + legal + (lie == 2 && i == 0);
        }
        choices.data.resize(choices.offsets[count]);
        for (std::size_t j = 0; j != choices.data.count; ++j) choices.data[j] = char('a' + in.below(5));
        targets.data.resize(targets.offsets[count]);
        for (std::size_t i = 0; i != count; ++i) {
            std::size_t const legal = targets.offsets[i + 1] - targets.offsets[i];
            for (std::size_t j = targets.offsets[i]; j != targets.offsets[i + 1]; ++j)
                targets.data[j] = in.byte() < 0xF0 ? 1.0f / float(legal) : in.real();
        }
        targets.count = lie == 3 ? count + 1 - 2 * (count != 0) : count;
        if (targets.count != count) targets.offsets.resize(targets.count + 1); // zeros: an empty tape of that count
        args.choices = choices.data.pointer();
        args.choices_length = choices.data.count;
        args.choices_offsets = choices.offsets.pointer();
        args.choices_count = choices.count;
        args.choice_targets = targets.data.pointer();
        args.choice_targets_length = targets.data.count;
        args.choice_targets_offsets = targets.offsets.pointer();
        args.choice_targets_count = targets.count;
    }
    uform_trainer_step_stats_t stats{};
    args.stats = &stats;
    std::size_t const arena_pick = in.below(3);
    args.arena = arena_pick == 0 ? nullptr : arena_pick == 1 ? world().host_arena : world().device_arena;
    uform_trainer_t const trainer = world().trainers[in.below(2)];
    uform_executor_t const executor = in.byte() < 0xF8 ? world().vram : world().ram;
    uform_rows_t embeddings{};
    char const *message;
    uform_status_t const status = run(
        in,
        [&](uform_outcome_t *outcome, char const **m) {
            return uform_trainer_step(trainer, executor, modalities.pointer(), contents.data.pointer(),
                                      contents.data.count, contents.offsets.pointer(), contents.count, &args,
                                      &embeddings, outcome, m);
        },
        message);
    if (status != uform_status_ok_k) {
        fuzz::require_failure(status, message,
                              {uform_status_invalid_argument_k, uform_status_shape_mismatch_k,
                               uform_status_limit_exceeded_k, uform_status_unsupported_k, uform_status_not_found_k,
                               uform_status_io_k, uform_status_corrupt_k, uform_status_out_of_memory_k});
        return;
    }
    require(!modalities.null || n == 0);
    for (uform_edges_t const *e : {&args.relations.attract, &args.relations.repel, &args.relations.ignore})
        require(edges_valid(*e, n));
    require(bags.count == 0 || bags.count == n);
    require(sides.count == 0 || sides.count == n);
    for (std::size_t i = 0; i != sides.count; ++i) require(bits_of(sides[i]) <= 2);
    if (choices.count) {
        require(choices.count == n && targets.count == n);
        for (std::size_t i = 0; i != n; ++i) {
            require(choices.item_size(i) == targets.item_size(i));
            double sum = 0;
            for (std::size_t j = targets.offsets[i]; j != targets.offsets[i + 1]; ++j) {
                require(std::isfinite(targets.data[j]) && targets.data[j] >= 0);
                sum += targets.data[j];
            }
            require(choices.item_size(i) == 0 ||
                    (std::fabs(sum - 1) <= 1e-3 && modalities[i] == uform_modality_text_k));
        }
    }
    for (std::size_t i = 0; i != n; ++i) {
        require(bits_of(modalities[i]) <= unsigned(uform_modality_audio_k) && modalities[i] != uform_modality_video_k);
        if (modalities[i] == uform_modality_text_k) require(items[i].size() <= 64);
        else require(items[i] == paths[0] || items[i] == paths[1]);
    }
    require(std::isfinite(stats.loss) && std::isfinite(stats.gradient_norm) && std::isfinite(stats.learning_rate));
    require(stats.items == n);
    if (args.arena)
        fuzz::require_rows(embeddings, true, n, world().trainer_dimensions, uform_scalar_f32_k, false,
                           args.arena == world().device_arena ? uform_residency_vram_k : uform_residency_ram_k);
    else require(embeddings.data == nullptr && embeddings.count == 0);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    world();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const *data, std::size_t size) {
    reader_t in{data, size};
    switch (in.below(5)) {
    case 0: fuzz_text_encode(in); break;
    case 1: fuzz_text_choose(in); break;
    case 2: fuzz_image_pixels(in); break;
    case 3: fuzz_audio_samples(in); break;
    default: fuzz_trainer_step(in); break;
    }
    return 0;
}
