#!/usr/bin/env python3
"""symbols.py: the layering check on symbols, beside tools/layers.py's
check on includes (docs/architecture.md). After the build, `nm` over the
library's object files says which folder defines each global symbol and
which folders use it; a use runs up a layer when the defining folder is
not one the user's folder may include (the table of tools/layers.py), and
the folders must form no circle. This catches what includes cannot: a
call through a declaration written by hand, or through a header of a
lower layer that an upper layer implements. Python 3 standard library and
binutils' nm.

    tools/symbols.py [OBJDIR [ROOT]]   check OBJDIR (default: build/obj)
                                       against the sources at ROOT (.)
    tools/symbols.py --archive LIB.a   check that the static library
                                       defines only public tilec_ globals

OBJDIR/FOLDER/X.o are the folders' objects, read when ROOT/FOLDER/X.c
(or .re, .y) still exists (a build keeps objects of moved files);
OBJDIR/gen/lexer.o belongs to dsl/ and OBJDIR/gen/grammar.o to parser/. Exit 1 with one line per
violation, 2 when nm cannot be run.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from layers import FOLDERS, MAY_INCLUDE, check_circles, circles, read_allowed_circles, report  # noqa: E402

# Generated sources and the folder of the source they come from.
GENERATED = {"lexer.o": "dsl", "grammar.o": "parser"}


def has_source(root, rel):
    """Whether object rel (FOLDER/X.o) has a source at root."""
    stem = os.path.join(root, rel[:-2])
    return any(os.path.isfile(stem + ext) for ext in (".c", ".re", ".y"))


def objects(objdir, root):
    """(folder, path) of every object of the library's folders."""
    out = []
    for folder in FOLDERS:
        d = os.path.join(objdir, folder)
        for dirpath, _, names in os.walk(d):
            out += [(folder, os.path.join(dirpath, n)) for n in sorted(names)
                    if n.endswith(".o") and has_source(root, os.path.relpath(os.path.join(dirpath, n), objdir))]
    gen = os.path.join(objdir, "gen")
    for name, folder in GENERATED.items():
        if os.path.isfile(os.path.join(gen, name)):
            out.append((folder, os.path.join(gen, name)))
    return out


def nm(paths):
    """{path: (defined symbols, undefined symbols)} from one nm run."""
    p = subprocess.run(["nm", "-A", "-P", "--no-sort"] + paths, capture_output=True, text=True)
    if p.returncode != 0:
        raise OSError(p.stderr.strip() or "nm failed")
    out = {path: (set(), set()) for path in paths}
    for line in p.stdout.splitlines():
        # "path: name type [value size]" (-P); an archive member would be "lib.a[x.o]:"
        head, _, rest = line.partition(": ")
        fields = rest.split()
        if head not in out or len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind == "U":
            out[head][1].add(name)
        elif kind.isupper() or kind in "uvw":  # global: text, data, bss, rodata, common, weak
            out[head][0].add(name)
    return out


def check(objdir, root="."):
    objs = objects(objdir, root)
    syms = nm([p for _, p in objs]) if objs else {}
    defined = {}  # symbol -> (folder, object)
    for folder, path in objs:
        for s in syms[path][0]:
            defined.setdefault(s, (folder, path))
    bad, edges, seen = [], {}, set()
    for folder, path in objs:
        for s in sorted(syms[path][1]):
            if s not in defined:
                continue  # libc, CUDA, the loader: no folder's
            theirs, where = defined[s]
            if theirs == folder:
                continue
            edges.setdefault(folder, set()).add(theirs)
            if theirs in MAY_INCLUDE[folder] or (folder, s) in seen:
                continue
            seen.add((folder, s))
            why = "up a layer" if FOLDERS[theirs] > FOLDERS[folder] else (
                "sideways, one layer" if FOLDERS[theirs] == FOLDERS[folder]
                else f"{folder} may use only " + (", ".join(MAY_INCLUDE[folder]) or "itself"))
            bad.append(f"{os.path.relpath(path, objdir)}: uses {s}, defined in {os.path.relpath(where, objdir)}: "
                       f"{folder} (layer {FOLDERS[folder]}) -> {theirs} (layer {FOLDERS[theirs]}), {why}")
    for comp in circles(edges):
        bad.append("circle among folders (by symbols): " + " <-> ".join(comp))
    # A folder's files form layers too: no circle of calls among them
    # (a.o uses what b.o defines and b.o what a.o defines, directly or
    # around), but for those tools/layers.allow lists with their reason
    # (a tree walk's own recursion: the checker's, the lowering's).
    files = {}
    for folder, path in objs:
        rel = os.path.relpath(path, objdir)
        files[path] = os.path.join(folder, os.path.basename(rel)[:-2] + ".c") if rel.startswith("gen" + os.sep) \
            else rel[:-2] + ".c"
    file_edges = {}
    for folder, path in objs:
        for s in syms[path][1]:
            theirs, where = defined.get(s, (None, None))
            if theirs == folder and where != path:
                file_edges.setdefault(files[path], set()).add(files[where])
    notes = []
    if file_edges:
        allowed = [(n, f) for n, f in read_allowed_circles(root) if not any(x.startswith("python") for x in f)]
        fbad, notes = check_circles(circles(file_edges), allowed, "the files of one folder (by symbols)")
        bad += fbad
    return bad, len(objs), notes


# Globals libtilec.a may define besides tilec_ names: none. The Makefile
# makes it one relocatable object whose other globals are local (objcopy
# --keep-global-symbols with tools/exports.sh --list), so a program that
# links it may name its own functions lower_note or sb_add.
ARCHIVE_EXCEPTIONS = frozenset()


def archive_check(path):
    """One line for each global that archive `path` defines other than
    the public API's tilec_ names."""
    p = subprocess.run(["nm", "-g", "--defined-only", "-P", path], capture_output=True, text=True)
    if p.returncode != 0:
        raise OSError(p.stderr.strip() or "nm failed")
    names = {f[0] for f in (line.split() for line in p.stdout.splitlines())
             if len(f) >= 2 and not f[0].endswith(":") and not f[0].endswith("]")}
    if not names:
        raise OSError(f"{path} defines no global symbol")
    return [f"{path}: defines {s}, an internal name (not tilec_): a program linking it statically "
            f"cannot name its own {s}" for s in sorted(names)
            if not s.startswith("tilec_") and s not in ARCHIVE_EXCEPTIONS]


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--archive":
        try:
            bad = archive_check(sys.argv[2])
        except OSError as e:
            print(f"symbols: cannot read {sys.argv[2]}: {e}")
            return 2
        return report(bad, "symbols: {} internal global(s) in the static library (docs/install.md)")
    objdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("build", "obj")
    root = sys.argv[2] if len(sys.argv) > 2 else "."
    try:
        bad, n, notes = check(objdir, root)
    except OSError as e:
        print(f"symbols: cannot run nm: {e}")
        return 2
    for note in notes:
        print("note: " + note, file=sys.stderr)
    if n == 0:
        print(f"symbols: no object files under {objdir} (build first)")
        return 2
    return report(bad, "symbols: {} violation(s) (docs/architecture.md)")


if __name__ == "__main__":
    sys.exit(main())
