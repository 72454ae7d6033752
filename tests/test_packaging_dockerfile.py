"""packaging/Dockerfile.stanza and packaging/append-agentd on Dockerfiles:
appending is idempotent and keeps the image's entrypoint as agentd's
command; and a real Docker engine (Debian's docker.io, started by hand)
builds such an image and runs agentd in it as PID 1."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

from lib.agentd_test import AGENTD_BIN, parse_raw_responses, read_until_close
from lib import debian_image, dockerd, rootfs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
APPEND = os.path.join(ROOT, "packaging", "append-agentd")
CHECK_GUEST = os.path.join(ROOT, "packaging", "check-guest")
BUILD_RELEASE = os.path.join(ROOT, "packaging", "build-release")
RELEASE = os.environ.get("AGENTD_RELEASE_DIR", "")
# A whole release build in a container (minutes on two cores): asked for,
# not run by scripts/test. CI builds the same stage for the release check.
SOURCE_BUILD = os.environ.get("AGENTD_TEST_DOCKER_SOURCE_BUILD") == "1"
STANZA = os.path.join(ROOT, "packaging", "Dockerfile.stanza")
BUILD_DOCKERFILE = os.path.join(ROOT, "packaging", "Dockerfile.build")


def append(dockerfile, *args):
    r = subprocess.run([APPEND] + list(args) + [dockerfile], capture_output=True, text=True)
    return r.returncode, r.stdout.strip(), r.stderr


def entrypoint(text):
    lines = [l for l in text.splitlines() if l.startswith("ENTRYPOINT ")]
    return json.loads(lines[-1][len("ENTRYPOINT "):])


def unix_http(path, method, target, body=b"", headers=""):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(10)
    s.connect(path)
    s.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %d\r\n%s\r\n"
               % (method, target, len(body), headers)).encode() + body)
    (status, _, data), = parse_raw_responses(read_until_close(s))
    s.close()
    return status, data


class AppendTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="agentd-append-")
        self.path = os.path.join(self.tmp, "Dockerfile")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def write(self, text):
        with open(self.path, "w") as f:
            f.write(text)

    def read(self):
        with open(self.path) as f:
            return f.read()

    def test_appending_twice_changes_nothing_the_second_time(self):
        self.write("FROM debian:12\nRUN apt-get update\nCMD [\"bash\"]\n\n\n")
        self.assertEqual(append(self.path)[:2], (0, "appended"))
        once = self.read()
        self.assertEqual(append(self.path)[:2], (0, "unchanged"))
        self.assertEqual(self.read(), once)

    def test_the_appended_block_is_the_stanza_file(self):
        self.write("FROM scratch\n")
        append(self.path)
        with open(STANZA) as f:
            self.assertEqual(self.read(), "FROM scratch\n\n" + f.read())

    def test_the_final_stages_entrypoint_becomes_agentds_command(self):
        self.write('FROM debian:12 AS build\nENTRYPOINT ["/not/this"]\n'
                   'FROM debian:12\nENTRYPOINT ["/docker-entrypoint.sh", "--x"]\nCMD ["postgres"]\n')
        append(self.path)
        self.assertEqual(entrypoint(self.read()),
                         ["/usr/local/bin/agentd", "--init", "--listen=0.0.0.0:7700", "--",
                          "/docker-entrypoint.sh", "--x"])
        append(self.path)  # the block's own ENTRYPOINT is not wrapped again
        self.assertEqual(entrypoint(self.read())[4:], ["/docker-entrypoint.sh", "--x"])

    def test_a_shell_form_entrypoint_runs_under_sh(self):
        self.write("FROM alpine\nENTRYPOINT exec nginx \\\n  -g 'daemon off;'\n")
        rc, _, err = append(self.path)
        self.assertEqual(entrypoint(self.read())[4:],
                         ["/bin/sh", "-c", "exec nginx -g 'daemon off;'"])
        self.assertIn("--cmd", err)  # an inherited CMD would be reset: say so

    def test_options_copy_from_a_stage_listen_elsewhere_and_set_cmd(self):
        self.write("FROM busybox\n")
        rc, out, _ = append(self.path, "--from", "agentd-build:/out/agentd", "--listen",
                            "vsock:7700", "--cmd", '["sleep", "1000"]')
        text = self.read()
        self.assertIn("COPY --from=agentd-build /out/agentd /usr/local/bin/agentd\n", text)
        self.assertEqual(entrypoint(text)[2], "--listen=vsock:7700")
        self.assertIn('CMD ["sleep", "1000"]\n# <<< agentd <<<', text)
        self.assertEqual(append(self.path, "--from", "agentd-build:/out/agentd", "--listen",
                                "vsock:7700", "--cmd", '["sleep", "1000"]')[1], "unchanged")
        self.assertEqual(append(self.path)[1], "updated")
        self.assertIn("COPY agentd /usr/local/bin/agentd\n", self.read())

    def test_a_user_set_before_the_block_stays_the_commands_while_agentd_runs_as_root(self):
        self.write('FROM debian:12\nUSER app\nCMD ["serve"]\n')
        append(self.path)
        text = self.read()
        block = text[text.index("# >>> agentd"):]
        self.assertIn("\nUSER root\n", block)
        self.assertEqual(entrypoint(text)[:4], ["/usr/local/bin/agentd", "--init",
                                                 "--listen=0.0.0.0:7700", "--init-user=app"])
        append(self.path, "--keep-user")
        text = self.read()
        self.assertNotIn("USER root", text)
        self.assertNotIn("--init-user=app", entrypoint(text))
        self.write('FROM debian:12\nUSER root\n')
        append(self.path)
        self.assertNotIn("--init-user=root", entrypoint(self.read()))

    def test_token_file_and_create_user_reach_the_block(self):
        self.write('FROM debian:12\n')
        rc, _, err = append(self.path, "--token-file", "/run/secrets/agentd-token",
                            "--create-user", "agent:1500")
        self.assertEqual(rc, 0, err)
        text = self.read()
        self.assertIn("--token-file=/run/secrets/agentd-token", entrypoint(text))
        run = [l for l in text.splitlines() if l.startswith("RUN ")]
        self.assertEqual(len(run), 1)
        self.assertIn("id agent", run[0])
        self.assertIn("--uid 1500", run[0])
        self.assertIn("agent:x:1500:1500:", run[0])
        self.assertLess(text.index("USER root"), text.index("RUN "))

    def test_build_stage_inserts_dockerfile_builds_stage_before_the_first_from(self):
        self.write('# syntax=docker/dockerfile:1\nARG BASE=debian:12\nFROM ${BASE}\n'
                   'CMD ["sleep", "1"]\n')
        rc, out, err = append(self.path, "--build-stage", "vendor/agentd/")
        self.assertEqual((rc, out), (0, "appended"), err)
        text = self.read()
        with open(BUILD_DOCKERFILE) as f:
            build = f.read()
        stage = build[build.index("# >>> agentd build stage >>>"):
                      build.index("# <<< agentd build stage <<<")]
        # The stage that build-release --check-reproducible=docker builds,
        # its source path alone changed; global ARGs stay before it.
        self.assertIn(stage.replace("ARG AGENTD_SRC=.\n", "ARG AGENTD_SRC=vendor/agentd\n"),
                      text)
        self.assertTrue(text.startswith("# syntax=docker/dockerfile:1\nARG BASE=debian:12\n"
                                        "# >>> agentd build stage >>>"), text)
        self.assertIn("# <<< agentd build stage <<<\n\nFROM ${BASE}\n", text)
        self.assertIn("COPY --from=agentd-build /out/release/agentd /usr/local/bin/agentd\n",
                      text)
        self.assertEqual(append(self.path, "--build-stage", "vendor/agentd/")[1], "unchanged")
        self.assertEqual(append(self.path)[1], "updated")  # back to the context's binary
        self.assertNotIn("agentd-build", self.read())
        self.assertTrue(self.read().startswith("# syntax=docker/dockerfile:1\nARG BASE=debian:12\n"
                                               "FROM ${BASE}\n"), self.read())
        self.assertEqual(append(self.path, "--build-stage", "/abs")[0], 2)
        self.assertEqual(append(self.path, "--build-stage", "a", "--from", "s:/x")[0], 2)

    def test_bad_input_is_refused_without_touching_the_file(self):
        self.write("RUN true\n")
        self.assertEqual(append(self.path)[0], 2)
        self.assertEqual(self.read(), "RUN true\n")
        self.write("FROM x\n# >>> agentd >>>\nCOPY agentd /x\n")
        self.assertEqual(append(self.path)[0], 2)
        self.assertEqual(append(self.path, "--cmd", '"sleep 1"')[0], 2)
        self.write("FROM x\n")
        for args in (["--create-user", "Bad Name"], ["--create-user", "agent:0"],
                     ["--create-user", "agent:x"], ["--token-file", "relative/token"]):
            self.assertEqual(append(self.path, *args)[0], 2, args)
            self.assertEqual(self.read(), "FROM x\n")


@unittest.skipUnless(os.geteuid() == 0, "needs root for dockerd")
class DockerBuildTest(unittest.TestCase):
    """The Dockerfile path end to end on a real engine, when it can run."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="agentd-docker-")
        self.engine = dockerd.Dockerd()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.addCleanup(self.engine.close)
        self.engine.start()

    def test_an_image_built_with_the_stanza_runs_agentd_as_pid_1(self):
        d = self.engine.docker
        base = rootfs.busybox_tree(os.path.join(self.tmp, "base"))
        tar = subprocess.run(["tar", "-C", base, "-cf", "-", "."], capture_output=True,
                             check=True).stdout
        d("import", "-", "local/agentd-test-base", input=tar)
        ctx = os.path.join(self.tmp, "ctx")
        os.makedirs(ctx)
        subprocess.run(["strip", "-o", os.path.join(ctx, "agentd"), AGENTD_BIN], check=True)
        # The image's USER names a user the image lacks: --create-user
        # makes it, and the block keeps it the command's while agentd runs
        # as root. The token comes from a file mounted at run time.
        with open(os.path.join(ctx, "Dockerfile"), "w") as f:
            f.write('FROM local/agentd-test-base\n'
                    'USER agent\n'
                    'CMD ["sh", "-c", "echo image command started as $(id -un); '
                    'exec sleep 600"]\n')
        subprocess.run([APPEND, "--listen", "unix:/run/agentd-sock/agentd.sock",
                        "--create-user", "agent:1234", "--token-file", "/run/agentd-token",
                        os.path.join(ctx, "Dockerfile")], check=True, capture_output=True)
        d("build", "-q", "-t", "local/agentd-test", ctx)
        token_file = os.path.join(self.tmp, "token")
        with open(token_file, "w") as f:
            f.write("docker-token\n")
        os.chmod(token_file, 0o600)
        sock_dir = os.path.join(self.tmp, "sock")
        os.makedirs(sock_dir)
        d("run", "-d", "--name", "agentd-test", "--network", "none",
          "-v", sock_dir + ":/run/agentd-sock", "-v", token_file + ":/run/agentd-token:ro",
          "local/agentd-test")
        sock = os.path.join(sock_dir, "agentd.sock")
        deadline = time.monotonic() + 90  # a container start on a loaded CI machine
        while not os.path.exists(sock):
            self.assertLess(time.monotonic(), deadline, d("logs", "agentd-test").stderr)
            time.sleep(0.1)

        status, body = unix_http(sock, "GET", "/v1/health")
        self.assertEqual((status, json.loads(body)["status"]), (200, "ok"))
        self.assertTrue(json.loads(body)["bootstrapped"], "the token file bootstrapped it")
        check = subprocess.run([CHECK_GUEST, "--url", "unix:" + sock, "--token-file", token_file,
                                "--user", "agent"], capture_output=True, text=True, timeout=120)
        self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
        self.assertIn("already bootstrapped", check.stdout)
        self.assertIn("exec ok as agent", check.stdout)
        wrong = os.path.join(self.tmp, "wrong-token")
        with open(wrong, "w") as f:
            f.write("not-the-token\n")
        check = subprocess.run([CHECK_GUEST, "--url", "unix:" + sock, "--token-file", wrong],
                               capture_output=True, text=True, timeout=120)
        self.assertEqual(check.returncode, 1, check.stdout + check.stderr)
        self.assertIn("the token is not the daemon's", check.stderr)
        status, _ = unix_http(sock, "POST", "/v1/bootstrap", b'{"token":"docker-token"}')
        self.assertEqual(status, 200)
        auth = "Authorization: Bearer docker-token\r\n"
        status, body = unix_http(sock, "PUT", "/v1/execs/ps", b'{"command": "echo $PPID"}', auth)
        self.assertIn(status, (200, 201), body)
        state = {"state": "running"}
        while state["state"] != "exited":
            status, body = unix_http(sock, "GET", "/v1/execs/ps?wait_ms=10000", headers=auth)
            state = json.loads(body)
        self.assertEqual(state["exit_code"], 0)
        status, body = unix_http(sock, "GET", "/v1/execs/ps/stdout", headers=auth)
        self.assertEqual(body, b"1\n")  # the command's parent, agentd, is PID 1
        logs = d("logs", "agentd-test")
        self.assertIn(b"image command started as agent", logs.stdout + logs.stderr)

        # SIGTERM to agentd, forwarded to the command. Had agentd not ended
        # on it, the engine would SIGKILL it after the grace: exit code 137.
        # The exit code, not a clock, tells the two apart on a slow machine.
        d("stop", "-t", "60", "agentd-test")
        state = json.loads(d("inspect", "agentd-test").stdout)[0]["State"]
        self.assertEqual((state["ExitCode"], state["OOMKilled"]), (0, False),
                         d("logs", "agentd-test").stderr)
        d("rm", "agentd-test")


