# Third-party libraries, all from Debian 12 packages (scripts/install-deps).
# Each becomes one target here, so the rest of the build never names a path.

# Standalone Asio (libasio-dev): header only.
add_library(agentd_asio INTERFACE)
# Asio picks aligned_alloc or operator new for its frames by whether a
# libstdc++ header came before its own, so two files could allocate and free
# one block differently (ASan: alloc-dealloc-mismatch). One choice for all.
target_compile_definitions(agentd_asio INTERFACE ASIO_STANDALONE ASIO_NO_DEPRECATED
                           ASIO_DISABLE_STD_ALIGNED_ALLOC)
find_package(Threads REQUIRED)
target_link_libraries(agentd_asio INTERFACE Threads::Threads)

# llhttp (node-llhttp) ships C sources only; compile them into a static library.
set(AGENTD_LLHTTP_DIR /usr/share/llhttp CACHE PATH "llhttp C sources")
set(AGENTD_LLHTTP_INCLUDE /usr/share/include/llhttp CACHE PATH "llhttp header")
add_library(agentd_llhttp STATIC
  ${AGENTD_LLHTTP_DIR}/llhttp.c ${AGENTD_LLHTTP_DIR}/api.c ${AGENTD_LLHTTP_DIR}/http.c)
target_include_directories(agentd_llhttp SYSTEM PUBLIC ${AGENTD_LLHTTP_INCLUDE})
# llhttp's three C files are not written to share one unit.
set_target_properties(agentd_llhttp PROPERTIES POSITION_INDEPENDENT_CODE ON UNITY_BUILD OFF)

# simdjson (libsimdjson-dev) ships only a shared library; compile the
# amalgamated source of the same version (fetched by scripts/install-deps).
set(AGENTD_SIMDJSON_SOURCE /usr/local/src/agentd-deps/simdjson-3.0.1/simdjson.cpp
    CACHE FILEPATH "simdjson amalgamated source matching /usr/include/simdjson.h")
if(NOT EXISTS ${AGENTD_SIMDJSON_SOURCE})
  message(FATAL_ERROR "simdjson source not found at ${AGENTD_SIMDJSON_SOURCE}; run scripts/install-deps")
endif()
add_library(agentd_simdjson STATIC ${AGENTD_SIMDJSON_SOURCE})
# Of simdjson's x86-64 kernels only haswell (AVX2) and the portable fallback
# are built: request bodies are small, so the AVX-512 (icelake) and SSE4.2
# (westmere) kernels bought no measurable time and cost 65 KB of the binary
# (docs/BUILDING.md, "Binary size"). A CPU without AVX2 runs the fallback.
target_compile_definitions(agentd_simdjson PUBLIC SIMDJSON_EXCEPTIONS=0
  SIMDJSON_IMPLEMENTATION_ICELAKE=0 SIMDJSON_IMPLEMENTATION_WESTMERE=0)
# The JSON library is hot and its debug build is slow: always optimize it.
target_compile_options(agentd_simdjson PRIVATE -O2 -w)
set_target_properties(agentd_simdjson PROPERTIES POSITION_INDEPENDENT_CODE ON)

# fmt (libfmt-dev) has no static archive; the header-only target links nothing.
find_package(fmt REQUIRED)
add_library(agentd_fmt INTERFACE)
target_link_libraries(agentd_fmt INTERFACE fmt::fmt-header-only)

# libarchive (libarchive-dev) static archive plus the compressors we enable.
find_library(AGENTD_LIBARCHIVE_A NAMES libarchive.a REQUIRED)
find_library(AGENTD_LIBZ_A NAMES libz.a REQUIRED)
find_library(AGENTD_LIBZSTD_A NAMES libzstd.a REQUIRED)
add_library(agentd_archive INTERFACE)
target_link_libraries(agentd_archive INTERFACE ${AGENTD_LIBARCHIVE_A} ${AGENTD_LIBZSTD_A} ${AGENTD_LIBZ_A})

# PCRE2 (libpcre2-dev) static archive, 8-bit code units, for GET
# /v1/fs/search (docs/BUILDING.md says why PCRE2 and what it costs).
find_library(AGENTD_LIBPCRE2_A NAMES libpcre2-8.a REQUIRED)
find_path(AGENTD_PCRE2_INCLUDE NAMES pcre2.h REQUIRED)
add_library(agentd_pcre2 INTERFACE)
target_include_directories(agentd_pcre2 SYSTEM INTERFACE ${AGENTD_PCRE2_INCLUDE})
target_compile_definitions(agentd_pcre2 INTERFACE PCRE2_CODE_UNIT_WIDTH=8 PCRE2_STATIC)
target_link_libraries(agentd_pcre2 INTERFACE ${AGENTD_LIBPCRE2_A})

# liburing (liburing-dev) static archive: the search's per-file calls
# through an io_uring (daemon/search/io_ring.h; docs/BUILDING.md says why).
find_library(AGENTD_LIBURING_A NAMES liburing.a REQUIRED)
find_path(AGENTD_LIBURING_INCLUDE NAMES liburing.h REQUIRED)
add_library(agentd_liburing INTERFACE)
target_include_directories(agentd_liburing SYSTEM INTERFACE ${AGENTD_LIBURING_INCLUDE})
target_link_libraries(agentd_liburing INTERFACE ${AGENTD_LIBURING_A})

# nettle (nettle-dev) static archive, for SHA-256 only: the files' ETags
# (daemon/fs/file_tags.cc; docs/BUILDING.md says why nettle).
find_library(AGENTD_LIBNETTLE_A NAMES libnettle.a REQUIRED)
find_path(AGENTD_NETTLE_INCLUDE NAMES nettle/sha2.h REQUIRED)
add_library(agentd_nettle INTERFACE)
target_include_directories(agentd_nettle SYSTEM INTERFACE ${AGENTD_NETTLE_INCLUDE})
target_link_libraries(agentd_nettle INTERFACE ${AGENTD_LIBNETTLE_A})

# libseccomp (libseccomp-dev) static archive: compiles the restricted
# profile's seccomp filter once at start-up (docs/BUILDING.md, "libseccomp").
find_library(AGENTD_LIBSECCOMP_A NAMES libseccomp.a REQUIRED)
find_path(AGENTD_SECCOMP_INCLUDE NAMES seccomp.h REQUIRED)
add_library(agentd_seccomp INTERFACE)
target_include_directories(agentd_seccomp SYSTEM INTERFACE ${AGENTD_SECCOMP_INCLUDE})
target_link_libraries(agentd_seccomp INTERFACE ${AGENTD_LIBSECCOMP_A})

# The nftables rung of egress policy, where cgroup-BPF cannot be attached
# (daemon/limits/egress_nftables.h): an in-tree nf_tables netlink encoder,
# no library (docs/BUILDING.md, "The nftables egress rung"). On in every
# build, the release build included (+49 KB stripped).
option(AGENTD_EGRESS_NFTABLES "Build the nftables rung of egress policy" ON)

# Host-side tools (client library, conformance suite) are not static: they
# use the system's shared libarchive. A cross build has none of them.
if(NOT CMAKE_CROSSCOMPILING)
  find_package(LibArchive 3 REQUIRED)
endif()
