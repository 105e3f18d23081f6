#!/usr/bin/env python3
"""gen_stress.py: .tile inputs that stress the graph front end's work.

  tools/gen_stress.py graph N    a graph of N statements: empty, kernel call,
                                 view, in a repeating pattern (each buffer is
                                 used once more, so planning frees and reuses)
  tools/gen_stress.py keys N     a graph of N statements whose buffers all have
                                 different sizes (every pool key distinct)
  tools/gen_stress.py degree D K a size expression (s1 + ... + sK)^D

Used to measure --check / --emit ir / --emit c before and after bounding
the symbolic work (docs/reliability.md, "Limits"); the tests build the
same shapes (tests/test_robust.c)."""
import sys


def graph(n):
    out = ["kernel k(x: *f32, y: *f32, n: i32) grid (1) { store(y, load(x)); }",
           "graph g(a: f32[N]) -> f32[N] {"]
    prev = "a"
    for i in range(n // 3):
        out.append(f"    let t{i} = empty(f32, [N]);")
        out.append(f"    k({prev}, t{i}, N);")
        out.append(f"    let v{i} = view(t{i}, f32[N]);")
        prev = f"v{i}"
    out.append(f"    return {prev};")
    out.append("}")
    return "\n".join(out) + "\n"


def keys(n):
    out = ["kernel k(x: *f32, y: *f32, n: i32) grid (1) { store(y, load(x)); }",
           "graph g(a: f32[N]) {"]
    for i in range(n // 2):
        out.append(f"    let t{i} = empty(f32, [N + {i}]);")
        out.append(f"    k(a, t{i}, N);")
    out.append("}")
    return "\n".join(out) + "\n"


def degree(d, k):
    s = " + ".join(f"s{i}" for i in range(k))
    dims = ", ".join(f"s{i}" for i in range(k))
    e = " * ".join(f"({s})" for _ in range(d))
    return (f"graph g(x: f32[{dims}]) {{\n"
            f"    let t = empty(f32, [{e}]);\n"
            "}\n")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "graph":
        sys.stdout.write(graph(int(sys.argv[2])))
    elif len(sys.argv) >= 3 and sys.argv[1] == "keys":
        sys.stdout.write(keys(int(sys.argv[2])))
    elif len(sys.argv) >= 4 and sys.argv[1] == "degree":
        sys.stdout.write(degree(int(sys.argv[2]), int(sys.argv[3])))
    else:
        sys.exit(__doc__)
