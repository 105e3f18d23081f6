"""The layering check (tools/layers.py) on the real tree and on small
trees made for each rule: an include up a layer, sideways, from the runtime
into the compiler, an unknown header, a circle of C files, the allowlist."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "layers.py")


def run(root):
    p = subprocess.run([sys.executable, TOOL, root], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


class LayersTests(unittest.TestCase):
    def tree(self, files):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        for path, text in files.items():
            full = os.path.join(d.name, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as f:
                f.write(text)
        return d.name

    def test_the_tree_passes(self):
        rc, out, _ = run(ROOT)
        self.assertEqual(rc, 0, out)

    def test_a_clean_tree_passes(self):
        root = self.tree({"util/a.h": "", "parser/p.c": '#include "util/a.h"\n#include "tilec/ast.h"\n',
                          "include/tilec/ast.h": "", "api/m.c": '#include "parser/p.h"\n', "parser/p.h": ""})
        self.assertEqual(run(root)[0], 0)

    def test_upward_include_fails(self):
        root = self.tree({"util/a.c": '#include <stdio.h>\n#include "parser/p.h"\n', "parser/p.h": ""})
        rc, out, _ = run(root)
        self.assertEqual(rc, 1)
        self.assertIn("util/a.c:2: includes parser/p.h: util (layer 0) -> parser (layer 2), up a layer", out)

    def test_upward_public_header_fails(self):
        root = self.tree({"emit_c/e.c": '#include "tilec/program.h"\n', "include/tilec/program.h": ""})
        rc, out, _ = run(root)
        self.assertEqual(rc, 1)
        self.assertIn("emit_c/e.c:1: includes include/tilec/program.h: emit_c (layer 4) -> api (layer 6)", out)

    def test_sideways_fails(self):
        root = self.tree({"lower/l.c": '#include "wrapper_ir/w.h"\n', "wrapper_ir/w.h": "",
                          "emit_py/p.c": '#include "emit_c/c.h"\n', "emit_c/c.h": ""})
        rc, out, _ = run(root)
        self.assertEqual(rc, 1)
        self.assertIn("lower/l.c:1: includes wrapper_ir/w.h: lower (layer 3) -> wrapper_ir (layer 3), sideways", out)
        self.assertIn("emit_py/p.c:1: includes emit_c/c.h: emit_py (layer 4) -> emit_c (layer 4), sideways", out)

    def test_runtime_knows_no_compiler(self):
        root = self.tree({"runtime/r.c": '#include "parser/p.h"\n#include "util/u.h"\n', "parser/p.h": "",
                          "util/u.h": ""})
        rc, out, _ = run(root)
        self.assertEqual(rc, 1)
        self.assertIn("runtime/r.c:1: includes parser/p.h: runtime (layer 5) -> parser (layer 2)", out)
        self.assertNotIn("util/u.h", out)

    def test_unknown_header_fails(self):
        rc, out, _ = run(self.tree({"util/a.c": '#include "util/gone.h"\n'}))
        self.assertEqual(rc, 1)
        self.assertIn('util/a.c:1: includes "util/gone.h", which is no file of the tree', out)

    def test_circle_of_c_files_fails(self):
        root = self.tree({"wrapper_ir/a.c": '#include "wrapper_ir/b.h"\n', "wrapper_ir/a.h": "",
                          "wrapper_ir/b.c": '#include "wrapper_ir/a_internal.h"\n', "wrapper_ir/b.h": "",
                          "wrapper_ir/a_internal.h": ""})
        rc, out, _ = run(root)
        self.assertEqual(rc, 1)
        self.assertIn("circle among C files (each includes the other's header): wrapper_ir/a.c <-> wrapper_ir/b.c",
                      out)

    def test_allowlist(self):
        files = {"util/a.c": '#include "parser/p.h"\n', "parser/p.h": "",
                 "tools/layers.allow": "# why\nutil/a.c -> parser/p.h  # issue 15\nutil/x.c -> parser/p.h\n"}
        rc, out, err = run(self.tree(files))
        self.assertEqual(rc, 0, out)
        self.assertIn("stale (no such include now): util/x.c -> parser/p.h", err)
        files["tools/layers.allow"] = "util/a.c parser/p.h\n"
        self.assertEqual(run(self.tree(files))[0], 2)


    def test_a_circle_of_python_modules_fails(self):
        files = {"python/tilec/a.py": "from .b import f\n",
                 "python/tilec/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import g\n",
                 "python/tilec/c.py": "from . import a\n"}
        rc, out, _ = run(self.tree(files))
        self.assertEqual(rc, 1)
        self.assertIn("circle among Python modules (by imports): python/tilec/a.py <-> python/tilec/b.py", out)
        allow = {"tools/layers.allow": "circle: python/tilec/a.py python/tilec/b.py  # why\n"}
        self.assertEqual(run(self.tree(dict(files, **allow)))[0], 0)
        # a third module joins the circle: not allowed
        joined = dict(files, **allow)
        joined["python/tilec/b.py"] = "from .c import h\n"
        rc, out, _ = run(self.tree(joined))
        self.assertEqual(rc, 1)
        self.assertIn("python/tilec/a.py <-> python/tilec/b.py <-> python/tilec/c.py", out)

    def test_a_stale_circle_is_a_note(self):
        root = self.tree({"python/tilec/a.py": "", "tools/layers.allow": "circle: python/tilec/a.py python/tilec/b.py\n"})
        rc, _, err = run(root)
        self.assertEqual(rc, 0)
        self.assertIn("stale (no such circle now): circle: python/tilec/a.py python/tilec/b.py", err)

if __name__ == "__main__":
    unittest.main()
