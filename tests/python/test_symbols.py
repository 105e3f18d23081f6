"""The layering check on symbols (tools/symbols.py) on the real build and
on small object trees compiled for each rule: a call up a layer, a call
from the runtime into the compiler, a circle of folders, an object whose
source is gone, the generated lexer and parser."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.join(ROOT, "tools", "symbols.py")
CC = os.environ.get("CC", "cc")


def run(objdir, root):
    p = subprocess.run([sys.executable, TOOL, objdir, root], capture_output=True, text=True)
    return p.returncode, p.stdout


def run_archive(lib):
    p = subprocess.run([sys.executable, TOOL, "--archive", lib], capture_output=True, text=True)
    return p.returncode, p.stdout


@unittest.skipUnless(shutil.which("nm") and shutil.which(CC), "needs nm and a C compiler")
class SymbolsTests(unittest.TestCase):
    def tree(self, files):
        """Sources at root/FOLDER/X.c, each compiled to obj/FOLDER/X.o
        (gen/NAME.c to obj/gen/NAME.o); returns (objdir, root)."""
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        for path, text in files.items():
            src = os.path.join(d.name, path)
            obj = os.path.join(d.name, "obj", path[:-2] + ".o")
            os.makedirs(os.path.dirname(src), exist_ok=True)
            os.makedirs(os.path.dirname(obj), exist_ok=True)
            with open(src, "w") as f:
                f.write(text)
            subprocess.run([CC, "-c", "-o", obj, src], check=True)
        return os.path.join(d.name, "obj"), d.name

    def test_the_build_passes(self):
        objdir = os.path.join(ROOT, "build", "obj")
        if not os.path.isdir(objdir):
            self.skipTest("no build/obj: run make first")
        rc, out = run(objdir, ROOT)
        self.assertEqual(rc, 0, out)

    def test_a_clean_tree_passes(self):
        objdir, root = self.tree({"util/u.c": "int u_f(void) { return 1; }\n",
                                  "parser/p.c": "int u_f(void);\nint p_f(void) { return u_f(); }\n",
                                  "api/a.c": "int p_f(void);\nint u_f(void);\nint a_f(void) { return p_f() + u_f(); }\n"})
        self.assertEqual(run(objdir, root), (0, ""))

    def test_a_call_up_a_layer_fails(self):
        # the call is declared by hand: no include shows it
        objdir, root = self.tree({"util/u.c": "int a_f(void);\nint u_f(void) { return a_f(); }\n",
                                  "api/a.c": "int a_f(void) { return 2; }\n"})
        rc, out = run(objdir, root)
        self.assertEqual(rc, 1)
        self.assertIn("util/u.o: uses a_f, defined in api/a.o: util (layer 0) -> api (layer 6), up a layer", out)

    def test_the_runtime_calls_no_compiler(self):
        objdir, root = self.tree({"runtime/r.c": "int p_f(void);\nint r_f(void) { return p_f(); }\n",
                                  "parser/p.c": "int p_f(void) { return 3; }\n"})
        rc, out = run(objdir, root)
        self.assertEqual(rc, 1)
        self.assertIn("runtime/r.o: uses p_f, defined in parser/p.o: runtime (layer 5) -> parser (layer 2), "
                      "runtime may use only util", out)

    def test_a_circle_of_folders_fails(self):
        objdir, root = self.tree({"lower/l.c": "int w_f(void);\nint l_f(void) { return w_f(); }\n",
                                  "wrapper_ir/w.c": "int l_f(void);\nint w_f(void) { return l_f(); }\n"})
        rc, out = run(objdir, root)
        self.assertEqual(rc, 1)
        self.assertIn("sideways, one layer", out)
        self.assertIn("circle among folders (by symbols): lower <-> wrapper_ir", out)

    def test_generated_objects_belong_to_their_folders(self):
        # gen/lexer.o is dsl's: its call into the parser runs up a layer
        objdir, root = self.tree({"gen/lexer.c": "int p_f(void);\nint lex_f(void) { return p_f(); }\n",
                                  "parser/p.c": "int p_f(void) { return 3; }\n"})
        rc, out = run(objdir, root)
        self.assertEqual(rc, 1)
        self.assertIn("gen/lexer.o: uses p_f, defined in parser/p.o: dsl (layer 1) -> parser (layer 2), up a layer",
                      out)

    def test_objects_of_moved_sources_are_not_read(self):
        objdir, root = self.tree({"util/u.c": "int a_f(void);\nint u_f(void) { return a_f(); }\n",
                                  "api/a.c": "int a_f(void) { return 2; }\n"})
        os.remove(os.path.join(root, "util", "u.c"))
        self.assertEqual(run(objdir, root), (0, ""))

    def test_a_circle_of_files_in_a_folder_fails(self):
        files = {"emit_c/a.c": "int b_f(void);\nint a_f(void) { return b_f(); }\n",
                 "emit_c/b.c": "int a_g(void);\nint b_f(void) { return a_g(); }\n",
                 "emit_c/a2.c": "int a_g(void) { return 1; }\n"}
        objdir, root = self.tree(dict(files, **{"emit_c/a2.c": "int b_f(void);\nint a_g(void) { return b_f(); }\n"}))
        rc, out = run(objdir, root)
        self.assertEqual(rc, 1)
        self.assertIn("circle among the files of one folder (by symbols): emit_c/a2.c <-> emit_c/b.c", out)
        # a chain is no circle
        objdir, root = self.tree(files)
        self.assertEqual(run(objdir, root), (0, ""))

    def test_an_allowed_circle_passes_and_a_new_member_fails(self):
        files = {"lower/a.c": "int b_f(void);\nint a_f(void) { return b_f(); }\n",
                 "lower/b.c": "int a_f(void);\nint b_f(void) { return a_f(); }\n"}
        objdir, root = self.tree(files)
        os.makedirs(os.path.join(root, "tools"))
        with open(os.path.join(root, "tools", "layers.allow"), "w") as f:
            f.write("circle: lower/a.c lower/b.c  # a tree walk\n")
        self.assertEqual(run(objdir, root), (0, ""))
        objdir, root2 = self.tree(dict(files, **{"lower/b.c": "int c_f(void);\nint b_f(void) { return c_f(); }\n",
                                                 "lower/c.c": "int a_f(void);\nint c_f(void) { return a_f(); }\n"}))
        os.makedirs(os.path.join(root2, "tools"))
        with open(os.path.join(root2, "tools", "layers.allow"), "w") as f:
            f.write("circle: lower/a.c lower/b.c  # a tree walk\n")
        rc, out = run(objdir, root2)
        self.assertEqual(rc, 1)
        self.assertIn("lower/a.c <-> lower/b.c <-> lower/c.c", out)

    def archive(self, files):
        """An archive of the objects of tree(files); returns its path."""
        objdir, _ = self.tree(files)
        lib = os.path.join(objdir, "lib.a")
        objs = [os.path.join(dp, n) for dp, _, ns in os.walk(objdir) for n in ns if n.endswith(".o")]
        subprocess.run(["ar", "rcs", lib] + objs, check=True)
        return lib

    def test_the_static_library_hides_its_insides(self):
        lib = os.path.join(ROOT, "build", "lib", "libtilec.a")
        if not os.path.isfile(lib):
            self.skipTest("no build/lib/libtilec.a: run make first")
        rc, out = run_archive(lib)
        self.assertEqual(rc, 0, out)

    def test_an_archive_of_tilec_globals_passes(self):
        lib = self.archive({"api/a.c": "static int helper(void) { return 1; }\nint tilec_a(void) { return helper(); }\n"})
        self.assertEqual(run_archive(lib), (0, ""))

    def test_an_internal_global_in_the_archive_fails(self):
        lib = self.archive({"api/a.c": "int lower_note(void) { return 1; }\nint tilec_a(void) { return lower_note(); }\n",
                            "util/s.c": "int sb_add(void) { return 2; }\n"})
        rc, out = run_archive(lib)
        self.assertEqual(rc, 1)
        self.assertIn(f"{lib}: defines lower_note, an internal name (not tilec_)", out)
        self.assertIn(f"{lib}: defines sb_add, an internal name (not tilec_)", out)
        self.assertIn("symbols: 2 internal global(s) in the static library", out)

    def test_no_objects_is_an_error(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        rc, out = run(d.name, d.name)
        self.assertEqual(rc, 2)
        self.assertIn("no object files", out)


if __name__ == "__main__":
    unittest.main()
