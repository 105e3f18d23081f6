#!/usr/bin/env python3
"""layers.py: the layering check (docs/architecture.md). Reads every
#include "..." of the library's sources and headers and fails (exit 1, one
line per violation) on an include that runs up a layer or sideways between
two folders of one layer, and on a circle among folders or among C files
(a.c includes b.h, b.c includes a.h, through each file's own header).
Includes listed in tools/layers.allow ('file -> header  # why') are let
through; an entry that no longer matches is named as stale (a note, not a
failure: delete it). Python 3 standard library only.

    tools/layers.py [ROOT]          check the tree at ROOT (default: .)
"""
import fnmatch
import os
import re
import sys

# Folder -> layer rank, bottom up (the stack of docs/architecture.md).
FOLDERS = {
    "util": 0, "dsl": 1, "parser": 2, "lower": 3, "wrapper_ir": 3,
    "emit_c": 4, "emit_py": 4, "runtime": 5, "api": 6, "cli": 7,
}
# What each folder may include besides itself. Below it in the stack, with
# two exceptions: folders of one rank never include each other (lower and
# wrapper_ir, emit_c and emit_py), and the runtime knows no compiler: it
# takes CUDA source and kernel metadata, never an AST, so of the folders
# below it only util/.
_COMPILER = ["util", "dsl", "parser"]
MAY_INCLUDE = {
    "util": [],
    "dsl": ["util"],
    "parser": ["util", "dsl"],
    "lower": _COMPILER,
    "wrapper_ir": _COMPILER,
    "emit_c": _COMPILER + ["lower", "wrapper_ir"],
    "emit_py": _COMPILER + ["lower", "wrapper_ir"],
    "runtime": ["util"],
    "api": _COMPILER + ["lower", "wrapper_ir", "emit_c", "emit_py", "runtime"],
    "cli": _COMPILER + ["lower", "wrapper_ir", "emit_c", "emit_py", "runtime", "api"],
}
# The public headers' folders (include/tilec/NAME.h).
PUBLIC = {
    "limits.h": "util", "log.h": "util",
    # dtypes and operators: the vocabulary every layer shares (util/types.c)
    "types.h": "util",
    # integer expressions and their one evaluator (util/iexpr.c)
    "iexpr.h": "util",
    # how a kernel parameter is passed: lowering, emitters and runtime share it
    "param_kind.h": "util",
    # the one description of a compiled kernel variant: filled by the API,
    # written by the C emitter, read by the runtime (tilec_aot_kernel)
    "kernel_desc.h": "util",
    # the sm_90a twin's launch metadata: the lowering writes it, the runtime reads it
    "tma.h": "util",
    # the collectives and reduction operations of graphs: no dependencies
    "collective.h": "util",
    # the version, statuses, locations, contexts, diagnostics and sinks
    "core.h": "dsl",
    # the parse entry points and the module accessors; includes core.h
    "tilec.h": "parser",
    "ast.h": "parser",
    "lower.h": "lower",
    "wir.h": "wrapper_ir",
    # the emitter interface: hook tables over wir lines and the emit
    # session, which the driver in wrapper_ir defines and emitters implement
    "emitter.h": "wrapper_ir",
    "runtime.h": "runtime", "cache.h": "runtime", "pool.h": "runtime",
    "workers.h": "runtime", "externs.h": "runtime", "tensor.h": "runtime",
    "aot.h": "runtime", "plan.h": "runtime", "comm.h": "runtime",
    "program.h": "api",
    # the lines of a choices file (tilec tune --choices), read by the C emitter
    "choices.h": "emit_c",
}
# Generated headers (-I$(BUILD)/gen) and the folder of their source.
GENERATED = {"grammar.h": "parser"}
SOURCES = (".c", ".h", ".re", ".y")
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


def files(root):
    """Every source and header the check reads, as paths relative to root."""
    out = []
    for folder in FOLDERS:
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            out += [os.path.relpath(os.path.join(dirpath, n), root) for n in names if n.endswith(SOURCES)]
    pub = os.path.join(root, "include", "tilec")
    if os.path.isdir(pub):
        out += [os.path.join("include", "tilec", n) for n in os.listdir(pub) if n.endswith(".h")]
    return sorted(out)


def layer_of(path):
    """The folder a file belongs to, or None when it is no layer's."""
    parts = path.split(os.sep)
    if parts[:2] == ["include", "tilec"]:
        return PUBLIC.get(parts[2])
    return parts[0] if parts[0] in FOLDERS else None


def resolve(root, path, inc):
    """The header `inc` that `path` includes, relative to root (the search
    order of the Makefile: the file's folder, -I., -Iinclude), or None."""
    for base in (os.path.dirname(path), "", "include"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(root, cand)):
            return cand
    return None


def includes(root, path):
    """(line number, text as written) of every #include "..." of path."""
    with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
        return [(n, m.group(1)) for n, line in enumerate(f, 1) for m in [INCLUDE.match(line)] if m]


