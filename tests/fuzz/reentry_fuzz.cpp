/**
 * @file reentry_fuzz.cpp
 * @brief libFuzzer target of progress handlers that call the library (the rules of `uform_progress_t`).
 *
 * The input's first byte picks the outer call: a text encode, blocking or deferred, on a RAM executor or a local
 * one; the rest is a program of two-byte actions that the handlers of the outer call, and of the calls they make,
 * perform as they are called: nested encodes (no executor, the outer's or the current call's executor, another
 * RAM or local executor; a fresh arena or a held one; blocking or deferred; with a handler that goes on with the
 * program, one level deeper), drains, frees of the handles the running calls hold, waits on, releases and polls of
 * their outcomes, and cancelling a nested call. Every input makes its own handles and frees them all at the end.
 * One kind of action is skipped: waiting, from the handler of a deferred call on a RAM executor that a handler waits
 * on, for a call that encloses that waiting handler (see `state_t::sees`), which the library does not detect.
 *
 * Besides crashes, sanitizer reports and hangs (run with -timeout=20), it aborts when a promise breaks: an action
 * on a handle that an enclosing call holds answers anything but `contended`; a nested encode that nothing contends
 * fails, or publishes rows other than a call without handlers does; the outer call fails, or publishes other rows
 * than a run without the handler's actions; a handle an action was refused on is unusable after the call, or its
 * free fails. Build and run: tests/fuzz/run.sh reentry SECONDS (the stub backend).
 */
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "tests/fuzz/abi_input.hpp"

using fuzz::reader_t;
using fuzz::require;

namespace {

constexpr std::size_t levels_k = 12; // the outer call, and nested calls up to 11 deep (past the library's 8)
constexpr uform_outputs_t outputs_k = static_cast<uform_outputs_t>(uform_outputs_embeddings_k | uform_outputs_states_k);

/** @brief A tape of texts and the bytes of the rows a call without handlers publishes for it. */
struct workload_t {
    std::vector<char> data;
    std::vector<std::size_t> offsets{0};
    std::vector<unsigned char> rows;

    void push(std::size_t length, char seed) {
        for (std::size_t i = 0; i != length; ++i) data.push_back(char('a' + (i * 7 + seed) % 26));
        offsets.push_back(data.size());
    }
    std::size_t count() const noexcept { return offsets.size() - 1; }
};

/** @brief The embeddings and states of a successful encode, as bytes. */
std::vector<unsigned char> bytes_of(uform_encoded_t const &encoded) {
    auto const *embeddings = static_cast<unsigned char const *>(encoded.embeddings.data);
    auto const *states = static_cast<unsigned char const *>(encoded.states.data);
    std::vector<unsigned char> bytes(embeddings, embeddings + encoded.embeddings.count * encoded.embeddings.stride);
    bytes.insert(bytes.end(), states, states + encoded.states.count * encoded.states.stride);
    return bytes;
}

/** @brief The outer tape (three groups, so its handler runs between them) and the nested one, with their rows. */
struct reference_t {
    workload_t outer, nested;

