# The third-party C and C++ trees libuform folds into `libuform_static.a`: NumKong, StringZilla and
# ForkUnion, taken from the crates Cargo resolved for this workspace (their versions live in Cargo.lock).
#
# None of the three crates ships a CMakeLists.txt, so this file defines their targets itself: one OBJECT
# library each, globbing the sources the crate compiles and mirroring the crate's `build.rs` (defines, ISA
# probes, language standard, flags). Nothing here ever downloads anything.
#
# Where the trees come from, first match wins:
#   1. -DUFORM_NUMKONG_SOURCE_DIR=, -DUFORM_STRINGZILLA_SOURCE_DIR=, -DUFORM_FORKUNION_SOURCE_DIR=, each
#      naming a crate's root, the folder holding its Cargo.toml. `build.rs` always passes these: it asks
#      `cargo metadata`, the one search for the trees Cargo resolved.
#   2. For a standalone CMake build, the version Cargo.lock pins, unpacked in Cargo's registry:
#      $CARGO_HOME/registry/src/*/<crate>-<version> (what `cargo fetch` or any earlier build left there).
#
# Each tree exposes, besides its OBJECT library `uform_<dep>`, the usage requirements (include folders and
# the defines its headers must see, identical to the ones its sources were compiled with) as the OBJECT
# library's INTERFACE properties, which the root CMakeLists.txt hands to libuform's own sources.

include_guard(GLOBAL)
include(CheckCCompilerFlag)

set(UFORM_NUMKONG_SOURCE_DIR "" CACHE PATH "Root of the NumKong 7.8 crate (folder with Cargo.toml, c/, include/)")
set(UFORM_STRINGZILLA_SOURCE_DIR "" CACHE PATH "Root of the StringZilla 5.3 crate (folder with Cargo.toml, c/, include/)")
set(UFORM_FORKUNION_SOURCE_DIR "" CACHE PATH "Root of the ForkUnion 3.0 crate (folder with Cargo.toml, c/, include/)")

# crate name -> (CMake variable suffix, expected version series, a file that proves the tree is the right one)
set(_uform_crates numkong stringzilla forkunion)
set(_uform_numkong_var NUMKONG)
set(_uform_numkong_series 7.8)
set(_uform_numkong_marker c/numkong.c)
set(_uform_stringzilla_var STRINGZILLA)
set(_uform_stringzilla_series 5.3)
set(_uform_stringzilla_marker c/stringzilla/runtime.c)
set(_uform_forkunion_var FORKUNION)
set(_uform_forkunion_series 3.0)
set(_uform_forkunion_marker c/forkunion.cpp)

# Reads `version = "..."` from the [package] table of a crate's Cargo.toml into `out` ("" if unknown).
function(_uform_crate_version dir out)
    set(version "")
    if(EXISTS "${dir}/Cargo.toml")
        file(STRINGS "${dir}/Cargo.toml" lines REGEX "^version[ \t]*=[ \t]*\"[^\"]+\"")
        if(lines)
            list(GET lines 0 line)
            string(REGEX REPLACE "^version[ \t]*=[ \t]*\"([^\"]+)\".*" "\\1" version "${line}")
        endif()
    endif()
    set(${out} "${version}" PARENT_SCOPE)
endfunction()

# Fills UFORM_<DEP>_SOURCE_DIR (non-cache) for every crate still unknown from the version Cargo.lock pins and
# the folder Cargo unpacks it to: $CARGO_HOME/registry/src/<index>/<crate>-<version>.
function(_uform_crates_from_registry)
    set(lock "${PROJECT_SOURCE_DIR}/Cargo.lock")
    if(NOT EXISTS "${lock}")
        return()
    endif()
    if(DEFINED ENV{CARGO_HOME})
        set(cargo_home "$ENV{CARGO_HOME}")
    else()
        set(cargo_home "$ENV{HOME}/.cargo")
    endif()
    file(READ "${lock}" text)
    foreach(crate IN LISTS _uform_crates)
        set(var "UFORM_${_uform_${crate}_var}_SOURCE_DIR")
        if(${var})
            continue()
        endif()
        string(REGEX MATCH "\\[\\[package\\]\\]\nname = \"${crate}\"\nversion = \"([^\"]+)\"" found "${text}")
        if(NOT found)
            continue()
        endif()
        file(GLOB candidates LIST_DIRECTORIES TRUE "${cargo_home}/registry/src/*/${crate}-${CMAKE_MATCH_1}")
        foreach(candidate IN LISTS candidates)
            if(EXISTS "${candidate}/${_uform_${crate}_marker}")
                set(${var} "${candidate}" PARENT_SCOPE)
                break()
            endif()
        endforeach()
    endforeach()
