# The AMD residency (-DUFORM_ROCM=ON): the GPU sources of cuda/ compiled as HIP (cuda/portable.hpp carries CUDA's
# names onto HIP), with rocm/ holding what is AMD's alone, where HIP and the device libraries are, and what links
# after the archive.
#
# HIP is the first of these roots that holds include/hip/hip_runtime_api.h and libamdhip64 (lib/, lib64/ or the
# multiarch lib/<arch>-linux-gnu/): -DUFORM_ROCM_PATH=, the environment's ROCM_PATH, /opt/rocm, and /usr (Debian's
# libamdhip64-dev, which scripts/setup-rocm.sh installs).
#
# The kernels compile with a Clang that targets AMDGPU (-DUFORM_ROCM_CLANG=, else the project's C++ compiler when it
# is Clang, else the root's llvm/bin/clang++), for every architecture of UFORM_ROCM_ARCHITECTURES, against the AMDGPU
# device libraries' bitcode: the first folder holding oclc_isa_version_<each architecture>.bc among
# -DUFORM_ROCM_DEVICE_LIBS=, the environment's UFORM_ROCM_DEVICE_LIBS, the root's amdgcn/bitcode/ (ROCm 6's layout) and
# the root's llvm/lib/clang/*/lib/amdgcn/bitcode/, and the bitcode scripts/setup-rocm.sh unpacks (under
# ${XDG_CACHE_HOME:-$HOME/.cache}/uform, or UFORM_ROCM_CACHE). Each of those may name the folder holding
# amdgcn/bitcode/ instead. The host side (cuda/*.cpp, rocm/*.cpp) compiles with the project's C++ compiler against
# HIP's headers. The products are the residency's own kernel (rocm/products.cu), and the VRAM mesh answers
# `unsupported` (rocm/mesh.cpp): no BLAS library and no RCCL is needed.
include_guard(GLOBAL)
include(UformCache)

set(UFORM_ROCM_PATH "" CACHE PATH "The ROCm root (include/hip, libamdhip64); empty: found as this module says")
set(UFORM_ROCM_DEVICE_LIBS "" CACHE PATH
    "The AMDGPU device libraries' bitcode folder (or the folder holding amdgcn/bitcode); empty: found")
set(UFORM_ROCM_ARCHITECTURES "gfx90a;gfx942" CACHE STRING "AMDGPU architectures to compile code objects for")
set(UFORM_ROCM_CLANG "" CACHE FILEPATH "The Clang that compiles the HIP kernels; empty: found")
set(UFORM_ROCM_CODE_OBJECT_VERSION "5" CACHE STRING "The AMDGPU code object version (5: ROCm 6's default)")

# The sources of cuda/ that speak to NVIDIA's libraries alone, which rocm/ replaces: cuBLASLt (blas, gemm and the
# trainer's products: rocm/products.cu), the devices' classes (rocm/classes.cpp) and the mesh over NCCL
# (rocm/mesh.cpp).
set(_uform_rocm_nvidia_only cuda/blas.cpp cuda/gemm.cpp cuda/classes.cpp cuda/mesh.cpp cuda/nccl.cpp
    cuda/train/products.cpp)

# Whether `root` holds HIP; sets `<out>_LIBRARY` to libamdhip64's path when it does.
function(_uform_rocm_probe root out)
    set(${out} FALSE PARENT_SCOPE)
    if(NOT root OR NOT EXISTS "${root}/include/hip/hip_runtime_api.h")
        return()
    endif()
    foreach(dir IN ITEMS lib lib64 "lib/${CMAKE_SYSTEM_PROCESSOR}-linux-gnu")
        if(EXISTS "${root}/${dir}/libamdhip64.so")
            set(${out} TRUE PARENT_SCOPE)
            set(${out}_LIBRARY "${root}/${dir}/libamdhip64.so" PARENT_SCOPE)
            return()
        endif()
    endforeach()
endfunction()

