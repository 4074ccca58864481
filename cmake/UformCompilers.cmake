# The compilers a build takes when the caller names none (neither -DCMAKE_<LANG>_COMPILER nor CC/CXX): clang-22
# from Debian's packages where installed, else any `clang`, else CMake's own choice. The default's one home:
# CMakeLists.txt includes this before project(), and build.rs hands it to CMake as the toolchain file when
# neither CC nor CXX is set.
if(NOT DEFINED CMAKE_CXX_COMPILER AND NOT DEFINED ENV{CXX})
    find_program(UFORM_DEFAULT_CXX_COMPILER NAMES clang++-22 clang++)
    if(UFORM_DEFAULT_CXX_COMPILER)
        set(CMAKE_CXX_COMPILER "${UFORM_DEFAULT_CXX_COMPILER}")
    endif()
endif()
if(NOT DEFINED CMAKE_C_COMPILER AND NOT DEFINED ENV{CC})
    find_program(UFORM_DEFAULT_C_COMPILER NAMES clang-22 clang)
    if(UFORM_DEFAULT_C_COMPILER)
        set(CMAKE_C_COMPILER "${UFORM_DEFAULT_C_COMPILER}")
    endif()
endif()
