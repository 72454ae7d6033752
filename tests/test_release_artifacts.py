"""What packaging/build-release produces (in $AGENTD_RELEASE_DIR, built by
the CTest fixture "packaging: release build"): a static-pie, stripped,
hardened binary that serves from an empty root, its SHA-256, a notice for
every library linked in, and a .deb that installs binary, unit and docs."""

import glob
import hashlib
import io
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from lib.agentd_test import health_over_unix_socket
from lib import rootfs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RELEASE = os.environ.get("AGENTD_RELEASE_DIR", "")
BINARY = os.path.join(RELEASE, "agentd")
NOTICES = os.path.join(ROOT, "packaging", "THIRD_PARTY_NOTICES.md")
AS_ROOT = os.geteuid() == 0 and shutil.which("unshare") is not None

# Each static archive the link may take code from, and the heading of its
# section in THIRD_PARTY_NOTICES.md (None: agentd's own code).
NOTICE_FOR_ARCHIVE = {
    "libdaemon_sys.a": None,
    "libdaemon_log.a": None,
    "libdaemon_metrics.a": None,
    "libdaemon_limits.a": None,
    "libdaemon_spool.a": None,
    "libdaemon_proc.a": None,
    "libdaemon_fs.a": None,
    "libdaemon_search.a": None,
    "libdaemon_auth.a": None,
    "libdaemon_server.a": None,
    "libdaemon_exec.a": None,
    "libdaemon_run.a": None,
    "libdaemon_config.a": None,
    "libdaemon_api.a": None,
    "libagentd_protocol.a": None,
    "libagentd_trees.a": None,
    "libagentd_llhttp.a": "llhttp",
    "libagentd_simdjson.a": "simdjson",
    "libarchive.a": "libarchive",
    "libz.a": "zlib",
    "libzstd.a": "Zstandard (zstd)",
    "libseccomp.a": "libseccomp",
    "libpcre2.a": "PCRE2",  # libpcre2-8.a, its version-like suffix dropped below
    "libnettle.a": "Nettle",
    "liburing.a": "liburing",
    "libc.a": "GNU C Library (glibc)",
    "libm.a": "GNU C Library (glibc)",
    "libpthread.a": "GNU C Library (glibc)",
    "libstdc++.a": "GCC runtime libraries (libstdc++, libgcc)",
    "libgcc.a": "GCC runtime libraries (libstdc++, libgcc)",
    "libgcc_eh.a": "GCC runtime libraries (libstdc++, libgcc)",
}


def readelf(*args):
    return subprocess.run(["readelf", "-W"] + list(args) + [BINARY], capture_output=True,
                          text=True, check=True).stdout


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


