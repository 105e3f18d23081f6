"""docs/architecture.md against the tree: every source file of the
library's folders, cli/, shim/ and python/tilec/ (*.c, *.h, *.re, *.y,
*.py) is named exactly once in its folder's row of the table of folders
(as `name.ext`), and every file a row names is there. And a compiled
kernel is described once (include/tilec/kernel_desc.h): no other struct
declares three or more of its launch fields, but for the holders
DESC_HOLDERS lists with their reasons. Run by make test."""
import os
import re
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FOLDERS = ("util", "dsl", "parser", "lower", "wrapper_ir", "emit_c", "emit_py", "runtime", "api", "cli", "shim",
           os.path.join("python", "tilec"))
SOURCE = (".c", ".h", ".re", ".y", ".py")
ROW = re.compile(r"^\| `([\w/]+)/` \|(.*)$", re.M)
NAME = re.compile(r"`([\w.]+\.(?:c|h|re|y|py))`")


# The one description of a compiled kernel variant and the fields that make
# a struct a copy of it.
DESC = "tilec_kernel_desc"
DESC_FIELDS = {"threads", "smem_bytes", "nparams", "kinds", "written", "split_k", "split_bytes"}
# Structs that may hold those fields, each with why it is not a copy; a
# new one is a second description: embed tilec_kernel_desc instead.
DESC_HOLDERS = {
    "tilec_kernel_desc": "the description itself (include/tilec/kernel_desc.h)",
    "tilec_kernel_code": "the lowering's output (source, layouts, remarks), which api/compile.c's "
                         "cmp_describe turns into the description",
    "tilec_bundle_kernel": "the cache's bundle entry: owned image and kinds, serialised by runtime/bundle.c",
    "krec": "runtime/bundle.c's fixed-width record of a bundle entry on disk",
}
STRUCT = re.compile(r"\bstruct\s+(\w+)\s*\{")


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", " ", text), flags=re.S)


def desc_copies(sources):
    """[(path, struct)] of the structs of sources ({path: text}) that declare
    three or more of DESC_FIELDS and are not DESC_HOLDERS."""
    out = []
    for path, text in sorted(sources.items()):
        text = strip_comments(text)
        for m in STRUCT.finditer(text):
            depth, i = 1, m.end()
            while depth and i < len(text):
                depth += {"{": 1, "}": -1}.get(text[i], 0)
                i += 1
            names = set(re.findall(r"\b(\w+)\s*(?:\[[^\]]*\])?\s*(?=[;,])", text[m.end():i - 1]))
            if len(names & DESC_FIELDS) >= 3 and m.group(1) not in DESC_HOLDERS:
                out.append((path, m.group(1)))
    return out


def c_sources(root):
    out = {}
    for folder in FOLDERS + (os.path.join("include", "tilec"),):
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for n in names:
                if n.endswith((".c", ".h")):
                    path = os.path.join(dirpath, n)
                    with open(path, encoding="utf-8") as f:
                        out[os.path.relpath(path, root)] = f.read()
    return out


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


    def test_a_kernel_is_described_once(self):
        self.assertEqual(desc_copies(c_sources(ROOT)), [],
                         "a second description of a compiled kernel: embed tilec_kernel_desc "
                         "(include/tilec/kernel_desc.h) instead")

    def test_a_second_description_fails(self):
        sources = c_sources(ROOT)
        sources["runtime/extra.h"] = ("typedef struct copy { const char *name; /* x; */\n"
                                      "    uint32_t threads, smem_bytes; uint32_t nparams; } copy;\n"
                                      "typedef struct fine { tilec_kernel_desc d; uint32_t threads; } fine;\n")
        self.assertEqual(desc_copies(sources), [("runtime/extra.h", "copy")])


if __name__ == "__main__":
    unittest.main()
