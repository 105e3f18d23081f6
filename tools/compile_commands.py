#!/usr/bin/env python3
"""compile_commands.py OUT DIR BUILD [--flags "CC FLAGS..." FILE...]...: write the
compilation database (compile_commands.json) that editors (clangd) and
clang-tidy read: one entry per C file, with the flags the Makefile builds it
with. `make` writes $(BUILD)/compile_commands.json this way; clangd finds it
there by itself."""
import json
import os
import shlex
import sys


def main(argv):
    out, directory, build, rest = argv[1], argv[2], argv[3], argv[4:]
    entries, flags = [], None
    i = 0
    while i < len(rest):
        if rest[i] == "--flags":  # include directories made absolute: tools differ on what they are relative to
            flags = [f"-I{os.path.join(directory, f[2:])}" if f.startswith("-I") and not f.startswith("-I/") else f
                     for f in shlex.split(rest[i + 1])]
            i += 2
            continue
        path = rest[i]
        entries.append({"directory": directory, "file": os.path.join(directory, path),
                        "arguments": flags + ["-c", path, "-o", os.path.join(build, "obj", path[:-2] + ".o")]})
        i += 1
    text = json.dumps(entries, indent=1) + "\n"
    try:
        with open(out) as f:
            if f.read() == text:
                return 0  # unchanged: keep its time
    except OSError:
        pass
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