# Whether `dir` (or its amdgcn/bitcode/) holds the bitcode of every architecture; sets `<out>_DIR` to that folder.
function(_uform_rocm_bitcode_probe dir out)
    set(${out} FALSE PARENT_SCOPE)
    foreach(candidate IN ITEMS "${dir}" "${dir}/amdgcn/bitcode")
        if(NOT dir OR NOT EXISTS "${candidate}/ocml.bc")
            continue()
        endif()
        set(complete TRUE)
        foreach(arch IN LISTS UFORM_ROCM_ARCHITECTURES)
            string(REGEX REPLACE "^gfx" "" number "${arch}")
            if(NOT EXISTS "${candidate}/oclc_isa_version_${number}.bc")
                set(complete FALSE)
            endif()
        endforeach()
        if(complete)
            set(${out} TRUE PARENT_SCOPE)
            set(${out}_DIR "${candidate}" PARENT_SCOPE)
            return()
        endif()
    endforeach()
endfunction()

# The device-library candidates, in the order the header says.
function(_uform_rocm_bitcode_candidates root out)
    set(candidates "${UFORM_ROCM_DEVICE_LIBS}" "$ENV{UFORM_ROCM_DEVICE_LIBS}" "${root}/amdgcn/bitcode")
    file(GLOB bundled "${root}/llvm/lib/clang/*/lib/amdgcn/bitcode")
    uform_cache_directory(UFORM_ROCM_CACHE cache)
    file(GLOB unpacked "${cache}/rocm-bitcode/root/usr/lib/llvm-*/lib/clang/*/amdgcn/bitcode")
    set(${out} ${candidates} ${bundled} ${unpacked} PARENT_SCOPE)
endfunction()

