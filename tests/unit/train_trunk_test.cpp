// Unit tests of the trainer's parameters and trunk (cpp/train/parameters, cpp/train/trunk) against the PyTorch
// training goldens of tests/data/train/ (tools/reference/README.md, "The training goldens"): the step-0 embeddings
// and token vectors of the mixed batch, every trained tensor's gradient of the joint loss from the upstream gradients
// the goldens give at the trunk's outputs, the determinism of the backward on two threads, and the seeded weights
// bit for bit.
//
// Prints "N passed, M failed" and exits nonzero on a failure. Run from the repository root (or set UFORM_TEST_DATA).
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/checkpoint.hpp"
#include "cpp/train/parameters.hpp"
#include "cpp/train/trunk.hpp"
#include "tests/unit/train_goldens.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, std::string const &what) {
    if (ok) ++passed;
    else ++failed, std::fprintf(stderr, "FAILED: %s\n", what.c_str());
}

/// FNV-1a-64 of F32 values' little-endian bytes, as hex.
std::string fnv_hex(std::vector<float> const &values) {
    std::string_view const bytes(reinterpret_cast<char const *>(values.data()), values.size() * 4);
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(uform::train::fnv1a64(bytes)));
    return text;
}

} // namespace

int main() {
    using namespace uform;
    goldens::json_t const batch = goldens::batch();
    auto const golden = goldens::read_safetensors(goldens::directory() + "/train.safetensors");
    std::string const path =
        std::string(std::getenv("UFORM_TEST_DATA") ? std::getenv("UFORM_TEST_DATA") : "tests/data") +
        "/tiny.safetensors";
    checkpoint_t checkpoint;
    char const *message = "";
    if (checkpoint_read_file(path.data(), path.size(), checkpoint, &message) != uform_status_ok_k) {
        std::fprintf(stderr, "cannot read %s: %s\n", path.c_str(), message);
        return 2;
    }
    ram::parallel_t const parallel = goldens::threaded(2);
    train::parameters_t parameters;
    check(train::parameters_load(path.data(), path.size(), checkpoint, uform_pair_loss_form_info_nce_k, parameters,
                                 &message) == uform_status_ok_k,
          "parameters_load");
    parameters.kernels = goldens::test_kernels();
    check(train::parameters_refresh(parameters, parallel, &message) == uform_status_ok_k, "parameters_refresh");
    // The parameters' order is the goldens'.
    goldens::json_t const &names = batch["parameters"];
    check(names.size() == parameters.tensors.size(), "as many tensors as batch.json's parameters");
    for (std::size_t i = 0; i != std::min(names.size(), parameters.tensors.size()); ++i)
        check(parameters.tensors[i].name == names[i]["name"].text, "parameter " + names[i]["name"].text);

    // The batch's segments: texts masked as batch.json says, choice items with CHOOSE, the media from the goldens;
    // byte logits at the masked positions, then at each choice item's CHOOSE.
    goldens::json_t const &items = batch["items"];
    std::size_t const count = items.size();
    goldens::batch_t const data = goldens::golden_batch(batch, golden);
    std::vector<train::segment_t> const &segments = data.segments;
    std::vector<train::logit_row_t> logit_rows = data.mask_rows;
    std::size_t const mask_rows = logit_rows.size();
    for (std::size_t i = 0; i != count; ++i)
        if (items[i].has("choices")) logit_rows.push_back({i, segments[i].count - 1});
    std::vector<std::uint8_t> flags(count, 0);
    for (goldens::json_t const &i : batch["step0.token_vector_items"].items) flags[i.index()] = 1;

    // Forward: z and the token vectors.
    train::trunk_t trunk;
    train::trunk_outputs_t out;
    train::trunk_request_t const request{segments, flags, logit_rows};
    check(trunk.forward(parameters, request, parallel, {}, out, &message) == uform_status_ok_k, "forward");
    std::size_t const D = parameters.geometry.dimensions, TW = parameters.geometry.token_width;
    goldens::tensor_t const &z = golden.at("step0.z");
    for (std::size_t i = 0; i != count; ++i) {
        goldens::closeness_t const c = goldens::compare(out.z + i * D, z.values.data() + i * D, D);
        if (i == 5) {
            bool zero = true;
            for (std::size_t j = 0; j != D; ++j) zero = zero && out.z[i * D + j] == 0.0f;
            check(zero, "z of the empty item 5 is zero");
        } else check(c.cosine >= 0.9999, "z row " + std::to_string(i) + " cosine " + std::to_string(c.cosine));
    }
    goldens::tensor_t const &vectors = golden.at("step0.token_vectors");
    check(out.token_vector_offsets[count] == vectors.shape[0], "token vector rows");
    double worst_vector = 1;
    for (std::size_t r = 0; r != std::min(out.token_vector_offsets[count], vectors.shape[0]); ++r)
        worst_vector = std::min(
            worst_vector, goldens::compare(out.token_vectors + r * TW, vectors.values.data() + r * TW, TW).cosine);
    check(worst_vector >= 0.999, "token vectors' worst cosine " + std::to_string(worst_vector));

    // Backward from the goldens' upstream gradients.
    std::vector<float> d_z(golden.at("upstream.z").values.begin(), golden.at("upstream.z").values.end());
    std::vector<float> d_vectors(golden.at("upstream.token_vectors").values.begin(),
                                 golden.at("upstream.token_vectors").values.end());
    std::vector<float> d_logits(logit_rows.size() * 256, 0.0f);
    goldens::tensor_t const &mask_grad = golden.at("upstream.mask_logits");
    check(mask_grad.shape[0] == mask_rows, "mask logit rows");
    for (std::size_t e = 0; e != std::min(mask_grad.count(), mask_rows * 256); ++e)
        d_logits[e] = static_cast<float>(mask_grad.values[e]);
    goldens::tensor_t const &choice_grad = golden.at("upstream.choice_logits");
    for (std::size_t r = mask_rows, at = 0; r != logit_rows.size(); ++r)
        for (char c : items[logit_rows[r].item]["choices"].text)
            d_logits[r * 256 + static_cast<unsigned char>(c)] += static_cast<float>(choice_grad.values[at++]);
    check(trunk.backward(parameters, d_z.data(), d_vectors.data(), d_logits.data(), parallel, {}, &message) ==
              uform_status_ok_k,
          "backward");
    for (train::tensor_t const &t : parameters.tensors) {
        if (t.name.starts_with("trainer.")) continue;
        goldens::closeness_t c;
        if (auto whole = golden.find("grad." + t.name); whole != golden.end())
            c = goldens::compare(t.grad.data(), whole->second.values.data(), t.count());
        else {
            std::vector<double> const mine = goldens::sketch(t.name, t.grad.data(), t.count());
            c = goldens::compare(mine.data(), golden.at("grad." + t.name + ".sketch").values.data(), mine.size());
        }
        std::printf("grad %-28s cosine %.6f relative %.2e\n", t.name.c_str(), c.cosine, c.relative);
        check(c.cosine >= 0.999 && c.relative <= 1e-2, "gradient of " + t.name);
    }
    // Determinism: a second backward of the same forward gives the same bits.
    std::vector<std::vector<float>> first;
    for (train::tensor_t &t : parameters.tensors)
        first.push_back(t.grad), std::fill(t.grad.begin(), t.grad.end(), 0.0f);
    check(trunk.backward(parameters, d_z.data(), d_vectors.data(), d_logits.data(), parallel, {}, &message) ==
              uform_status_ok_k,
          "second backward");
    bool same = true;
    for (std::size_t i = 0; i != parameters.tensors.size(); ++i)
        same = same && std::memcmp(first[i].data(), parameters.tensors[i].grad.data(), first[i].size() * 4) == 0;
    check(same, "two backward runs give identical bits");
    // Kept activations or recomputed: a forward that keeps one block's slot gives the same bits again.
    for (train::tensor_t &t : parameters.tensors) std::fill(t.grad.begin(), t.grad.end(), 0.0f);
    trunk.bound_kept_bytes(0);
    check(trunk.forward(parameters, request, parallel, {}, out, &message) == uform_status_ok_k, "forward, one slot");
    check(trunk.backward(parameters, d_z.data(), d_vectors.data(), d_logits.data(), parallel, {}, &message) ==
              uform_status_ok_k,
          "backward, one slot");
    same = true;
    for (std::size_t i = 0; i != parameters.tensors.size(); ++i)
        same = same && std::memcmp(first[i].data(), parameters.tensors[i].grad.data(), first[i].size() * 4) == 0;
    check(same, "recomputed blocks give the kept blocks' bits");

    // Seeded weights, bit for bit.
    goldens::json_t const &seeded = batch["generator_checks"]["seeded_init"];
    train::parameters_t seeded_parameters;
    check(train::parameters_seeded(checkpoint.geometry, static_cast<std::uint64_t>(seeded["seed"].value),
                                   uform_pair_loss_form_info_nce_k, seeded_parameters, &message) == uform_status_ok_k,
          "parameters_seeded");
    goldens::json_t const &expected = seeded["tensors"];
    for (std::size_t i = 0; i != expected.keys.size(); ++i) {
        train::tensor_t const *t = seeded_parameters.find(expected.keys[i]);
        check(t != nullptr, "seeded " + expected.keys[i]);
        if (t == nullptr) continue;
        check(fnv_hex(t->master) == expected.items[i]["fnv1a64_f32_le"].text, "seeded hash of " + t->name);
        for (std::size_t e = 0; e != 4; ++e)
            check(t->master[e] == static_cast<float>(expected.items[i]["first"][e].value),
                  "seeded value of " + t->name);
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
