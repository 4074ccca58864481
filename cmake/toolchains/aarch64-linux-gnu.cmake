# Cross-building the RAM residency for 64-bit Arm Linux on an x86-64 Debian host (docs/building.md,
# "Cross-building for AArch64"): clang-22 targeting aarch64-linux-gnu, linked by lld-22, against Debian's arm64
# multiarch libraries (libc, libstdc++ and the codecs in /usr/lib/aarch64-linux-gnu; `scripts/setup.sh --arm`
# installs them), with Gloo's arm64 library unpacked into UFORM_ARM_GLOO_PREFIX (Debian ships it outside the multiarch
# folders, so it cannot sit beside the host's; aarch64-gloo/GlooConfig.cmake names it). ctest runs every test through `qemu-aarch64`, whose CPU the
# QEMU_CPU environment variable picks (neoverse-n1, max,sve-default-vector-length=16, ...).
#
#   cmake -S . -B build/arm -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake \
#       -DUFORM_ARM_GLOO_PREFIX=$PWD/build/arm-gloo
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(UFORM_ARM_TRIPLE aarch64-linux-gnu)

find_program(UFORM_ARM_CLANG NAMES clang-22 clang REQUIRED)
find_program(UFORM_ARM_CLANGXX NAMES clang++-22 clang++ REQUIRED)
set(CMAKE_C_COMPILER "${UFORM_ARM_CLANG}")
set(CMAKE_CXX_COMPILER "${UFORM_ARM_CLANGXX}")
set(CMAKE_C_COMPILER_TARGET ${UFORM_ARM_TRIPLE})
set(CMAKE_CXX_COMPILER_TARGET ${UFORM_ARM_TRIPLE})

# The system `ld` links x86-64 only. (The library's own `-ffp-contract=off` on AArch64 is in CMakeLists.txt, so a
# native Arm build gets it too.)
set(CMAKE_EXE_LINKER_FLAGS_INIT "-fuse-ld=lld")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "-fuse-ld=lld")

# Libraries and headers from the arm64 multiarch folders and Gloo's prefix; programs from the host.
set(UFORM_ARM_GLOO_PREFIX "" CACHE PATH "Where Gloo's arm64 packages are unpacked (holds usr/lib/libgloo.so)")
set(CMAKE_FIND_ROOT_PATH / ${UFORM_ARM_GLOO_PREFIX})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(CMAKE_LIBRARY_ARCHITECTURE ${UFORM_ARM_TRIPLE})
set(Gloo_DIR "${CMAKE_CURRENT_LIST_DIR}/aarch64-gloo" CACHE PATH "Gloo's package for the arm64 library")
# pkg-config reads the arm64 codecs' .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/${UFORM_ARM_TRIPLE}/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# NumKong without its SME tiers (its crate's NK_TARGET_* overrides, cmake/UformCrates.cmake): its streaming-compatible
# SVE helpers call FRSQRTE, which clang 22 refuses in streaming mode; the `arm-sme` class is refused in any case.
foreach(_uform_sme_tier IN ITEMS SME SME2 SME2P1 SMEF64 SMEHALF SMEBF16 SMEBI32 SMELUT2 SMEFA64)
    set(ENV{NK_TARGET_${_uform_sme_tier}} 0)
endforeach()

# Every test runs under QEMU's user-mode emulation (the `qemu-user` package).
find_program(UFORM_ARM_QEMU NAMES qemu-aarch64 qemu-aarch64-static)
if(UFORM_ARM_QEMU)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${UFORM_ARM_QEMU}")
endif()