    reference_t() {
        for (char seed = 0; seed != 3; ++seed) outer.push(40 + seed, seed);
        for (char seed = 5; seed != 7; ++seed) nested.push(9, seed);
        uform_model_t model = fuzz::load_tiny();
        uform_arena_t arena = nullptr;
        require(uform_arena_init(nullptr, &arena, nullptr) == uform_status_ok_k);
        for (workload_t *w : {&outer, &nested}) {
            uform_encoded_t encoded{};
            uform_text_encode_args_t args{};
            args.scalar = uform_scalar_f16_k;
            require(uform_text_encode(model, nullptr, w->data.data(), w->data.size(), w->offsets.data(), w->count(),
                                      outputs_k, &args, arena, &encoded, nullptr, nullptr) == uform_status_ok_k);
            w->rows = bytes_of(encoded);
        }
        require(uform_arena_free(arena) == uform_status_ok_k);
        require(uform_model_free(model) == uform_status_ok_k);
    }
};

reference_t const &reference() {
    static reference_t const r;
    return r;
}

/** @brief A call running now: the outer one (level 0) or one a handler made. */
struct level_t {
    uform_executor_t executor = nullptr;
    uform_arena_t arena = nullptr;
    uform_outcome_t outcome = nullptr; // deferred calls only
    bool deferred = false;
    bool detached = false; // deferred on a RAM executor: runs on its threads, apart from the handler waiting on it
};

struct state_t;

/** @brief A deferred call left pending, with what it writes until it is final. */
struct pending_t {
    uform_outcome_t outcome = nullptr;
    std::unique_ptr<uform_text_encode_args_t> args = std::make_unique<uform_text_encode_args_t>();
    std::unique_ptr<uform_encoded_t> encoded = std::make_unique<uform_encoded_t>();
};

/** @brief What a handler is called with: the program's state and the level of the call it belongs to. */
struct frame_t {
    state_t *state;
    std::size_t level;
};

/** @brief One input's handles, program and running calls. */
struct state_t {
    reader_t program;
    uform_model_t model = nullptr;
    uform_executor_t ram = nullptr, other_ram = nullptr, local = nullptr, other_local = nullptr;
    uform_arena_t outer_arena = nullptr;
    uform_arena_t arenas[levels_k] = {}; // the fresh arena of each nested level
    level_t levels[levels_k];
    frame_t frames[levels_k];
    std::size_t depth = 0;          // levels running
    std::vector<pending_t> pending; // nested deferred calls without handlers, submitted and not yet waited

