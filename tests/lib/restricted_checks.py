"""Checks of the restricted profile that hold with or without its seccomp
filter (capabilities, no_new_privs), shared by tests/test_exec_restricted.py
and tests/test_exec_restricted_no_seccomp.py so both daemons meet the same
assertions. `case` is the unittest.TestCase; `case.exec_ok(id, body)` runs
an exec and returns (exec object, stdout text)."""

import os
import shutil

from lib.exec_util import run

NOBODY = "nobody"


def check_setuid_root_binary_gives_nothing(case, python, tmp, nobody_uid):
    suid = os.path.join(tmp, "suid-python")
    shutil.copy(os.path.realpath(python), suid)
    os.chown(suid, 0, 0)
    os.chmod(suid, 0o4755)
    script = "import os; print(os.geteuid())"
    # The control: as nobody without the profile, the setuid bit works.
    _, out = case.exec_ok("u-suid", {"argv": [suid, "-c", script], "user": NOBODY})
    case.assertEqual(out.strip(), "0")
    _, out = case.exec_ok("r-suid", {"argv": [suid, "-c", script], "profile": "restricted"})
    case.assertEqual(out.strip(), str(nobody_uid))


def check_unshare_mount_namespace_refused(case, daemon):
    case.exec_ok("u-unshare", {"argv": ["unshare", "-m", "true"]})  # the control, as root
    obj, _, err = run(daemon, "r-unshare", {"argv": ["unshare", "-m", "true"],
                                            "profile": "restricted"})
    case.assertNotEqual(obj["exit_code"], 0)
    case.assertIn(b"Operation not permitted", err)
