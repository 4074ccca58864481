# Header strictness: every public header must compile on its own, included twice (so its include guard
# works), as C99 and as C++17, with -Wall -Wextra -Werror -pedantic. One generated translation unit per
# header and language, compiled as an OBJECT library that is part of `all`: a violation fails the build.

include_guard(GLOBAL)

function(uform_add_header_checks)
    if(NOT CMAKE_C_COMPILER_ID MATCHES "^(GNU|Clang|AppleClang)$")
        message(STATUS "uform: header checks need GCC or Clang, skipped for ${CMAKE_C_COMPILER_ID}")
        return()
    endif()
    set(strict -Wall -Wextra -Werror -pedantic)
    set(folder "${PROJECT_BINARY_DIR}/header-checks")
    foreach(header IN LISTS ARGN)
        cmake_path(GET header FILENAME file)
        cmake_path(GET header STEM stem)
        string(MAKE_C_IDENTIFIER "${stem}" id)
        set(include_line "#include <uform/${file}>")
        # A translation unit must declare something of its own under -pedantic, whatever the header holds.
        file(CONFIGURE OUTPUT "${folder}/${id}.c" CONTENT
            "${include_line}\n${include_line}\nint uform_header_check_${id}_c(void);\n")
        file(CONFIGURE OUTPUT "${folder}/${id}.cpp" CONTENT
            "${include_line}\n${include_line}\nint uform_header_check_${id}_cpp();\n")

        add_library(uform_header_check_${id}_c OBJECT "${folder}/${id}.c")
        set_target_properties(uform_header_check_${id}_c PROPERTIES
            C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
        target_compile_options(uform_header_check_${id}_c PRIVATE ${strict})
        target_include_directories(uform_header_check_${id}_c PRIVATE "${PROJECT_SOURCE_DIR}/include")

        add_library(uform_header_check_${id}_cpp OBJECT "${folder}/${id}.cpp")
        set_target_properties(uform_header_check_${id}_cpp PROPERTIES
            CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON CXX_EXTENSIONS OFF)
        target_compile_options(uform_header_check_${id}_cpp PRIVATE ${strict})
        target_include_directories(uform_header_check_${id}_cpp PRIVATE "${PROJECT_SOURCE_DIR}/include")
    endforeach()
endfunction()
