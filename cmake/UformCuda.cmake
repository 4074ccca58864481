# The CUDA residency (cuda/, -DUFORM_CUDA=ON): where the toolkit is, how the kernels compile, and what links after the
# archive.
#
# The toolkit is the first of these that holds bin/nvcc, include/cublasLt.h, libcudart_static.a and libcublasLt (loaded
# at run time, from that path first):
# -DUFORM_CUDA_ROOT=, the environment's UFORM_CUDA_ROOT, CUDA_PATH or CUDA_HOME, the wheels scripts/setup-cuda.sh
# installs (under ${XDG_CACHE_HOME:-$HOME/.cache}/uform, or UFORM_CUDA_CACHE), /usr/local/cuda, and the folder above
# the nvcc on the PATH. A system toolkit keeps its libraries in lib64/ or targets/<arch>/lib/, the wheels in lib/.
#
# The kernels (cuda/*.cu) compile with that nvcc through custom commands, not CMake's CUDA language, whose compiler
# check links with lib64/ and so fails on the wheels' layout; the host side (cuda/*.cpp) compiles with the project's
# C++ compiler against the toolkit's headers. Both land in libuform_static.a. The kernels carry SASS for every
# architecture of UFORM_CUDA_ARCHITECTURES and PTX of the last, which newer GPUs compile at load.
include_guard(GLOBAL)
include(UformCache)

set(UFORM_CUDA_ROOT "" CACHE PATH "The CUDA toolkit's root (holding bin/nvcc); empty: found as cmake/UformCuda.cmake says")
set(UFORM_CUDA_ARCHITECTURES "90" CACHE STRING
    "Compute capabilities to build SASS for (90: Hopper); the last one's PTX is embedded too")
set(UFORM_CUDA_HOST_COMPILER "" CACHE FILEPATH "The host compiler nvcc runs; empty: nvcc's default (g++ on the PATH)")

# Whether `root` holds a toolkit; sets `<out>_CUDART` and `<out>_CUBLASLT` to the libraries' paths when it does.
function(_uform_cuda_probe root out)
    set(${out} FALSE PARENT_SCOPE)
    if(NOT root OR NOT EXISTS "${root}/bin/nvcc" OR NOT EXISTS "${root}/include/cublasLt.h"
       OR NOT EXISTS "${root}/include/cuda_runtime_api.h")
        return()
    endif()
    set(dirs "${root}/lib64" "${root}/lib" "${root}/targets/${CMAKE_SYSTEM_PROCESSOR}-linux/lib")
    set(cudart "")
    set(cublaslt "")
    foreach(dir IN LISTS dirs)
        if(NOT cudart AND EXISTS "${dir}/libcudart_static.a")
            set(cudart "${dir}/libcudart_static.a")
        endif()
        if(NOT cublaslt)
            file(GLOB found "${dir}/libcublasLt.so" "${dir}/libcublasLt.so.[0-9]*")
            list(SORT found)
            if(found)
                list(GET found 0 cublaslt)
            endif()
        endif()
    endforeach()
    if(cudart AND cublaslt)
        set(${out} TRUE PARENT_SCOPE)
        set(${out}_CUDART "${cudart}" PARENT_SCOPE)
        set(${out}_CUBLASLT "${cublaslt}" PARENT_SCOPE)
    endif()
endfunction()

# NCCL beside the toolkit `root`: the wheel's nvidia/nccl/ next to nvidia/cu13/, the toolkit itself, or the system's.
# Sets `<out>_INCLUDE` (the folder holding nccl.h) and `<out>_LIBRARY` (libnccl.so.2, loaded at a VRAM mesh's bootstrap
# from that path first), each empty when not found: the mesh then answers `unsupported` (cuda/mesh.cpp).
function(_uform_nccl_probe root out)
    cmake_path(GET root PARENT_PATH above)
    set(include "")
    set(library "")
    foreach(candidate IN ITEMS "${above}/nccl" "${root}" "/usr")
        if(NOT include AND EXISTS "${candidate}/include/nccl.h")
            set(include "${candidate}/include")
            foreach(dir IN ITEMS lib lib64 "lib/${CMAKE_SYSTEM_PROCESSOR}-linux-gnu")
                if(NOT library AND EXISTS "${candidate}/${dir}/libnccl.so.2")
                    set(library "${candidate}/${dir}/libnccl.so.2")
                endif()
            endforeach()
        endif()
    endforeach()
    if(include)
        message(STATUS "uform: NCCL's header in ${include}")
    else()
        message(STATUS "uform: no nccl.h found beside the toolkit: a VRAM mesh will answer unsupported")
    endif()
    set(${out}_INCLUDE "${include}" PARENT_SCOPE)
    set(${out}_LIBRARY "${library}" PARENT_SCOPE)
endfunction()

