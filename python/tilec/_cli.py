"""The environment's `tilec` command (the wheel's console script): runs the
native command bundled beside the package's libtilec.so (tilec/tilec), or a
source tree's build/bin/tilec for an editable install, with the same
arguments. The binary is stored once in the wheel: it is also the compile
worker the library starts from beside itself."""
from __future__ import annotations

import os
import sys
from typing import List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))


def command_candidates() -> List[str]:
    """Where the command is looked for: beside the package (a wheel), then
    the build of the source tree the package sits in (an editable install)."""
    return [os.path.join(_HERE, "tilec"), os.path.join(_HERE, "..", "..", "build", "bin", "tilec")]


def main(argv: Optional[List[str]] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    for path in command_candidates():
        if os.access(path, os.X_OK) and os.path.isfile(path):
            try:
                os.execv(path, ["tilec", *args])
            except OSError as e:
                sys.stderr.write(f"tilec: cannot run {path}: {e}\n")
                return 126
    sys.stderr.write("tilec: no tilec command in " + " or ".join(map(os.path.normpath, command_candidates())) +
                     " (reinstall the package, or run `make` in the source tree of an editable install)\n")
    return 127


if __name__ == "__main__":
    sys.exit(main())
