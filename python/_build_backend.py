"""The build backend of the tilec Python package (PEP 517 and PEP 660),
standard library only, so `pip install ./python` (or `pip install .` from the
repository root), `pip install -e ./python` and `python -m build` need
nothing from PyPI, even with build isolation.

Hooks: build_wheel, build_sdist, build_editable, the three
get_requires_for_build_* (nothing) and prepare_metadata_for_build_wheel and
_editable.

A wheel holds the package (every .py file of python/tilec and py.typed),
the native library it loads first (tilec/libtilec.so), the optional
stable-ABI extension beside it, and the `tilec` command beside them (the
compile worker parallel builds start, found next to the library), each
stored once and stripped; the environment's `tilec` script is an entry
point (tilec._cli) that runs that binary. The wheel is tagged
cp3X-abi3-PLATFORM when it holds the extension (built for the stable ABI of
Python 3.X, read from _native.c's Py_LIMITED_API), else py3-none-PLATFORM.
The native parts are built by the repository's Makefile (`make native`);
TILEC_MAKE (default "make") and TILEC_MAKEFLAGS (default "-j2") say how.

An editable install builds the same native parts in the source tree's
build/ and installs a .pth naming python/: the package then loads
build/lib/libtilec.so (_library._library_candidates) and the script runs
build/bin/tilec. An sdist holds the files of the source tree that git
tracks (every file, less the benchmark results and CI's script) with
PKG-INFO; it builds with its own pyproject.toml.

The version is include/tilec/core.h's TILEC_VERSION_STRING, checked against
tilec/_version.py. docs/install.md says more."""
import base64
import hashlib
import io
import os
import re
import shlex
import subprocess
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "tilec"
_PY = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(_PY)
SUMMARY = "Build and launch .tile GPU kernels from Python (ctypes over libtilec)"
EXTENSION = "tilec_native.abi3.so"
REDIS_SHIM = "libtilec_redis.so"
# the files of the tree an sdist leaves out (git-tracked paths, prefixes)
SDIST_SKIP = ("bench/results/", ".ci/", ".gitignore")
ENTRY_POINTS = "[console_scripts]\ntilec = tilec._cli:main\n"
EPOCH = (2020, 1, 1, 0, 0, 0)


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
    """Build libtilec.so, the command and (where Python's headers are) the
    extension; their paths (the extension's None when it was not built)."""
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
    ext = os.path.join(build, "lib", EXTENSION)
    return lib, cmd_path, ext if os.path.isfile(ext) else None


def _redis_shim():
    """The Redis tier's client shim `make native` built (where
    libhiredis-dev is), or None: libtilec loads it from beside itself."""
    shim = os.path.join(ROOT, "build", "lib", REDIS_SHIM)
    return shim if os.path.isfile(shim) else None


def _limited_api():
    """The minor version of Python whose stable ABI _native.c is built for
    (its Py_LIMITED_API), e.g. 11."""
    with open(os.path.join(_PY, "tilec", "_native.c")) as f:
        m = re.search(r"^#define Py_LIMITED_API 0x03([0-9a-fA-F]{2})", f.read(), re.M)
    if not m:
        raise BuildError("tilec: python/tilec/_native.c defines no Py_LIMITED_API 0x03XX....: "
                         "the extension must use the stable ABI")
    return int(m.group(1), 16)


def _platform():
    return re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _tag(with_extension):
    if with_extension:
        return f"cp3{_limited_api()}-abi3-{_platform()}"
    return "py3-none-" + _platform()


def _metadata(v):
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {v}\nSummary: {SUMMARY}\n"
            "Requires-Python: >=3.8\nLicense: see the source tree\n")


def _stripped(path, tmp):
    """A stripped copy of the binary at path (debug information and local
    symbols gone; the dynamic symbols, which plugins and ctypes use, kept)."""
    out = os.path.join(tmp, os.path.basename(path))
    strip = os.environ.get("STRIP", "strip")
    r = subprocess.run([strip, "--strip-unneeded", "-o", out, path], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode:
        raise BuildError(f"tilec: {strip} --strip-unneeded {path} failed:\n{r.stdout}")
    return out


class _Wheel:
    """A wheel being written: files with their RECORD lines."""

    def __init__(self, path):
        self.path = path
        self.zip = zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED)
        self.record = []

    def add(self, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=EPOCH)
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.record.append(f"{arcname},sha256={digest},{len(data)}")

    def add_file(self, arcname, path, mode=0o644):
        with open(path, "rb") as f:
            self.add(arcname, f.read(), mode)

    def dist_info(self, v, tag):
        dist_info = f"{NAME}-{v}.dist-info"
        self.add(f"{dist_info}/METADATA", _metadata(v).encode())
        self.add(f"{dist_info}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: tilec _build_backend\n"
                                         f"Root-Is-Purelib: false\nTag: {tag}\n").encode())
        self.add(f"{dist_info}/entry_points.txt", ENTRY_POINTS.encode())
        self.record.append(f"{dist_info}/RECORD,,")
        self.zip.writestr(zipfile.ZipInfo(f"{dist_info}/RECORD", date_time=EPOCH), "\n".join(self.record) + "\n")

    def close(self):
        self.zip.close()

    def abandon(self):
        self.zip.close()
        os.unlink(self.path)


