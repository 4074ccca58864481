// The VRAM mesh's join over NCCL (cuda/mesh.hpp) on the host, in a CUDA build (the include below marks the test as the
// CUDA residency's; it needs no device): a fake NCCL and fake devices drive the identity and the join. The identity
// is NCCL's unique id, byte for byte (and the NCCL the build loads makes a fresh one each run, or is reported absent);
// a join starts one non-blocking communicator per device in one group, with the identity, the world and ranks
// first_rank.., then polls them: connected (the tier NVLS with multicast on a host of several, none with
// NCCL_NVLS_ENABLE=0 or one device), pending past the deadline (`timeout` soon after it, every communicator aborted),
// failed (the status of NCCL's error, every communicator aborted); freed (finalized in a group and destroyed, or
// aborted when finalizing fails); refused before any NCCL call: another class (named), a device twice, ranks outside
// the world; without NCCL, `unsupported`. A device sum enqueues one group of in-place float all-reduces on communicator
// 0 and the caller's stream, array by array in order, then polls NCCL and the stream: finished (ok), an NCCL error or a
// failed stream (every communicator aborted, its status), a stream still running past the deadline (every communicator
// aborted, `timeout`); an aborted mesh answers `io` without calling NCCL. An enqueue alone (the overlapped sums') makes
// the group without polling the stream, and a sum of nothing polls the stream alone.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#if __has_include(<nccl.h>)
#include "cuda/mesh.hpp"
#include "cuda/nccl.hpp"

