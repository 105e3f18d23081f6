"""The record of the last green `make test` (tools/test_stamp.sh) in a small
git tree: a check without a record asks for a run; after `save` the same
files pass; an edit, a new file, another build config or RETEST=1 ask for
a run again; reverting the edit matches the record again."""
import os
import subprocess
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TOOL = os.path.abspath(os.path.join(ROOT, "tools", "test_stamp.sh"))


class StampTests(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.dir = d.name
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=self.dir)
        env.pop("RETEST", None)
        self.env = env
        subprocess.run(["git", "init", "-q", self.dir], check=True, env=env)
        self.write("a.c", "int a;\n")
        with open(os.path.join(self.dir, ".gitignore"), "w") as f:
            f.write("/build/\n")
        os.makedirs(os.path.join(self.dir, "build"))

    def write(self, name, text):
        with open(os.path.join(self.dir, name), "w") as f:
            f.write(text)

    def stamp(self, mode, config="cc -O2", retest=None):
        env = dict(self.env)
        if retest:
            env["RETEST"] = retest
        return subprocess.run([TOOL, "build", mode, config], cwd=self.dir, env=env, capture_output=True, text=True)

    def test_a_green_record_is_kept_until_something_changes(self):
        self.assertNotEqual(self.stamp("check").returncode, 0, "no record yet")
        self.assertEqual(self.stamp("save").returncode, 0)
        p = self.stamp("check")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("nothing changed since the last green run", p.stdout)
        self.assertNotEqual(self.stamp("check", retest="1").returncode, 0, "RETEST=1 runs again")
        self.assertNotEqual(self.stamp("check", config="cc -O0").returncode, 0, "another config")
        self.write("a.c", "int a = 1;\n")
        self.assertNotEqual(self.stamp("check").returncode, 0, "an edit")
        self.write("a.c", "int a;\n")
        self.assertEqual(self.stamp("check").returncode, 0, "the edit reverted")
        self.write("new_test.c", "int t;\n")
        self.assertNotEqual(self.stamp("check").returncode, 0, "a new file")
        os.remove(os.path.join(self.dir, "new_test.c"))
        self.write("build/out.o", "ignored\n")
        self.assertEqual(self.stamp("check").returncode, 0, "an ignored build product counts for nothing")


if __name__ == "__main__":
    unittest.main()
