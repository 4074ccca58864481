# What a program that links libuform_static.a with a plain C driver (`cc`) must add after `-luform_static`:
# the CUDA runtime for the CUDA residency, FFmpeg's and Gloo's libraries for the RAM residency, the C++ runtime the archive was compiled against, libm, the threads
# library, and the sanitizer runtimes when UFORM_SANITIZE is set. CMake consumers get the same through
# uform::uform_static's link interface (C++ as a link language, the C++ runtime when they link with the C driver,
# Threads::Threads, FFmpeg, Gloo, the -fsanitize= link option). build.rs forwards the `Libs:` line of the build folder's
# uform.pc to rustc.

include_guard(GLOBAL)
include(CheckCXXSourceCompiles)

# The C++ runtime the compiler links by default, and libm, which it needs: `stdc++;m` or `c++;m`.
function(uform_cxx_runtime_libraries out)
    set(libraries "")
    set(CMAKE_REQUIRED_QUIET ON)
    check_cxx_source_compiles("
        #include <version>
        #if !defined(_LIBCPP_VERSION)
        #error not libc++
        #endif
        int main() { return 0; }" UFORM_CXX_RUNTIME_IS_LIBCXX)
    if(UFORM_CXX_RUNTIME_IS_LIBCXX)
        list(APPEND libraries c++)
    elseif(NOT MSVC)
        list(APPEND libraries stdc++)
    endif()
    if(UNIX)
        list(APPEND libraries m)
    endif()
    set(${out} "${libraries}" PARENT_SCOPE)
endfunction()

function(uform_system_link_flags out)
    set(flags "")

    if(UFORM_CUDA)
        # The CUDA residency: the static runtime by path (cuBLASLt is loaded at run time, cuda/blas.cpp).
        list(APPEND flags "${UFORM_CUDA_CUDART}" -ldl -lrt)
    endif()
    if(UFORM_ROCM)
        # The AMD residency: HIP's runtime by path (shared: ROCm ships no static one).
        list(APPEND flags "${UFORM_ROCM_HIP_LIBRARY}")
    endif()
    if(UFORM_MEDIA_FOUND)
        # The system codecs of the RAM residency, as their pkg-config files name them.
        list(APPEND flags ${UFORM_MEDIA_LDFLAGS})
    endif()
    if(TARGET gloo)
        # The RAM residency's mesh: Gloo's shared library, which its CMake package names `gloo`.
        list(APPEND flags -lgloo)
    endif()

    uform_cxx_runtime_libraries(runtime)
    foreach(library IN LISTS runtime)
        list(APPEND flags -l${library})
    endforeach()
    if(CMAKE_THREAD_LIBS_INIT)
        list(APPEND flags ${CMAKE_THREAD_LIBS_INIT})
    elseif(CMAKE_USE_PTHREADS_INIT AND NOT APPLE)
        # glibc 2.34+ keeps pthreads in libc and FindThreads then names no flag; -lpthread stays harmless
        # there and is needed by older C libraries.
        list(APPEND flags -lpthread)
    endif()
    if(UFORM_SANITIZE)
        list(APPEND flags -fsanitize=${UFORM_SANITIZE})
    endif()

    list(REMOVE_DUPLICATES flags)
    list(JOIN flags " " flags)
    set(${out} "${flags}" PARENT_SCOPE)
endfunction()
