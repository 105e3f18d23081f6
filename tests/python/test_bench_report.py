"""The benchmark report is a pure function of the measurements: running
bench/harness/report.py on the committed bench/results/benchmarks.jsonl
gives the committed bench/results/benchmarks.md (the plot's line aside,
which needs matplotlib), so no figure in it was edited by hand."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def _tables(path):
    """The report's text without the plot's line."""
    with open(path) as f:
        return "".join(line for line in f if not line.startswith("![")).rstrip()


class ReportTests(unittest.TestCase):
    def test_report_reproduces_the_committed_tables(self):
        results = os.path.join(ROOT, "bench", "results")
        with tempfile.TemporaryDirectory() as d:
            md = os.path.join(d, "benchmarks.md")
            subprocess.run([sys.executable, os.path.join(ROOT, "bench", "harness", "report.py"), md, "",
                            os.path.join(results, "benchmarks.jsonl")], check=True, stdout=subprocess.DEVNULL)
            got = _tables(md)
        self.assertEqual(got, _tables(os.path.join(results, "benchmarks.md")))

    def test_docs_performance_is_the_report(self):
        self.assertEqual(_tables(os.path.join(ROOT, "docs", "performance.md")),
                         _tables(os.path.join(ROOT, "bench", "results", "benchmarks.md")))


if __name__ == "__main__":
    unittest.main()
