"""CPU checks of the Python package: it imports with the standard library
only, finds libtilec, and without a GPU says why in one clear error."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
import tilec  # noqa: E402


class CpuTests(unittest.TestCase):
    def test_version(self):
        self.assertRegex(tilec.version(), r"^\d+\.\d+\.\d+$")

    def test_no_gpu_is_a_clear_error(self):
        try:
            d = tilec.Device(0)
        except tilec.TilecError as e:
            self.assertTrue("no CUDA driver" in str(e) or "no CUDA device" in str(e), str(e))
        else:
            self.skipTest(f"a GPU is present: {d}")

    def test_pointer_of(self):
        class Fake:
            __cuda_array_interface__ = {"data": (1234, False), "shape": (1,), "typestr": "<f4", "version": 3}
        self.assertEqual(tilec.pointer_of(Fake()), 1234)
        self.assertEqual(tilec.pointer_of(77), 77)
        with self.assertRaises(tilec.TilecError):
            tilec.pointer_of("not a buffer")


if __name__ == "__main__":
    unittest.main()
