# Sourced by scripts/test-sanitized and scripts/test-tsan: the integration
# modules the sanitized runs leave out, each for a reason that has nothing
# to do with memory or thread safety:
#   the shipped artifact itself (a sanitized build is dynamic by necessity):
#     test_static_binary, test_exec_static_root, test_release_artifacts,
#     test_packaging_* (a pattern: every packaging module), test_service_files,
#     test_client_package, test_installed_commands, test_pyclient_package,
#     test_pyclient_examples
#   guests, which boot the static binary: test_conformance_rootfs*,
#     test_conformance_vm
#   GiB-sized files, the same code paths as test_fs_files at 1000x the
#     bytes: test_fs_large
#   documents and the machine: test_operations_doc, test_install_deps
# (The bench smoke run and the release build are not integration modules;
# each script excludes them by their own prefixes.)
# shellcheck disable=SC2034  # used by the scripts that source this
sanitized_left_out=(test_static_binary test_exec_static_root test_release_artifacts
                    "test_packaging_[a-z_]+" test_service_files
                    test_client_package test_installed_commands test_pyclient_package
                    test_pyclient_examples
                    test_conformance_rootfs test_conformance_rootfs_debian test_conformance_vm
                    test_fs_large test_operations_doc test_install_deps)