@unittest.skipUnless(os.path.isfile(BINARY), "no release build (AGENTD_RELEASE_DIR)")
class ReleaseBinaryTest(unittest.TestCase):
    def test_it_is_static_pie_with_full_relro_and_a_non_executable_stack(self):
        self.assertRegex(readelf("-h"), r"Type:\s+DYN")  # position independent
        segments = readelf("-l")
        self.assertNotIn("INTERP", segments)  # no dynamic loader: static
        self.assertIn("GNU_RELRO", segments)
        stack = re.search(r"GNU_STACK\s+.*\s(R?W?E?)\s+0x10$", segments, re.M)
        self.assertIsNotNone(stack, segments)
        self.assertNotIn("E", stack.group(1))
        dynamic = readelf("-d")
        self.assertNotIn("(NEEDED)", dynamic)
        self.assertRegex(dynamic, r"\(FLAGS\)\s+.*BIND_NOW")
        self.assertRegex(dynamic, r"\(FLAGS_1\)\s+.*NOW.*PIE")

    def test_it_is_stripped_and_its_sha256_is_published(self):
        self.assertNotIn(".symtab", readelf("-S"))
        digest = hashlib.sha256(read(BINARY, "rb")).hexdigest()
        self.assertEqual(read(BINARY + ".sha256"), digest + "  agentd\n")

    def test_the_daemons_own_code_has_stack_protector_and_fortify_checks(self):
        listing = subprocess.run(
            ["objdump", "-d", "--no-show-raw-insn", "-C", BINARY + "-unstripped"],
            capture_output=True, text=True, check=True).stdout
        protected, fortified, function = set(), set(), None
        for line in listing.splitlines():
            m = re.match(r"^[0-9a-f]+ <(.*)>:$", line)
            if m:
                function = m.group(1)
            elif function and function.startswith("agentd::") and "call" in line:
                if "<__stack_chk_fail" in line:
                    protected.add(function)
                if re.search(r"<__\w+_chk[@>]", line):
                    fortified.add(function)
        self.assertGreater(len(protected), 50, "-fstack-protector-strong is missing")
        self.assertTrue(fortified, "_FORTIFY_SOURCE checks are missing")

    def test_it_was_checked_reproducible_when_asked(self):
        info = read(os.path.join(RELEASE, "build-info.txt"))
        if os.environ.get("AGENTD_RELEASE_REPRODUCIBLE") != "1":
            # The build says it was not checked, rather than nothing.
            self.assertIn("reproducibility_checked=0\n", info)
            self.skipTest("the second build is asked for with AGENTD_TEST_REPRODUCIBLE=1 "
                          "scripts/test (docs/TESTING.md)")
        self.assertIn("reproducibility_checked=1\n", info)
        # The second build: in Docker (packaging/Dockerfile.build), or native
        # (asked for, or with the reason Docker could not make it).
        self.assertRegex(info, r"(?m)^second_build=(docker|native( \(docker: .+\))?)$")

    def test_every_linked_library_has_a_notice(self):
        archives = read(os.path.join(RELEASE, "linked-archives.txt")).split()
        self.assertIn("libc.a", archives)
        notices = read(NOTICES)
        for archive in archives:
            archive = re.sub(r"-[0-9.]+\.a$", ".a", archive)  # libm.a is libm-2.36.a
            if re.fullmatch(r"libdaemon_[a-z0-9_]+\.a", archive):
                continue  # a daemon layer (daemon/CMakeLists.txt): agentd's own code
            self.assertIn(archive, NOTICE_FOR_ARCHIVE,
                          archive + " is linked in: add its licence to THIRD_PARTY_NOTICES.md")
            heading = NOTICE_FOR_ARCHIVE[archive]
            if heading:
                self.assertIn("\n## " + heading + "\n", notices, archive)
        for header_only in ("Asio", "{fmt}"):
            self.assertIn("\n## " + header_only + "\n", notices)

    def test_addresses_are_randomized_on_every_start(self):
        bases = []
        for _ in range(2):
            state = tempfile.mkdtemp(prefix="agentd-aslr-")
            proc = subprocess.Popen([BINARY, "--listen", "127.0.0.1:0", "--state-dir", state],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            try:
                while b'"msg":"ready"' not in proc.stderr.readline():  # signals handled now
                    self.assertIsNone(proc.poll())
                bases.append(read("/proc/%d/maps" % proc.pid).split("-", 1)[0])
            finally:
                proc.terminate()
                status = proc.wait(20)
                proc.stderr.close()
                shutil.rmtree(state, ignore_errors=True)
            self.assertEqual(status, 0)
        self.assertNotEqual(bases[0], bases[1])

    @unittest.skipUnless(AS_ROOT, "needs root and unshare")
    def test_it_serves_health_from_an_empty_root_in_pid_1_mode(self):
        root = tempfile.mkdtemp(prefix="agentd-release-root-")
        try:
            shutil.copy(BINARY, os.path.join(root, "agentd"))
            sock = os.path.join(root, "agentd.sock")
            proc = subprocess.Popen(
                ["unshare", "--mount", "--pid", "--fork", "--kill-child", "chroot", root,
                 "/agentd", "--init", "--listen", "unix:/agentd.sock", "--state-dir", "/state"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                status, body = health_over_unix_socket(sock, proc)
                self.assertEqual(status, 200)
                self.assertIn(b'"status":"ok"', body.replace(b" ", b""))
            finally:
                proc.kill()
                proc.wait(10)
        finally:
            shutil.rmtree(root, ignore_errors=True)


def deb_path():
    found = glob.glob(os.path.join(RELEASE, "agentd_*.deb"))
    return found[0] if found else ""


@unittest.skipUnless(deb_path(), "no .deb in AGENTD_RELEASE_DIR")
class DebTest(unittest.TestCase):
    EXPECTED = {
        "./usr/sbin/agentd": "-rwxr-xr-x",
        "./lib/systemd/system/agentd.service": "-rw-r--r--",
        "./etc/default/agentd": "-rw-r--r--",
        "./usr/share/agentd/openrc/agentd": "-rwxr-xr-x",
        "./usr/share/agentd/openrc/agentd.confd": "-rw-r--r--",
        "./usr/share/doc/agentd/README.md": "-rw-r--r--",
        "./usr/share/doc/agentd/OPERATIONS.md": "-rw-r--r--",
        "./usr/share/doc/agentd/SECURITY.md": "-rw-r--r--",
        "./usr/share/doc/agentd/EMBEDDING.md": "-rw-r--r--",
        "./usr/share/doc/agentd/PROTOCOL.md": "-rw-r--r--",
        "./usr/share/doc/agentd/THIRD_PARTY_NOTICES.md": "-rw-r--r--",
        "./usr/share/doc/agentd/copyright": "-rw-r--r--",
    }

    def test_dpkg_deb_lists_binary_unit_defaults_and_docs_owned_by_root(self):
        listing = subprocess.run(["dpkg-deb", "-c", deb_path()], capture_output=True,
                                 text=True, check=True).stdout
        entries = {}
        for line in listing.splitlines():
            fields = line.split()
            entries[fields[-1]] = (fields[0], fields[1])
        for path, mode in self.EXPECTED.items():
            self.assertIn(path, entries, listing)
            self.assertEqual(entries[path], (mode, "root/root"), path)
        with tarfile.open(fileobj=io.BytesIO(subprocess.run(
                ["dpkg-deb", "--fsys-tarfile", deb_path()], capture_output=True,
                check=True).stdout)) as tar:
            packaged = tar.extractfile("./usr/sbin/agentd").read()
        self.assertEqual(packaged, read(BINARY, "rb"))

    def test_the_control_file_names_the_package_and_needs_nothing(self):
        fields = subprocess.run(["dpkg-deb", "-f", deb_path()], capture_output=True, text=True,
                                check=True).stdout
        self.assertRegex(fields, r"(?m)^Package: agentd$")
        self.assertRegex(fields, r"(?m)^Architecture: amd64$")
        self.assertNotRegex(fields, r"(?m)^(Pre-)?Depends:")
        conffiles = subprocess.run(["dpkg-deb", "-I", deb_path(), "conffiles"],
                                   capture_output=True, text=True, check=True).stdout
        self.assertEqual(conffiles.split(), ["/etc/default/agentd"])

    @unittest.skipUnless(AS_ROOT and shutil.which("debootstrap"), "needs root and debootstrap")
    def test_it_installs_and_removes_with_the_images_own_dpkg(self):
        work = tempfile.mkdtemp(prefix="agentd-deb-")
        self.addCleanup(shutil.rmtree, work, True)
        layer = os.path.join(work, "layer.tar")
        with tarfile.open(layer, "w") as tar:
            tar.add(deb_path(), "tmp/agentd.deb")
        script = ("dpkg -i /tmp/agentd.deb && /usr/sbin/agentd --version && "
                  "dpkg -s agentd | grep '^Status:' && dpkg -r agentd && "
                  "test ! -e /usr/sbin/agentd && test -e /etc/default/agentd && "
                  "dpkg --purge agentd && test ! -e /etc/default/agentd && echo removed")
        r = rootfs.overlay_run(rootfs.debian_minbase(), work, layer, ["sh", "-c", script])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertRegex(r.stdout, r"agentd \d+\.\d+\.\d+ \(protocol 1\)")
        self.assertIn("Status: install ok installed", r.stdout)
        self.assertTrue(r.stdout.rstrip().endswith("removed"), r.stdout)


def tools_deb_path():
    found = glob.glob(os.path.join(RELEASE, "agentd-tools_*.deb"))
    return found[0] if found else ""


@unittest.skipUnless(deb_path(), "no .deb in AGENTD_RELEASE_DIR")
class ToolsDebTest(unittest.TestCase):
    """agentd-tools: agentctl and agentd-conformance as a package of their
    own, built beside the daemon's (build-release --deb)."""

    EXPECTED = {
        "./usr/bin/agentctl": "-rwxr-xr-x",
        "./usr/bin/agentd-conformance": "-rwxr-xr-x",
        "./usr/share/man/man1/agentctl.1.gz": "-rw-r--r--",
        "./usr/share/man/man1/agentd-conformance.1.gz": "-rw-r--r--",
        "./usr/share/doc/agentd-tools/README.md": "-rw-r--r--",
        "./usr/share/doc/agentd-tools/CONFORMANCE.md": "-rw-r--r--",
        "./usr/share/doc/agentd-tools/THIRD_PARTY_NOTICES.md": "-rw-r--r--",
        "./usr/share/doc/agentd-tools/copyright": "-rw-r--r--",
    }

    def setUp(self):
        self.deb = tools_deb_path()
        self.assertTrue(self.deb, "build-release --deb made agentd_*.deb but no agentd-tools_*.deb")

    def test_it_holds_both_commands_their_man_pages_and_docs_owned_by_root(self):
        listing = subprocess.run(["dpkg-deb", "-c", self.deb], capture_output=True,
                                 text=True, check=True).stdout
        entries = {line.split()[-1]: (line.split()[0], line.split()[1])
                   for line in listing.splitlines()}
        for path, mode in self.EXPECTED.items():
            self.assertIn(path, entries, listing)
            self.assertEqual(entries[path], (mode, "root/root"), path)

    def test_the_control_file_depends_on_the_shared_libraries_the_commands_link(self):
        fields = subprocess.run(["dpkg-deb", "-f", self.deb], capture_output=True, text=True,
                                check=True).stdout
        self.assertRegex(fields, r"(?m)^Package: agentd-tools$")
        self.assertRegex(fields, r"(?m)^Architecture: amd64$")
        depends = re.search(r"(?m)^Depends: (.*)$", fields)
        self.assertIsNotNone(depends, fields)
        names = {d.strip().split()[0] for d in depends.group(1).split(",")}
        for lib in ("libc6", "libstdc++6", "libarchive13"):
            self.assertIn(lib, names, fields)

    def test_the_packaged_commands_run_and_their_man_pages_name_them(self):
        work = tempfile.mkdtemp(prefix="agentd-tools-deb-")
        self.addCleanup(shutil.rmtree, work, True)
        subprocess.run(["dpkg-deb", "-x", self.deb, work], check=True)
        for tool in ("agentctl", "agentd-conformance"):
            r = subprocess.run([os.path.join(work, "usr", "bin", tool), "--help"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn(tool, r.stdout + r.stderr)
            page = subprocess.run(["zcat", os.path.join(work, "usr", "share", "man", "man1",
                                                        tool + ".1.gz")],
                                  capture_output=True, text=True, check=True).stdout
            self.assertRegex(page, r"(?m)^\.TH " + re.escape(tool.upper()) + " ")


if __name__ == "__main__":
    unittest.main()