def read_allow(root):
    """{(file, header): line number} of tools/layers.allow."""
    allow = {}
    p = os.path.join(root, "tools", "layers.allow")
    if not os.path.isfile(p):
        return allow
    with open(p, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line or line.startswith("circle:"):
                continue
            a, sep, b = line.partition("->")
            if not sep:
                print(f"tools/layers.allow:{n}: not 'file -> header': {line}")
                sys.exit(2)
            allow[(a.strip(), b.strip())] = n
    return allow


def read_allowed_circles(root):
    """[(line number, set of files)] of tools/layers.allow's 'circle: a b c'
    lines: files of one folder (or glob patterns: lower/*.c) that may call
    or import each other in a circle (each with its reason in a comment)."""
    out = []
    p = os.path.join(root, "tools", "layers.allow")
    if os.path.isfile(p):
        with open(p, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.split("#", 1)[0].strip()
                if line.startswith("circle:"):
                    out.append((n, set(line[len("circle:"):].split())))
    return out


def check_circles(found, allowed, what):
    """(violations, notes) for the circles found (lists of files) against
    the allowed ones: a circle within an allowed set passes (a file that
    joins one fails); an allowed set no circle lies in is stale."""
    bad, used = [], set()
    for comp in found:
        hit = [n for n, files in allowed if all(any(fnmatch.fnmatch(c, f) for f in files) for c in comp)]
        if hit:
            used.update(hit)
        else:
            bad.append(f"circle among {what}: " + " <-> ".join(comp))
    notes = [f"tools/layers.allow:{n}: stale (no such circle now): circle: {' '.join(sorted(files))}"
             for n, files in allowed if n not in used]
    return bad, notes


# The Python package's modules form layers too: no circle of imports
# among python/tilec/*.py (every import counts, an annotation's under
# TYPE_CHECKING too: reading one module means reading the other).
PYPKG = os.path.join("python", "tilec")


def python_imports(root):
    """{module file: set(module files it imports)} of the package."""
    import ast
    d = os.path.join(root, PYPKG)
    if not os.path.isdir(d):
        return {}
    mods = {n[:-3] for n in os.listdir(d) if n.endswith(".py")}
    edges = {}
    for m in sorted(mods):
        path = os.path.join(PYPKG, m + ".py")
        with open(os.path.join(root, path), encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        out = set()
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom):
                if node.level == 1 and node.module:
                    names = [node.module.split(".")[0]]
                elif node.level == 1:
                    names = [a.name for a in node.names]
                elif node.module and node.module.split(".")[0] == "tilec":
                    parts = node.module.split(".")
                    names = [parts[1]] if len(parts) > 1 else [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name.split(".")[1] for a in node.names if a.name.startswith("tilec.")]
            out |= {os.path.join(PYPKG, n + ".py") for n in names if n in mods and n != m}
        edges[path] = out
    return edges


def circles(edges):
    """The strongly connected components of more than one node (Tarjan),
    each as a sorted list; edges: {node: set(node)}."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def module_of(path):
    """A C file and its own header (X.h, or X_internal.h) are one module:
    'emit_c/c_sizes'. Public headers are no module's."""
    if path.startswith("include" + os.sep):
        return None
    stem, ext = os.path.splitext(path)
    if ext == ".h" and stem.endswith("_internal"):
        stem = stem[: -len("_internal")]
    return stem if ext in SOURCES else None


def check(root):
    allow = read_allow(root)
    used = set()
    bad = []
    folder_edges, module_edges = {}, {}
    srcs = files(root)
    present = {module_of(p) for p in srcs if p.endswith((".c", ".re", ".y"))}
    for path in srcs:
        mine = layer_of(path)
        for line, inc in includes(root, path):
            hdr = resolve(root, path, inc)
            if hdr is None:
                theirs = GENERATED.get(os.path.basename(inc))
                if theirs is None:
                    bad.append(f"{path}:{line}: includes \"{inc}\", which is no file of the tree")
                    continue
                hdr = inc
            else:
                theirs = layer_of(hdr)
            if mine is None or theirs is None:
                if theirs is None and hdr not in GENERATED:
                    bad.append(f"{path}:{line}: includes {hdr}, which belongs to no layer (add it to tools/layers.py)")
                continue
            if (path, hdr) in allow:
                used.add((path, hdr))
                continue
            if theirs != mine and theirs not in MAY_INCLUDE[mine]:
                if FOLDERS[theirs] > FOLDERS[mine]:
                    why = "up a layer"
                elif FOLDERS[theirs] == FOLDERS[mine]:
                    why = "sideways, one layer"
                else:
                    why = f"{mine} may include only " + (", ".join(MAY_INCLUDE[mine]) or "itself")
                bad.append(f"{path}:{line}: includes {hdr}: {mine} (layer {FOLDERS[mine]}) -> {theirs} "
                           f"(layer {FOLDERS[theirs]}), {why}")
            if theirs != mine:
                folder_edges.setdefault(mine, set()).add(theirs)
            a, b = module_of(path), module_of(hdr)
            if a and b and a != b and b in present and hdr.endswith(".h"):
                module_edges.setdefault(a, set()).add(b)
    for comp in circles(folder_edges):
        bad.append("circle among folders: " + " <-> ".join(comp))
    for comp in circles(module_edges):
        bad.append("circle among C files (each includes the other's header): " + " <-> ".join(c + ".c" for c in comp))
    stale = sorted(set(allow) - used, key=lambda k: allow[k])
    notes = [f"tools/layers.allow:{allow[k]}: stale (no such include now): {k[0]} -> {k[1]}" for k in stale]
    allowed = [(n, files) for n, files in read_allowed_circles(root) if all(f.startswith(PYPKG) for f in files)]
    pybad, pynotes = check_circles(circles(python_imports(root)), allowed, "Python modules (by imports)")
    return bad + pybad, notes + pynotes


def report(bad, summary):
    """Print each violation, then the summary with their count; the exit
    status (1 when there is one)."""
    for b in bad:
        print(b)
    if bad:
        print(summary.format(len(bad)))
    return 1 if bad else 0


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    bad, stale = check(root)
    for s in stale:
        print("note: " + s, file=sys.stderr)
    return report(bad, "layers: {} violation(s) (docs/architecture.md; tools/layers.allow lists the known ones)")


if __name__ == "__main__":
    sys.exit(main())