def _package_files():
    """(arcname, path) of every .py file of python/tilec, and py.typed."""
    pkg = os.path.join(_PY, "tilec")
    for dirpath, dirnames, filenames in os.walk(pkg):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py") or name == "py.typed":
                path = os.path.join(dirpath, name)
                yield os.path.relpath(path, _PY).replace(os.sep, "/"), path


def _write_dist_info(directory, v):
    dist_info = f"{NAME}-{v}.dist-info"
    os.makedirs(os.path.join(directory, dist_info), exist_ok=True)
    with open(os.path.join(directory, dist_info, "METADATA"), "w") as f:
        f.write(_metadata(v))
    with open(os.path.join(directory, dist_info, "entry_points.txt"), "w") as f:
        f.write(ENTRY_POINTS)
    return dist_info


def _write_wheel(wheel_directory, v, tag, fill):
    filename = f"{NAME}-{v}-{tag}.whl"
    os.makedirs(wheel_directory, exist_ok=True)
    w = _Wheel(os.path.join(wheel_directory, filename))
    try:
        fill(w)
        w.dist_info(v, tag)
        w.close()
    except BaseException:
        w.abandon()
        raise
    return filename


def _sdist_files():
    """The source tree's files an sdist holds, as paths relative to ROOT:
    those git tracks (less SDIST_SKIP); without git (a tree unpacked from
    an sdist), every file but build outputs."""
    r = None
    if os.path.exists(os.path.join(ROOT, ".git")):
        r = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if r is not None and r.returncode == 0:
        names = [n for n in r.stdout.decode().split("\0") if n]
    else:
        names = []
        for dirpath, dirnames, filenames in os.walk(ROOT):
            rel = os.path.relpath(dirpath, ROOT)
            dirnames[:] = sorted(d for d in dirnames if d not in (".git", "__pycache__")
                                 and not (rel == "." and (d.startswith("build") or d.startswith(".gpu"))))
            names += [os.path.normpath(os.path.join(rel, f)) for f in sorted(filenames)
                      if not f.endswith((".o", ".d", ".pyc")) and f != "PKG-INFO"]
    return sorted(n for n in names if not n.startswith(SDIST_SKIP) and os.path.isfile(os.path.join(ROOT, n)))


# ---- PEP 517 hooks ----

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, version())


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _write_dist_info(metadata_directory, version())


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    v = version()
    lib, command, ext = _native()

    def fill(w):
        for arcname, path in _package_files():
            w.add_file(arcname, path)
        with tempfile.TemporaryDirectory(prefix="tilec_wheel_") as tmp:
            w.add_file("tilec/libtilec.so", _stripped(lib, tmp), 0o755)
            # the command, once: the compile worker found beside the library,
            # and what the environment's `tilec` script (tilec._cli) runs
            w.add_file("tilec/tilec", _stripped(command, tmp), 0o755)
            if ext:  # the optional extension, found beside the library (docs/python.md)
                w.add_file("tilec/" + EXTENSION, _stripped(ext, tmp), 0o755)
            shim = _redis_shim()
            if shim:  # the Redis tier's client, found beside the library (docs/runtime.md)
                w.add_file("tilec/" + REDIS_SHIM, _stripped(shim, tmp), 0o755)

    return _write_wheel(wheel_directory, v, _tag(ext is not None), fill)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    v = version()
    _, _, ext = _native()  # the package then loads the tree's build/lib (and runs build/bin/tilec)

    def fill(w):
        w.add(f"_{NAME}_editable.pth", (_PY + "\n").encode())

    return _write_wheel(wheel_directory, v, _tag(ext is not None), fill)


def build_sdist(sdist_directory, config_settings=None):
    v = version()
    base = f"{NAME}-{v}"
    filename = base + ".tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    path = os.path.join(sdist_directory, filename)

    def info(name, size, mode):
        ti = tarfile.TarInfo(f"{base}/{name}")
        ti.size, ti.mode, ti.mtime = size, mode, 1577836800  # 2020-01-01, as the wheel's dates
        ti.uname = ti.gname = "root"
        return ti

    try:
        with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
            pkg_info = _metadata(v).encode()
            tar.addfile(info("PKG-INFO", len(pkg_info), 0o644), io.BytesIO(pkg_info))
            for name in _sdist_files():
                full = os.path.join(ROOT, name)
                mode = 0o755 if os.access(full, os.X_OK) else 0o644
                with open(full, "rb") as f:
                    tar.addfile(info(name, os.path.getsize(full), mode), f)
    except BaseException:
        if os.path.exists(path):
            os.unlink(path)
        raise
    return filename
