#!/usr/bin/env python3
"""Lists the tests that did not run, from ctest's JUnit reports, and fails if there is any.

ctest counts a skipped test (GTEST_SKIP, SKIP_RETURN_CODE, SKIP_REGULAR_EXPRESSION) or a disabled
one as neither passed nor failed and exits 0. tests/run-all.sh runs where every daemon is
installed (CI), so there a skip hides a missing piece behind a green run: it is a failure.
Usage: check-skips.py [--allow] JUNIT.xml...   (from ctest --output-junit FILE)
  --allow  list them, exit 0 (a machine that lacks some daemons)
"""
import sys
import xml.etree.ElementTree as ET


def reason(output):
    """The test's own word on why: GTEST_SKIP's message (the line after "file:line: Skipped"),
    unittest's "test_x (...) ... skipped 'why'", or a script's "SKIP: ..." line."""
    lines = [line.strip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if line.endswith(": Skipped") and i + 1 < len(lines):
            return lines[i + 1]
        if line.startswith("SKIP") or " ... skipped " in line:
            return line
    return ""


def not_run(path):
    """(name, why) of each test of one report that was skipped or disabled."""
    for case in ET.parse(path).getroot().iter("testcase"):
        status = case.get("status", "")
        if status == "notrun":
            element = case.find("skipped")
            why = element.get("message", "") if element is not None else ""
            yield case.get("name"), reason(case.findtext("system-out") or "") or why or "skipped"
        elif status == "disabled":
            yield case.get("name"), "disabled"


def main(args):
    allow = "--allow" in args
    paths = [a for a in args if a != "--allow"]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    found = [f"{name}: {why}" for path in paths for name, why in not_run(path)]
    if not found:
        return 0
    print(f"== {len(found)} test(s) did not run ==")
    print("\n".join(found))
    if allow:
        return 0
    print("a skip is a failure here: every daemon should be installed (ALLOW_SKIPS=1 accepts them)")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
