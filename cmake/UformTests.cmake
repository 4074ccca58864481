# ctest: one executable per tests/c/*.c (C99) and per tests/c/*.cpp (C++23), each linking libuform_static.a
# through the public headers only; one per tests/unit/*_test.cpp (C++23), which may also include the library's
# internal headers ("c/...", "cpp/...", NumKong's and the other crates'), and which runs only in the RAM build
# when it includes "cpp/...", and in the CUDA build only when it includes <cuda_runtime_api.h>; plus two tests that install the package into a scratch prefix and build
# tests/cmake-consumer/ against it, once through find_package(uform) and once through pkg-config.
#
# Every test runs in the repository root with UFORM_TEST_DATA=<repo>/tests/data (tiny.safetensors lives
# there) and UFORM_TEST_RESIDENCY=stub|ram in its environment.

include_guard(GLOBAL)

set(UFORM_TEST_TIMEOUT 300 CACHE STRING "Seconds before ctest kills one test")

function(_uform_test_environment test)
    set_tests_properties(${test} PROPERTIES
        WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
        ENVIRONMENT "UFORM_TEST_DATA=${PROJECT_SOURCE_DIR}/tests/data;UFORM_TEST_RESIDENCY=${UFORM_RESIDENCY}"
        TIMEOUT ${UFORM_TEST_TIMEOUT}
        LABELS "${UFORM_RESIDENCY}")
endfunction()

function(uform_add_c_tests)
    file(GLOB c_tests CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/c/*.c")
    file(GLOB cpp_tests CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/c/*.cpp")
    foreach(source IN LISTS c_tests cpp_tests)
        cmake_path(GET source STEM stem)
        cmake_path(GET source EXTENSION LAST_ONLY extension)
        string(MAKE_C_IDENTIFIER "${stem}" id)
        if(extension STREQUAL ".c")
            set(target uform_test_c_${id})
            set(test c.${stem})
        else()
            set(target uform_test_cpp_${id})
            set(test cpp.${stem})
        endif()
        add_executable(${target} "${source}")
        target_link_libraries(${target} PRIVATE uform::uform_static)
        target_compile_options(${target} PRIVATE ${UFORM_WARNING_FLAGS})
        # The archive is C++: link with the C++ driver so its runtime comes along.
        set_target_properties(${target} PROPERTIES
            LINKER_LANGUAGE CXX
            C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
            CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
            RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
        add_test(NAME ${test} COMMAND ${target})
        _uform_test_environment(${test})
    endforeach()
endfunction()

function(uform_add_unit_tests)
    file(GLOB unit_tests CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/tests/unit/*_test.cpp")
    foreach(source IN LISTS unit_tests)
        cmake_path(GET source STEM stem)
        file(STRINGS "${source}" ram_includes REGEX "^#[ \t]*include[ \t]*\"cpp/")
        if(ram_includes AND UFORM_STUB)
            continue() # the RAM residency's internals are not in the stub's archive
        endif()
        file(STRINGS "${source}" cuda_includes REGEX "^#[ \t]*include[ \t]*<cuda_runtime_api.h>")
        if(cuda_includes AND NOT UFORM_CUDA)
            continue() # a test of the CUDA residency, which reads device memory through the CUDA runtime
        endif()
        file(STRINGS "${source}" rocm_includes REGEX "^#[ \t]*include[ \t]*\"rocm/")
        if(rocm_includes AND NOT UFORM_ROCM)
            continue() # a test of the AMD residency's own files (rocm/)
        endif()
        string(MAKE_C_IDENTIFIER "${stem}" id)
        set(target uform_unit_${id})
        add_executable(${target} "${source}")
        target_link_libraries(${target} PRIVATE uform::uform_static)
        target_include_directories(${target} PRIVATE "${PROJECT_SOURCE_DIR}")
        if(NOT UFORM_STUB)
            foreach(crate IN ITEMS uform_numkong uform_stringzilla uform_forkunion)
                target_include_directories(${target} SYSTEM PRIVATE
                    $<TARGET_PROPERTY:${crate},INTERFACE_INCLUDE_DIRECTORIES>)
                target_compile_definitions(${target} PRIVATE $<TARGET_PROPERTY:${crate},INTERFACE_COMPILE_DEFINITIONS>)
            endforeach()
        endif()
        if(cuda_includes)
            target_include_directories(${target} SYSTEM PRIVATE "${UFORM_CUDA_INCLUDE_DIR}" ${UFORM_CUDA_NCCL_INCLUDE_DIR})
        endif()
        target_compile_options(${target} PRIVATE ${UFORM_WARNING_FLAGS})
        set_target_properties(${target} PROPERTIES
            CXX_STANDARD 23 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF
            RUNTIME_OUTPUT_DIRECTORY "${PROJECT_BINARY_DIR}/tests")
        add_test(NAME unit.${stem} COMMAND ${target})
        _uform_test_environment(unit.${stem})
        # A test that needs a device it lacks exits 77 after saying so (tests/unit/vram_test.cpp).
        set_tests_properties(unit.${stem} PROPERTIES SKIP_RETURN_CODE 77)
    endforeach()
    # The trainer's gradients and trajectory again with its products on the AMX tiles' software model
    # (cpp/kernels/amx_product.hpp), which runs on any machine.
    if(NOT UFORM_STUB)
        foreach(stem IN ITEMS train_trunk_test train_step_test)
            add_test(NAME unit.${stem}.amx_model COMMAND uform_unit_${stem})
            _uform_test_environment(unit.${stem}.amx_model)
            set_property(TEST unit.${stem}.amx_model APPEND PROPERTY ENVIRONMENT UFORM_TEST_TILES=model)
        endforeach()
    endif()
endfunction()

function(uform_add_package_tests)
    # Meaningful only once there is an ABI to call: the umbrella header and the ABI layer.
    if(NOT EXISTS "${PROJECT_SOURCE_DIR}/include/uform/uform.h" OR NOT UFORM_ABI_SOURCES)
        message(STATUS "uform: package tests wait for include/uform/uform.h and c/*.cpp")
        return()
    endif()
    find_program(UFORM_PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
    set(common
        -DUFORM_BINARY_DIR=${PROJECT_BINARY_DIR}
        -DUFORM_CONSUMER_DIR=${PROJECT_SOURCE_DIR}/tests/cmake-consumer
        -DUFORM_C_COMPILER=${CMAKE_C_COMPILER}
        -DUFORM_CXX_COMPILER=${CMAKE_CXX_COMPILER}
        -DUFORM_GENERATOR=${CMAKE_GENERATOR}
        -DUFORM_MAKE_PROGRAM=${CMAKE_MAKE_PROGRAM}
        -DUFORM_SANITIZE=${UFORM_SANITIZE}
        -DUFORM_CONFIG=$<CONFIG>)
    add_test(NAME package.find_package
        COMMAND "${CMAKE_COMMAND}" ${common} -DUFORM_MODE=find_package
            -P "${PROJECT_SOURCE_DIR}/cmake/UformPackageTest.cmake")
    _uform_test_environment(package.find_package)
    if(UFORM_PKG_CONFIG_EXECUTABLE)
        add_test(NAME package.pkg_config
            COMMAND "${CMAKE_COMMAND}" ${common} -DUFORM_MODE=pkg_config
                -DUFORM_PKG_CONFIG=${UFORM_PKG_CONFIG_EXECUTABLE}
                -P "${PROJECT_SOURCE_DIR}/cmake/UformPackageTest.cmake")
        _uform_test_environment(package.pkg_config)
    else()
        message(STATUS "uform: no pkg-config, so no package.pkg_config test")
    endif()
endfunction()
