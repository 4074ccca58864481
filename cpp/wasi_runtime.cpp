// The C++ runtime's entry points that the wasm32 libc++abi of the platform's packages (and of the WASI SDK) leaves
// out, being built without threads and without exceptions. Weak, so that a runtime that has them wins. See
// docs/building.md, "Building for WASI".
//
// - Thread-local objects with destructors: with one thread, its exit is the module's, so their destructors join
//   the module's exit handlers.
// - Exceptions: nothing can catch a throw. The library never throws by itself; the standard library still can (memory
//   running out inside a container), and then the module ends with a message.
#if defined(__wasi__)

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <typeinfo>

#include <cxxabi.h>

namespace {

/// Says why the module stops, then stops it.
[[noreturn]] void no_exceptions() noexcept {
    std::fputs("uform: a C++ exception was thrown on WASI, which cannot catch one (out of memory?)\n", stderr);
    std::abort();
}

} // namespace

extern "C" {

/// The module's exit handlers (wasi-libc's).
int __cxa_atexit(void (*destructor)(void *), void *object, void *dso_handle) noexcept;

/// Runs `destructor(object)` when the only thread, and so the module, exits.
__attribute__((weak)) int __cxa_thread_atexit(void (*destructor)(void *), void *object, void *dso_handle) noexcept {
    return __cxa_atexit(destructor, object, dso_handle);
}

/// Would allocate an exception object: never returns, as none can be thrown.
__attribute__((weak)) void *__cxa_allocate_exception(std::size_t) noexcept { no_exceptions(); }

/// Would throw: ends the module instead.
__attribute__((weak)) void __cxa_throw(void *, std::type_info *, void *(*)(void *)) { no_exceptions(); }

} // extern "C"

#endif // defined(__wasi__)
