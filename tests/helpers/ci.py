"""A tool a test needs is missing: a skip here, a failure on CI.

CI installs Node and Chromium (``.ci/run``): there a test that would skip for
want of one fails instead, so a green run means they ran. ``plugins/ci.py``
turns such skips into failures for tests marked ``node`` or driving
Chromium; ``skip_or_fail`` does it where a test finds the tool missing
itself.
"""

from __future__ import annotations

import os

import pytest

ON_CI = os.environ.get("CI", "").lower() == "true"


def skip_or_fail(missing: str, why: str = "CI must run this test") -> None:
    """Skip the test for *missing*; under ``CI=true`` fail it, saying *why*."""
    if ON_CI:
        pytest.fail(f"{missing} (CI=true: {why})")
    pytest.skip(missing)