# Finds the toolkit; sets UFORM_CUDA_NVCC, UFORM_CUDA_INCLUDE_DIR, UFORM_CUDA_CUDART, UFORM_CUDA_CUBLASLT and
# in the caller's scope, or stops with a message that says how to get one.
function(uform_locate_cuda)
    set(candidates "${UFORM_CUDA_ROOT}" "$ENV{UFORM_CUDA_ROOT}" "$ENV{CUDA_PATH}" "$ENV{CUDA_HOME}")
    uform_cache_directory(UFORM_CUDA_CACHE cache)
    file(GLOB wheels "${cache}/cuda-13.0/lib/python3*/site-packages/nvidia/cu13")
    list(APPEND candidates ${wheels} "/usr/local/cuda")
    find_program(_uform_nvcc_on_path nvcc)
    if(_uform_nvcc_on_path)
        cmake_path(GET _uform_nvcc_on_path PARENT_PATH bin)
        cmake_path(GET bin PARENT_PATH above)
        list(APPEND candidates "${above}")
    endif()
    foreach(root IN LISTS candidates)
        _uform_cuda_probe("${root}" probe)
        if(probe)
            set(UFORM_CUDA_NVCC "${root}/bin/nvcc" PARENT_SCOPE)
            set(UFORM_CUDA_INCLUDE_DIR "${root}/include" PARENT_SCOPE)
            set(UFORM_CUDA_CUDART "${probe_CUDART}" PARENT_SCOPE)
            set(UFORM_CUDA_CUBLASLT "${probe_CUBLASLT}" PARENT_SCOPE)
            message(STATUS "uform: CUDA toolkit at ${root}")
            _uform_nccl_probe("${root}" nccl)
            set(UFORM_CUDA_NCCL_INCLUDE_DIR "${nccl_INCLUDE}" PARENT_SCOPE)
            set(UFORM_CUDA_NCCL "${nccl_LIBRARY}" PARENT_SCOPE)
            return()
        endif()
    endforeach()
    message(FATAL_ERROR "uform: -DUFORM_CUDA=ON needs a CUDA toolkit (bin/nvcc, include/cublasLt.h, "
        "libcudart_static.a, libcublasLt), and none was found. Run scripts/setup-cuda.sh (NVIDIA's 13.0 wheels from "
        "PyPI, into a cache folder this build finds), or point -DUFORM_CUDA_ROOT= or CUDA_PATH at a toolkit.")
endfunction()

# Compiles cuda/*.cu and cuda/train/*.cu into objects of `target` with nvcc, and adds the toolkit's headers and libraries to it.
function(uform_add_cuda target)
    file(GLOB kernels CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/cuda/*.cu" "${PROJECT_SOURCE_DIR}/cuda/train/*.cu")
    set(flags -std=c++20 -O3 -Xcompiler=-fPIC -I "${PROJECT_SOURCE_DIR}" -I "${PROJECT_SOURCE_DIR}/include"
        -Xcompiler=-Wall,-Wextra --expt-relaxed-constexpr)
    if(UFORM_WARNINGS_AS_ERRORS)
        list(APPEND flags --Werror all-warnings)
    endif()
    if(UFORM_CUDA_HOST_COMPILER)
        list(APPEND flags -ccbin "${UFORM_CUDA_HOST_COMPILER}")
    endif()
    list(GET UFORM_CUDA_ARCHITECTURES -1 newest)
    foreach(arch IN LISTS UFORM_CUDA_ARCHITECTURES)
        list(APPEND flags "-gencode=arch=compute_${arch},code=sm_${arch}")
    endforeach()
    list(APPEND flags "-gencode=arch=compute_${newest},code=compute_${newest}")
    if(UFORM_SANITIZE)
        list(APPEND flags "-Xcompiler=-fsanitize=${UFORM_SANITIZE}")
    endif()
    set(objects "")
    foreach(source IN LISTS kernels)
        # The object's path mirrors the source's under cuda/, so cuda/kernels.cu and cuda/train/kernels.cu differ.
        cmake_path(RELATIVE_PATH source BASE_DIRECTORY "${PROJECT_SOURCE_DIR}/cuda" OUTPUT_VARIABLE relative)
        cmake_path(REMOVE_EXTENSION relative LAST_ONLY OUTPUT_VARIABLE stem)
        set(object "${PROJECT_BINARY_DIR}/cuda/${stem}.o")
        add_custom_command(
            OUTPUT "${object}"
            COMMAND "${UFORM_CUDA_NVCC}" ${flags} -MD -MF "${object}.d" -c "${source}" -o "${object}"
            DEPENDS "${source}"
            DEPFILE "${object}.d"
            COMMENT "nvcc cuda/${stem}.cu"
            VERBATIM)
        list(APPEND objects "${object}")
    endforeach()
    target_sources(${target} PRIVATE ${objects})
    target_include_directories(${target} SYSTEM PRIVATE "${UFORM_CUDA_INCLUDE_DIR}" ${UFORM_CUDA_NCCL_INCLUDE_DIR})
    # cuBLASLt is loaded at the first GPU call (cuda/blas.cpp), from the toolkit found here first. cudart_static needs
    # the dynamic loader and librt.
    target_compile_definitions(${target} PRIVATE "UFORM_CUBLASLT_PATH=\"${UFORM_CUDA_CUBLASLT}\"")
    if(UFORM_CUDA_NCCL)
        target_compile_definitions(${target} PRIVATE "UFORM_NCCL_PATH=\"${UFORM_CUDA_NCCL}\"")
    endif()
    target_link_libraries(${target} INTERFACE "${UFORM_CUDA_CUDART}" ${CMAKE_DL_LIBS} rt)
endfunction()
