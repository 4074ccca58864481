// `media::decode_video_file` samples the frames docs/model.md's video geometry names, to the bit: the clips of
// tests/data/video-sampling/ (frame i a solid gray of level 8 * i, tools/reference/make_media.py) at the fps and
// max_frames of each case of tests/data/goldens/video-sampling.safetensors, whose sampling times fall exactly on
// frames whose times are inexact in binary (1/10240 and 1/1000 time bases) or exactly on the clip's end. Each kept
// frame's index is read back from its pixels and compared with the independent reference's (tools/reference/).
//
// Prints "N passed, M failed" and exits nonzero on a failure. RAM build only (it includes cpp/).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/json.hpp"
#include "cpp/media/video_decode.hpp"

namespace {

int passed = 0, failed = 0;

void check(bool ok, std::string const &what) {
    if (ok) {
        ++passed;
        return;
    }
    ++failed;
    std::printf("FAILED: %s\n", what.c_str());
}

/// The test data directory: `$UFORM_TEST_DATA`, else `tests/data` (from the repository root, where ctest runs).
std::string data_directory() {
    char const *root = std::getenv("UFORM_TEST_DATA");
    return root && *root ? root : "tests/data";
}

/// A whole file's bytes; exits the test when it cannot be read.
std::string read_file(std::string const &path) {
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

/// The golden's tensors (U8, I64 and F64, all it holds), by name, their values as doubles. Exits on a malformed file.
std::map<std::string, std::vector<double>> read_golden(std::string const &path) {
    std::string const bytes = read_file(path);
    std::uint64_t header = 0;
    if (bytes.size() >= 8) std::memcpy(&header, bytes.data(), 8);
    uform::json::value_t tree;
    if (bytes.size() < 8 || header > bytes.size() - 8 ||
        uform::json::parse(std::string_view(bytes).substr(8, header), tree) != uform::json::error_t::none) {
        std::fprintf(stderr, "%s: not a safetensors file\n", path.c_str());
        std::exit(2);
    }
    std::size_t const data = 8 + header;
    std::map<std::string, std::vector<double>> out;
    for (std::size_t i = 0; i != tree.keys.size(); ++i) {
        if (tree.keys[i] == "__metadata__") continue;
        uform::json::value_t const &entry = tree.items[i];
        uform::json::value_t const *kind = entry.find("dtype"), *span = entry.find("data_offsets");
        if (!kind || !span || span->items.size() != 2) {
            std::fprintf(stderr, "%s: tensor %s has no dtype or data_offsets\n", path.c_str(), tree.keys[i].c_str());
            std::exit(2);
        }
        std::string const &dtype = kind->string;
        std::size_t const begin = data + span->items[0].integer, end = data + span->items[1].integer;
        std::size_t const width = dtype == "U8" ? 1 : 8;
        if ((dtype != "U8" && dtype != "I64" && dtype != "F64") || begin > end || end > bytes.size() ||
            (end - begin) % width) {
            std::fprintf(stderr, "%s: tensor %s is not as expected\n", path.c_str(), tree.keys[i].c_str());
            std::exit(2);
        }
        std::vector<double> &values = out[tree.keys[i]];
        for (std::size_t at = begin; at != end; at += width) {
            if (dtype == "U8") values.push_back(static_cast<unsigned char>(bytes[at]));
            else if (dtype == "F64") values.push_back(0), std::memcpy(&values.back(), bytes.data() + at, 8);
            else {
                std::int64_t value;
                std::memcpy(&value, bytes.data() + at, 8);
                values.push_back(double(value));
            }
        }
    }
    return out;
}

/// What the sink saw: each kept frame's index, read from its gray level, or -1 where the frame is not a solid gray.
struct seen_t {
    std::vector<long> indices;
};

uform_status_t keep(void *context, uform::media::rgb_image_t const &frame, char const **) noexcept {
    auto &seen = *static_cast<seen_t *>(context);
    std::uint8_t low = 255, high = 0;
    double sum = 0;
    for (std::uint8_t const value : frame.pixels) low = value < low ? value : low, high = value > high ? value : high;
    for (std::uint8_t const value : frame.pixels) sum += value;
    double const mean = frame.pixels.empty() ? 0 : sum / double(frame.pixels.size());
    try {
        seen.indices.push_back(high - low <= 4 ? long(mean / 8 + 0.5) : -1);
    } catch (...) {
        return uform_status_out_of_memory_k;
    }
    return uform_status_ok_k;
}

std::string listed(std::vector<long> const &values) {
    std::string out = "[";
    for (std::size_t i = 0; i != values.size(); ++i) out += (i ? " " : "") + std::to_string(values[i]);
    return out + "]";
}

} // namespace

int main() {
    std::string const data = data_directory();
    auto golden = read_golden(data + "/goldens/video-sampling.safetensors");
    std::vector<double> const &names = golden["files"], &name_offsets = golden["file_offsets"];
    std::vector<std::string> clips;
    for (std::size_t c = 0; c + 1 < name_offsets.size(); ++c) {
        std::string name;
        for (auto at = std::size_t(name_offsets[c]); at != std::size_t(name_offsets[c + 1]); ++at)
            name += char(names[at]);
        clips.push_back(data + "/video-sampling/" + name);
    }
    std::vector<double> const &clip = golden["case.clip"], &fps = golden["case.fps"],
                              &max_frames = golden["case.max_frames"], &taken = golden["taken"],
                              &taken_offsets = golden["taken_offsets"];
    check(!clips.empty() && !clip.empty() && clip.size() == fps.size() && clip.size() == max_frames.size() &&
              taken_offsets.size() == clip.size() + 1,
          "the golden holds clips and cases");
    for (std::size_t i = 0; i != clip.size() && i + 1 < taken_offsets.size(); ++i) {
        std::vector<long> want;
        for (auto at = std::size_t(taken_offsets[i]); at != std::size_t(taken_offsets[i + 1]); ++at)
            want.push_back(long(taken[at]));
        std::string const &path = clips.at(std::size_t(clip[i]));
        seen_t seen;
        char const *message = nullptr;
        uform_status_t const status = uform::media::decode_video_file(path.c_str(), fps[i], std::size_t(max_frames[i]),
                                                                      std::size_t(1) << 20, {keep, &seen}, &message);
        char label[96];
        std::snprintf(label, sizeof label, " at fps %.17g, max_frames %zu", fps[i], std::size_t(max_frames[i]));
        check(status == uform_status_ok_k, path + label + ": decodes" + (message ? std::string(": ") + message : ""));
        check(seen.indices == want,
              path + label + ": takes frames " + listed(seen.indices) + ", the reference " + listed(want));
    }
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
