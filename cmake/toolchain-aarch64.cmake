# Cross build of the static agentd for arm64 (packaging/build-release
# --arch arm64, docs/BUILDING.md "arm64"): Debian's cross toolchain
# (g++-aarch64-linux-gnu: the compiler, binutils, glibc and libstdc++ for
# aarch64 under /usr/aarch64-linux-gnu) and a sysroot of Debian's arm64
# library packages made by packaging/arm64-sysroot, named by
# AGENTD_ARM64_SYSROOT (a cache variable, or the environment variable of the
# same name). Only the daemon is built: the host-side tools run on the host.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT AGENTD_ARM64_SYSROOT)
  set(AGENTD_ARM64_SYSROOT "$ENV{AGENTD_ARM64_SYSROOT}")
endif()
if(NOT IS_DIRECTORY "${AGENTD_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu")
  message(FATAL_ERROR "AGENTD_ARM64_SYSROOT (${AGENTD_ARM64_SYSROOT}) is not a sysroot made by "
                      "packaging/arm64-sysroot")
endif()
set(AGENTD_ARM64_SYSROOT "${AGENTD_ARM64_SYSROOT}" CACHE PATH "arm64 library sysroot")
# try_compile projects read this file again: hand them the sysroot too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES AGENTD_ARM64_SYSROOT)

# Libraries, headers and CMake packages from the cross toolchain and the
# sysroot only, never the host's amd64 ones; programs from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu "${AGENTD_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Asio and simdjson are included without a target naming their directory
# (on a Debian host they are in /usr/include): the sysroot's include
# directories come after the project's and before the toolchain's own.
# Its path is mapped away, so the bytes do not depend on where it is.
string(CONCAT agentd_arm64_flags
  "-isystem ${AGENTD_ARM64_SYSROOT}/usr/include/aarch64-linux-gnu "
  "-isystem ${AGENTD_ARM64_SYSROOT}/usr/include "
  "-ffile-prefix-map=${AGENTD_ARM64_SYSROOT}=/")
set(CMAKE_C_FLAGS_INIT "${agentd_arm64_flags}")
set(CMAKE_CXX_FLAGS_INIT "${agentd_arm64_flags}")
