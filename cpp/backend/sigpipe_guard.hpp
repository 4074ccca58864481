// SIGPIPE kept from the host process while the mesh's transport writes to its peers: a peer that dies mid-write
// must give its survivors `io` or `timeout`, never kill them. Gloo writes to its sockets without MSG_NOSIGNAL, so
// every thread that calls into it blocks SIGPIPE for the call, and a SIGPIPE raised meanwhile is consumed before the
// thread's mask is restored. The process's disposition of SIGPIPE is never changed.
#pragma once

#include <csignal>
#include <ctime>

#include <pthread.h>

namespace uform::backend {

/// Blocks SIGPIPE on the calling thread while it lives (threads started meanwhile, such as Gloo's event loop,
/// inherit the block for good), then discards a SIGPIPE this thread raised and restores the thread's mask.
class sigpipe_guard_t {
  public:
    sigpipe_guard_t() noexcept {
        sigemptyset(&pipe_);
        sigaddset(&pipe_, SIGPIPE);
        pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
        sigset_t pending;
        sigemptyset(&pending);
        pending_before_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    }

    ~sigpipe_guard_t() {
        sigset_t pending;
        sigemptyset(&pending);
        if (!pending_before_ && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1) {
            timespec const now{0, 0};
            sigtimedwait(&pipe_, nullptr, &now);
        }
        pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    }

    sigpipe_guard_t(sigpipe_guard_t const &) = delete;
    sigpipe_guard_t &operator=(sigpipe_guard_t const &) = delete;

  private:
    sigset_t pipe_{};     // SIGPIPE alone
    sigset_t previous_{}; // the thread's mask before
    bool pending_before_ = false;
};

} // namespace uform::backend