endfunction()

# Fills UFORM_<DEP>_SOURCE_DIR for all three crates or stops with a message that says how to fix it.
function(uform_locate_crates)
    set(missing FALSE)
    foreach(crate IN LISTS _uform_crates)
        if(NOT UFORM_${_uform_${crate}_var}_SOURCE_DIR)
            set(missing TRUE)
        endif()
    endforeach()
    if(missing)
        _uform_crates_from_registry()
    endif()
    set(how_to_fix
        "Either let Cargo unpack them (`cargo fetch` in ${PROJECT_SOURCE_DIR}, then configure again), or pass "
        "-DUFORM_NUMKONG_SOURCE_DIR=, -DUFORM_STRINGZILLA_SOURCE_DIR= and "
        "-DUFORM_FORKUNION_SOURCE_DIR= naming the crates' roots (for example "
        "~/.cargo/registry/src/*/numkong-7.8.*), or configure the stand-in with -DUFORM_STUB=ON, which needs none.")
    string(JOIN "" how_to_fix ${how_to_fix})
    foreach(crate IN LISTS _uform_crates)
        set(var "UFORM_${_uform_${crate}_var}_SOURCE_DIR")
        set(dir "${${var}}")
        if(NOT dir)
            message(FATAL_ERROR "The RAM build needs the ${crate} ${_uform_${crate}_series}.x sources, which were not "
                "found in Cargo's registry at the version Cargo.lock pins.\n${how_to_fix}")
        endif()
        cmake_path(ABSOLUTE_PATH dir NORMALIZE)
        string(REGEX REPLACE "/$" "" dir "${dir}")
        if(NOT EXISTS "${dir}/${_uform_${crate}_marker}")
            message(FATAL_ERROR "${var}=${dir} does not hold the ${crate} sources (no ${_uform_${crate}_marker}).\n"
                "${how_to_fix}")
        endif()
        _uform_crate_version("${dir}" version)
        if(version AND NOT version MATCHES "^${_uform_${crate}_series}\\.")
            message(FATAL_ERROR "${var}=${dir} holds ${crate} ${version}, but libuform is written against "
                "${_uform_${crate}_series}.x. Point it at a ${_uform_${crate}_series}.x tree.")
        endif()
        message(STATUS "uform: ${crate} ${version} from ${dir}")
        set(${var} "${dir}" PARENT_SCOPE)
        set(UFORM_${_uform_${crate}_var}_VERSION "${version}" PARENT_SCOPE)
    endforeach()
    # A new lock (or fetched crate) must re-run the lookup.
    if(EXISTS "${PROJECT_SOURCE_DIR}/Cargo.lock")
        set_property(DIRECTORY "${PROJECT_SOURCE_DIR}" APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
            "${PROJECT_SOURCE_DIR}/Cargo.lock")
    endif()
endfunction()

# ---------------------------------------------------------------------------------------------------------
# Target description, shared by the crates' `build.rs` conventions.

set(_uform_arch "")
if(CMAKE_SIZEOF_VOID_P EQUAL 8)
    string(TOLOWER "${CMAKE_SYSTEM_PROCESSOR}" _uform_processor)
    if(_uform_processor MATCHES "^(x86_64|amd64|x64)$")
        set(_uform_arch x86_64)
    elseif(_uform_processor MATCHES "^(aarch64|arm64)")
        set(_uform_arch aarch64)
    elseif(_uform_processor MATCHES "^riscv64")
        set(_uform_arch riscv64)
    elseif(_uform_processor MATCHES "^loongarch64")
        set(_uform_arch loongarch64)
    elseif(_uform_processor MATCHES "^(ppc64|powerpc64)")
        set(_uform_arch powerpc64)
    endif()
endif()
if(CMAKE_SYSTEM_NAME MATCHES "^(WASI|Emscripten)$" OR _uform_processor MATCHES "^wasm")
    set(_uform_arch wasm)
