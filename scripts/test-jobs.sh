# Sourced by scripts/test, scripts/test-sanitized and scripts/test-tsan:
# how many test modules ctest runs at once. A module mostly waits on the
# daemons and processes it drives: 19 of the slowest release-suite modules
# used 0.35 CPU-seconds per second of their run (cgroup CPU accounting,
# one module at a time), so one module per core leaves a core idle. Two
# per core by default; AGENTD_TEST_JOBS overrides it.
test_jobs=${AGENTD_TEST_JOBS:-$(($(nproc) * 2))}
