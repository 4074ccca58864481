// Reading the training goldens of tests/data/train/ (tools/reference/README.md, "The training goldens") in the C++
// tests: the tensors of train.safetensors as doubles, batch.json as a tree of values, and the count sketch that
// compares a large gradient with its golden.
#pragma once

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#if !defined(__wasi__)
#include <thread>
#endif
#include <string_view>
#include <vector>

#include "cpp/kernels/amx_product.hpp"
#include "cpp/train/random.hpp"
#include "cpp/train/step.hpp"

namespace goldens {

/// The directory of the training goldens: `$UFORM_TEST_DATA/train`, else `tests/data/train` (from the repository
/// root, where ctest runs).
inline std::string directory() {
    char const *root = std::getenv("UFORM_TEST_DATA");
    return std::string(root && *root ? root : "tests/data") + "/train";
}

/// A whole file's bytes; exits the test when it cannot be read.
inline std::string read_file(std::string const &path) {
    std::FILE *file = std::fopen(path.c_str(), "rb");
    if (!file) {
        std::fprintf(stderr, "cannot open %s: run from the repository root or set UFORM_TEST_DATA\n", path.c_str());
        std::exit(2);
    }
    std::string bytes;
    char chunk[65536];
    for (std::size_t got; (got = std::fread(chunk, 1, sizeof chunk, file)) != 0;) bytes.append(chunk, got);
    std::fclose(file);
    return bytes;
}

/// A JSON value of batch.json: numbers as doubles, the rest as usual. Test code: trusts its input.
struct json_t {
    enum kind_t { null_, boolean, number, string, array, object } kind = null_;
    double value = 0;
    std::string text;
    std::vector<json_t> items;
    std::vector<std::string> keys;

