"""docs/architecture.md against the tree: every source file of the
library's folders, cli/, shim/ and python/tilec/ (*.c, *.h, *.re, *.y,
*.py) is named exactly once in its folder's row of the table of folders
(as `name.ext`), and every file a row names is there. Run by make test."""
import os
import re
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = ("util", "dsl", "parser", "lower", "wrapper_ir", "emit_c", "emit_py", "runtime", "api", "cli", "shim",
           os.path.join("python", "tilec"))
SOURCE = (".c", ".h", ".re", ".y", ".py")
ROW = re.compile(r"^\| `([\w/]+)/` \|(.*)$", re.M)
NAME = re.compile(r"`([\w.]+\.(?:c|h|re|y|py))`")


def rows(text):
    """{folder: the text of its row}."""
    return {m.group(1): m.group(2) for m in ROW.finditer(text)}


def check(root, text):
    bad = []
    table = rows(text)
    for folder in FOLDERS:
        d = os.path.join(root, folder)
        files = sorted(n for n in os.listdir(d) if n.endswith(SOURCE)) if os.path.isdir(d) else []
        row = table.get(folder.replace(os.sep, "/"))
        if row is None:
            if files:
                bad.append(f"docs/architecture.md: no row for {folder}/")
            continue
        named = NAME.findall(row)
        for n in files:
            k = named.count(n)
            if k != 1:
                bad.append(f"docs/architecture.md: {folder}/{n} is named {k} times in the row of {folder}/")
        for n in sorted(set(named) - set(files)):
            bad.append(f"docs/architecture.md: the row of {folder}/ names {n}, which is no file of {folder}/")
    return bad


class ArchitectureTests(unittest.TestCase):
    def test_the_doc_names_every_file_once(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            self.assertEqual(check(ROOT, f.read()), [])

    def test_a_missing_a_doubled_and_a_stale_name_fail(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            text = f.read()
        row = rows(text)["lower"]
        bad = check(ROOT, text.replace(row, row.replace("(`hoist.c`)", "").replace("(`ring.c`)", "(`ring.c`, `ring.c`)")
                                       + " `gone.c`"))
        self.assertIn("docs/architecture.md: lower/hoist.c is named 0 times in the row of lower/", bad)
        self.assertIn("docs/architecture.md: lower/ring.c is named 2 times in the row of lower/", bad)
        self.assertIn("docs/architecture.md: the row of lower/ names gone.c, which is no file of lower/", bad)
        self.assertEqual(len(bad), 3, bad)

    def test_a_folder_without_a_row_fails(self):
        with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as f:
            text = f.read()
        text = "\n".join(line for line in text.splitlines() if not line.startswith("| `shim/`"))
        self.assertIn("docs/architecture.md: no row for shim/", check(ROOT, text))


if __name__ == "__main__":
    unittest.main()