endif()

# An ISA probe: compile (never link, never run) one of the crate's own probe sources with `flags`. The answer
# is cached as `result_var`; an environment variable named `override` set to 0/1 wins, exactly as the crate's
# `build.rs` lets NK_TARGET_* and SZ_USE_* force a tier off or on.
function(_uform_probe result_var source override)
    set(flags ${ARGN})
    if(DEFINED ENV{${override}} AND NOT "$ENV{${override}}" STREQUAL "")
        string(TOLOWER "$ENV{${override}}" value)
        if(value MATCHES "^(0|false|off|no)$")
            set(${result_var} 0 PARENT_SCOPE)
        else()
            set(${result_var} 1 PARENT_SCOPE)
        endif()
        return()
    endif()
    if(DEFINED CACHE{${result_var}})
        set(${result_var} "${${result_var}}" PARENT_SCOPE)
        return()
    endif()
    set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)
    try_compile(ok
        SOURCES "${source}"
        COMPILE_DEFINITIONS ${flags}
        C_STANDARD 99
        C_STANDARD_REQUIRED ON
        C_EXTENSIONS OFF
        NO_CACHE)
    if(ok)
        set(ok 1)
    else()
        set(ok 0)
    endif()
    set(${result_var} ${ok} CACHE INTERNAL "ISA probe ${source}")
    set(${result_var} ${ok} PARENT_SCOPE)
endfunction()

# Adds the flag to `target`'s PRIVATE compile options when the C compiler accepts it.
function(_uform_flag_if_supported target flag)
    string(MAKE_C_IDENTIFIER "UFORM_C_FLAG${flag}" var)
    check_c_compiler_flag("${flag}" ${var})
    if(${var})
        target_compile_options(${target} PRIVATE "${flag}")
    endif()
endfunction()

# ---------------------------------------------------------------------------------------------------------
# NumKong: mirrors numkong-7.8.x/build.rs. `c/numkong.c` and the per-dtype `c/dispatch_*.c` files (not
# `c/parallel.c`, which the crate leaves out too), C99, -O3 whatever the build type, runtime dispatch, the TU
# baseline pinned to the arch's ABI floor with auto-vectorization off, and one NK_TARGET_* define per ISA
# probe of this arch: the kernels carry per-function target pragmas, so the flags only probe the compiler.