    json_t const &operator[](std::string_view key) const {
        for (std::size_t i = 0; i != keys.size(); ++i)
            if (keys[i] == key) return items[i];
        std::fprintf(stderr, "batch.json: no key %.*s\n", int(key.size()), key.data());
        std::exit(2);
    }
    json_t const &operator[](std::size_t i) const { return items[i]; }
    bool has(std::string_view key) const {
        for (auto const &k : keys)
            if (k == key) return true;
        return false;
    }
    std::size_t size() const { return items.size(); }
    std::size_t index() const { return static_cast<std::size_t>(value); }
};

/// Parses the JSON `text` from `at` (a recursive descent over what Python's json.dumps writes).
inline json_t parse_json(std::string_view text, std::size_t &at) {
    auto skip = [&] {
        while (at < text.size() && std::strchr(" \t\r\n", text[at])) ++at;
    };
    skip();
    json_t out;
    char const c = text[at];
    if (c == '{' || c == '[') {
        out.kind = c == '{' ? json_t::object : json_t::array;
        ++at;
        skip();
        if (text[at] == (c == '{' ? '}' : ']')) return ++at, out;
        for (;;) {
            if (c == '{') {
                out.keys.push_back(parse_json(text, at).text);
                skip();
                ++at; // ':'
            }
            out.items.push_back(parse_json(text, at));
            skip();
            if (text[at++] != ',') break;
        }
        return out;
    }
    if (c == '"') {
        out.kind = json_t::string;
        for (++at; text[at] != '"'; ++at) {
            if (text[at] != '\\') {
                out.text += text[at];
                continue;
            }
            char const e = text[++at];
            if (e == 'u') {
                unsigned code =
                    static_cast<unsigned>(std::strtoul(std::string(text.substr(at + 1, 4)).c_str(), nullptr, 16));
                at += 4;
                if (code < 0x80) out.text += char(code);
                else if (code < 0x800) out.text += char(0xC0 | code >> 6), out.text += char(0x80 | (code & 63));
                else
                    out.text += char(0xE0 | code >> 12), out.text += char(0x80 | (code >> 6 & 63)),
                        out.text += char(0x80 | (code & 63));
            } else
                out.text += e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e == 'b' ? '\b' : e == 'f' ? '\f' : e;
        }
        ++at;
        return out;
    }
    if (text.substr(at, 4) == "null") return at += 4, out;
    if (text.substr(at, 4) == "true") return at += 4, out.kind = json_t::boolean, out.value = 1, out;
    if (text.substr(at, 5) == "false") return at += 5, out.kind = json_t::boolean, out;
    out.kind = json_t::number;
    char *end = nullptr;
    std::string const rest(text.substr(at, 64));
    out.value = std::strtod(rest.c_str(), &end);
    at += static_cast<std::size_t>(end - rest.c_str());
    return out;
}

/// batch.json as a tree.
inline json_t batch() {
    std::string const text = read_file(directory() + "/batch.json");
    std::size_t at = 0;
    return parse_json(text, at);
}

/// One tensor of train.safetensors: its shape and its values widened to double.
struct tensor_t {
    std::vector<std::size_t> shape;
    std::vector<double> values;
    std::size_t count() const { return values.size(); }
};

/// Every tensor of a safetensors file (dtypes U8, I64, F32, F64), by name.
inline std::map<std::string, tensor_t> read_safetensors(std::string const &path) {
    std::string const bytes = read_file(path);
    std::uint64_t header = 0;
    std::memcpy(&header, bytes.data(), 8);
    std::size_t at = 0;
    json_t const tree = parse_json(std::string_view(bytes).substr(8, header), at);
    char const *data = bytes.data() + 8 + header;
    std::map<std::string, tensor_t> out;
    for (std::size_t i = 0; i != tree.keys.size(); ++i) {
        if (tree.keys[i] == "__metadata__") continue;
        json_t const &entry = tree.items[i];
        tensor_t t;
        std::size_t count = 1;
        for (auto const &d : entry["shape"].items) t.shape.push_back(d.index()), count *= d.index();
        std::size_t const begin = entry["data_offsets"][0].index();
        std::string const &dtype = entry["dtype"].text;
        t.values.resize(count);
        for (std::size_t e = 0; e != count; ++e) {
            if (dtype == "F32") {
                float v;
                std::memcpy(&v, data + begin + 4 * e, 4);
                t.values[e] = v;
            } else if (dtype == "F64") std::memcpy(&t.values[e], data + begin + 8 * e, 8);
            else if (dtype == "I64") {
                std::int64_t v;
                std::memcpy(&v, data + begin + 8 * e, 8);
                t.values[e] = double(v);
            } else if (dtype == "U8") t.values[e] = static_cast<unsigned char>(data[begin + e]);
            else {
                std::fprintf(stderr, "%s: unexpected dtype %s\n", path.c_str(), dtype.c_str());
                std::exit(2);
            }
        }
        out.emplace(tree.keys[i], std::move(t));
    }
    return out;
}

/// The goldens' count sketch of `count` values named `name` (tools/reference/README.md): element `e` goes to bucket
/// `below(draw e, 1024)` of the stream (0, "sketch/" + name), negated when the draw is odd.
template <typename value_type_>
std::vector<double> sketch(std::string const &name, value_type_ const *values, std::size_t count) {
    std::vector<double> out(1024, 0.0);
    uform::train::stream_t const stream(0, "sketch/" + name);
    for (std::size_t e = 0; e != count; ++e) {
        std::uint64_t const w = stream.draw(e);
        out[uform::train::uniform_below(w, 1024)] += (w & 1 ? -1.0 : 1.0) * double(values[e]);
    }
    return out;
}

/// How close `a` is to the golden `b`: their cosine and `|a - b| / |b|`.
struct closeness_t {
    double cosine, relative;
};

template <typename value_type_>
closeness_t compare(value_type_ const *a, double const *b, std::size_t count) {
    double ab = 0, aa = 0, bb = 0, dd = 0;
    for (std::size_t i = 0; i != count; ++i) {
        double const x = double(a[i]), y = b[i];
        ab += x * y, aa += x * x, bb += y * y, dd += (x - y) * (x - y);
    }
    double const cosine = aa == 0 && bb == 0 ? 1 : ab / std::sqrt(aa * bb);
    double const relative = bb == 0 ? std::sqrt(dd) : std::sqrt(dd / bb);
    return {cosine, relative};
}

/// The trainer's kernels as `$UFORM_TEST_TILES` names them: `model` runs the products on the AMX tiles' software model
/// (cpp/kernels/amx_product.hpp) on any machine; unset, null (the trainer's own choice). Exits on another value.
inline uform::ram::kernels_t const *test_kernels() {
    char const *tiles = std::getenv("UFORM_TEST_TILES");
    if (tiles == nullptr || *tiles == 0) return nullptr;
    uform::ram::kernels_t const *kernels =
        std::strcmp(tiles, "model") == 0 ? uform::ram::kernels_on_tiles(uform::ram::tiles_t::model) : nullptr;
    if (kernels == nullptr) {
        std::fprintf(stderr, "UFORM_TEST_TILES=%s: no such tiles here (model is the one name)\n", tiles);
        std::exit(2);
    }
    std::printf("products on the AMX tiles' software model\n");
    return kernels;
}

/// A `parallel_t` over `threads` fresh threads per loop, tasks taken in turn from a shared counter.
inline uform::ram::parallel_t threaded(std::size_t threads) {
    uform::ram::parallel_t parallel;
    parallel.threads = threads;
    parallel.for_n = [](void *context, std::size_t count, void *fn_context, uform::ram::task_fn_t fn) noexcept {
        std::size_t const workers = *static_cast<std::size_t *>(context);
#if defined(__wasi__)
        // No threads on WASI: the calling thread runs the tasks in turn as each worker, so every worker's scratch
        // is still used.
        for (std::size_t task = 0; task != count; ++task)
            fn(fn_context, task, task % std::max<std::size_t>(workers, 1));
#else
        std::atomic<std::size_t> next{0};
        auto work = [&](std::size_t thread) {
            for (std::size_t task; (task = next.fetch_add(1)) < count;) fn(fn_context, task, thread);
        };
        std::vector<std::thread> pool;
        for (std::size_t t = 1; t < workers; ++t) pool.emplace_back(work, t);
        work(0);
        for (auto &t : pool) t.join();
#endif
    };
    static std::size_t count;
    count = threads;
    parallel.context = &count;
    return parallel;
}

/// The batch of batch.json as the trainer's core reads it, with the masks injected and the media items' front-end
/// inputs taken from the goldens.
struct batch_t {
    std::vector<std::vector<std::uint16_t>> tokens;
    std::vector<std::vector<float>> patches;
    std::vector<std::vector<std::uint32_t>> positions;
    std::vector<uform::train::segment_t> segments;
    std::vector<uform::train::logit_row_t> mask_rows;
    std::vector<std::uint8_t> mask_targets;
    std::vector<std::size_t> bags;
    std::vector<std::size_t> edge_offsets[3], edge_ids[3];
    std::vector<float> edge_weights[3];
    std::vector<uform_late_interaction_side_t> sides;
    std::vector<std::uint8_t> choices;
    std::vector<float> targets;
    std::vector<std::size_t> choice_offsets;

