"""A PEP 517 / PEP 660 build backend in the standard library only.

It exists so that ``pip install ./client/python`` works without PyPI: pip
builds in an isolated environment and would otherwise have to download
setuptools. It packs ``agentd_client/`` into a pure-Python wheel (or an
sdist, or an editable wheel that points at this directory).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "agentd_client"


def _project():
    with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    fields = {}
    for key in ("name", "version", "description", "requires-python"):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % re.escape(key), text, re.M)
        fields[key] = m.group(1) if m else ""
    return fields


def _dist_name():
    return _project()["name"].replace("-", "_")


def _metadata():
    p = _project()
    lines = ["Metadata-Version: 2.1", "Name: " + p["name"], "Version: " + p["version"],
             "Summary: " + p["description"], "License: Apache-2.0",
             "Requires-Python: " + p["requires-python"]]
    readme = os.path.join(HERE, "README.md")
    body = ""
    if os.path.exists(readme):
        lines.append("Description-Content-Type: text/markdown")
        with open(readme, encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _wheel_name():
    return "%s-%s-py3-none-any.whl" % (_dist_name(), _project()["version"])


def _dist_info():
    return "%s-%s.dist-info" % (_dist_name(), _project()["version"])


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(directory, files):
    """files: list of (archive name, bytes). Adds the dist-info and RECORD."""
    info = _dist_info()
    files = list(files) + [
        (info + "/METADATA", _metadata().encode("utf-8")),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: agentd-backend\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = [_record_line(n, d) for n, d in files] + [info + "/RECORD,,"]
    files.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    path = os.path.join(directory, _wheel_name())
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in files:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return os.path.basename(path)


def _package_files():
    root = os.path.join(HERE, PACKAGE)
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for fn in sorted(filenames):
            if fn.endswith((".py", ".typed")):
                full = os.path.join(dirpath, fn)
                with open(full, "rb") as f:
                    out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), f.read()))
    return out


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(PACKAGE + ".pth", (HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (_dist_name(), _project()["version"])
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tf:
        names = [n for n, _ in _package_files()] + ["pyproject.toml", "_build/backend.py"]
        if os.path.exists(os.path.join(HERE, "README.md")):
            names.append("README.md")
        for name in names:
            tf.add(os.path.join(HERE, name), arcname=base + "/" + name)
        pkg_info = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(base + "/PKG-INFO")
        ti.size = len(pkg_info)
        tf.addfile(ti, io.BytesIO(pkg_info))
    return os.path.basename(path)
