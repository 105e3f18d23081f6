"""The Python package installed as a user installs it: `pip install ./python`
into a fresh virtual environment, offline (--no-index: the build backend
needs nothing from PyPI), then used from outside the source tree with no
PYTHONPATH or TILEC_LIB: the bundled libtilec.so is the one loaded, the
version is the header's, kernels compile through the bundled library and
compile worker, the README's tour runs as far as a machine without a GPU
allows (all of it on a GPU), and the CPU suite passes against the installed
package; without NVRTC (TILEC_NVRTC naming no file) the package imports,
the command checks, and a compile says what is missing. The wheel (built
from the repository root) is tagged for the stable ABI of its extension,
holds py.typed, and each binary once, stripped, with no run path. Then
`pip install -e ./python` (PEP 660) in the same environment runs the
tree's package and build, and `python -m build --sdist --wheel` makes an
sdist that holds what `make native` needs. Run by make test."""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import unittest
import zipfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def header_version():
    with open(os.path.join(ROOT, "include", "tilec", "core.h")) as f:
        return re.search(r'^#define TILEC_VERSION_STRING "([^"]+)"$', f.read(), re.M).group(1)


# What runs inside the virtual environment, from a directory outside the tree.
TOUR = r'''
import ctypes, os, runpy, sys
root, version = sys.argv[1], sys.argv[2]
import tilec
site = os.path.dirname(tilec.__file__)
assert "site-packages" in site, tilec.__file__
assert tilec.__version__ == version, (tilec.__version__, version)
assert tilec.version() == version, tilec.version()
lib = tilec._load_library()
assert os.path.realpath(lib._name) == os.path.join(os.path.realpath(site), "libtilec.so"), lib._name
assert os.access(os.path.join(site, "tilec"), os.X_OK), "no compile worker beside the library"

# every kernel of the softmax example compiled by the bundled library, no device
P = ctypes.c_void_p
ctx, mod, prog = lib.tilec_ctx_new(), P(), P()
assert lib.tilec_parse_file(ctx, os.path.join(root, "examples", "softmax.tile").encode(), ctypes.byref(mod)) == 0
opts = tilec._library._BuildOptions(b"sm_90", 2, None, None, None)
st = lib.tilec_program_build(ctx, None, mod, ctypes.byref(opts), ctypes.byref(prog))
assert st == 0, st
stats = tilec._library._Stats()
lib.tilec_program_get_stats(prog, ctypes.byref(stats))
assert stats.kernels == 3 and stats.nvrtc_compiles == 3, (stats.kernels, stats.nvrtc_compiles)
lib.tilec_program_free(prog)
lib.tilec_module_free(mod)
lib.tilec_ctx_free(ctx)
print("compiled", stats.kernels, "kernels")

# the README's tour
try:
    m = tilec.load(os.path.join(root, "examples", "softmax.tile"))
except tilec.TilecError as e:
    assert "no CUDA driver" in str(e) or "no CUDA device" in str(e), str(e)
    print("tour: no GPU:", e)
else:
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        x = torch.randn(4096, 1024, device="cuda")
        y = tilec.Buffer((4096, 1024), "f32")
        m.kernel("softmax", 0)(x, y, 4096, 1024)
        torch.testing.assert_close(torch.from_dlpack(y), torch.softmax(x, -1))
        print("tour: ran on the GPU")

# the CPU suite, against the installed package (imported first, so the
# suite's own path into the source tree is not used)
sys.argv = ["test_cpu.py", "-q"]
try:
    runpy.run_path(os.path.join(root, "tests", "python", "test_cpu.py"), run_name="__main__")
except SystemExit as e:
    assert not e.code, "test_cpu.py failed against the installed package"
assert sys.modules["tilec"].__file__ == tilec.__file__
'''

# What runs inside the virtual environment with TILEC_NVRTC naming no file.
NO_NVRTC = r'''
import ctypes, os, sys
import tilec
from tilec._library import _BuildOptions, diagnostics
assert tilec.version() == tilec.__version__
lib = tilec._load_library()
P = ctypes.c_void_p
ctx, mod, prog = lib.tilec_ctx_new(), P(), P()
assert lib.tilec_parse_file(ctx, os.path.join(sys.argv[1], "examples", "softmax.tile").encode(), ctypes.byref(mod)) == 0
opts = _BuildOptions(b"sm_90", 1, None, None, None)
assert lib.tilec_program_build(ctx, None, mod, ctypes.byref(opts), ctypes.byref(prog)) != 0, "compiled without NVRTC"
text = diagnostics(ctx)
print("compile without NVRTC:", text[text.index("NVRTC could not be loaded"):])
'''


