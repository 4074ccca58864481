# The WASI build (cmake/toolchains/wasi.cmake): the RAM residency for wasm32-wasip1 as `libuform_static.a`, with
# NumKong's objects folded in, and the C and unit tests that apply there as WASI modules that ctest runs under
# Wasmtime (the toolchain's emulator, scripts/wasi-run.py) with the repository's folder opened to them.
#
# What differs from the native RAM build (docs/building.md, "Building for WASI"): no threads (an executor owns none:
# c/workers_serial.cpp, common/lock.hpp), no FFmpeg (cpp/media/wasi_decode.cpp answers `unsupported` for files and
# encoded bytes; audio_decode.cpp takes samples at the model's rate only), no KissFFT (cpp/media/real_dft.cpp), no
# Gloo (cpp/backend/mesh_wasi.cpp answers `unsupported`), no ForkUnion or StringZilla, and no C++ exceptions
# (cpp/wasi_runtime.cpp: no exceptions, thread-local destructors at exit).

include_guard(GLOBAL)

# The C tests (tests/c/<name>.c) that need no threads, decoders, mesh or GPU, and the unit tests (tests/unit/<name>.cpp)
# of the code WASI builds.
set(UFORM_WASI_C_TESTS arenas bad_input bad_weights cancel choose dispatch executors load_shrinking
    model names numerics pixels samples schedule text train_bounds train_vram_config)
set(UFORM_WASI_UNIT_TESTS allocations_test forward_test schedule_test train_kernels_test
    train_maths_test train_objectives_test train_step_test train_trunk_test)

# The sources of the native RAM build that WASI replaces: FFmpeg's decoders and Gloo's mesh.
set(_uform_wasi_native_only cpp/media/ffmpeg.cpp cpp/media/image_decode.cpp cpp/media/video_decode.cpp
    cpp/backend/mesh.cpp cpp/backend/mesh_store.cpp)

# The native build's warnings (CMakeLists.txt sets them after this build's early return).
set(UFORM_WASI_WARNING_FLAGS -Wall -Wextra -Wpedantic)
if(UFORM_WARNINGS_AS_ERRORS)
    list(APPEND UFORM_WASI_WARNING_FLAGS -Werror)
endif()

function(_uform_wasi_library)
    file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/c/*.cpp" "${PROJECT_SOURCE_DIR}/common/*.cpp")
    file(GLOB_RECURSE residency CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cpp/*.cpp")
    list(APPEND sources ${residency})
    foreach(native IN LISTS _uform_wasi_native_only)
        list(REMOVE_ITEM sources "${PROJECT_SOURCE_DIR}/${native}")
    endforeach()
    add_library(uform_static STATIC ${sources} $<TARGET_OBJECTS:uform_numkong>)
    add_library(uform::uform_static ALIAS uform_static)
    target_include_directories(uform_static PUBLIC "${PROJECT_SOURCE_DIR}/include" PRIVATE "${PROJECT_SOURCE_DIR}")
    target_include_directories(uform_static SYSTEM PRIVATE
        $<TARGET_PROPERTY:uform_numkong,INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_definitions(uform_static PRIVATE
        $<TARGET_PROPERTY:uform_numkong,INTERFACE_COMPILE_DEFINITIONS>
        UFORM_WITH_STUB=0 UFORM_WITH_CUDA=0 UFORM_LIBRARY_VERSION="${PROJECT_VERSION}")
    target_compile_options(uform_static PRIVATE ${UFORM_WASI_WARNING_FLAGS})
endfunction()

# One test: its module, linked against the archive, run by ctest through the toolchain's emulator.
function(_uform_wasi_test name target source)
    add_executable(${target} "${source}")
    target_link_libraries(${target} PRIVATE uform_static)
    target_compile_options(${target} PRIVATE ${UFORM_WASI_WARNING_FLAGS})
    set_target_properties(${target} PROPERTIES
        LINKER_LANGUAGE CXX
        SUFFIX ".wasm"
        C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
        RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
    add_test(NAME ${name} COMMAND ${target})
    set_tests_properties(${name} PROPERTIES
        WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
        ENVIRONMENT "UFORM_TEST_DATA=${PROJECT_SOURCE_DIR}/tests/data;UFORM_TEST_RESIDENCY=ram;UFORM_TEST_CPU_CLASS=wasm-simd128"
        TIMEOUT 600 SKIP_RETURN_CODE 77 LABELS wasi)
endfunction()

function(_uform_wasi_tests)
    foreach(stem IN LISTS UFORM_WASI_C_TESTS)
        _uform_wasi_test(c.${stem} uform_test_c_${stem} "${PROJECT_SOURCE_DIR}/tests/c/${stem}.c")
    endforeach()
    foreach(stem IN LISTS UFORM_WASI_UNIT_TESTS)
        set(target uform_unit_${stem})
        _uform_wasi_test(unit.${stem} ${target} "${PROJECT_SOURCE_DIR}/tests/unit/${stem}.cpp")
        target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}")
        target_include_directories(${target} SYSTEM PRIVATE
            $<TARGET_PROPERTY:uform_numkong,INTERFACE_INCLUDE_DIRECTORIES>)
        target_compile_definitions(${target} PRIVATE $<TARGET_PROPERTY:uform_numkong,INTERFACE_COMPILE_DEFINITIONS>)
    endforeach()
endfunction()

function(uform_add_wasi)
    if(UFORM_STUB OR UFORM_CUDA)
        message(FATAL_ERROR "The WASI build is the RAM residency alone: configure it without UFORM_STUB and UFORM_CUDA.")
    endif()
    include(UformCrates)
    uform_locate_crates()
    # NumKong's relaxed-SIMD kernels would make every module need the relaxed-SIMD proposal besides SIMD128, which
    # some engines lack: the build asks for SIMD128 alone (NK_TARGET_V128RELAXED=1 in the environment still wins).
    set(UFORM_NK_TARGET_V128RELAXED 0 CACHE INTERNAL "NumKong's relaxed-SIMD kernels: off for WASI")
    _uform_add_numkong()
    _uform_wasi_library()
    if(UFORM_BUILD_TESTS)
        _uform_wasi_tests()
    endif()
endfunction()
