"""Temporary directories for the Python suites that are removed when the
process exits (also after a failure: unittest.main exits through
SystemExit, which runs atexit), so a run leaves nothing in $TMPDIR (make
test gives each run its own and fails on anything left, docs/reliability.md)."""
import atexit
import shutil
import tempfile


def scratch_dir(prefix: str) -> str:
    """A new directory under $TMPDIR, removed with everything in it at exit."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path