class VersionTests(unittest.TestCase):
    def test_version_has_one_place(self):
        sys.path.insert(0, os.path.join(ROOT, "python"))
        try:
            import _build_backend
            self.assertEqual(_build_backend.version(), header_version())
        finally:
            sys.path.pop(0)


class InstallTests(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="tilec_pip_")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def env(self):
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "TILEC_LIB", "TILEC_COMPILE_WORKER", "VIRTUAL_ENV")}
        env["TILEC_CACHE_DIR"] = os.path.join(self.tmp, "cache")
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        return env

    def run_ok(self, cmd, extra=None, **kw):
        env = self.env()
        env.update(extra or {})
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, **kw)
        self.assertEqual(r.returncode, 0, f"{' '.join(cmd)}:\n{r.stdout[-6000:]}")
        return r.stdout

    def install(self, source):
        venv = os.path.join(self.tmp, "venv")
        self.run_ok([sys.executable, "-m", "venv", venv])
        py = os.path.join(venv, "bin", "python")
        self.run_ok([py, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", source], cwd=ROOT)
        return venv, py

    def test_pip_install_then_the_tour(self):
        venv, py = self.install("./python")
        out = self.run_ok([py, "-c", TOUR, ROOT, header_version()], cwd=self.tmp)
        self.assertIn("compiled 3 kernels", out)
        # the command comes with the package
        self.assertEqual(self.run_ok([os.path.join(venv, "bin", "tilec"), "--version"]).strip(),
                         "tilec " + header_version())
        # from the repository root: the same wheel
        wheels = os.path.join(self.tmp, "wheels")
        self.run_ok([py, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index", "--no-build-isolation", "-w", wheels,
                     "."], cwd=ROOT)
        (name,) = os.listdir(wheels)
        self.check_wheel(os.path.join(wheels, name))
        site = self.run_ok([py, "-c", "import os, tilec; print(os.path.dirname(tilec.__file__))"],
                           cwd=self.tmp).strip()
        self.assertTrue(os.path.isfile(os.path.join(site, "py.typed")), "py.typed is not installed (PEP 561)")

        # no NVRTC: the package imports and the command checks; a compile says what is missing
        nonv = os.path.join(self.tmp, "no-cuda", "libnvrtc.so.13")
        out = self.run_ok([py, "-c", NO_NVRTC, ROOT], cwd=self.tmp, extra={"TILEC_NVRTC": nonv})
        self.assertIn("compile without NVRTC: NVRTC could not be loaded from TILEC_NVRTC=" + nonv, out)
        tilec_cmd = os.path.join(venv, "bin", "tilec")
        self.assertEqual(self.run_ok([tilec_cmd, "--version"], extra={"TILEC_NVRTC": nonv}).strip(),
                         "tilec " + header_version())
        self.run_ok([tilec_cmd, os.path.join(ROOT, "examples", "softmax.tile"), "--check"], extra={"TILEC_NVRTC": nonv})

        # an editable install (PEP 660) replaces it: the tree's package, library and command
        self.run_ok([py, "-m", "pip", "install", "-q", "--no-index", "--no-build-isolation", "-e", "./python"],
                    cwd=ROOT)
        out = self.run_ok([py, "-c", "import os, tilec; print(os.path.realpath(tilec.__file__)); "
                           "print(os.path.realpath(tilec._load_library()._name))"], cwd=self.tmp)
        self.assertEqual(out.split(), [os.path.join(ROOT, "python", "tilec", "__init__.py"),
                                       os.path.realpath(os.path.join(ROOT, "build", "lib", "libtilec.so"))])
        self.assertEqual(self.run_ok([tilec_cmd, "--version"]).strip(), "tilec " + header_version())
        self.assertFalse(os.path.exists(os.path.join(site, "libtilec.so")), "the wheel's files were left behind")

    def check_wheel(self, path):
        """The wheel's name, tag and contents (docs/install.md's table)."""
        v = header_version()
        ext = os.path.isfile(os.path.join(ROOT, "build", "lib", "tilec_native.abi3.so"))
        shim = os.path.isfile(os.path.join(ROOT, "build", "lib", "libtilec_redis.so"))
        with open(os.path.join(ROOT, "python", "tilec", "_native.c")) as f:
            minor = int(re.search(r"^#define Py_LIMITED_API 0x03([0-9a-f]{2})", f.read(), re.M).group(1), 16)
        plat = re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())
        tag = f"cp3{minor}-abi3-{plat}" if ext else f"py3-none-{plat}"
        self.assertEqual(os.path.basename(path), f"tilec-{v}-{tag}.whl")
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
            wheel_meta = z.read(f"tilec-{v}.dist-info/WHEEL").decode()
            entry_points = z.read(f"tilec-{v}.dist-info/entry_points.txt").decode()
            record = z.read(f"tilec-{v}.dist-info/RECORD").decode()
            unpacked = os.path.join(self.tmp, "unpacked")
            z.extractall(unpacked)
        self.assertIn(f"Tag: {tag}\n", wheel_meta)
        self.assertIn("tilec = tilec._cli:main", entry_points)
        self.assertEqual(len(names), len(set(names)), "a file is stored twice")
        want = {"tilec/__init__.py", "tilec/_version.py", "tilec/_cli.py", "tilec/py.typed", "tilec/libtilec.so",
                "tilec/tilec", f"tilec-{v}.dist-info/RECORD"} | ({"tilec/tilec_native.abi3.so"} if ext else set()) \
            | ({"tilec/libtilec_redis.so"} if shim else set())
        self.assertLessEqual(want, set(names))
        self.assertEqual([n for n in names if ".data/" in n], [], "files outside the package (the command twice)")
        for line in record.splitlines():  # every file's hash and size
            name, digest, size = line.split(",")
            if name.endswith("/RECORD"):
                continue
            with open(os.path.join(unpacked, name), "rb") as f:
                data = f.read()
            self.assertEqual(digest, "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest())
                             .rstrip(b"=").decode(), name)
            self.assertEqual(int(size), len(data), name)
        binaries = ["tilec/libtilec.so", "tilec/tilec"] + (["tilec/tilec_native.abi3.so"] if ext else []) \
            + (["tilec/libtilec_redis.so"] if shim else [])
        for b in binaries:
            f = os.path.join(unpacked, b)
            sections = subprocess.run(["readelf", "-S", "-W", f], stdout=subprocess.PIPE, text=True).stdout
            self.assertNotIn(".symtab", sections, f"{b} is not stripped")
            self.assertNotIn(".debug_info", sections, f"{b} has debug information")
            dynamic = subprocess.run(["readelf", "-d", f], stdout=subprocess.PIPE, text=True).stdout
            self.assertNotRegex(dynamic, r"R(UN)?PATH", f"{b} has a run path")
            self.assertNotIn("libnvrtc", dynamic, f"{b} links NVRTC")
        self.assertIn("tilec_program_build", subprocess.run(["nm", "-D", "--defined-only",
                      os.path.join(unpacked, "tilec", "libtilec.so")], stdout=subprocess.PIPE, text=True).stdout)

    def test_python_m_build(self):
        """`python -m build --sdist --wheel` (no isolation: offline), from
        outside the tree: an sdist that builds (every file `make native`
        needs is in it: `make -n` finds each) and the wheel."""
        try:
            import build  # noqa: F401  (the frontend; tools/deps.sh installs it)
        except ImportError:
            self.fail("the `build` package is missing: run tools/deps.sh install (make test does)")
        out = os.path.join(self.tmp, "dist")
        self.run_ok([sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", out,
                     os.path.join(ROOT, "python")], cwd=self.tmp)
        v = header_version()
        sdist = os.path.join(out, f"tilec-{v}.tar.gz")
        self.assertTrue(os.path.isfile(sdist), os.listdir(out))
        (wheel,) = [n for n in os.listdir(out) if n.endswith(".whl")]
        self.check_wheel(os.path.join(out, wheel))
        with tarfile.open(sdist) as tar:
            names = tar.getnames()
            if hasattr(tarfile, "data_filter"):
                tar.extractall(self.tmp, filter="data")
            else:
                tar.extractall(self.tmp)
        tree = os.path.join(self.tmp, f"tilec-{v}")
        for want in ("PKG-INFO", "pyproject.toml", "python/pyproject.toml", "python/_build_backend.py", "Makefile",
                     "include/tilec/core.h", "python/tilec/py.typed", "python/tilec/_native.c", "tools/deps.sh"):
            self.assertIn(f"tilec-{v}/{want}", names)
        self.assertEqual([n for n in names if n.startswith((f"tilec-{v}/build/", f"tilec-{v}/.ci/"))], [])
        with open(os.path.join(tree, "PKG-INFO")) as f:
            self.assertIn(f"Version: {v}\n", f.read())
        # every prerequisite of the native build is in the sdist (make -n stops at a missing one)
        self.run_ok(["make", "-n", "-C", tree, "BUILD=" + os.path.join(self.tmp, "sdist-build"), "native"])


if __name__ == "__main__":
    unittest.main()
