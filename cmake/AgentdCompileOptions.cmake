# Compiler flags shared by every target of the project.
add_library(agentd_warnings INTERFACE)
target_compile_options(agentd_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wcast-qual -Wformat=2>
  # GCC 12 reports Asio's coroutine frame allocator as mismatched new/delete
  # at some inlining depths (a false positive: the frame's own operator new
  # and delete are used together).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>
  # An ignored [[nodiscard]] result (a Status, a Result) is a lost error, in
  # every build and not only under AGENTD_WERROR. GCC 12 does not see one
  # discarded by a bare `co_await f();`; clang does, so the clang build
  # (scripts/configure-sanitized, CI's sanitizer job) guards coroutines.
  $<$<COMPILE_LANGUAGE:CXX>:-Werror=unused-result>
  $<$<BOOL:${AGENTD_WERROR}>:-Werror>)

# Sections per function and data object let the static link drop what is
# unused; without them libarchive drags every format it knows into agentd.
add_compile_options(-ffunction-sections -fdata-sections)

if(AGENTD_SANITIZE)
  add_compile_options(-fsanitize=${AGENTD_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${AGENTD_SANITIZE})
endif()

# The release build (packaging/build-release): hardening and reproducibility.
# Stack protector, _FORTIFY_SOURCE=3 (needs optimisation; the release build
# is -O2), stack clash protection, CET, full RELRO (-z relro -z now), a
# non-executable stack, position-independent code for a static-pie daemon,
# and build paths mapped away so two checkouts produce the same bytes.
option(AGENTD_RELEASE "Release hardening and reproducible paths" OFF)
if(AGENTD_RELEASE)
  # Control-flow protection is the architecture's own: CET on x86-64,
  # return-address signing and BTI pads on arm64 (-fcf-protection is x86
  # only; docs/BUILDING.md, "arm64").
  if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
    set(agentd_control_flow -mbranch-protection=standard)
  else()
    set(agentd_control_flow -fcf-protection)
  endif()
  add_compile_options(-fstack-protector-strong -fstack-clash-protection ${agentd_control_flow}
                      -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=3
                      -ffile-prefix-map=${CMAKE_SOURCE_DIR}=agentd
                      -ffile-prefix-map=${CMAKE_BINARY_DIR}=build)
  add_link_options(-Wl,-z,relro -Wl,-z,now -Wl,-z,noexecstack -Wl,--build-id=sha1)
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
endif()

# Link-time optimisation for the release daemon (docs/BUILDING.md "Binary
# size": -6% stripped, measured). Only the daemon's layers are compiled with
# it, as fat objects: agentd links them with -flto, while the unit tests and
# fuzzers that link the same archives use the objects' ordinary code and
# pay no LTO link. GCC only; clang's sanitizer and fuzz builds never set it.
include(CMakeDependentOption)
cmake_dependent_option(AGENTD_LTO "Link-time optimisation of the release daemon" ON
                       "AGENTD_RELEASE;CMAKE_CXX_COMPILER_ID STREQUAL GNU" OFF)

# Driver code: code that drives the daemon and does little work itself
# (agentctl, the conformance runner, the examples, and the unit test
# executables' own sources). scripts/configure-sanitized compiles it at -O0:
# under ASan that halves its compile (agentctl's largest unit: 38 s of CPU
# against 69 s at -O1), and the sanitizer trees are most of CI's compile.
# The daemon's layers, which every integration test drives, and the client
# library and bench, which move the bytes (a client test's sparse tree round
# trip took 58 s at -O0), keep the build type's optimisation. Empty (the
# default): driver code has it too.
set(AGENTD_DRIVER_OPTIMIZATION "" CACHE STRING
    "Optimisation flag for driver code (agentctl, conformance, examples, unit tests); empty: the build type's")
function(agentd_driver_code target)
  if(AGENTD_DRIVER_OPTIMIZATION)
    target_compile_options(${target} PRIVATE ${AGENTD_DRIVER_OPTIMIZATION})
  endif()
  agentd_not_fuzzed(${target})
endfunction()

# Code no libFuzzer target links (driver code, bench) gets no coverage
# instrumentation in the fuzz tree: AGENTD_FUZZ adds -fsanitize=fuzzer-no-link
# to everything, and on a driver unit under ASan that costs a third of its
# compile (agentctl's second unit: 14.4 s of CPU with it, 9.4 s without)
# and buys nothing. ASan and UBSan stay on.
function(agentd_not_fuzzed target)
  if(AGENTD_FUZZ)
    target_compile_options(${target} PRIVATE -fno-sanitize=fuzzer-no-link)
  endif()
endfunction()