    /** @brief Whether a running call holds `executor` (non-null). */
    bool holds_executor(uform_executor_t executor) const noexcept {
        for (std::size_t i = 0; i != depth; ++i)
            if (executor && levels[i].executor == executor) return true;
        return false;
    }
    /**
     * @brief Whether the handler of `level`'s call is known to run inside level `t`'s call: every call between them is
     * blocking, or deferred and run by the thread that waits on it. A deferred call on a RAM executor runs on that
     * executor's threads, apart from the handler that waits on it, and the library cannot tell that handler's calls
     * there (an action waiting for them would hang): the program skips such actions.
     */
    bool sees(std::size_t level, std::size_t t) const noexcept {
        for (std::size_t k = t + 1; k <= level; ++k)
            if (levels[k].detached) return false;
        return true;
    }
    /** @brief Whether a running call that `level`'s handler does not see holds `executor` (non-null). */
    bool held_unseen(std::size_t level, uform_executor_t executor) const noexcept {
        for (std::size_t i = 0; i != depth; ++i)
            if (executor && levels[i].executor == executor && !sees(level, i)) return true;
        return false;
    }
    bool holds_arena(uform_arena_t arena) const noexcept {
        for (std::size_t i = 0; i != depth; ++i)
            if (levels[i].arena == arena) return true;
        return false;
    }
};

bool handler(void *context, std::size_t completed, std::size_t total);

/** @brief The executor an action names: none, the outer call's, the current call's, or one of the others. */
uform_executor_t pick_executor(state_t &s, std::size_t level, unsigned bits) {
    switch (bits % 6) {
    case 0: return nullptr;
    case 1: return s.levels[0].executor;
    case 2: return s.levels[level].executor;
    case 3: return s.other_ram;
    case 4: return s.other_local;
    default: return s.levels[0].executor == s.ram ? s.local : s.ram;
    }
}

/** @brief A nested text encode from the handler of `level`'s call; answers its status after checking it. */
void nested_encode(state_t &s, std::size_t level, unsigned arg) {
    uform_executor_t const executor = pick_executor(s, level, arg);
    std::size_t const next = level + 1;
    uform_arena_t const arena = (arg >> 3) % 3 == 0   ? s.levels[0].arena
                                : (arg >> 3) % 3 == 1 ? s.levels[level].arena
                                : next < levels_k     ? s.arenas[next]
                                                      : s.outer_arena;
    bool const deferred = arg & 0x20, with_handler = arg & 0x40;
    bool const enclosing = s.holds_executor(executor) || s.holds_arena(arena);
    bool const too_deep = next >= 8 || next >= levels_k;
    bool const maybe_busy = !s.pending.empty(); // a pending deferred call may hold the executor or the arena
    // A call left pending (no handler) writes its result and reads its arguments until it is final: keep them.
    pending_t call;
    uform_text_encode_args_t &args = *call.args;
    args.scalar = uform_scalar_f16_k;
    if (with_handler && next < levels_k) {
        s.frames[next] = frame_t{&s, next};
        args.progress = handler;
        args.progress_context = &s.frames[next];
    }
    workload_t const &w = reference().nested;
    char const *message = nullptr;
    bool const runs = next < levels_k; // recorded as running from its submission: its handler may run at once
    uform_outcome_t *outcome = !deferred ? nullptr : runs ? &s.levels[next].outcome : &call.outcome;
    if (runs) {
        s.levels[next] =
            level_t{executor, arena, nullptr, deferred, deferred && (executor == s.ram || executor == s.other_ram)};
        s.depth = next + 1;
    }
    uform_status_t status =
        uform_text_encode(s.model, executor, w.data.data(), w.data.size(), w.offsets.data(), w.count(), outputs_k,
                          &args, arena, call.encoded.get(), outcome, &message);
    if (deferred && status == uform_status_deferred_k) {
        call.outcome = *outcome;
        if (with_handler) {
            // Its handler goes on with the program: wait here, so that the program runs on one thread at a time.
            status = uform_outcome_wait(call.outcome, &message);
            require(uform_outcome_release(call.outcome) == uform_status_ok_k);
        } else s.pending.push_back(std::move(call));
    }
    if (runs) s.depth = next;
    if (enclosing) require(status == uform_status_contended_k);
    else if (!too_deep && !maybe_busy && !with_handler)
        require(status == uform_status_ok_k || status == uform_status_deferred_k);
    if (status == uform_status_ok_k) require(bytes_of(*call.encoded) == w.rows);
    else if (status != uform_status_deferred_k)
        fuzz::require_failure(status, message, {uform_status_contended_k, uform_status_cancelled_k});
}

/** @brief Runs actions of the program until one yields or it ends; answers whether to stop the call. */
bool handler(void *context, std::size_t, std::size_t) {
    frame_t const &frame = *static_cast<frame_t *>(context);
    state_t &s = *frame.state;
    std::size_t const level = frame.level;
    for (;;) {
        if (s.program.at + 2 > s.program.size) return false;
        unsigned const op = s.program.byte() % 10, arg = s.program.byte();
        switch (op) {
        case 0: return false; // yield until the next call of a handler
        case 1: nested_encode(s, level, arg); break;
        case 2: {
            uform_executor_t const executor = pick_executor(s, level, arg);
            if (!executor || s.held_unseen(level, executor)) break;
            uform_status_t const status = uform_executor_drain(executor, uform_mood_sleeping_k, nullptr);
            if (s.holds_executor(executor)) require(status == uform_status_contended_k);
            else if (s.pending.empty()) require(status == uform_status_ok_k);
            break;
        }
        case 3: { // frees of what running calls hold are refused
            std::size_t const t = arg % 2 ? 0 : level;
            uform_executor_t const executor = s.levels[t].executor;
            if (executor && s.sees(level, t) && !s.held_unseen(level, executor))
                require(uform_executor_free(executor) == uform_status_contended_k);
            break;
        }
        case 4: {
            std::size_t const t = arg % 2 ? 0 : level;
            if (s.sees(level, t)) require(uform_arena_free(s.levels[t].arena) == uform_status_contended_k);
            break;
        }
        case 5: require(uform_model_free(s.model) == uform_status_contended_k); break;
        case 6:
        case 7: { // waits on and releases of a running call's outcome are refused
            std::size_t const t = arg % 2 ? 0 : level;
            level_t const &target = s.levels[t];
            if (!target.deferred || !target.outcome || !s.sees(level, t)) break;
            uform_status_t const status =
                op == 6 ? uform_outcome_wait(target.outcome, nullptr) : uform_outcome_release(target.outcome);
            require(status == uform_status_contended_k);
            break;
        }
        case 8: {
            level_t const &target = s.levels[arg % 2 ? 0 : level];
            if (target.deferred && target.outcome)
                require(uform_outcome_status(target.outcome, nullptr) == uform_status_deferred_k);
            if (!s.pending.empty()) { // settle the oldest pending call, which no running call holds
                uform_status_t const status = uform_outcome_wait(s.pending.front().outcome, nullptr);
                require(status == uform_status_ok_k || status == uform_status_contended_k);
                if (status == uform_status_ok_k) {
                    require(bytes_of(*s.pending.front().encoded) == reference().nested.rows);
                    require(uform_outcome_release(s.pending.front().outcome) == uform_status_ok_k);
                    s.pending.erase(s.pending.begin());
                }
            }
            break;
        }
        default:
            if (level != 0) return true; // cancel a nested call
            break;
        }
    }
}

/** @brief Encodes the outer tape with `s`'s handler, and checks the rows against the reference. */
void outer_call(state_t &s, bool deferred) {
    workload_t const &w = reference().outer;
    uform_text_encode_args_t args{};
    args.scalar = uform_scalar_f16_k;
    s.frames[0] = frame_t{&s, 0};
    args.progress = handler;
    args.progress_context = &s.frames[0];
    uform_encoded_t encoded{};
    char const *message = nullptr;
    s.depth = 1;
    uform_outcome_t *outcome = deferred ? &s.levels[0].outcome : nullptr;
    uform_status_t status =
        uform_text_encode(s.model, s.levels[0].executor, w.data.data(), w.data.size(), w.offsets.data(), w.count(),
                          outputs_k, &args, s.levels[0].arena, &encoded, outcome, &message);
    if (deferred) {
        require(status == uform_status_deferred_k);
        status = uform_outcome_wait(s.levels[0].outcome, &message);
        require(uform_outcome_release(s.levels[0].outcome) == uform_status_ok_k);
    }
    s.depth = 0;
    require(status == uform_status_ok_k);
    require(bytes_of(encoded) == w.rows);
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
    reference();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(std::uint8_t const *data, std::size_t size) {
    if (size == 0) return 0;
    state_t s{reader_t{data + 1, size - 1}};
    s.model = fuzz::load_tiny();
    require(uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, 2, &s.ram, nullptr) == uform_status_ok_k);
    require(uform_executor_init_ram(nullptr, 0, uform_cpu_class_auto_k, 1, &s.other_ram, nullptr) == uform_status_ok_k);
    require(uform_executor_init_local(&s.local, nullptr) == uform_status_ok_k);
    require(uform_executor_init_local(&s.other_local, nullptr) == uform_status_ok_k);
    require(uform_arena_init(nullptr, &s.outer_arena, nullptr) == uform_status_ok_k);
    for (uform_arena_t &arena : s.arenas) require(uform_arena_init(nullptr, &arena, nullptr) == uform_status_ok_k);
    s.levels[0] = level_t{data[0] & 1 ? s.local : s.ram, s.outer_arena, nullptr, bool(data[0] & 2)};

    outer_call(s, s.levels[0].deferred);

    // Everything the handlers were refused on still works, then everything is freed.
    for (pending_t const &call : s.pending) {
        uform_status_t const status = uform_outcome_wait(call.outcome, nullptr);
        require(status == uform_status_ok_k || status == uform_status_contended_k);
        if (status == uform_status_ok_k) require(bytes_of(*call.encoded) == reference().nested.rows);
        require(uform_outcome_release(call.outcome) == uform_status_ok_k);
    }
    for (uform_executor_t executor : {s.ram, s.other_ram, s.local, s.other_local})
        require(uform_executor_drain(executor, uform_mood_sleeping_k, nullptr) == uform_status_ok_k);
    s.program = reader_t{nullptr, 0};
    outer_call(s, false);
    for (uform_arena_t arena : s.arenas) require(uform_arena_free(arena) == uform_status_ok_k);
    require(uform_arena_free(s.outer_arena) == uform_status_ok_k);
    for (uform_executor_t executor : {s.ram, s.other_ram, s.local, s.other_local})
        require(uform_executor_free(executor) == uform_status_ok_k);
    require(uform_model_free(s.model) == uform_status_ok_k);
    return 0;
}
