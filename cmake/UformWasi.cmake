# The WASI build (cmake/toolchains/wasi.cmake): what of the RAM residency compiles for wasm32-wasip1 today, its
# compute core, as `libuform_wasi_core.a` with NumKong's objects folded in, and the unit tests of that core as WASI
# modules that ctest runs under Wasmtime (the toolchain's emulator, scripts/wasi-run.py) with the repository's data
# folder opened to them.
#
# The core: the forward pass, the linears, the weights' loader and mapped files, the kernels of every CPU class (the
# SIMD128 class among them; the x86 and Arm files compile to their nullptr tables), the trainer's maths, and the
# checkpoint reader and writer. The C ABI layer (c/) and the backends (cpp/backend/) wait for executors without
# threads; FFmpeg, KissFFT, Gloo and ForkUnion are not built for WASI (docs/building.md, "Building for WASI").

include_guard(GLOBAL)

# The unit tests that exercise the core alone.
set(UFORM_WASI_UNIT_TESTS forward_test)

function(uform_add_wasi)
    include(UformCrates)
    uform_locate_crates()
    _uform_add_numkong()

    file(GLOB core CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cpp/*.cpp" "${PROJECT_SOURCE_DIR}/cpp/kernels/*.cpp"
         "${PROJECT_SOURCE_DIR}/cpp/train/*.cpp")
    list(APPEND core "${PROJECT_SOURCE_DIR}/common/checkpoint.cpp" "${PROJECT_SOURCE_DIR}/common/checkpoint_writer.cpp"
         "${PROJECT_SOURCE_DIR}/common/json.cpp" "${PROJECT_SOURCE_DIR}/common/regular_file.cpp")
    add_library(uform_wasi_core STATIC ${core} $<TARGET_OBJECTS:uform_numkong>)
    target_include_directories(uform_wasi_core PUBLIC "${PROJECT_SOURCE_DIR}/include" "${PROJECT_SOURCE_DIR}")
    target_include_directories(uform_wasi_core SYSTEM PUBLIC
        $<TARGET_PROPERTY:uform_numkong,INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_definitions(uform_wasi_core PUBLIC
        $<TARGET_PROPERTY:uform_numkong,INTERFACE_COMPILE_DEFINITIONS>
        UFORM_WITH_STUB=0 UFORM_WITH_CUDA=0 UFORM_LIBRARY_VERSION="${PROJECT_VERSION}")
    target_compile_options(uform_wasi_core PRIVATE -Wall -Wextra -Wpedantic)

    if(NOT UFORM_BUILD_TESTS)
        return()
    endif()
    enable_testing()
    foreach(stem IN LISTS UFORM_WASI_UNIT_TESTS)
        set(target uform_wasi_${stem})
        add_executable(${target} "${PROJECT_SOURCE_DIR}/tests/unit/${stem}.cpp")
        target_link_libraries(${target} PRIVATE uform_wasi_core)
        target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
        set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
        add_test(NAME wasi.${stem} COMMAND ${target})
        set_tests_properties(wasi.${stem} PROPERTIES
            WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
            ENVIRONMENT "UFORM_TEST_DATA=${PROJECT_SOURCE_DIR}/tests/data;UFORM_TEST_RESIDENCY=ram"
            TIMEOUT 600 LABELS wasi)
    endforeach()
endfunction()