@unittest.skipUnless(os.geteuid() == 0 and SOURCE_BUILD,
                     "needs root for dockerd and AGENTD_TEST_DOCKER_SOURCE_BUILD=1")
class DockerSourceBuildTest(unittest.TestCase):
    """append-agentd --build-stage: one `docker build` compiles agentd from
    the source tree in the context and the task image runs it."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="agentd-docker-src-")
        self.engine = dockerd.Dockerd()
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.addCleanup(self.engine.close)
        self.engine.start()

    def test_a_task_image_with_the_build_stage_runs_the_agentd_built_in_it(self):
        d = self.engine.docker
        debian_image.import_debian12(self.engine)
        ctx = os.path.join(self.tmp, "ctx")
        os.makedirs(os.path.join(ctx, "agentd"))
        files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-c", "-o",
                                "--exclude-standard"], capture_output=True, check=True).stdout
        tar = subprocess.run(["tar", "-C", ROOT, "--null", "-T", "-", "-cf", "-"], input=files,
                             capture_output=True, check=True).stdout
        subprocess.run(["tar", "-C", os.path.join(ctx, "agentd"), "-xf", "-"], input=tar,
                       check=True)
        with open(os.path.join(ctx, "Dockerfile"), "w") as f:
            f.write('FROM debian:12\nCMD ["sleep", "600"]\n')
        r = subprocess.run([APPEND, "--build-stage", "agentd", os.path.join(ctx, "Dockerfile")],
                           capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        pins = subprocess.run([BUILD_RELEASE, "--print-pin-versions"], capture_output=True,
                              text=True, check=True).stdout.strip()
        epoch = subprocess.run(["git", "-C", ROOT, "log", "-1", "--format=%ct"],
                               capture_output=True, text=True, check=True).stdout.strip()
        d("build", "-q", "--network", "host", "--build-arg", "PIN_VERSIONS=" + pins,
          "--build-arg", "SOURCE_DATE_EPOCH=" + epoch, "-t", "local/agentd-src-test", ctx,
          timeout=3000)
        version = d("run", "--rm", "--network", "none", "--entrypoint",
                    "/usr/local/bin/agentd", "local/agentd-src-test", "--version")
        self.assertRegex(version.stdout.decode(), r"agentd \d+\.\d+\.\d+ \(protocol 1\)")
        d("create", "--name", "agentd-src-test", "local/agentd-src-test")
        d("cp", "agentd-src-test:/usr/local/bin/agentd", os.path.join(self.tmp, "agentd"))
        d("rm", "agentd-src-test")
        release = os.path.join(RELEASE, "agentd")
        if os.path.isfile(release):  # the native release of the same source and packages
            with open(release, "rb") as a, open(os.path.join(self.tmp, "agentd"), "rb") as b:
                self.assertTrue(a.read() == b.read(), "the stage's agentd is not the release's")


if __name__ == "__main__":
    unittest.main()