    uform::train::batch_t view() const {
        uform::train::batch_t b;
        b.segments = segments;
        b.mask_rows = mask_rows;
        b.mask_targets = mask_targets;
        b.bags = bags;
        uform_edges_t *sets[3] = {const_cast<uform_edges_t *>(&b.relations.attract),
                                  const_cast<uform_edges_t *>(&b.relations.repel),
                                  const_cast<uform_edges_t *>(&b.relations.ignore)};
        for (int e = 0; e != 3; ++e)
            *sets[e] = {edge_offsets[e].data(),
                        edge_offsets[e].size(),
                        edge_ids[e].data(),
                        edge_ids[e].size(),
                        edge_weights[e].empty() ? nullptr : edge_weights[e].data(),
                        edge_weights[e].size()};
        b.sides = sides;
        b.choices = choices.data();
        b.choice_targets = targets.data();
        b.choice_offsets = choice_offsets.data();
        return b;
    }
};

inline batch_t golden_batch(json_t const &batch, std::map<std::string, tensor_t> const &t) {
    batch_t g;
    std::size_t const n = batch["items"].size();
    g.tokens.resize(n), g.patches.resize(n), g.positions.resize(n), g.segments.resize(n);
    g.choice_offsets.push_back(0);
    json_t const &masks = batch["masks"]["items"];
    for (std::size_t i = 0; i != n; ++i) {
        json_t const &item = batch["items"][i];
        std::string const &modality = item["modality"].text;
        uform::train::segment_t &s = g.segments[i];
        if (modality == "text") {
            std::string const &text = item["text"].text;
            for (unsigned char c : text) g.tokens[i].push_back(c);
            std::string const key = std::to_string(i);
            if (masks.has(key))
                for (json_t const &pair : masks[key].items) {
                    std::size_t const position = pair[0].index();
                    g.mask_rows.push_back({i, position});
                    g.mask_targets.push_back(static_cast<std::uint8_t>(text[position]));
                    g.tokens[i][position] = static_cast<std::uint16_t>(pair[1].index());
                }
            if (item.has("choices")) {
                g.tokens[i].push_back(257);
                for (unsigned char c : item["choices"].text) g.choices.push_back(c);
                for (json_t const &v : item["targets"].items) g.targets.push_back(float(v.value));
            }
            s.modality = uform_modality_text_k;
            s.tokens = g.tokens[i].data();
            s.count = g.tokens[i].size();
        } else {
            tensor_t const &p = t.at("step0.patches." + modality), &q = t.at("step0.positions." + modality);
            g.patches[i].assign(p.values.begin(), p.values.end());
            for (double v : q.values) g.positions[i].push_back(std::uint32_t(v));
            s.modality = modality == "image"   ? uform_modality_image_k
                         : modality == "video" ? uform_modality_video_k
                                               : uform_modality_audio_k;
            s.patches = g.patches[i].data();
            s.positions = modality == "audio" ? nullptr : g.positions[i].data();
            s.count = p.shape[0];
        }
        g.choice_offsets.push_back(g.choices.size());
        g.bags.push_back(batch["bags"][i].index());
        std::string const &side = batch["sides"][i].text;
        g.sides.push_back(side == "query"      ? uform_late_interaction_side_query_k
                          : side == "document" ? uform_late_interaction_side_document_k
                                               : uform_late_interaction_side_none_k);
    }
    char const *kinds[3] = {"attract", "repel", "ignore"};
    for (int e = 0; e != 3; ++e) {
        json_t const &set = batch["relations"][kinds[e]];
        for (json_t const &v : set["offsets"].items) g.edge_offsets[e].push_back(v.index());
        for (json_t const &v : set["ids"].items) g.edge_ids[e].push_back(v.index());
        for (json_t const &v : set["weights"].items) g.edge_weights[e].push_back(float(v.value));
    }
    return g;
}

} // namespace goldens
