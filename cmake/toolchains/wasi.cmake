# CMake toolchain for wasm32-wasip1 with 128-bit SIMD: the C library as `libuform_static.a` for WASI, and its C tests
# as WASI modules (`.wasm`), which ctest runs under Wasmtime through scripts/wasi-run.py.
#
#   cmake -S . -B build/wasi -G Ninja --toolchain cmake/toolchains/wasi.cmake -DUFORM_WASI_SYSROOT="$(scripts/wasi-sysroot.sh)"
#
# The compilers and the sysroot, first match wins:
#   1. WASI_SDK_PATH (environment): a WASI SDK's `bin/clang`, `bin/clang++` and `share/wasi-sysroot`.
#   2. clang-22 (else clang) on PATH with UFORM_WASI_SYSROOT (a cache variable or the environment): a folder holding
#      `include/wasm32-wasip1` and `lib/wasm32-wasip1`, such as scripts/wasi-sysroot.sh lays out from Debian's packages.
# UFORM_WASI_RUNNER (a cache variable or the environment) names the command that runs a module, the emulator ctest
# puts before each test: by default scripts/wasi-run.py through the interpreter of build/wasi/venv when there is one.
set(CMAKE_SYSTEM_NAME WASI)
set(CMAKE_SYSTEM_VERSION 1)
set(CMAKE_SYSTEM_PROCESSOR wasm32)
set(UFORM_WASI_TRIPLE wasm32-wasip1)

# try_compile projects read this file again in another folder: what it found travels through the environment.
if(UFORM_WASI_SYSROOT)
    set(ENV{UFORM_WASI_SYSROOT} "${UFORM_WASI_SYSROOT}")
endif()

if(DEFINED ENV{WASI_SDK_PATH} AND NOT "$ENV{WASI_SDK_PATH}" STREQUAL "")
    set(_uform_wasi_sdk "$ENV{WASI_SDK_PATH}")
    set(CMAKE_C_COMPILER "${_uform_wasi_sdk}/bin/clang")
    set(CMAKE_CXX_COMPILER "${_uform_wasi_sdk}/bin/clang++")
    set(CMAKE_AR "${_uform_wasi_sdk}/bin/llvm-ar" CACHE FILEPATH "The WASI SDK's archiver")
    set(CMAKE_RANLIB "${_uform_wasi_sdk}/bin/llvm-ranlib" CACHE FILEPATH "The WASI SDK's ranlib")
    set(CMAKE_SYSROOT "${_uform_wasi_sdk}/share/wasi-sysroot")
else()
    find_program(_uform_wasi_cc NAMES clang-22 clang REQUIRED)
    find_program(_uform_wasi_cxx NAMES clang++-22 clang++ REQUIRED)
    find_program(_uform_wasi_ar NAMES llvm-ar-22 llvm-ar REQUIRED)
    find_program(_uform_wasi_ranlib NAMES llvm-ranlib-22 llvm-ranlib REQUIRED)
    set(CMAKE_C_COMPILER "${_uform_wasi_cc}")
    set(CMAKE_CXX_COMPILER "${_uform_wasi_cxx}")
    set(CMAKE_AR "${_uform_wasi_ar}" CACHE FILEPATH "LLVM's archiver, which writes wasm32 symbol tables")
    set(CMAKE_RANLIB "${_uform_wasi_ranlib}" CACHE FILEPATH "LLVM's ranlib")
    if(NOT DEFINED ENV{UFORM_WASI_SYSROOT} OR NOT IS_DIRECTORY "$ENV{UFORM_WASI_SYSROOT}/lib/${UFORM_WASI_TRIPLE}")
        message(FATAL_ERROR "The WASI build needs a sysroot: set WASI_SDK_PATH to a WASI SDK, or pass "
            "-DUFORM_WASI_SYSROOT=\"$(scripts/wasi-sysroot.sh)\" (Debian's wasi-libc, libc++-22-dev-wasm32 and "
            "libc++abi-22-dev-wasm32 laid out as a ${UFORM_WASI_TRIPLE} sysroot).")
    endif()
    set(CMAKE_SYSROOT "$ENV{UFORM_WASI_SYSROOT}")
endif()

set(CMAKE_C_COMPILER_TARGET ${UFORM_WASI_TRIPLE})
set(CMAKE_CXX_COMPILER_TARGET ${UFORM_WASI_TRIPLE})
# SIMD128 everywhere (the engine checks it at load; there is no run-time dispatch), and WASI's emulated mmap for
# the weights' mapped files.
set(CMAKE_C_FLAGS_INIT "-msimd128 -D_WASI_EMULATED_MMAN")
set(CMAKE_CXX_FLAGS_INIT "-msimd128 -D_WASI_EMULATED_MMAN")
set(CMAKE_EXE_LINKER_FLAGS_INIT "-lwasi-emulated-mman -Wl,--max-memory=4294967296 -Wl,-z,stack-size=8388608")
set(CMAKE_EXECUTABLE_SUFFIX ".wasm")

if(NOT UFORM_WASI_RUNNER AND DEFINED ENV{UFORM_WASI_RUNNER})
    set(UFORM_WASI_RUNNER "$ENV{UFORM_WASI_RUNNER}")
endif()
if(NOT UFORM_WASI_RUNNER)
    get_filename_component(_uform_wasi_root "${CMAKE_CURRENT_LIST_DIR}/../.." ABSOLUTE)
    set(UFORM_WASI_RUNNER "${_uform_wasi_root}/build/wasi/venv/bin/python3;${_uform_wasi_root}/scripts/wasi-run.py")
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR "${UFORM_WASI_RUNNER}")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