namespace {

int failures = 0;

void check(bool ok, std::string const &what) {
    if (!ok) {
        ++failures;
        std::printf("FAIL %s\n", what.c_str());
    }
}

/// What the fake NCCL answers.
struct answers_t {
    ncclResult_t init = ncclInProgress;       // what ncclCommInitRankConfig answers
    std::size_t init_fails_at = 99;           // the call that answers ncclSystemError instead
    std::size_t polls_to_connect = 3;         // polls before a communicator connects; 0: never
    ncclResult_t async_failure = ncclSuccess; // an error every communicator reports instead of connecting
    ncclResult_t group_end = ncclInProgress;
    ncclResult_t finalize = ncclInProgress; // what ncclCommFinalize answers
};

/// The fake NCCL's answers and what it saw.
struct fake_t {
    answers_t answers;
    std::vector<int> ranks, world, blocking;
    std::vector<std::string> ids;
    std::size_t polls = 0, aborted = 0, finalized = 0, destroyed = 0, groups = 0;
    int comms[8] = {};
    struct reduce_t {
        void const *send;
        void *receive;
        std::size_t count;
        ncclDataType_t type;
        ncclRedOp_t op;
        ncclComm_t comm;
        cudaStream_t stream;
    };
    std::vector<reduce_t> reduces; // the all-reduces, in call order
    ncclResult_t all_reduce = ncclSuccess;
};

fake_t fake;

ncclComm_t comm_of(std::size_t i) { return reinterpret_cast<ncclComm_t>(&fake.comms[i]); }

ncclResult_t fake_unique_id(ncclUniqueId *id) {
    for (std::size_t i = 0; i != sizeof(id->internal); ++i) id->internal[i] = char(i * 3 + 1);
    return ncclSuccess;
}

ncclResult_t fake_init(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config) {
    std::size_t const call = fake.ranks.size();
    fake.ranks.push_back(rank);
    fake.world.push_back(nranks);
    fake.blocking.push_back(config->blocking);
    fake.ids.emplace_back(id.internal, sizeof(id.internal));
    if (call == fake.answers.init_fails_at) return ncclSystemError;
    *comm = comm_of(call);
    return fake.answers.init;
}

ncclResult_t fake_async(ncclComm_t, ncclResult_t *state) {
    ++fake.polls;
    answers_t const &a = fake.answers;
    if (a.async_failure != ncclSuccess) *state = a.async_failure;
    else if (a.polls_to_connect == 0 || fake.polls < a.polls_to_connect) *state = ncclInProgress;
    else *state = ncclSuccess;
    return ncclSuccess;
}

ncclResult_t fake_abort(ncclComm_t) { return ++fake.aborted, ncclSuccess; }
ncclResult_t fake_finalize(ncclComm_t) { return ++fake.finalized, fake.answers.finalize; }
ncclResult_t fake_destroy(ncclComm_t) { return ++fake.destroyed, ncclSuccess; }
ncclResult_t fake_group_start() { return ++fake.groups, ncclSuccess; }
ncclResult_t fake_group_end() { return fake.answers.group_end; }
ncclResult_t fake_all_reduce(void const *send, void *receive, std::size_t count, ncclDataType_t type, ncclRedOp_t op,
                             ncclComm_t comm, cudaStream_t stream) {
    fake.reduces.push_back({send, receive, count, type, op, comm, stream});
    return fake.all_reduce;
}

uform::cuda::nccl_t const fake_nccl{&fake_unique_id,   &fake_init,      &fake_async,
                                    &fake_abort,       &fake_finalize,  &fake_destroy,
                                    &fake_group_start, &fake_group_end, &fake_all_reduce};

/// The fake stream: finished after `stream_polls` queries (never when 0), or failed when `stream_fails`.
std::size_t stream_polls = 2, stream_queries = 0;
bool stream_fails = false;
int fake_stream_state(void *) noexcept {
    ++stream_queries;
    if (stream_fails) return -1;
    return stream_polls != 0 && stream_queries >= stream_polls ? 1 : 0;
}

/// Fake devices: every ordinal but 7 runs Hopper; multicast as `multicast_everywhere` says.
std::vector<std::size_t> used;
bool multicast_everywhere = true;
bool fake_use(std::size_t ordinal) noexcept { return used.push_back(ordinal), true; }
bool fake_runs(uform_gpu_class_t gpu_class, std::size_t ordinal) noexcept {
    return ordinal != 7 && gpu_class == uform_gpu_class_nvidia_hopper_k;
}
bool fake_multicast(std::size_t) noexcept { return multicast_everywhere; }
uform::cuda::mesh_devices_t const fake_devices{&fake_use, &fake_runs, &fake_multicast};

unsigned char identity[uform::backend::mesh_identity_bytes_k];

/// A join of `devices` as ranks `first..` of `world`, with `deadline_ms` to connect.
uform_status_t join(std::vector<std::size_t> const &devices, std::size_t first, std::size_t world,
                    std::unique_ptr<uform::cuda::nccl_mesh_t> &mesh, uform_multimem_tier_t &tier, char const **message,
                    int deadline_ms = 2000, uform::cuda::nccl_t const *nccl = &fake_nccl) {
    answers_t const answers = fake.answers;
    fake = fake_t{};
    fake.answers = answers;
    used.clear();
    uform::backend::mesh_join_t const request{identity,
                                              1,
                                              2,
                                              first,
                                              world,
                                              devices,
                                              uform_gpu_class_nvidia_hopper_k,
                                              std::chrono::steady_clock::now() +
                                                  std::chrono::milliseconds(deadline_ms)};
    return uform::cuda::mesh_join_with(nccl, fake_devices, request, mesh, tier, message);
}

bool says(char const *message, char const *part) { return message && std::strstr(message, part) != nullptr; }

void test_identity() {
    char const *message = nullptr;
    check(uform::cuda::mesh_identity_with(nullptr, identity, &message) == uform_status_unsupported_k &&
              says(message, "NCCL"),
          "no NCCL: the identity is unsupported, naming NCCL");
    check(uform::cuda::mesh_identity_with(&fake_nccl, identity, &message) == uform_status_ok_k, "the identity");
    bool same = true;
    for (std::size_t i = 0; i != sizeof(identity); ++i) same = same && identity[i] == (unsigned char)(i * 3 + 1);
    check(same, "the identity is NCCL's unique id");
}

/// The NCCL this build loads (no device needed): two fresh identities differ; or, where NCCL is absent, `unsupported`
/// naming the library.
void test_loaded() {
    unsigned char first[uform::backend::mesh_identity_bytes_k] = {}, second[uform::backend::mesh_identity_bytes_k] = {};
    char const *message = nullptr;
    uform_status_t const status = uform::cuda::mesh_identity(first, &message);
    if (status != uform_status_ok_k) {
        check(status == uform_status_unsupported_k && says(message, "libnccl.so.2"),
              "without NCCL the identity is unsupported, naming the library");
        std::printf("NCCL did not load here: %s\n", message);
        return;
    }
    check(uform::cuda::mesh_identity(second, &message) == uform_status_ok_k, "the loaded NCCL's second identity");
    check(std::memcmp(first, second, sizeof(first)) != 0, "two runs' identities differ");
}

void test_connected() {
    std::unique_ptr<uform::cuda::nccl_mesh_t> mesh;
    uform_multimem_tier_t tier = uform_multimem_tier_collnet_k;
    char const *message = nullptr;
    check(join({0, 1}, 2, 4, mesh, tier, &message) == uform_status_ok_k, "two devices join");
    check(mesh && mesh->comms.size() == 2 && mesh->comms[0] == comm_of(0) && mesh->comms[1] == comm_of(1),
          "a communicator per device");
    check(fake.ranks == std::vector<int>{2, 3} && fake.world == std::vector<int>{4, 4}, "ranks 2, 3 of 4");
    check(fake.blocking == std::vector<int>{0, 0}, "non-blocking communicators");
    std::string const expected(reinterpret_cast<char const *>(identity), sizeof(identity));
    check(fake.ids.size() == 2 && fake.ids[0] == expected && fake.ids[1] == expected, "the identity reaches NCCL");
    check(fake.groups == 1 && used == std::vector<std::size_t>{0, 1}, "one group, each device current in turn");
    check(tier == uform_multimem_tier_nvls_k, "NVLS with multicast on every device");
    check(fake.aborted == 0, "nothing aborted");
    mesh.reset();
    check(fake.finalized == 2 && fake.destroyed == 2 && fake.aborted == 0 && fake.groups == 2,
          "freeing the mesh finalizes its communicators in a group, then destroys them");

    fake.answers.finalize = ncclRemoteError;
    check(join({0, 1}, 0, 2, mesh, tier, &message) == uform_status_ok_k, "two devices join again");
    mesh.reset();
    check(fake.aborted == 2 && fake.destroyed == 0, "a finalize that fails: freeing aborts instead");
    fake.answers.finalize = ncclInProgress;

    multicast_everywhere = false;
    check(join({0, 1}, 0, 2, mesh, tier, &message) == uform_status_ok_k && tier == uform_multimem_tier_none_k,
          "no multicast: the tier is none");
    multicast_everywhere = true;
    check(join({3}, 0, 2, mesh, tier, &message) == uform_status_ok_k && tier == uform_multimem_tier_none_k,
          "one device a host: the tier is none");
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
    check(join({0, 1}, 0, 2, mesh, tier, &message) == uform_status_ok_k && tier == uform_multimem_tier_none_k,
          "NCCL_NVLS_ENABLE=0: the tier is none");
    ::unsetenv("NCCL_NVLS_ENABLE");
    fake.answers.init = ncclSuccess;
    fake.answers.group_end = ncclSuccess;
    check(join({0, 1}, 0, 2, mesh, tier, &message) == uform_status_ok_k, "NCCL answering success at once");
    fake.answers.init = ncclInProgress;
    fake.answers.group_end = ncclInProgress;
}

void test_faults() {
    std::unique_ptr<uform::cuda::nccl_mesh_t> mesh;
    uform_multimem_tier_t tier;
    char const *message = nullptr;
    fake.answers.polls_to_connect = 0;
    auto const start = std::chrono::steady_clock::now();
    uform_status_t status = join({0, 1}, 0, 4, mesh, tier, &message, 200);
    double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check(status == uform_status_timeout_k && !mesh, "a peer that never joins: timeout");
    check(seconds >= 0.2 && seconds < 2.0, "the timeout comes at the deadline, took " + std::to_string(seconds));
    check(fake.aborted == 2, "both communicators aborted on timeout");
    fake.answers.polls_to_connect = 3;

    fake.answers.async_failure = ncclRemoteError;
    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_io_k && !mesh && says(message, "peer"),
          "a peer that fails: io");
    check(fake.aborted == 2, "both communicators aborted on a failure");
    fake.answers.async_failure = ncclSuccess;

