"""Python's view of the C structures against the headers: every
ctypes.Structure and ctypes.Union of python/tilec/_library.py names its C
declaration (_c_type_); a C program generated from those definitions,
compiled against include/tilec/*.h, prints the size and alignment of each
type and the offset and size of each field, which must equal ctypes'; and
the fields the header declares, in order, must be the fields Python
declares (a field the header gains in what was padding changes no size).
The check also runs on a copy of the headers with a field added, which
it must report. Run by make test."""
import ctypes
import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CC = os.environ.get("CC", "cc")


def load_library_module():
    """python/tilec/_library.py on its own (the package's __init__ would
    load libtilec.so, which this check does not need)."""
    path = os.path.join(ROOT, "python", "tilec", "_library.py")
    spec = importlib.util.spec_from_file_location("tilec_library_layout", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def mirrored(mod):
    """[(class, C type name)] of every ctypes structure and union of mod;
    a class without _c_type_ is an error."""
    out = []
    for name, obj in sorted(vars(mod).items()):
        if isinstance(obj, type) and issubclass(obj, (ctypes.Structure, ctypes.Union)) \
                and obj.__module__ == mod.__name__:
            c = obj.__dict__.get("_c_type_")
            if not c:
                raise AssertionError(f"_library.py: {name} names no C type (_c_type_ = \"tilec_...\")")
            out.append((obj, c))
    return out


def strip_comments(text):
    return re.sub(r"/\*.*?\*/", " ", re.sub(r"//[^\n]*", " ", text), flags=re.S)


def header_fields(include_dir, ctype):
    """The field names of `typedef struct|union NAME {...}` in the public
    headers, in order; None when no header declares it so."""
    decl = re.compile(r"\b(?:struct|union)\s+%s\s*\{" % re.escape(ctype))
    for name in sorted(os.listdir(include_dir)):
        if not name.endswith(".h"):
            continue
        with open(os.path.join(include_dir, name), encoding="utf-8") as f:
            text = strip_comments(f.read())
        m = decl.search(text)
        if not m:
            continue
        depth, i = 1, m.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[m.end():i - 1]
        fields = []
        for stmt in body.split(";"):
            stmt = stmt.strip()
            if not stmt:
                continue
            fp = re.search(r"\(\s*\*\s*(\w+)\s*\)\s*\(", stmt)  # a function pointer
            if fp:
                fields.append(fp.group(1))
                continue
            # "int a, b", "char key[65]", "const T *kinds": a declarator's name
            # is the last identifier before its array bounds
            first, *rest = [d.strip() for d in stmt.split(",")]
            for d in [first] + rest:
                d = re.sub(r"\[[^\]]*\]", "", d)
                fields.append(re.findall(r"\w+", d)[-1])
        return fields
    return None


def c_program(structs):
    lines = ["#include <stddef.h>", "#include <stdio.h>"]
    lines += ['#include "tilec/%s"' % h for h in sorted(os.listdir(os.path.join(ROOT, "include", "tilec")))
              if h.endswith(".h")]
    lines.append("int main(void)\n{")
    for cls, c in structs:
        lines.append(f'    printf("{c} %zu %zu\\n", sizeof({c}), _Alignof({c}));')
        for f in cls._fields_:
            lines.append(f'    printf("{c}.{f[0]} %zu %zu\\n", offsetof({c}, {f[0]}), sizeof((({c} *)0)->{f[0]}));')
    lines.append("    return 0;\n}\n")
    return "\n".join(lines)


def check(include_root):
    """The differences between _library.py's structures and the headers
    under include_root (its tilec/ folder), one line each."""
    mod = load_library_module()
    structs = mirrored(mod)
    bad = []
    include_dir = os.path.join(include_root, "tilec")
    for cls, c in structs:
        want = header_fields(include_dir, c)
        have = [f[0] for f in cls._fields_]
        if want is None:
            bad.append(f"{cls.__name__}: no header of {include_dir} declares struct or union {c}")
        elif want != have:
            bad.append(f"{cls.__name__}: {c} has the fields {want} in the header, {have} in _library.py")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "layout.c")
        exe = os.path.join(d, "layout")
        with open(src, "w") as f:
            f.write(c_program(structs))
        p = subprocess.run([CC, "-std=c11", "-I" + include_root, "-o", exe, src], capture_output=True, text=True)
        if p.returncode != 0:
            return bad + [f"the layout program does not compile against {include_root}:\n{p.stderr[-3000:]}"]
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    c_says = {}
    for line in out.splitlines():
        key, a, b = line.split()
        c_says[key] = (int(a), int(b))
    for cls, c in structs:
        py = (ctypes.sizeof(cls), ctypes.alignment(cls))
        if c_says[c] != py:
            bad.append(f"{cls.__name__}: {c} has size, alignment {c_says[c]} in C, {py} in _library.py")
        for f in cls._fields_:
            d = getattr(cls, f[0])
            if c_says[f"{c}.{f[0]}"] != (d.offset, d.size):
                bad.append(f"{cls.__name__}.{f[0]}: offset, size {c_says[c + '.' + f[0]]} in C, "
                           f"{(d.offset, d.size)} in _library.py")
    return bad


