"""A hostile workload: run as an exec (as a non-root user), it tries to reach
the daemon's token, descriptors, state and process, and another exec's
process, and prints one JSON report {attempt: outcome}.

Outcomes: "denied" (the kernel or the daemon refused), "absent" (looked for,
not there), or anything else, which names what leaked. Standard library
only; argv[1] is a JSON object with the targets (see tests/test_hostile_workload.py).
"""

import ctypes
import errno
import http.client
import json
import os
import signal
import sys

PTRACE_ATTACH = 16
PTRACE_SEIZE = 0x4206


def inherited_fds():
    """Open descriptors above 2, checked before this script opens anything."""
    found = []
    for fd in range(3, 4096):
        try:
            os.fstat(fd)
        except OSError:
            continue
        found.append(fd)
    return found


def read_attempt(path, token):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except PermissionError:
        return "denied"
    except FileNotFoundError:
        return "absent"
    return "leaked-token" if token.encode() in data else "readable"


def list_attempt(path):
    try:
        return "listed:%d" % len(os.listdir(path))
    except PermissionError:
        return "denied"


def write_attempt(path):
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    except PermissionError:
        return "denied"
    except FileNotFoundError:
        return "absent"
    try:
        os.write(fd, b"INJECTED\n")
        return "written"
    finally:
        os.close(fd)


def signal_attempt(pid, signo):
    try:
        os.kill(pid, signo)
    except PermissionError:
        return "denied"
    except ProcessLookupError:
        return "absent"
    return "delivered"


def ptrace_attempt(pid, request):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(request, pid, None, None) == 0:
        return "attached"
    return "denied" if ctypes.get_errno() in (errno.EPERM, errno.EACCES) else (
        "error:" + errno.errorcode.get(ctypes.get_errno(), "?"))


def parent_of(pid):
    """The parent pid of pid, from /proc/PID/stat (after the command's ')')."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            return int(f.read().rsplit(b")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return -1


def http_attempt(port, method, path, body=None, token=None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Authorization": "Bearer " + token} if token else {}
    conn.request(method, path, body=body, headers=headers)
    status = conn.getresponse().status
    conn.close()
    return "denied" if status in (401, 409) else "status:%d" % status


def main():
    fds = inherited_fds()
    t = json.loads(sys.argv[1])
    # The token travels reversed, so this script's own argv does not hold it.
    token, daemon, victim = t["token_reversed"][::-1], t["daemon_pid"], t["victim_pid"]
    report = {"uid": os.getuid(), "inherited_fds": fds or "absent"}
    env_blob = "\0".join("%s=%s" % kv for kv in os.environ.items())
    report["token_in_env"] = "leaked-token" if token in env_blob else "absent"
    report["agentd_vars_in_env"] = [k for k in os.environ if k.startswith("AGENTD_")] or "absent"
    report["token_in_argv"] = read_attempt("/proc/self/cmdline", token).replace(
        "readable", "absent")
    # The parent is the daemon, or (by default) the exec's holder: a clone of
    # the daemon that shares its memory, so it is attacked the same way.
    parent = os.getppid()
    report["parent"] = "daemon" if parent == daemon else (
        "holder" if parent_of(parent) == daemon else "other:%d" % parent)
    if report["parent"] == "holder":
        report["holder_environ"] = read_attempt("/proc/%d/environ" % parent, token)
        report["holder_mem"] = read_attempt("/proc/%d/mem" % parent, token)
        report["holder_fd_dir"] = list_attempt("/proc/%d/fd" % parent)
        report["kill_holder"] = signal_attempt(parent, signal.SIGKILL)
        report["stop_holder"] = signal_attempt(parent, signal.SIGSTOP)
        report["ptrace_attach_holder"] = ptrace_attempt(parent, PTRACE_ATTACH)
    report["daemon_environ"] = read_attempt("/proc/%d/environ" % daemon, token)
    report["daemon_cmdline"] = read_attempt("/proc/%d/cmdline" % daemon, token).replace(
        "readable", "absent")
    report["daemon_mem"] = read_attempt("/proc/%d/mem" % daemon, token)
    report["daemon_fd_dir"] = list_attempt("/proc/%d/fd" % daemon)
    report["daemon_fd_0"] = read_attempt("/proc/%d/fd/0" % daemon, token)
    report["daemon_root"] = list_attempt("/proc/%d/root/" % daemon)
    report["token_file"] = read_attempt(t["token_file"], token)
    report["state_dir"] = list_attempt(t["state_dir"])
    report["victim_spool"] = read_attempt(t["victim_spool"], token)
    report["victim_meta"] = read_attempt(t["victim_meta"], token)
    report["victim_stdout_inject"] = write_attempt("/proc/%d/fd/1" % victim)
    report["victim_environ"] = read_attempt("/proc/%d/environ" % victim, token)
    report["kill_daemon"] = signal_attempt(daemon, signal.SIGKILL)
    report["stop_daemon"] = signal_attempt(daemon, signal.SIGSTOP)
    report["kill_victim"] = signal_attempt(victim, signal.SIGKILL)
    report["kill_victim_group"] = signal_attempt(-victim, signal.SIGKILL)
    report["ptrace_attach_daemon"] = ptrace_attempt(daemon, PTRACE_ATTACH)
    report["ptrace_seize_daemon"] = ptrace_attempt(daemon, PTRACE_SEIZE)
    report["api_without_token"] = http_attempt(t["port"], "GET", "/v1/execs")
    report["api_with_guessed_token"] = http_attempt(t["port"], "GET", "/v1/execs",
                                                    token="guess-" + "0" * 32)
    report["bootstrap_takeover"] = http_attempt(t["port"], "POST", "/v1/bootstrap",
                                                body=json.dumps({"token": "mine"}))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