# Finds HIP, the device libraries and the Clang; sets UFORM_ROCM_ROOT, UFORM_ROCM_HIP_LIBRARY, UFORM_ROCM_BITCODE and
# UFORM_ROCM_COMPILER in the caller's scope, or stops with a message that says how to get them.
function(uform_locate_rocm)
    set(root "")
    foreach(candidate IN ITEMS "${UFORM_ROCM_PATH}" "$ENV{ROCM_PATH}" "/opt/rocm" "/usr")
        _uform_rocm_probe("${candidate}" probe)
        if(probe)
            set(root "${candidate}")
            set(library "${probe_LIBRARY}")
            break()
        endif()
    endforeach()
    if(NOT root)
        message(FATAL_ERROR "uform: -DUFORM_ROCM=ON needs HIP (include/hip/hip_runtime_api.h and libamdhip64), and "
            "none was found. Run scripts/setup-rocm.sh (Debian's HIP packages and the device libraries), or point "
            "-DUFORM_ROCM_PATH= or ROCM_PATH at a ROCm installation.")
    endif()
    _uform_rocm_bitcode_candidates("${root}" candidates)
    set(bitcode "")
    foreach(candidate IN LISTS candidates)
        _uform_rocm_bitcode_probe("${candidate}" found)
        if(found)
            set(bitcode "${found_DIR}")
            break()
        endif()
    endforeach()
    if(NOT bitcode)
        message(FATAL_ERROR "uform: no AMDGPU device libraries with bitcode for ${UFORM_ROCM_ARCHITECTURES} were "
            "found. Run scripts/setup-rocm.sh, or point -DUFORM_ROCM_DEVICE_LIBS= at ROCm's amdgcn/bitcode folder.")
    endif()
    set(compiler "${UFORM_ROCM_CLANG}")
    if(NOT compiler AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
        set(compiler "${CMAKE_CXX_COMPILER}")
    elseif(NOT compiler AND EXISTS "${root}/llvm/bin/clang++")
        set(compiler "${root}/llvm/bin/clang++")
    endif()
    if(NOT compiler)
        message(FATAL_ERROR "uform: the HIP kernels compile with Clang: configure with CMAKE_CXX_COMPILER=clang++-22, "
            "or name one with -DUFORM_ROCM_CLANG=.")
    endif()
    message(STATUS "uform: HIP at ${root} (${library}), device libraries in ${bitcode}, kernels by ${compiler}")
    set(UFORM_ROCM_ROOT "${root}" PARENT_SCOPE)
    set(UFORM_ROCM_HIP_LIBRARY "${library}" PARENT_SCOPE)
    set(UFORM_ROCM_BITCODE "${bitcode}" PARENT_SCOPE)
    set(UFORM_ROCM_COMPILER "${compiler}" PARENT_SCOPE)
endfunction()

# The host sources of the AMD residency: cuda/'s and cuda/train/'s but NVIDIA's alone, then rocm/'s.
function(uform_rocm_sources out)
    file(GLOB sources CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cuda/*.cpp" "${PROJECT_SOURCE_DIR}/cuda/train/*.cpp")
    foreach(source IN LISTS _uform_rocm_nvidia_only)
        list(REMOVE_ITEM sources "${PROJECT_SOURCE_DIR}/${source}")
    endforeach()
    file(GLOB own CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/rocm/*.cpp")
    set(${out} ${sources} ${own} PARENT_SCOPE)
endfunction()

# Compiles cuda/*.cu, cuda/train/*.cu and rocm/*.cu into objects of `target` as HIP, and adds HIP's headers, its
# definitions and its library to it.
function(uform_add_rocm target)
    file(GLOB kernels CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cuda/*.cu" "${PROJECT_SOURCE_DIR}/cuda/train/*.cu"
         "${PROJECT_SOURCE_DIR}/rocm/*.cu")
    # HIP 5's headers size `warpSize` from __AMDGCN_WAVEFRONT_SIZE, which newer Clangs no longer define: CDNA's is 64.
    set(flags -x hip -std=c++20 -O3 -fPIC -ffp-contract=on "-mcode-object-version=${UFORM_ROCM_CODE_OBJECT_VERSION}"
        "--rocm-path=${UFORM_ROCM_ROOT}" "--rocm-device-lib-path=${UFORM_ROCM_BITCODE}" -D__AMDGCN_WAVEFRONT_SIZE=64
        -DUFORM_HIP=1 -I "${PROJECT_SOURCE_DIR}" -I "${PROJECT_SOURCE_DIR}/include" -Wall -Wextra)
    foreach(arch IN LISTS UFORM_ROCM_ARCHITECTURES)
        list(APPEND flags "--offload-arch=${arch}")
    endforeach()
    if(UFORM_WARNINGS_AS_ERRORS)
        list(APPEND flags -Werror)
    endif()
    if(UFORM_SANITIZE)
        list(APPEND flags "-Xarch_host" "-fsanitize=${UFORM_SANITIZE}")
    endif()
    set(objects "")
    foreach(source IN LISTS kernels)
        # The object's path mirrors the source's, so cuda/kernels.cu and cuda/train/kernels.cu differ.
        cmake_path(RELATIVE_PATH source BASE_DIRECTORY "${PROJECT_SOURCE_DIR}" OUTPUT_VARIABLE relative)
        cmake_path(REMOVE_EXTENSION relative LAST_ONLY OUTPUT_VARIABLE stem)
        set(object "${PROJECT_BINARY_DIR}/hip/${stem}.o")
        cmake_path(GET object PARENT_PATH folder)
        file(MAKE_DIRECTORY "${folder}")
        add_custom_command(
            OUTPUT "${object}"
            COMMAND "${UFORM_ROCM_COMPILER}" ${flags} -MD -MF "${object}.d" -c "${source}" -o "${object}"
            DEPENDS "${source}"
            DEPFILE "${object}.d"
            COMMENT "hip ${stem}.cu (${UFORM_ROCM_ARCHITECTURES})"
            VERBATIM)
        list(APPEND objects "${object}")
    endforeach()
    target_sources(${target} PRIVATE ${objects})
    # /usr/include is the compiler's own: naming it again would reorder the C++ library's #include_next chain.
    if(NOT UFORM_ROCM_ROOT STREQUAL "/usr")
        target_include_directories(${target} SYSTEM PRIVATE "${UFORM_ROCM_ROOT}/include")
    endif()
    target_compile_definitions(${target} PRIVATE UFORM_HIP=1 __HIP_PLATFORM_AMD__=1)
    target_link_libraries(${target} INTERFACE "${UFORM_ROCM_HIP_LIBRARY}")
endfunction()