@unittest.skipUnless(shutil.which(CC), "needs a C compiler")
class StructLayoutTests(unittest.TestCase):
    def test_python_structs_match_the_headers(self):
        self.assertEqual(check(os.path.join(ROOT, "include")), [])

    def test_every_struct_is_checked(self):
        names = {c for _, c in mirrored(load_library_module())}
        for c in ("tilec_rt_arg", "tilec_tensor", "tilec_plan_tensor", "tilec_program_stats", "tilec_sink"):
            self.assertIn(c, names)

    def copy_headers(self, edit):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        inc = os.path.join(d.name, "tilec")
        shutil.copytree(os.path.join(ROOT, "include", "tilec"), inc)
        for name, (old, new) in edit.items():
            p = os.path.join(inc, name)
            with open(p) as f:
                text = f.read()
            self.assertIn(old, text)
            with open(p, "w") as f:
                f.write(text.replace(old, new, 1))
        return d.name

    def test_a_field_added_to_a_header_fails(self):
        # in what was padding: no size changes, the field list does
        root = self.copy_headers({"plan.h": ("    uint32_t steps;", "    uint32_t steps;\n    uint32_t spare;")})
        bad = check(root)
        self.assertTrue(any("_PlanStats: tilec_plan_stats has the fields" in b and "'spare'" in b for b in bad), bad)
        root = self.copy_headers({"tensor.h": ("    uint32_t rank;", "    uint32_t rank;\n    uint64_t flags;")})
        bad = check(root)
        self.assertTrue(any(b.startswith("_Tensor: tilec_tensor has size, alignment") for b in bad), bad)
        self.assertTrue(any(b.startswith("_Tensor.sizes: offset, size") for b in bad), bad)

    def test_a_field_of_another_type_fails(self):
        root = self.copy_headers({"runtime.h": ("    uint32_t dyn_smem_bytes;", "    uint64_t dyn_smem_bytes;")})
        bad = check(root)
        self.assertTrue(any(b.startswith("_Meta.dyn_smem_bytes: offset, size (8, 8) in C, (4, 4)") for b in bad), bad)

    def test_the_extension_includes_the_header(self):
        # _native.c packs tilec_rt_arg slots: the header's union, not a copy
        with open(os.path.join(ROOT, "python", "tilec", "_native.c")) as f:
            text = strip_comments(f.read())
        self.assertTrue(re.search(r'#include "tilec/(plan|aot|runtime)\.h"', text),
                        "_native.c does not include the runtime's header")
        self.assertFalse(re.search(r"\bunion\s*\w*\s*\{", text), "_native.c declares a union of its own")

    def test_the_function_pointer_and_lists_parse(self):
        inc = os.path.join(ROOT, "include", "tilec")
        self.assertEqual(header_fields(inc, "tilec_sink"), ["write", "user"])
        self.assertEqual(header_fields(inc, "tilec_rt_device_props")[3:5], ["sm_major", "sm_minor"])


if __name__ == "__main__":
    unittest.main()
