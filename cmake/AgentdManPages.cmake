# agentd_man_page(TARGET "one-line description"): a man page for an
# installed command, made from its --help by help2man (Debian's help2man),
# installed to share/man/man1. The version comes from the project, not from
# running the tool (agentctl's `version` asks a daemon). Without help2man
# the command installs without its page, with a note at configure time.
include(GNUInstallDirs)
find_program(AGENTD_HELP2MAN help2man)
if(NOT AGENTD_HELP2MAN)
  message(STATUS "help2man not found: agentctl and agentd-conformance install without man pages")
endif()

function(agentd_man_page target description)
  if(NOT AGENTD_HELP2MAN)
    return()
  endif()
  set(page ${CMAKE_CURRENT_BINARY_DIR}/${target}.1)
  add_custom_command(
    OUTPUT ${page}
    COMMAND ${AGENTD_HELP2MAN} --no-info --no-discard-stderr
            --version-string=${PROJECT_VERSION} --name=${description}
            --output=${page} $<TARGET_FILE:${target}>
    DEPENDS ${target}
    COMMENT "man page of ${target}"
    VERBATIM)
  add_custom_target(${target}_man ALL DEPENDS ${page})
  install(FILES ${page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endfunction()
