"""tests/check-skips.py on what ctest really writes: a small ctest project with every way the
project's tests skip (GTEST_SKIP's output, exit 77, unittest's skip, a disabled test), run with
--output-junit, must come out as a failure that names each of them; a clean run passes, and a
unittest failure next to a skip stays a failure rather than a skip.
Run: python3 -m unittest -v check_skips_test (from tests/; ctest runs it as check_skips_selftest).
"""
import os
import pathlib
import subprocess
import sys
import tempfile
import textwrap
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
CHECK = HERE / "check-skips.py"

# The same SKIP_REGULAR_EXPRESSION values as the project's tests (cmake/TestSkips.cmake).
PROJECT = textwrap.dedent("""\
    cmake_minimum_required(VERSION 3.25)
    project(skips NONE)
    enable_testing()
    include({root}/cmake/TestSkips.cmake)
    add_test(NAME passes COMMAND sh -c "echo '[  PASSED  ] 1 test.'")
    {cases}
    """)

CASES = {
    # What GTEST_SKIP() prints, from a binary registered by gtest_add_tests.
    "gtest_skip": textwrap.dedent("""\
        add_test(NAME gtest_skip COMMAND sh -c
          "printf 'x.cc:12: Skipped\\nOVSDB tools not installed\\n[  SKIPPED ] A.B (0 ms)\\n'")
        set_tests_properties(gtest_skip PROPERTIES SKIP_REGULAR_EXPRESSION "${OKNA_GTEST_SKIPPED}")
        """),
    # A fixture script: exit 77.
    "script_skip": textwrap.dedent("""\
        add_test(NAME script_skip COMMAND sh -c "echo 'SKIP: ovs-vswitchd not installed'; exit 77")
        set_tests_properties(script_skip PROPERTIES SKIP_RETURN_CODE 77)
        """),
    "disabled": textwrap.dedent("""\
        add_test(NAME disabled COMMAND true)
        set_tests_properties(disabled PROPERTIES DISABLED TRUE)
        """),
}

UNITTEST_SKIPS = textwrap.dedent("""\
    import unittest
    class T(unittest.TestCase):
        def test_runs(self):
            pass
        def test_needs_helm(self):
            raise unittest.SkipTest("helm is not installed")
    """)
UNITTEST_SKIPS_AND_FAILS = UNITTEST_SKIPS + (
    "    def test_fails(self):\n"
    "        self.fail('broken')\n")


def unittest_case(name, module):
    return textwrap.dedent(f"""\
        add_test(NAME {name} COMMAND {sys.executable} -m unittest -v {module}
          WORKING_DIRECTORY ${{CMAKE_CURRENT_SOURCE_DIR}})
        set_tests_properties({name} PROPERTIES SKIP_REGULAR_EXPRESSION "${{OKNA_UNITTEST_SKIPPED}}")
        """)


class CheckSkipsTest(unittest.TestCase):
    def setUp(self):
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="okna-check-skips-"))
        self.addCleanup(subprocess.run, ["rm", "-rf", str(self.dir)])
        (self.dir / "skips_py.py").write_text(UNITTEST_SKIPS)
        (self.dir / "fails_py.py").write_text(UNITTEST_SKIPS_AND_FAILS)

    def ctest(self, cases):
        """Configures and runs the project with `cases`; returns (ctest's rc, the JUnit path)."""
        (self.dir / "CMakeLists.txt").write_text(PROJECT.format(root=ROOT, cases="\n".join(cases)))
        build = self.dir / "build"
        subprocess.run(["cmake", "-S", str(self.dir), "-B", str(build)], check=True,
                       capture_output=True)
        report = self.dir / "report.xml"
        rc = subprocess.run(["ctest", "--test-dir", str(build), "--output-junit", str(report)],
                            capture_output=True, text=True).returncode
        return rc, report

    def check(self, *args):
        return subprocess.run([sys.executable, str(CHECK), *args], capture_output=True, text=True)

    def test_every_kind_of_skip_fails_the_run_and_is_named(self):
        rc, report = self.ctest(list(CASES.values()) + [unittest_case("unittest_skip", "skips_py")])
        self.assertEqual(rc, 0, "ctest itself counts skips as no failure (why the check exists)")
        out = self.check(str(report))
        self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
        self.assertIn("4 test(s) did not run", out.stdout)
        self.assertIn("gtest_skip: OVSDB tools not installed", out.stdout)
        self.assertIn("script_skip: SKIP: ovs-vswitchd not installed", out.stdout)
        self.assertIn("disabled: disabled", out.stdout)
        self.assertRegex(out.stdout, r"unittest_skip: .*helm is not installed")
        self.assertNotIn("passes", out.stdout)

    def test_allow_lists_them_and_passes(self):
        rc, report = self.ctest([CASES["script_skip"]])
        self.assertEqual(rc, 0)
        out = self.check("--allow", str(report))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("script_skip: SKIP: ovs-vswitchd not installed", out.stdout)

    def test_a_run_without_skips_passes(self):
        rc, report = self.ctest([])
        self.assertEqual(rc, 0)
        out = self.check(str(report))
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(out.stdout, "")

    def test_a_unittest_failure_next_to_a_skip_stays_a_failure(self):
        rc, report = self.ctest([unittest_case("unittest_fails", "fails_py")])
        self.assertNotEqual(rc, 0, "the skip regex must not turn a failed run into a skip")
        self.assertEqual(self.check(str(report)).returncode, 0)


if __name__ == "__main__":
    os.chdir(HERE)
    unittest.main()
