"""The build backend of the tilec Python package (PEP 517), standard library
only, so `pip install ./python` (or `pip install .` from the repository
root) needs nothing from PyPI, even with build isolation.

A wheel holds the package (every .py file of python/tilec), the native
library it loads first (tilec/libtilec.so) and the `tilec` command beside it
(the compile worker parallel builds start, found next to the library), which
is also installed as the environment's `tilec` script. The native parts are
built by the repository's Makefile (`make native`); TILEC_MAKE (default
"make") and TILEC_MAKEFLAGS (default "-j2") say how. The version is
include/tilec/core.h's TILEC_VERSION_STRING, checked against
tilec/_version.py. docs/install.md says more."""
import base64
import hashlib
import os
import re
import shlex
import subprocess
import sysconfig
import zipfile

NAME = "tilec"
_PY = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(_PY)
SUMMARY = "Build and launch .tile GPU kernels from Python (ctypes over libtilec)"


class BuildError(RuntimeError):
    pass


def _header_version():
    path = os.path.join(ROOT, "include", "tilec", "core.h")
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise BuildError(f"tilec: cannot read {path} ({e}): build the package from a tilec source tree") from None
    m = re.search(r'^#define TILEC_VERSION_STRING "([^"]+)"$', text, re.M)
    if not m:
        raise BuildError(f"tilec: no TILEC_VERSION_STRING in {path}")
    return m.group(1)


def version():
    """The version, after checking that tilec/_version.py says the same."""
    v = _header_version()
    with open(os.path.join(_PY, "tilec", "_version.py")) as f:
        m = re.search(r'^__version__ = "([^"]+)"$', f.read(), re.M)
    if not m or m.group(1) != v:
        raise BuildError(f"tilec: python/tilec/_version.py says {m.group(1) if m else 'nothing'}, "
                         f"include/tilec/core.h says {v}: make them agree")
    return v


def _native():
    """Build libtilec.so and the command; their paths."""
    build = os.path.join(ROOT, "build")
    cmd = [os.environ.get("TILEC_MAKE", "make"), "-C", ROOT, *shlex.split(os.environ.get("TILEC_MAKEFLAGS", "-j2")),
           "--no-print-directory", "BUILD=" + build, "native"]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        raise BuildError(f"tilec: building the native library failed ({' '.join(cmd)}):\n{r.stdout[-4000:]}")
    lib = os.path.realpath(os.path.join(build, "lib", "libtilec.so"))
    cmd_path = os.path.join(build, "bin", "tilec")
    for p in (lib, cmd_path):
        if not os.path.isfile(p):
            raise BuildError(f"tilec: `make native` made no {p}")
    return lib, cmd_path


def _metadata(v):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {v}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.8\nLicense: see the source tree\n")


def _tag():
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


class _Wheel:
    """A wheel being written: files with their RECORD lines."""

    def __init__(self, path):
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{arcname},sha256={digest},{len(data)}")

    def add_file(self, arcname, path, mode=0o644):
        with open(path, "rb") as f:
            self.add(arcname, f.read(), mode)

    def close(self, dist_info):
        self.record.append(f"{dist_info}/RECORD,,")
        self.zip.writestr(f"{dist_info}/RECORD", "\n".join(self.record) + "\n")
        self.zip.close()


def _package_files():
    pkg = os.path.join(_PY, "tilec")
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, _PY).replace(os.sep, "/"), path


def _write_dist_info(directory, v):
    dist_info = f"{NAME}-{v}.dist-info"
    os.makedirs(os.path.join(directory, dist_info), exist_ok=True)
    with open(os.path.join(directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata(v))
    return dist_info


# ---- PEP 517 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, version())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    v = version()
    lib, command = _native()
    dist_info = f"{NAME}-{v}.dist-info"
    filename = f"{NAME}-{v}-{_tag()}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    w = _Wheel(os.path.join(wheel_directory, filename))
    try:
        for arcname, path in _package_files():
            w.add_file(arcname, path)
        w.add_file("tilec/libtilec.so", lib, 0o755)
        w.add_file("tilec/tilec", command, 0o755)  # the compile worker, found beside the library
        ext = os.path.join(os.path.dirname(lib), "tilec_native.abi3.so")
        if os.path.isfile(ext):  # the optional extension, found beside the library (docs/python.md)
            w.add_file("tilec/tilec_native.abi3.so", ext, 0o755)
        w.add_file(f"{NAME}-{v}.data/scripts/tilec", command, 0o755)
        w.add(f"{dist_info}/METADATA", _metadata(v).encode())
        w.add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: tilec _build_backend\n"
                                      f"Root-Is-Purelib: false\nTag: {_tag()}\n").encode())
        w.close(dist_info)
    except BaseException:
        w.zip.close()
        os.unlink(os.path.join(wheel_directory, filename))
        raise
    return filename
