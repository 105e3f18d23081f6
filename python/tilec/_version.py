"""The package's version: TILEC_VERSION_STRING of include/tilec/core.h,
the one place it is set. The wheel's build (python/_build_backend.py)
refuses a mismatch and tests/python/test_install.py checks it."""
__version__ = "0.1.0"