function(_uform_add_numkong)
    set(root "${UFORM_NUMKONG_SOURCE_DIR}")
    file(GLOB dispatch_sources CONFIGURE_DEPENDS "${root}/c/dispatch_*.c")
    add_library(uform_numkong OBJECT "${root}/c/numkong.c" ${dispatch_sources})
    set_target_properties(uform_numkong PROPERTIES
        C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
        POSITION_INDEPENDENT_CODE ON)
    target_include_directories(uform_numkong PUBLIC "${root}/include")
    if(UFORM_SANITIZE MATCHES "undefined")
        # UBSan flags NumKong 7.8's dispatch, which calls kernels through pointers of another function type
        # (numkong.c): not ours to fix. Its objects keep AddressSanitizer; everything of ours keeps both.
        target_compile_options(uform_numkong PRIVATE -fno-sanitize=undefined)
    endif()

    set(x86 0)
    set(arm 0)
    set(riscv 0)
    set(loongarch 0)
    set(power 0)
    if(_uform_arch STREQUAL "x86_64")
        set(x86 1)
    elseif(_uform_arch STREQUAL "aarch64")
        set(arm 1)
    elseif(_uform_arch STREQUAL "riscv64")
        set(riscv 1)
    elseif(_uform_arch STREQUAL "loongarch64")
        set(loongarch 1)
    elseif(_uform_arch STREQUAL "powerpc64")
        set(power 1)
    endif()
    set(defines
        NK_NATIVE_F16=0 NK_NATIVE_BF16=0 NK_DYNAMIC_DISPATCH=1
        NK_IS_64BIT_X86=${x86} NK_IS_64BIT_ARM=${arm} NK_IS_64BIT_RISCV=${riscv}
        NK_IS_64BIT_LOONGARCH=${loongarch} NK_IS_64BIT_POWER=${power})

    # name:probe file:GCC/Clang flags (`|`-separated), straight from the crate's probe tables.
    set(x86_64_probes
        "HASWELL:x86_haswell:-mavx2|-mfma|-mf16c"
        "SKYLAKE:x86_skylake:-mavx512f|-mavx512bw|-mavx512dq|-mavx512vl"
        "ICELAKE:x86_icelake:-mavx512vnni|-mavx512vl"
        "GENOA:x86_genoa:-mavx512bf16|-mavx512vl"
        "SAPPHIRE:x86_sapphire:-mavx512fp16|-mavx512vl"
        "SAPPHIREAMX:x86_sapphireamx:-mamx-tile|-mamx-int8|-mamx-bf16|-mavx512fp16"
        "GRANITEAMX:x86_graniteamx:-mamx-tile|-mamx-fp16"
        "DIAMOND:x86_diamond:-mavx10.2-512"
        "TURIN:x86_turin:-mavx512vp2intersect|-mavx512bf16"
        "ALDER:x86_alder:-mavxvnni"
        "SIERRA:x86_sierra:-mavxvnniint8")
    set(aarch64_probes
        "NEON:arm_neon:-march=armv8-a+simd"
        "NEONHALF:arm_neon_half:-march=armv8.2-a+simd+fp16"
        "NEONSDOT:arm_neon_sdot:-march=armv8.2-a+dotprod"
        "NEONBFDOT:arm_neon_bfdot:-march=armv8.6-a+simd+bf16"
        "NEONFHM:arm_neon_fhm:-march=armv8.2-a+simd+fp16+fp16fml"
        "SVE:arm_sve:-march=armv8.2-a+sve"
        "SVEHALF:arm_sve_half:-march=armv8.2-a+sve+fp16"
        "SVEBFDOT:arm_sve_bfdot:-march=armv8.2-a+sve+bf16"
        "SVESDOT:arm_sve_sdot:-march=armv8.2-a+sve+dotprod"
        "SVE2:arm_sve2:-march=armv8.2-a+sve2"
        "SVE2P1:arm_sve2p1:-march=armv8.2-a+sve2p1"
        "NEONFP8:arm_neonfp8:-march=armv8-a+simd+fp8dot4"
        "SME:arm_sme:-march=armv8-a+sme"
        "SME2:arm_sme2:-march=armv8-a+sme2"
        "SME2P1:arm_sme2p1:-march=armv8-a+sme2p1"
        "SMEF64:arm_sme_f64:-march=armv8-a+sme+sme-f64f64"
        "SMEHALF:arm_sme_half:-march=armv8-a+sme+sme-f16f16"
        "SMEBF16:arm_sme_bf16:-march=armv8-a+sme2+sme-b16b16"
        "SMEBI32:arm_sme_bi32:-march=armv8-a+sme2"
        "SMELUT2:arm_sme_lut2:-march=armv8-a+sme2+sme-lutv2"
        "SMEFA64:arm_sme_fa64:-march=armv8-a+sme+sme-fa64")
    set(riscv64_probes
        "RVV:riscv_rvv:-march=rv64gcv"
        "RVVHALF:riscv_rvv_half:-march=rv64gcv_zvfh"
        "RVVBF16:riscv_rvv_bf16:-march=rv64gcv_zvfbfwma"
        "RVVBB:riscv_rvv_bb:-march=rv64gcv_zvbb")
    set(loongarch64_probes "LOONGSONASX:loongarch_lasx:-mlasx")
    set(powerpc64_probes "POWERVSX:power_vsx:-mcpu=power9|-mvsx")
    set(wasm_probes "V128RELAXED:wasm_v128relaxed:-mrelaxed-simd")

    set(enabled "")
    foreach(row IN LISTS ${_uform_arch}_probes)
        string(REPLACE ":" ";" row "${row}")
        list(GET row 0 name)
        list(GET row 1 file)
        list(GET row 2 flags)
        string(REPLACE "|" ";" flags "${flags}")
        _uform_probe(UFORM_NK_TARGET_${name} "${root}/probes/${file}.c" NK_TARGET_${name} ${flags})
        list(APPEND defines NK_TARGET_${name}=${UFORM_NK_TARGET_${name}})
        if(UFORM_NK_TARGET_${name})
            list(APPEND enabled ${name})
        endif()
    endforeach()
    list(JOIN enabled " " enabled)
    message(STATUS "uform: NumKong kernels for ${_uform_arch}: ${enabled}")

    # PUBLIC: libuform's own sources include <numkong/numkong.h> and must see the very same configuration.
    target_compile_definitions(uform_numkong PUBLIC ${defines})
    # The crate forces -O3 whatever the profile; a later -O wins over CMAKE_C_FLAGS_<CONFIG>.
    target_compile_options(uform_numkong PRIVATE $<$<C_COMPILER_ID:GNU,Clang,AppleClang>:-O3 -w>)
    _uform_flag_if_supported(uform_numkong -pedantic)
    _uform_flag_if_supported(uform_numkong -Wno-psabi)
    if(NOT APPLE)
        _uform_flag_if_supported(uform_numkong -fno-tree-vectorize)
        _uform_flag_if_supported(uform_numkong -fno-tree-slp-vectorize)
        if(_uform_arch STREQUAL "x86_64")
            _uform_flag_if_supported(uform_numkong -march=x86-64)
        elseif(_uform_arch STREQUAL "aarch64")
            _uform_flag_if_supported(uform_numkong -march=armv8-a)
        elseif(_uform_arch STREQUAL "riscv64")
            _uform_flag_if_supported(uform_numkong -march=rv64gc)
        elseif(_uform_arch STREQUAL "powerpc64")
            _uform_flag_if_supported(uform_numkong -mcpu=power8)
        elseif(_uform_arch STREQUAL "loongarch64")
            _uform_flag_if_supported(uform_numkong -march=loongarch64)
            _uform_flag_if_supported(uform_numkong -mlasx)
        endif()
    endif()
