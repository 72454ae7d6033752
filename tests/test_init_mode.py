"""PID 1 mode: agentd --init [--] CMD reaps every orphan, forwards signals to
CMD's process group, keeps serving after CMD exits unless --exit-with-cmd
(docs/OPERATIONS.md, "PID 1 mode")."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import unittest

from lib.agentd_test import Daemon
from lib.exec_util import run, wait_until

# Each iteration orphans one sleep: its subshell exits at once, so the sleep
# is re-parented to the nearest subreaper (PID 1 of the namespace: agentd)
# and becomes a zombie when it ends unless agentd reaps it.
STORM = ('i=0; while [ $i -lt {n} ]; do (sleep 0.3 &); i=$((i+1)); done; '
         'echo done > {marker}')
STORM_SIZE = 300


def children(pid):
    """Host pids of pid's children."""
    out = []
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/children" % (pid, tid)) as f:
            out += [int(p) for p in f.read().split()]
    return out


def zombies_of(parent):
    """Children of `parent` (host pid) that are zombies."""
    found = []
    for pid in children(parent):
        try:
            with open("/proc/%d/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state == "Z":
            found.append(pid)
    return found


def reaped_orphans(d):
    return sum(1 for line in d.logs() if '"msg":"reaped orphan"' in line)


def read(path):
    with open(path) as f:
        return f.read()


def workload_log(d, message):
    for line in d.logs():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") == message:
            return entry
    return None


class InitModeTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="agentd-init-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def wait_file(self, name, timeout=20):
        wait_until(lambda: os.path.exists(self.path(name)), timeout, what=name)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"), "needs root and unshare")
    def test_a_zombie_storm_in_a_pid_namespace_leaves_no_zombie(self):
        storm = STORM.format(n=STORM_SIZE, marker=self.path("cmd-storm"))
        with Daemon("--init", "--", "sh", "-c", storm + "; exec sleep 600", log_level="debug",
                    wrapper=["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]) as d:
            agentd_pid, = children(d.proc.pid)
            self.wait_file("cmd-storm")
            # The same storm from an exec: its orphans come to PID 1 as well.
            obj, _, _ = run(d, "storm", {"command": STORM.format(
                n=STORM_SIZE, marker=self.path("exec-storm"))})
            self.assertEqual(obj["exit_code"], 0)
            wait_until(lambda: reaped_orphans(d) >= 2 * STORM_SIZE, 60, what="every orphan reaped")
            wait_until(lambda: not zombies_of(agentd_pid), 10, what="no zombies")
            # Seen from inside the namespace too: agentd is PID 1 there.
            obj, out, _ = run(d, "count", {"command":
                "echo $PPID; grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l"})
            ppid, zombies = out.decode().split()
            self.assertEqual((ppid, zombies), ("1", "0"))
            status, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual((status, health["status"]), (200, "ok"))
            # unshare ignores SIGTERM: stop PID 1 itself, as a container runtime does.
            os.kill(agentd_pid, signal.SIGTERM)
            self.assertEqual(d.proc.wait(20), 0)

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare") and shutil.which("nsenter"),
                         "needs root, unshare and nsenter")
    def test_an_upgrade_in_place_keeps_pid_1_its_command_its_execs_and_its_reaping(self):
        from lib.agentd_test import AGENTD_BIN
        script = ("echo started >> {log}; trap 'echo USR2 >> {got}' USR2; "
                  "while :; do sleep 0.05; done").format(log=self.path("starts"),
                                                         got=self.path("got"))
        with Daemon("--init", "--", "sh", "-c", script, log_level="debug",
                    wrapper=["unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]) as d:
            agentd_pid, = children(d.proc.pid)
            # unshare ignores SIGTERM: a failure ends PID 1 itself.
            self.addCleanup(lambda: d.proc.poll() is None and os.kill(agentd_pid, signal.SIGKILL))
            self.wait_file("starts")
            status, obj = d.json("PUT", "/v1/execs/across", {
                "argv": ["sh", "-c", "read x; echo got $x; exit 9"], "stdin_stream": True})
            self.assertEqual(status, 201, obj)
            # `agentd --upgrade` from inside the guest (as `docker exec` runs
            # it): SIGUSR2 belongs to the command, so the pid file names the
            # daemon's own signal.
            pid, _, signo = read(os.path.join(d.state_dir, "agentd.pid")).split()
            self.assertEqual(pid, "1")
            self.assertGreaterEqual(int(signo), signal.SIGRTMIN)
            up = subprocess.run(["nsenter", "-t", str(agentd_pid), "-p", "-m", "--",
                                 os.path.abspath(AGENTD_BIN),
                                 "--upgrade", "--state-dir", d.state_dir],
                                capture_output=True, text=True, timeout=120)
            self.assertEqual(up.returncode, 0, up.stdout + up.stderr)
            self.assertEqual(children(d.proc.pid), [agentd_pid])  # the same PID 1
            status, health = d.json("GET", "/v1/health", auth=False)
            self.assertEqual((status, health["upgrades"]), (200, 1))
            self.assertEqual(read(self.path("starts")), "started\n")  # not started again
            self.assertIsNotNone(workload_log(d, "workload taken over"))
            # The exec started before runs on and reports its true status.
            status, obj = d.json("POST", "/v1/execs/across/stdin?offset=0&eof=1", b"v\n")
            self.assertEqual(status, 200, obj)
            status, obj = d.json("GET", "/v1/execs/across?wait_ms=60000&until=exit", timeout=90)
            self.assertEqual((status, obj["exit_code"], obj["killed_by"]), (200, 9, None), obj)
            # PID 1's duties go on: orphans are reaped, SIGUSR2 still reaches the command.
            reaped = reaped_orphans(d)
            obj, _, _ = run(d, "storm", {"command": STORM.format(n=20,
                                                                  marker=self.path("storm"))})
            self.assertEqual(obj["exit_code"], 0)
            wait_until(lambda: reaped_orphans(d) >= reaped + 20, 30, what="orphans reaped")
            wait_until(lambda: not zombies_of(agentd_pid), 10, what="no zombies")
            os.kill(agentd_pid, signal.SIGUSR2)
            wait_until(lambda: os.path.exists(self.path("got")), 10, what="SIGUSR2 forwarded")
            self.assertEqual(d.json("GET", "/v1/health", auth=False)[1]["upgrades"], 1)
            os.kill(agentd_pid, signal.SIGTERM)
            self.assertEqual(d.proc.wait(20), 0)

    def test_signals_reach_the_whole_process_group_and_term_stops_the_daemon(self):
        got = self.path("got")
        # Each shell says so once its traps are set: a HUP before that ends
        # it silently (the child's trap was once awaited by a 0.2 s sleep,
        # too short under CI's load).
        script = (
            "sh -c 'trap \"echo child-HUP >> {got}\" HUP; echo ready > {child_ready}; "
            "while :; do sleep 0.05; done' & "
            "trap 'echo HUP >> {got}' HUP; trap 'echo TERM >> {got}; exit 7' TERM; "
            "echo ready > {ready}; while :; do sleep 0.05; done").format(
                got=got, ready=self.path("ready"), child_ready=self.path("child-ready"))
        d = Daemon("--init", "--", "sh", "-c", script)
        try:
            self.wait_file("ready")
            self.wait_file("child-ready")
            d.proc.send_signal(signal.SIGHUP)
            wait_until(lambda: os.path.exists(got) and
                       sorted(read(got).split()) == ["HUP", "child-HUP"], 10,
                       what="HUP in the command and its child")
            status, _ = d.json("GET", "/v1/health", auth=False)
            self.assertEqual(status, 200, "SIGHUP must not stop the daemon")
            d.proc.send_signal(signal.SIGTERM)
            self.assertEqual(d.proc.wait(20), 0)
            self.assertIn("TERM", read(got).split())
            self.assertEqual(workload_log(d, "workload exited")["exit_code"], 7)
        finally:
            d.close()

    def test_the_daemon_keeps_serving_after_the_command_exits(self):
        with Daemon("--init", "--", "sh", "-c", "exit 3") as d:
            wait_until(lambda: workload_log(d, "workload exited"), 10, what="the exit")
            self.assertEqual(workload_log(d, "workload exited")["exit_code"], 3)
            obj, out, _ = run(d, "after", {"argv": ["echo", "still here"]})
            self.assertEqual(out, b"still here\n")
            self.assertIsNone(d.proc.poll())

    def test_exit_with_cmd_exits_with_the_commands_code(self):
        script = "while [ ! -e {go} ]; do sleep 0.05; done; exit 3".format(go=self.path("go"))
        d = Daemon("--init", "--exit-with-cmd", "--", "sh", "-c", script)
        try:
            obj, out, _ = run(d, "meanwhile", {"argv": ["echo", "served"]})
            self.assertEqual(out, b"served\n")
            open(self.path("go"), "w").close()
            self.assertEqual(d.proc.wait(20), 3)
        finally:
            d.close()

    def test_exit_with_cmd_reports_a_forwarded_signal_as_128_plus_n(self):
        d = Daemon("--init", "--exit-with-cmd", "--", "sleep", "600")
        try:
            wait_until(lambda: workload_log(d, "workload started"), 10, what="the start")
            d.proc.send_signal(signal.SIGTERM)
            self.assertEqual(d.proc.wait(20), 128 + signal.SIGTERM)
        finally:
            d.close()

    def test_exit_with_cmd_exits_127_when_the_command_does_not_exist(self):
        d = Daemon("--init", "--exit-with-cmd", "--", "no-such-command-agentd-test",
                   bootstrap=False)
        try:
            self.assertEqual(d.proc.wait(20), 127)
            self.assertIn("no-such-command-agentd-test",
                          workload_log(d, "workload could not start")["reason"])
        finally:
            d.close()

    def test_the_command_gets_the_daemon_environment_without_agentd_variables(self):
        env = dict(os.environ, AGENTD_SECRET="hidden", IMAGE_SETTING="kept")
        out = self.path("env")
        with Daemon("--init", "--", "sh", "-c", "env > " + out, env=env) as d:
            wait_until(lambda: workload_log(d, "workload exited"), 10, what="the exit")
            names = [line.split("=", 1)[0] for line in read(out).splitlines()]
            self.assertIn("IMAGE_SETTING", names)
            self.assertFalse([n for n in names if n.startswith("AGENTD_")], names)

    @unittest.skipUnless(os.geteuid() == 0, "switching users needs root")
    def test_init_user_runs_the_command_as_that_user_while_execs_stay_root(self):
        out = self.path("who")
        os.chmod(self.dir, 0o777)  # nobody writes its report here
        script = 'echo "$(id -u) $(id -g) $USER $HOME" > {out}.new; mv {out}.new {out}'.format(
            out=out)
        with Daemon("--init", "--init-user", "nobody", "--", "sh", "-c", script) as d:
            wait_until(lambda: workload_log(d, "workload exited"), 10, what="the exit")
            uid, gid, user, home = read(out).split()
            self.assertEqual((uid, user), ("65534", "nobody"))
            self.assertNotEqual(gid, "0")
            obj, got, _ = run(d, "as-daemon", {"argv": ["id", "-u"]})
            self.assertEqual(got, b"0\n")

    @unittest.skipUnless(os.geteuid() == 0, "switching users needs root")
    def test_init_user_takes_a_number_and_a_group(self):
        out = self.path("who")
        os.chmod(self.dir, 0o777)
        with Daemon("--init", "--init-user=4321:4322", "--", "sh", "-c",
                    "id -u > {o}.new; id -g >> {o}.new; mv {o}.new {o}".format(o=out)) as d:
            wait_until(lambda: workload_log(d, "workload exited"), 10, what="the exit")
            self.assertEqual(read(out).split(), ["4321", "4322"])

    def test_an_unknown_init_user_is_a_command_that_could_not_start(self):
        d = Daemon("--init", "--exit-with-cmd", "--init-user", "no-such-user-agentd", "--",
                   "true", bootstrap=False)
        try:
            self.assertEqual(d.proc.wait(20), 126)
            entry = workload_log(d, "workload could not start")
            self.assertEqual(entry["user"], "no-such-user-agentd")
        finally:
            d.close()

    def test_a_command_without_init_is_refused(self):
        from lib.agentd_test import AGENTD_BIN
        r = subprocess.run([AGENTD_BIN, "--", "true"], capture_output=True, timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"needs --init", r.stderr)


if __name__ == "__main__":
    unittest.main()
