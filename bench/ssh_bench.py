#!/usr/bin/env python3
"""For orientation only: the same exec round trip and output throughput over
ssh with a multiplexed master (docs/BENCHMARKS.md, "The suite: bench/run").

Starts a private sshd (Debian's openssh-server, not a dependency of the
project: bench/run skips this when /usr/sbin/sshd is missing) on a free
loopback port with throwaway host and user keys, opens one ControlMaster
connection, then measures `ssh HOST /bin/true` through the master (--runs
times) and `ssh HOST head -c SIZE /dev/zero > /dev/null`. No target: the
issue names ssh only for orientation.

Usage: bench/ssh_bench.py [--runs 50] [--mib 1024] [--smoke] [--json FILE]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any, Dict, List

from exec_bench import pct
from loopback import free_port

SSHD = "/usr/sbin/sshd"


class PrivateSshd:
    def __init__(self) -> None:
        self.tmp = tempfile.mkdtemp(prefix="agentd-ssh-")
        self.port = free_port()
        t = self.tmp
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", t + "/host"],
                       check=True)
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", t + "/user"],
                       check=True)
        shutil.copy(t + "/user.pub", t + "/authorized_keys")
        with open(t + "/sshd_config", "w") as f:
            f.write("ListenAddress 127.0.0.1:%d\nHostKey %s/host\nAuthorizedKeysFile %s/"
                    "authorized_keys\nPermitRootLogin prohibit-password\nPasswordAuthentication no\n"
                    "KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPidFile %s/pid\n"
                    "UseDNS no\n" % (self.port, t, t, t))
        os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege separation directory
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", t + "/sshd_config"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.ssh = ["ssh", "-q", "-p", str(self.port), "-i", t + "/user",
                    "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
                    "-o", "ControlPath=%s/ctl" % t, "-o", "BatchMode=yes", "root@127.0.0.1"]
        deadline = time.monotonic() + 20
        while subprocess.run(self.ssh[:-1] + ["-o", "ControlMaster=yes", "-o",
                                               "ControlPersist=yes", "root@127.0.0.1",
                                               "true"]).returncode != 0:
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("could not reach the private sshd")
            time.sleep(0.2)

    def close(self) -> None:
        subprocess.run(self.ssh[:-1] + ["-O", "exit", "root@127.0.0.1"],
                       stderr=subprocess.DEVNULL)
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--json", help="also write the measurements to this file")
    args = ap.parse_args()
    runs, mib = (5, 16) if args.smoke else (args.runs, args.mib)
    sshd = PrivateSshd()
    try:
        rt: List[float] = []
        for _ in range(runs + 5):
            t0 = time.perf_counter()
            subprocess.run(sshd.ssh + ["/bin/true"], check=True)
            rt.append(time.perf_counter() - t0)
        rt = rt[5:]  # warm-up
        rates: List[float] = []
        for _ in range(1 if args.smoke else 3):
            t0 = time.perf_counter()
            subprocess.run(sshd.ssh + ["head -c %d /dev/zero" % (mib << 20)], check=True,
                           stdout=subprocess.DEVNULL)
            rates.append((mib << 20) / (time.perf_counter() - t0))
    finally:
        sshd.close()
    r: Dict[str, Any] = {"runs": runs, "true_p50_s": statistics.median(rt),
                            "true_p99_s": pct(rt, 99), "bytes": mib << 20,
                            "bytes_per_s": statistics.median(rates)}
    print("ssh (ControlMaster) true: p50 %.2f ms, p99 %.2f ms; %d MiB at %.0f MiB/s" % (
        r["true_p50_s"] * 1e3, r["true_p99_s"] * 1e3, mib, r["bytes_per_s"] / (1 << 20)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=2)


if __name__ == "__main__":
    main()
