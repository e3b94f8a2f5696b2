# How ctest tells a skipped test from a passed one (SKIP_REGULAR_EXPRESSION values). A skip must
# show: tests/run-all.sh (CI, where every daemon is installed) fails on any (tests/check-skips.py).
# gtest_discover_tests sets the GoogleTest one by itself; gtest_add_tests and add_test do not.
set(OKNA_GTEST_SKIPPED "\\[  SKIPPED \\]")
# Python's unittest prints "OK (skipped=N)" only when nothing failed: a failure is never hidden.
set(OKNA_UNITTEST_SKIPPED "OK \\(skipped=[0-9]+\\)")
