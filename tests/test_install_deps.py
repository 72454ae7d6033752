"""scripts/install-deps installs every program the tests and benchmarks
call: each such program belongs to a package the script lists, to one
those pull in, or to one every Debian 12 root has (Priority: required, as
in a debootstrap minbase). Programs are found by reading the tests: argv
literals handed to subprocess, shutil.which() probes, and the helpers a
flag makes tar run (`tar --zstd` runs the zstd program)."""

import glob
import os
import re
import shutil
import subprocess
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

# A program another program runs for it, named by the flag that asks.
HELPERS_BY_FLAG = {"--zstd": "zstd", "--xz": "xz", "--bzip2": "bzip2", "--lzip": "lzip"}

# Built by the tree, not installed.
BUILT = {"agentd", "agentctl", "agentd-conformance"}

# Installed by the script outside its package list, with where.
INSTALLED_OTHERWISE = {
    "node": "by command (nodejs when absent) and Node.js 20 from the npm registry when older",
}

# Called only where present, on purpose, with the reason.
OPTIONAL = {
    "ssh-keygen": "bench/ssh_bench.py is orientation only and runs where sshd is installed",
}

ARGV_CALL = re.compile(
    r"(?:subprocess\.\w+|Popen|check_output|check_call)\(\s*\[\s*\"([A-Za-z0-9_.+-]+)\"")
ARGV_LIST = re.compile(r"^\s*(?:args|argv)\s*=\s*\[\s*\"([A-Za-z0-9_.+-]+)\"", re.M)
WHICH = re.compile(r"shutil\.which\(\"([A-Za-z0-9_.+-]+)\"\)")


def listed_packages(array="packages"):
    """The words of a bash array in install-deps, another array's expanded."""
    text = open(os.path.join(ROOT, "scripts", "install-deps")).read()
    body = re.search(r"^%s=\((.*?)^\)" % array, text, re.S | re.M).group(1)
    words = []
    for line in body.splitlines():
        for word in line.split("#", 1)[0].split():
            inner = re.fullmatch(r'"\$\{(\w+)\[@\]\}"', word)
            words += listed_packages(inner.group(1)) if inner else [word]
    return words


def programs_the_tests_call():
    found = set()
    files = glob.glob(os.path.join(ROOT, "tests", "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "bench", "*.py"))
    for path in files:
        if "node_modules" in path or os.path.samefile(path, __file__):
            continue
        text = open(path, encoding="utf-8").read()
        for pattern in (ARGV_CALL, ARGV_LIST, WHICH):
            found.update(pattern.findall(text))
        for flag, helper in HELPERS_BY_FLAG.items():
            if '"%s"' % flag in text:
                found.add(helper)
    return found - BUILT - set(OPTIONAL) - set(INSTALLED_OTHERWISE)


def owning_packages(program):
    path = shutil.which(program)
    if path is None:
        return None
    candidates = {path, os.path.realpath(path)}
    for p in list(candidates):  # merged /usr: dpkg may know either spelling
        if p.startswith("/usr/"):
            candidates.add(p[4:])
        else:
            candidates.add("/usr" + p)
    for p in candidates:
        r = subprocess.run(["dpkg-query", "-S", p], capture_output=True, text=True)
        if r.returncode == 0:
            return {line.split(":", 1)[0].split(",")[0].strip()
                    for line in r.stdout.splitlines() if ":" in line}
    return set()


def priority_required(package):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Priority} ${Essential}", package],
                       capture_output=True, text=True)
    return r.returncode == 0 and (r.stdout.startswith("required") or r.stdout.endswith("yes"))


@unittest.skipUnless(shutil.which("dpkg-query") and shutil.which("apt-cache"),
                     "needs a Debian system to ask which package owns a program")
class InstallDepsTest(unittest.TestCase):
    def test_the_scan_sees_the_programs_it_is_meant_to_see(self):
        # A scan that found nothing would pass the test below vacuously.
        programs = programs_the_tests_call()
        for expected in ("tar", "zstd", "debootstrap", "unshare"):
            self.assertIn(expected, programs)

    def test_every_program_the_tests_call_is_installed_by_the_script(self):
        listed = listed_packages()
        closure = subprocess.run(
            ["apt-cache", "depends", "--recurse", "--installed", "--no-recommends",
             "--no-suggests", "--no-conflicts", "--no-breaks", "--no-replaces",
             "--no-enhances", *listed], capture_output=True, text=True, check=True).stdout
        installed_with_them = {line.strip() for line in closure.splitlines()
                               if line and not line.startswith(" ")}
        missing = []
        for program in sorted(programs_the_tests_call()):
            owners = owning_packages(program)
            if owners is None:
                missing.append("%s: not on PATH" % program)
                continue
            if not owners:
                continue  # not from a package (a pyenv python3, a tool built here)
            if any(o in installed_with_them or priority_required(o) for o in owners):
                continue
            missing.append("%s: from %s, which scripts/install-deps does not install"
                           % (program, ", ".join(sorted(owners))))
        self.assertEqual(missing, [])


if __name__ == "__main__":
    unittest.main()
