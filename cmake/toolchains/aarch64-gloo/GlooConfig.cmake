# Gloo for the AArch64 cross build (cmake/toolchains/aarch64-linux-gnu.cmake): the target `gloo` over the arm64
# shared library unpacked into UFORM_ARM_GLOO_PREFIX. Debian's own GlooConfig.cmake names /usr/lib/libgloo.so.0.5.0,
# which on the build machine is the host's x86-64 library; the headers are the host's, the same for every
# architecture.
if(NOT UFORM_ARM_GLOO_PREFIX OR NOT EXISTS "${UFORM_ARM_GLOO_PREFIX}/usr/lib/libgloo.so.0")
    set(Gloo_FOUND FALSE)
    set(Gloo_NOT_FOUND_MESSAGE "UFORM_ARM_GLOO_PREFIX must name where libgloo0:arm64 is unpacked (scripts/arm-check.sh)")
    return()
endif()
find_path(UFORM_ARM_GLOO_INCLUDE_DIR gloo/allreduce.h PATHS /usr/include NO_CMAKE_FIND_ROOT_PATH REQUIRED)
add_library(gloo SHARED IMPORTED)
set_target_properties(gloo PROPERTIES
    IMPORTED_LOCATION "${UFORM_ARM_GLOO_PREFIX}/usr/lib/libgloo.so.0"
    IMPORTED_SONAME "libgloo.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${UFORM_ARM_GLOO_INCLUDE_DIR}")
set(Gloo_FOUND TRUE)
