# Compiler flags shared by every target of the project.
add_library(agentd_warnings INTERFACE)
target_compile_options(agentd_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow -Wnon-virtual-dtor -Wcast-qual -Wformat=2>
  # GCC 12 reports Asio's coroutine frame allocator as mismatched new/delete
  # at some inlining depths (a false positive: the frame's own operator new
  # and delete are used together).
  $<$<CXX_COMPILER_ID:GNU>:-Wno-mismatched-new-delete>
  $<$<BOOL:${AGENTD_WERROR}>:-Werror>)

# Sections per function and data object let the static link drop what is
# unused; without them libarchive drags every format it knows into agentd.
add_compile_options(-ffunction-sections -fdata-sections)

if(AGENTD_SANITIZE)
  add_compile_options(-fsanitize=${AGENTD_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${AGENTD_SANITIZE})
endif()
