"""The Python package installed as a user installs it: `pip install ./python`
into a fresh virtual environment, offline (--no-index: the build backend
needs nothing from PyPI), then used from outside the source tree with no
PYTHONPATH or TILEC_LIB: the bundled libtilec.so is the one loaded, the
version is the header's, kernels compile through the bundled library and
compile worker, the README's tour runs as far as a machine without a GPU
allows (all of it on a GPU), and the CPU suite passes against the installed
package. The repository root builds the same wheel. Run by make test."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

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

    def run_ok(self, cmd, **kw):
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=self.env(), **kw)
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
        import zipfile
        (name,) = os.listdir(wheels)
        self.assertTrue(name.startswith(f"tilec-{header_version()}-py3-none-"), name)
        with zipfile.ZipFile(os.path.join(wheels, name)) as z:
            names = set(z.namelist())
        for want in ("tilec/__init__.py", "tilec/_version.py", "tilec/libtilec.so", "tilec/tilec",
                     f"tilec-{header_version()}.dist-info/RECORD"):
            self.assertIn(want, names)


if __name__ == "__main__":
    unittest.main()