    fake.answers.init_fails_at = 1;
    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_io_k && !mesh, "an init that fails: io");
    check(fake.aborted == 1, "the communicator begun before it aborted");
    fake.answers.init_fails_at = 99;

    fake.answers.group_end = ncclInvalidUsage;
    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_invalid_argument_k && !mesh && fake.aborted == 2,
          "a group that fails: invalid-argument, both aborted");
    fake.answers.group_end = ncclInProgress;
}

void test_refusals() {
    std::unique_ptr<uform::cuda::nccl_mesh_t> mesh;
    uform_multimem_tier_t tier;
    char const *message = nullptr;
    check(join({0, 7}, 0, 4, mesh, tier, &message) == uform_status_invalid_argument_k &&
              says(message, "nvidia-hopper") && fake.ranks.empty(),
          "a GPU of another class: invalid-argument naming the run's class, before NCCL");
    check(join({1, 1}, 0, 4, mesh, tier, &message) == uform_status_invalid_argument_k && says(message, "twice") &&
              fake.ranks.empty(),
          "a device twice: invalid-argument");
    check(join({0, 1}, 3, 4, mesh, tier, &message) == uform_status_invalid_argument_k && fake.ranks.empty(),
          "ranks past the world: invalid-argument");
    check(join({}, 0, 4, mesh, tier, &message) == uform_status_invalid_argument_k, "no devices: invalid-argument");
    check(join({0}, 0, 4, mesh, tier, &message, 2000, nullptr) == uform_status_unsupported_k &&
              says(message, "libnccl"),
          "no NCCL: unsupported, naming the library");
}