endfunction()

# ---------------------------------------------------------------------------------------------------------
# StringZilla: mirrors stringzilla-5.3.x/build.rs with its default `dynamic-dispatch` feature and without
# `cpus` (the C++ "stringzillas" batch library is not built). `c/stringzilla/*.c`, C99, no mem* builtins,
# SZ_USE_* from compile probes, all compilable tiers on where the library detects the CPU at run time.

function(_uform_add_stringzilla)
    set(root "${UFORM_STRINGZILLA_SOURCE_DIR}")
    file(GLOB sources CONFIGURE_DEPENDS "${root}/c/stringzilla/*.c")
    add_library(uform_stringzilla OBJECT ${sources})
    set_target_properties(uform_stringzilla PROPERTIES
        C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
        POSITION_INDEPENDENT_CODE ON)
    target_include_directories(uform_stringzilla PUBLIC "${root}/include")
    target_include_directories(uform_stringzilla PRIVATE "${root}/c/stringzilla") # the same-folder dispatch.h

    set(avoid_libc 0)
    if(CMAKE_SYSTEM_NAME MATCHES "^(Generic|WASI)$")
        set(avoid_libc 1)
    endif()
    set(big_endian 0)
    if(CMAKE_C_BYTE_ORDER STREQUAL "BIG_ENDIAN")
        set(big_endian 1)
    endif()
    set(x86 0)
    set(arm 0)
    if(_uform_arch STREQUAL "x86_64")
        set(x86 1)
    elseif(_uform_arch STREQUAL "aarch64")
        set(arm 1)
    endif()
    set(defines SZ_DEBUG=0 SZ_DYNAMIC_DISPATCH=1 SZ_AVOID_LIBC=${avoid_libc}
        SZ_IS_BIG_ENDIAN_=${big_endian} SZ_IS_64BIT_X86_=${x86} SZ_IS_64BIT_ARM_=${arm})

    # Where the library performs real runtime detection, every tier the toolchain can emit is safe: the
    # load-time table masks what the CPU lacks. Elsewhere (wasm, OS-less targets) stay at the serial floor.
    _uform_probe(UFORM_SZ_RUNTIME_DETECTABLE "${root}/probes/runtime_detection.c" UFORM_SZ_RUNTIME_DETECTABLE
        "-I${root}/include" -DSZ_AVOID_LIBC=${avoid_libc})

    set(x86_64_probes WESTMERE;x86_westmere GOLDMONT;x86_goldmont HASWELL;x86_haswell SKYLAKE;x86_skylake
        ICELAKE;x86_icelake)
    set(aarch64_probes NEON;arm_neon NEONAES;arm_neonaes NEONSHA;arm_neonsha SVE;arm_sve SVE2;arm_sve2
        SVE2AES;arm_sve2aes)
    set(riscv64_probes RVV;riscv_rvv RVVCRYPTO;riscv_rvvcrypto)
    set(loongarch64_probes LASX;loongarch_lasx)
    set(powerpc64_probes POWERVSX;power_vsx)
    set(wasm_probes V128;wasm_v128 V128RELAXED;wasm_v128relaxed)
    set(probes ${${_uform_arch}_probes})
    set(enabled "")
    list(LENGTH probes length)
    if(length GREATER 0)
        math(EXPR last "${length} - 1")
        foreach(i RANGE 0 ${last} 2)
            math(EXPR j "${i} + 1")
            list(GET probes ${i} name)
            list(GET probes ${j} file)
            set(flags "")
            if(name STREQUAL "V128")
                set(flags -msimd128)
            elseif(name STREQUAL "V128RELAXED")
                set(flags -msimd128 -mrelaxed-simd)
            endif()
            _uform_probe(UFORM_SZ_USE_${name} "${root}/probes/${file}.c" SZ_USE_${name} ${flags})
            set(use ${UFORM_SZ_USE_${name}})
            if(NOT UFORM_SZ_RUNTIME_DETECTABLE AND NOT _uform_arch STREQUAL "wasm" AND NOT DEFINED ENV{SZ_USE_${name}})
                set(use 0)
            endif()
            list(APPEND defines SZ_USE_${name}=${use})
            if(use)
                list(APPEND enabled ${name})
            endif()
        endforeach()
    endif()
    list(JOIN enabled " " enabled)
    message(STATUS "uform: StringZilla tiers for ${_uform_arch}: ${enabled}")

    target_compile_definitions(uform_stringzilla PUBLIC ${defines})
    target_compile_options(uform_stringzilla PRIVATE
        $<$<C_COMPILER_ID:GNU,Clang,AppleClang>:-w -fno-builtin-memcmp -fno-builtin-memchr -fno-builtin-memcpy
        -fno-builtin-memset>)
    if(_uform_arch STREQUAL "wasm")
        if(UFORM_SZ_USE_V128RELAXED)
            target_compile_options(uform_stringzilla PRIVATE -msimd128 -mrelaxed-simd)
        elseif(UFORM_SZ_USE_V128)
            target_compile_options(uform_stringzilla PRIVATE -msimd128)
        endif()
    endif()
