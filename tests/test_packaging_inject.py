"""packaging/agentd-inject: the docker run it builds keeps an image's own
Entrypoint, Cmd, User and WorkingDir under `agentd --init`; and on a real
Docker engine (Debian's docker.io, started by hand, tests/lib/dockerd.py)
two unmodified images built without a registry run with agentd injected
from a named volume: the image's command keeps running as its own user,
a signal reaches it, agentd answers health, execs and conformance (the
whole suite on the Debian image, its resets sparing the image's command;
the exec group on busybox), and `docker stop` ends both with exit status
0."""

import importlib.machinery
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from lib.agentd_test import AGENTD_BIN
from lib import dockerd, pyclient, rootfs  # noqa: F401  (pyclient: sys.path)
from lib.guests import (CONFORMANCE as CONFORMANCE_BIN, CONFORMANCE_DAEMON_ARGS,
                        GuestConformanceCase, SuiteRun)
from agentd_client import Client

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INJECT = os.path.join(ROOT, "packaging", "agentd-inject")


def load_inject():
    loader = importlib.machinery.SourceFileLoader("agentd_inject", INJECT)
    spec = importlib.util.spec_from_loader("agentd_inject", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


inject = load_inject()


def plan(config, *args, volume="agentd-test"):
    """The docker run argv for an image with `config` and the command line
    `args` (inject options, IMAGE, docker run args)."""
    options, run_args = inject.parse(list(args))
    options.volume = volume
    return inject.plan(config, options, run_args)


def after_dashes(argv):
    return argv[argv.index("--") + 1:]


def agentd_flags(argv):
    return argv[argv.index("img") + 1:argv.index("--")]


class PlanTest(unittest.TestCase):
    """What agentd-inject makes of an image's configuration (no engine)."""

    def test_the_workload_is_entrypoint_then_cmd_as_docker_runs_them(self):
        argv = plan({"Entrypoint": ["/docker-entrypoint.sh"], "Cmd": ["postgres", "-c", "x=1"]},
                    "img")
        self.assertEqual(after_dashes(argv), ["/docker-entrypoint.sh", "postgres", "-c", "x=1"])
        self.assertEqual(argv[argv.index("--entrypoint") + 1], "/opt/agentd/agentd")
        self.assertEqual(agentd_flags(argv)[:2], ["--init", "--listen=0.0.0.0:7700"])
        self.assertIn("type=volume,src=agentd-test,dst=/opt/agentd,readonly", argv)

    def test_a_shell_form_entrypoint_is_kept_with_cmd_after_it_as_docker_does(self):
        # Docker stores `ENTRYPOINT exec nginx` as sh -c and still appends
        # CMD (which the shell then sees as $0...): nothing is dropped or added.
        config = {"Entrypoint": ["/bin/sh", "-c", "exec nginx -g 'daemon off;'"],
                  "Cmd": ["ignored-by-sh"]}
        self.assertEqual(after_dashes(plan(config, "img")),
                         ["/bin/sh", "-c", "exec nginx -g 'daemon off;'", "ignored-by-sh"])

    def test_an_empty_cmd_adds_nothing_and_no_command_leaves_agentd_serving(self):
        self.assertEqual(after_dashes(plan({"Entrypoint": ["/serve"], "Cmd": None}, "img")),
                         ["/serve"])
        self.assertEqual(after_dashes(plan({"Entrypoint": None, "Cmd": []}, "img")), [])
        self.assertEqual(after_dashes(plan({}, "img")), [])

    def test_a_command_after_dashes_replaces_cmd_and_entrypoint_drops_it(self):
        config = {"Entrypoint": ["/ep"], "Cmd": ["default"]}
        self.assertEqual(after_dashes(plan(config, "img", "-d", "--", "other", "arg")),
                         ["/ep", "other", "arg"])
        argv = plan(config, "img", "--entrypoint", "/bin/sleep", "--name", "x")
        self.assertEqual(after_dashes(argv), ["/bin/sleep"])
        self.assertEqual(argv.count("--entrypoint"), 1)
        self.assertIn("--name", argv[:argv.index("img")])
        self.assertEqual(after_dashes(plan(config, "img", "--entrypoint=", "--", "ls")), ["ls"])

    def test_a_non_root_user_runs_the_command_while_agentd_stays_root(self):
        argv = plan({"User": "app:staff", "Cmd": ["serve"]}, "img")
        self.assertEqual(argv[argv.index("--user") + 1], "0:0")
        self.assertIn("--init-user=app:staff", agentd_flags(argv))
        argv = plan({"User": "app", "Cmd": ["serve"]}, "img", "-u", "1000:1000")
        self.assertIn("--init-user=1000:1000", agentd_flags(argv))
        self.assertEqual(argv.count("--user") + argv.count("-u"), 1)
        for root in ("", "root", "0", "0:0"):
            argv = plan({"User": root, "Cmd": ["serve"]}, "img")
            self.assertFalse([f for f in agentd_flags(argv) if f.startswith("--init-user")])

    def test_keep_user_runs_agentd_itself_as_the_images_user(self):
        argv = plan({"User": "app", "Cmd": ["serve"]}, "--keep-user", "img")
        self.assertEqual(argv[argv.index("--user") + 1], "app")
        self.assertFalse([f for f in agentd_flags(argv) if f.startswith("--init-user")])

    def test_workdir_becomes_agentds_run_directory(self):
        argv = plan({"WorkingDir": "/srv/app", "Cmd": ["serve"]}, "img")
        self.assertIn("--workdir=/srv/app", agentd_flags(argv))

    def test_the_token_is_a_read_only_bind_mounted_file_never_its_text(self):
        argv = plan({"Cmd": ["serve"]}, "--token-file", "/secrets/t", "--listen",
                    "unix:/s/a.sock", "--agentd-arg", "--log-level=debug", "img")
        self.assertIn("type=bind,src=/secrets/t,dst=/run/agentd-secret/token,readonly", argv)
        self.assertEqual(agentd_flags(argv), ["--init", "--listen=unix:/s/a.sock",
                                              "--token-file=/run/agentd-secret/token",
                                              "--log-level=debug"])
        self.assertFalse([a for a in argv if a in ("-e", "--env")])

    def test_bad_input_is_refused_before_docker_is_asked(self):
        tmp = tempfile.mkdtemp(prefix="agentd-inject-")
        self.addCleanup(shutil.rmtree, tmp)
        token = os.path.join(tmp, "token")
        with open(token, "w") as f:
            f.write("secret")
        os.chmod(token, 0o644)
        env = dict(os.environ, DOCKER="/bin/false")
        r = subprocess.run([INJECT, "--token-file", token, "img"], capture_output=True,
                           text=True, env=env)
        self.assertEqual(r.returncode, 2)
        self.assertIn("0644", r.stderr)
        for args in ([], ["--bogus", "img"], ["img", "--init"], ["--binary"]):
            r = subprocess.run([INJECT] + args, capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 2, (args, r.stderr))


def write_file(path, text, mode=0o644):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


# The debian image's ENTRYPOINT: it records who and where it runs, beats,
# and answers USR1 and TERM (sleep in the background so traps run at once).
DEBIAN_WORKLOAD = (
    "trap 'echo \"USR1 $(id -u)\" >> /obs/signals' USR1; "
    "trap 'echo TERM >> /obs/signals; exit 0' TERM; "
    "echo \"$(id -u) $(pwd) $HOME $#\" > /obs/started; n=0; "
    "while :; do n=$((n+1)); echo $n > /obs/beat.new; mv /obs/beat.new /obs/beat; "
    "sleep 0.1 & wait $!; done")
# The busybox image's shell-form CMD.
BUSYBOX_WORKLOAD = (
    "trap 'echo USR1 >> /obs/signals' USR1; trap 'echo TERM >> /obs/signals; exit 0' TERM; "
    "echo \"$(id -u) $(pwd)\" > /obs/started; n=0; "
    "while true; do n=$((n+1)); echo $n > /obs/beat.new; mv /obs/beat.new /obs/beat; "
    "sleep 0.1 & wait $!; done")


@unittest.skipUnless(os.geteuid() == 0, "needs root for dockerd")
class InjectEngineTest(GuestConformanceCase):
    """Unmodified images on a real engine, agentd injected from a volume."""

    # The whole suite on the Debian image: what an unprivileged container
    # (no CAP_SYS_ADMIN, Docker's seccomp profile, no cgroup of its own) of
    # a minbase image (no python3, no bun) cannot offer. The upgrade group
    # is left out (an upgrade in place of --init mode is not supported
    # yet), and so is the quarantine check (it needs an immutable file;
    # /srv/reset is a tmpfs).
    EXPECTED_SKIPS = {
        "run: a run with network none has only its own loopback": "no CAP_SYS_ADMIN",
        "run: a context keeps a variable between two runs": "no python3",
        "run: a python exception is answered with type, line and keys present": "no python3",
        "run: a ts context keeps a declaration between two runs": "no bun",
        "limits: a memory limit kills and names its value": "no usable cgroup",
        "limits: a pids limit ends a fork bomb": "no usable cgroup",
        "limits: a disk limit ends a runaway writer and leaves the guest's disk alone":
            "no CAP_SYS_ADMIN",
        "hostile: a restricted exec cannot write the read-only paths": "no mounts",
        "hostile: an exec under egress none cannot connect out, and it is counted":
            "no cgroup2 hierarchy",
    }

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="agentd-inject-")
        cls.engine = dockerd.Dockerd()
        try:
            cls.engine.start()
        except unittest.SkipTest:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise
        d = cls.engine.docker
        cls.binary = os.path.join(cls.tmp, "agentd")
        subprocess.run(["strip", "-o", cls.binary, AGENTD_BIN], check=True)
        # A debootstrap minbase tree (cached by tests/lib/rootfs.py), as is.
        tar = subprocess.run(["tar", "-C", rootfs.debian_minbase(), "-cf", "-", "."],
                             capture_output=True, check=True).stdout
        d("import", "--change", "USER nobody", "--change", "WORKDIR /tmp", "--change",
          "ENTRYPOINT " + json.dumps(["/bin/bash", "-c", DEBIAN_WORKLOAD, "workload"]),
          "-", "local/inject-debian", input=tar)
        base = rootfs.busybox_tree(os.path.join(cls.tmp, "busybox"))
        tar = subprocess.run(["tar", "-C", base, "-cf", "-", "."], capture_output=True,
                             check=True).stdout
        d("import", "--change", "WORKDIR /root", "--change", "CMD " + BUSYBOX_WORKLOAD,
          "-", "local/inject-busybox", input=tar)
        cls.token = "inject-token-" + os.urandom(8).hex()
        cls.token_file = os.path.join(cls.tmp, "token")
        write_file(cls.token_file, cls.token + "\n", 0o600)

    @classmethod
    def tearDownClass(cls):
        cls.engine.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def inject(self, *args):
        env = dict(os.environ, DOCKER="%s -H unix://%s" % (dockerd.DOCKER, self.engine.socket),
                   DOCKER_CONFIG=self.engine.dir, DOCKER_BUILDKIT="0")
        return subprocess.run([INJECT, "--binary", self.binary] + list(args),
                              capture_output=True, text=True, env=env, timeout=300)

    def start(self, name, image, agentd_args=(), docker_args=()):
        obs = os.path.join(self.tmp, name, "obs")
        sock_dir = os.path.join(self.tmp, name, "sock")
        os.makedirs(obs)
        os.makedirs(sock_dir)
        os.chmod(obs, 0o777)  # the image's user writes its reports here
        r = self.inject("--token-file", self.token_file, "--listen",
                        "unix:/run/agentd-sock/agentd.sock",
                        *["--agentd-arg=" + a for a in agentd_args], image, "-d", "--name", name,
                        "--network", "none", "-v", obs + ":/obs", "-v",
                        sock_dir + ":/run/agentd-sock", *docker_args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.addCleanup(self.engine.docker, "rm", "-f", name, check=False)
        return obs, os.path.join(sock_dir, "agentd.sock")

    def wait_for(self, name, what, predicate):
        """Until predicate() holds; fails at once when the container ended."""
        deadline = time.monotonic() + 90  # a safety net on a loaded machine
        while not predicate():
            state = json.loads(self.engine.docker("inspect", name).stdout)[0]["State"]
            if not state["Running"]:
                self.fail("%s ended (%s) waiting for %s:\n%s" % (
                    name, state["ExitCode"], what,
                    self.engine.docker("logs", name).stderr.decode(errors="replace")))
            self.assertLess(time.monotonic(), deadline, "no %s from %s" % (what, name))
            time.sleep(0.05)

    def read(self, path):
        try:
            with open(path) as f:
                return f.read()
        except FileNotFoundError:
            return ""

    def subscribe(self, name):
        """The engine's event stream for one container, from now on: --since
        replays what happens before the subscription is live."""
        events = subprocess.Popen(
            [dockerd.DOCKER, "-H", "unix://" + self.engine.socket, "events", "--since",
             "%.6f" % time.time(), "--filter",
             "container=" + name, "--format", "{{json .}}"],
            stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, DOCKER_CONFIG=self.engine.dir))
        self.addCleanup(events.stdout.close)
        self.addCleanup(events.wait, 10)
        self.addCleanup(events.kill)
        return events

    def events_until(self, events, action, seen):
        for line in events.stdout:
            seen.append(json.loads(line))
            if seen[-1].get("Action") == action:
                return
        self.fail("the event stream ended before %r: %s" % (action, seen))

    def signal_reaches_the_workload(self, name, obs, expected_line, events, seen):
        beat = self.read(os.path.join(obs, "beat"))
        self.engine.docker("kill", "-s", "USR1", name)
        self.events_until(events, "kill", seen)
        self.wait_for(name, "USR1 report",
                      lambda: expected_line in self.read(os.path.join(obs, "signals")))
        # Still beating after the signal: it was handled, not fatal.
        self.wait_for(name, "a heartbeat",
                      lambda: self.read(os.path.join(obs, "beat")) not in ("", beat))

    def stop_ends_both_cleanly(self, name, obs, events, seen):
        """docker stop: SIGTERM only (no SIGKILL after the grace), the
        workload hears it, and the container exits 0. Read from the engine's
        events, not from a clock."""
        d = self.engine.docker
        d("stop", "-t", "60", name)
        self.events_until(events, "die", seen)
        kills = [e["Actor"]["Attributes"].get("signal") for e in seen if e.get("Action") == "kill"]
        die = seen[-1]
        self.assertEqual(kills, ["10", "15"], seen)  # our USR1, then stop's TERM; no KILL
        self.assertEqual(die["Actor"]["Attributes"]["exitCode"], "0",
                         d("logs", name).stderr.decode(errors="replace"))
        self.assertIn("TERM", self.read(os.path.join(obs, "signals")))
        term = [e for e in seen if e["Actor"]["Attributes"].get("signal") == "15"][0]
        print("%s: docker stop took %.0f ms from SIGTERM to exit" % (
            name, (die["timeNano"] - term["timeNano"]) / 1e6), file=sys.stderr)

    def test_a_debian_image_with_a_user_and_an_entrypoint_runs_under_injected_agentd(self):
        image_id = self.engine.docker("image", "inspect", "-f", "{{.Id}}",
                                      "local/inject-debian").stdout
        # What the whole conformance suite needs to run rather than skip: a
        # short ack TTL and a small retention cap (CONFORMANCE_DAEMON_ARGS),
        # a small file system, a reset path and a scratch dir.
        obs, sock = self.start(
            "inject-debian", "local/inject-debian",
            agentd_args=CONFORMANCE_DAEMON_ARGS + ("--reset-path", "/srv/reset",
                                                   "--reset-scratch", "/srv/scratch",
                                                   "--reset-ipc"),
            docker_args=("--tmpfs", "/small:size=4m", "--tmpfs", "/srv/reset",
                         "--tmpfs", "/srv/scratch"))
        started = os.path.join(obs, "started")
        self.wait_for("inject-debian", "the workload", lambda: self.read(started))
        self.wait_for("inject-debian", "agentd's socket", lambda: os.path.exists(sock))
        # The ENTRYPOINT as the image's USER (nobody) in its WORKDIR, with
        # nobody's HOME, and no arguments (the image has no CMD).
        self.assertEqual(self.read(started).split(), ["65534", "/tmp", "/nonexistent", "0"])

        with Client("unix:" + sock, token=self.token) as guest:
            self.assertEqual(guest.health().status, "ok")
            r = guest.run(["sh", "-c", "id -u; echo $PPID; pwd; cat /proc/1/cmdline | tr '\\0' ' '"])
            self.assertEqual(r.exit_code, 0, r.stderr_text)
            uid, ppid, cwd, pid1 = r.stdout_text.splitlines()
            self.assertEqual((uid, ppid, cwd), ("0", "1", "/tmp"))  # agentd stayed root
            self.assertTrue(pid1.startswith("/opt/agentd/agentd --init "), pid1)
            self.assertNotIn(self.token, pid1)
            r = guest.run(["sh", "-c", "env"])
            self.assertNotIn(self.token, r.stdout_text)
            r = guest.run(["id", "-u"], user="nobody")
            self.assertEqual(r.stdout_text, "65534\n")
        # Every conformance check through the bind-mounted socket, the reuse
        # group last: its resets end what agentd started and spare the
        # image's command (its signal and stop below show it still runs).
        self.assertSuitePasses(SuiteRun(
            "unix:" + sock, self.token_file, "--small-fs", "/small", "--reuse-path", "/srv/reset",
            "--reuse-scratch", "/srv/scratch", "--reuse-ipc"))

        events, seen = self.subscribe("inject-debian"), []
        self.signal_reaches_the_workload("inject-debian", obs, "USR1 65534", events, seen)
        inspected = self.engine.docker("inspect", "inject-debian").stdout.decode()
        self.assertNotIn(self.token, inspected)  # not in Env, Args or Cmd
        # No rebuild: the image is the one imported.
        self.assertEqual(self.engine.docker("image", "inspect", "-f", "{{.Id}}",
                                            "local/inject-debian").stdout, image_id)
        self.stop_ends_both_cleanly("inject-debian", obs, events, seen)

    def test_a_busybox_image_with_a_shell_form_cmd_runs_under_injected_agentd(self):
        obs, sock = self.start("inject-busybox", "local/inject-busybox")
        self.wait_for("inject-busybox", "the workload",
                      lambda: self.read(os.path.join(obs, "started")))
        self.wait_for("inject-busybox", "agentd's socket", lambda: os.path.exists(sock))
        self.assertEqual(self.read(os.path.join(obs, "started")).split(), ["0", "/root"])
        with Client("unix:" + sock, token=self.token) as guest:
            self.assertEqual(guest.health().status, "ok")
            r = guest.run("echo $PPID; ls /opt/agentd")
            self.assertEqual(r.stdout_text, "1\nagentd\n")
        events, seen = self.subscribe("inject-busybox"), []
        self.signal_reaches_the_workload("inject-busybox", obs, "USR1", events, seen)
        # The exec group of the suite, through the bind-mounted socket.
        r = subprocess.run([CONFORMANCE_BIN, "--url", "unix:" + sock, "--token-file",
                            self.token_file, "--filter", "exec: "],
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stdout[-3000:] + r.stderr[-2000:])
        self.assertRegex(r.stdout, r"\n[1-9]\d* passed, 0 failed")
        self.stop_ends_both_cleanly("inject-busybox", obs, events, seen)

    def test_print_shows_the_run_and_the_volume_is_filled_once(self):
        r = self.inject("--print", "--token-file", self.token_file, "local/inject-debian",
                        "--name", "x")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("--entrypoint /opt/agentd/agentd", r.stdout)
        self.assertIn("--init-user=nobody", r.stdout)
        self.assertNotIn(self.token, r.stdout)
        volume = [w for w in r.stdout.split() if w.startswith("type=volume,src=")][0]
        volume = volume.split(",")[1][len("src="):]
        self.assertEqual(self.inject("--prepare").stdout.strip(), volume)
        self.assertEqual(self.engine.docker("ps", "-aq").stdout, b"")  # no helper left
        self.assertEqual(self.inject("--prepare", "--volume", volume).returncode, 0)


if __name__ == "__main__":
    unittest.main()
