"""CPU time of a running process, from /proc: what an A/B script reads
beside wall-clock rates, which load from other work moves far more."""

import os

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of all the process's threads so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK
