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
    def test_results_hold_the_current_report(self):
        """bench/results holds the report and its sources, each described in
        its README; no record is named by date (past runs live in git)."""
        results = os.path.join(ROOT, "bench", "results")
        with open(os.path.join(results, "README.md")) as f:
            readme = f.read()
        for dirpath, dirs, names in os.walk(results):
            for n in names:
                rel = os.path.relpath(os.path.join(dirpath, n), results)
                self.assertNotRegex(rel, r"20\d\d-\d\d-\d\d", f"bench/results/{rel} is named by date")
                if rel != "README.md":
                    self.assertIn(f"`{rel}`", readme, f"bench/results/README.md does not describe {rel}")

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

    def test_each_host_case_comes_from_the_first_run_that_measured_it(self):
        sys.path.insert(0, os.path.join(ROOT, "bench", "harness"))
        import report
        recs = [{"kind": "env", "tag": "run1", "date": "d1"},
                {"kind": "host", "tag": "run1", "case": "a", "side": "s", "us": 1.0},
                {"kind": "env", "tag": "host", "date": "d2"},
                {"kind": "host", "tag": "host", "case": "b", "side": "s", "us": 2.0},
                {"kind": "host_env", "tag": "host", "case": "b", "threads": 1},
                {"kind": "host", "tag": "host", "case": "a", "side": "s", "us": 3.0}]
        view = report.primary(recs)
        self.assertEqual(dict(view.host_from), {"a": "run1", "b": "host"})
        self.assertEqual(sorted((r["case"], r["us"]) for r in view.host), [("a", 1.0), ("b", 2.0)])

if __name__ == "__main__":
    unittest.main()