/// A device sum over a joined two-device mesh, `deadline_ms` from now.
uform_status_t sum(uform::cuda::nccl_mesh_t &mesh, std::vector<std::span<float>> const &arrays, char const **message,
                   int deadline_ms = 2000) {
    fake.reduces.clear();
    fake.groups = 0;
    stream_queries = 0;
    return uform::cuda::mesh_sum_with(mesh, arrays, reinterpret_cast<void *>(0x5eed), &fake_stream_state,
                                      std::chrono::steady_clock::now() + std::chrono::milliseconds(deadline_ms),
                                      message);
}

void test_sums() {
    std::unique_ptr<uform::cuda::nccl_mesh_t> mesh;
    uform_multimem_tier_t tier;
    char const *message = nullptr;
    float a[5] = {}, b[3] = {}, c[7] = {};
    std::vector<std::span<float>> const arrays{a, b, c};
    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_ok_k, "a mesh to sum over");
    check(sum(*mesh, arrays, &message) == uform_status_ok_k, "a group of three sums");
    bool right = fake.reduces.size() == 3 && fake.groups == 1 && stream_queries == stream_polls;
    for (std::size_t i = 0; right && i != 3; ++i) {
        auto const &r = fake.reduces[i];
        right = r.send == arrays[i].data() && r.receive == arrays[i].data() && r.count == arrays[i].size() &&
                r.type == ncclFloat && r.op == ncclSum && r.comm == comm_of(0) &&
                r.stream == reinterpret_cast<cudaStream_t>(0x5eed);
    }
    check(right, "in-place float sums of each array in order, on communicator 0 and the stream, in one group");
    check(sum(*mesh, {}, &message) == uform_status_ok_k && fake.reduces.empty() && stream_queries == stream_polls,
          "nothing to sum: no NCCL call, the stream awaited");
    fake.reduces.clear();
    fake.groups = 0;
    stream_queries = 0;
    check(uform::cuda::mesh_enqueue(*mesh, arrays, reinterpret_cast<void *>(0x5eed), &message) == uform_status_ok_k &&
              fake.reduces.size() == 3 && fake.groups == 1 && stream_queries == 0,
          "an enqueued group: one group of three sums, the stream not awaited");

    stream_polls = 0;
    auto const start = std::chrono::steady_clock::now();
    uform_status_t status = sum(*mesh, arrays, &message, 200);
    double const seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check(status == uform_status_timeout_k && fake.aborted == 2 && mesh->comms.empty(),
          "a peer that never sums: timeout, both communicators aborted");
    check(seconds >= 0.2 && seconds < 2.0, "the sum's timeout comes at the deadline, took " + std::to_string(seconds));
    stream_polls = 2;
    check(sum(*mesh, arrays, &message) == uform_status_io_k && fake.reduces.empty() && says(message, "aborted"),
          "an aborted mesh: io, without calling NCCL");

    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_ok_k, "a mesh again");
    fake.all_reduce = ncclSystemError;
    check(sum(*mesh, arrays, &message) == uform_status_io_k && fake.aborted == 2 && fake.reduces.size() == 1,
          "an all-reduce NCCL refuses: io, the group stopped, both aborted");
    fake.all_reduce = ncclSuccess;

    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_ok_k, "a mesh again");
    fake.answers.async_failure = ncclRemoteError;
    check(sum(*mesh, arrays, &message) == uform_status_io_k && fake.aborted == 2 && says(message, "peer"),
          "a peer that fails mid-sum: io, both aborted");
    fake.answers.async_failure = ncclSuccess;

    check(join({0, 1}, 0, 4, mesh, tier, &message) == uform_status_ok_k, "a mesh again");
    stream_fails = true;
    check(sum(*mesh, arrays, &message) == uform_status_device_k && fake.aborted == 2, "a failed stream: device");
    stream_fails = false;
}

} // namespace

int main() {
    test_identity();
    test_loaded();
    test_connected();
    test_faults();
    test_refusals();
    test_sums();
    if (failures) return 1;
    std::printf("ok\n");
    return 0;
}
#else
int main() {
    std::printf("skipped: this toolkit has no nccl.h\n");
    return 77;
}
#endif
