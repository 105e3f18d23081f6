"""The docs against the tree: the Python snippets (every ```python block of
README.md and docs/*.md) compile, and use no name they do not define,
import or take from the builtins (a snippet that is a fragment of a
caller's program names what the caller gives in a comment line
"# given: a, b, c"); and every path of the tree the docs name in backquotes
(`include/tilec/core.h`, `tests/test_cli`...) is there (a test program by
its source; the toolkit's headers under the CUDA home). A snippet whose
first line names TILEC_CUDA_DRIVER runs, on the fake driver
(build/tests/libfakecuda.so), from the repository root. Run by make test."""
import builtins
import fnmatch
import glob
import os
import re
import subprocess
import symtable
import sys
import unittest

from scratch import scratch_dir  # tests/python/scratch.py

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, os.environ.get("BUILD", "build"))
FAKE = os.path.join(BUILD, "tests", "libfakecuda.so")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)
GIVEN = re.compile(r"^#\s*given:\s*(.*)$", re.M)


def snippets():
    """(file:line, code) of every Python block of the docs."""
    for name, text in docs():
        for m in BLOCK.finditer(text):
            line = text.count("\n", 0, m.start()) + 2
            yield f"{name}:{line}", m.group(1)


TREE_DIRS = ("include", "runtime", "api", "python", "tests", "tools", "docs", "examples", "cli", "lower", "parser",
             "dsl", "util", "emit_c", "emit_py", "wrapper_ir", "bench", "fuzz")
PATH = re.compile(r"`((?:%s)/[A-Za-z0-9_./-]*[A-Za-z0-9_])`" % "|".join(TREE_DIRS))
CUDA = os.environ.get("CUDA_HOME") or "/usr/local/cuda"


def docs():
    for path in [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        with open(path) as f:
            yield os.path.relpath(path, ROOT), f.read()


GIT_PATH = re.compile(r"\b([0-9a-f]{7,40}):(bench/results/(?:[^\s`),{.]|\{[^}\s]*\}|\.(?=[\w{*]))*)")


def docs_and_notes():
    """The docs and the benchmark harness's notes and README (the report's text)."""
    yield from docs()
    for rel in ("bench/harness/notes.md", "bench/harness/README.md", "bench/results/README.md"):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            yield rel, f.read()


def missing_paths(name, text):
    """name:line: path for each tree path the text names that is not there."""
    out = []
    for m in PATH.finditer(text):
        p = m.group(1)
        if not any(os.path.exists(c) for c in (os.path.join(ROOT, p), os.path.join(ROOT, p + ".c"),
                                              os.path.join(CUDA, p))):
            out.append(f"{name}:{text.count(chr(10), 0, m.start()) + 1}: {p}")
    return out


def undefined(code, name):
    """The names a snippet reads that nothing in it binds."""
    top = symtable.symtable(code, name, "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    given = {g.strip() for m in GIVEN.finditer(code) for g in m.group(1).split(",") if g.strip()}
    known = bound | given | set(dir(builtins))
    missing = set()

    def walk(table, depth):
        for s in table.get_symbols():
            free_global = s.is_global() and not s.is_declared_global() if depth else True
            if s.is_referenced() and free_global and not (depth == 0 and (s.is_assigned() or s.is_imported())):
                if s.get_name() not in known:
                    missing.add(s.get_name())
        for child in table.get_children():
            walk(child, depth + 1)

    walk(top, 0)
    return sorted(missing)


class DocSnippetTests(unittest.TestCase):
    def test_there_are_snippets(self):
        self.assertGreaterEqual(len(list(snippets())), 3)

    def test_every_snippet_compiles_and_defines_its_names(self):
        for where, code in snippets():
            with self.subTest(where):
                compile(code, where, "exec")
                self.assertEqual(undefined(code, where), [], f"{where}: names used but never defined")

    def test_the_fake_driver_snippets_run(self):
        ran = 0
        for where, code in snippets():
            if not code.startswith("# TILEC_CUDA_DRIVER="):
                continue
            with self.subTest(where):
                self.assertTrue(os.path.exists(FAKE), f"build {FAKE} first (make test does)")
                env = dict(os.environ, TILEC_CUDA_DRIVER=FAKE, PYTHONPATH=os.path.join(ROOT, "python"),
                           TILEC_LIB=os.path.join(BUILD, "lib", "libtilec.so"),
                           TILEC_CACHE_DIR=scratch_dir("tilec_docs_cache_"))
                r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True)
                self.assertEqual(r.returncode, 0, f"{where}:\n{r.stdout}")
                ran += 1
        self.assertGreaterEqual(ran, 1, "no snippet runs on the fake driver (docs/python.md has one)")

    def test_every_named_path_is_there(self):
        self.assertEqual([m for name, text in docs() for m in missing_paths(name, text)], [])
        self.assertEqual(missing_paths("t", "`include/tilec/nothere.h` and `include/tilec/core.h`"),
                         ["t:1: include/tilec/nothere.h"])

    def test_every_path_in_git_is_there(self):
        """`REV:PATH` names a file of commit REV (the records of past
        experiments, removed from the tree; a glob or {a,b} names several)."""
        if not os.path.isdir(os.path.join(ROOT, ".git")) and not os.path.isfile(os.path.join(ROOT, ".git")):
            self.skipTest("not a git checkout")
        named = 0
        for name, text in docs_and_notes():
            for m in GIT_PATH.finditer(text):
                named += 1
                rev, path = m.group(1), m.group(2)
                if path.endswith("/NAME"):
                    continue  # the form, not a file
                p = subprocess.run(["git", "-C", ROOT, "ls-tree", "-r", "--name-only", rev, "bench/results"],
                                   capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, f"{name}: no commit {rev}: {p.stderr}")
                tree = p.stdout.split()
                pats = [path.replace("{" + m2.group(1) + "}", alt) for m2 in [re.search(r"\{([^}]*)\}", path)] if m2
                        for alt in m2.group(1).split(",")] or [path]
                for pat in pats:
                    hit = [f for f in tree if fnmatch.fnmatch(f, pat) or f.startswith(pat.rstrip("/") + "/")]
                    self.assertTrue(hit, f"{name}: {rev}:{pat} names no file of commit {rev}")
        self.assertGreater(named, 10)

    def test_the_version_file_named_is_the_one(self):
        """Where the docs say the version is kept, that header defines it."""
        named = 0
        for name, text in docs():
            for m in re.finditer(r"version[^.`]*(?:in one\s+place|lives|is kept)[^`]*`((?:include/tilec/)?\w+\.h)`",
                                 text, re.I):
                named += 1
                path = m.group(1) if "/" in m.group(1) else "include/tilec/" + m.group(1)
                with open(os.path.join(ROOT, path)) as f:
                    self.assertTrue("#define TILEC_VERSION_MAJOR" in f.read(),
                                    f"{name} names {path} as the version's place; it defines no TILEC_VERSION_MAJOR")
        self.assertGreaterEqual(named, 2)

    def test_the_checker_finds_an_undefined_name(self):
        self.assertEqual(undefined("import t\nx = t.f(n)\n", "t"), ["n"])
        self.assertEqual(undefined("# given: n\nimport t\nx = t.f(n)\n", "t"), [])
        self.assertEqual(undefined("def f():\n    return m + len([])\n", "t"), ["m"])
        self.assertEqual(undefined("m = 1\ndef f(a):\n    return m + a\n", "t"), [])


if __name__ == "__main__":
    unittest.main()