endfunction()

# ---------------------------------------------------------------------------------------------------------
# ForkUnion: mirrors forkunion-3.0.x/build.rs with default features: `c/forkunion.cpp` as C++20, no FU_WITH_*
# defined (the header derives them from the platform), NDEBUG unless assertions are wanted, pthreads.

function(_uform_add_forkunion)
    set(root "${UFORM_FORKUNION_SOURCE_DIR}")
    add_library(uform_forkunion OBJECT "${root}/c/forkunion.cpp")
    set_target_properties(uform_forkunion PROPERTIES
        CXX_STANDARD 20 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
        POSITION_INDEPENDENT_CODE ON)
    target_include_directories(uform_forkunion PUBLIC "${root}/include")
    # Cargo's release profile drops debug assertions; CMake's non-Debug configurations define NDEBUG already.
    target_compile_options(uform_forkunion PRIVATE $<$<CXX_COMPILER_ID:GNU,Clang,AppleClang>:-w>)
    target_link_libraries(uform_forkunion PUBLIC Threads::Threads)
    set(CMAKE_REQUIRED_QUIET ON)
    include(CheckCXXCompilerFlag)
    check_cxx_compiler_flag(-pedantic UFORM_CXX_FLAG_PEDANTIC)
    if(UFORM_CXX_FLAG_PEDANTIC)
        target_compile_options(uform_forkunion PRIVATE -pedantic)
    endif()
endfunction()

# Defines uform_numkong, uform_stringzilla and uform_forkunion (OBJECT libraries).
function(uform_add_crates)
    find_package(Threads REQUIRED)
    set(CMAKE_REQUIRED_QUIET ON)
    _uform_add_numkong()
    _uform_add_stringzilla()
    _uform_add_forkunion()
endfunction()
