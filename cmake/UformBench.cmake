# The RAM residency's benchmarks (not tests: ctest never runs them), both into <build>/bench/:
# - uform_bench, tools/bench/text_bench.cpp, includes the library's internal headers ("c/...", "cpp/...") and the
#   crates' (NumKong, ForkUnion), so it builds like a unit test, against libuform_static.a;
# - uform_media_bench, tools/bench/media_bench.cpp, calls the public C API alone, as an application would;
# - uform_train_bench, tools/bench/train_bench.cpp, steps a trainer through the C API, and with --profile a trainer core
#   through the internal headers (their crates' too) to time the step's phases;
# - uform_mesh_bench, tools/bench/mesh_bench.cpp (RAM builds with Gloo), includes the internal mesh to time its sums
#   beside Gloo's own allreduce, which it calls directly, and steps trainers through the C API;
# - uform_vram_bench, tools/bench/vram_bench.cpp (CUDA builds), times the GPU text forward through the C API.

include_guard(GLOBAL)

function(uform_add_bench)
    add_executable(uform_bench "${PROJECT_SOURCE_DIR}/tools/bench/text_bench.cpp")
    target_link_libraries(uform_bench PRIVATE uform::uform_static)
    target_include_directories(uform_bench PRIVATE "${PROJECT_SOURCE_DIR}")
    foreach(crate IN ITEMS uform_numkong uform_forkunion)
        target_include_directories(uform_bench SYSTEM PRIVATE $<TARGET_PROPERTY:${crate},INTERFACE_INCLUDE_DIRECTORIES>)
        target_compile_definitions(uform_bench PRIVATE $<TARGET_PROPERTY:${crate},INTERFACE_COMPILE_DEFINITIONS>)
    endforeach()
    target_compile_options(uform_bench PRIVATE ${UFORM_WARNING_FLAGS})
    set_target_properties(uform_bench PROPERTIES
        CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
        RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bench")

    if(UFORM_CUDA)
        # The CUDA residency's text forward through the public C API (it reads the device's free memory directly).
        add_executable(uform_vram_bench "${PROJECT_SOURCE_DIR}/tools/bench/vram_bench.cpp")
        target_link_libraries(uform_vram_bench PRIVATE uform::uform_static)
        target_include_directories(uform_vram_bench PRIVATE "${PROJECT_SOURCE_DIR}") # tools/bench/report.hpp
        target_include_directories(uform_vram_bench SYSTEM PRIVATE "${UFORM_CUDA_INCLUDE_DIR}")
        target_compile_options(uform_vram_bench PRIVATE ${UFORM_WARNING_FLAGS})
        set_target_properties(uform_vram_bench PROPERTIES
            CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
            RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bench")
    endif()

    add_executable(uform_media_bench "${PROJECT_SOURCE_DIR}/tools/bench/media_bench.cpp")
    target_link_libraries(uform_media_bench PRIVATE uform::uform_static)
    target_include_directories(uform_media_bench PRIVATE "${PROJECT_SOURCE_DIR}") # tools/bench/report.hpp
    target_compile_options(uform_media_bench PRIVATE ${UFORM_WARNING_FLAGS})
    set_target_properties(uform_media_bench PROPERTIES
        CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
        RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bench")

    add_executable(uform_train_bench "${PROJECT_SOURCE_DIR}/tools/bench/train_bench.cpp")
    target_link_libraries(uform_train_bench PRIVATE uform::uform_static)
    target_include_directories(uform_train_bench PRIVATE "${PROJECT_SOURCE_DIR}")
    foreach(crate IN ITEMS uform_numkong uform_forkunion)
        target_include_directories(uform_train_bench SYSTEM PRIVATE
            $<TARGET_PROPERTY:${crate},INTERFACE_INCLUDE_DIRECTORIES>)
        target_compile_definitions(uform_train_bench PRIVATE $<TARGET_PROPERTY:${crate},INTERFACE_COMPILE_DEFINITIONS>)
    endforeach()
    target_compile_options(uform_train_bench PRIVATE ${UFORM_WARNING_FLAGS})
    set_target_properties(uform_train_bench PROPERTIES
        CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
        RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bench")

    if(TARGET gloo)
        add_executable(uform_mesh_bench "${PROJECT_SOURCE_DIR}/tools/bench/mesh_bench.cpp")
        target_link_libraries(uform_mesh_bench PRIVATE uform::uform_static gloo)
        target_include_directories(uform_mesh_bench PRIVATE "${PROJECT_SOURCE_DIR}")
        target_compile_options(uform_mesh_bench PRIVATE ${UFORM_WARNING_FLAGS})
        set_target_properties(uform_mesh_bench PROPERTIES
            CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
            RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/bench")
    endif()
endfunction()
