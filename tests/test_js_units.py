"""The widget's pure JS modules, through Node's own test runner."""

from __future__ import annotations

import re
import subprocess

import pytest

from helpers.repo import REPO


@pytest.mark.slow
@pytest.mark.node  # under CI=true a skip fails the run (plugins/ci.py)
def test_node_test_runner_passes(node: str) -> None:
    result = subprocess.run(
        [node, "--test", "js/test/"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# fail 0" in result.stdout
    passed = re.search(r"^# pass (\d+)$", result.stdout, re.MULTILINE)
    assert passed, result.stdout
    assert int(passed.group(1)) >= 90  # every test file ran (96 when written)
