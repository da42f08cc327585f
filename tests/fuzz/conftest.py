"""Print the fuzz test's counts by outcome at the end of the session."""

import sys


def pytest_terminal_summary(terminalreporter):
    module = sys.modules.get("test_fuzz")
    for line in module.outcome_lines() if module else []:
        terminalreporter.write_line(line)
