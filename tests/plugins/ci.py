"""Under ``CI=true`` a test that needs Node or Chromium must run: a pytest
plugin (registered in ``conftest.py``) that turns such a skip into a failure.

CI installs Node and Chromium (``.ci/run``), so a green run there means they
ran. A test that finds a tool missing itself uses ``helpers.ci.skip_or_fail``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from helpers.ci import ON_CI
from plugins.scheduling import uses_browser

if TYPE_CHECKING:
    from collections.abc import Iterator


def needs_ci_tool(item: pytest.Item) -> bool:
    """Whether *item* runs Node (``node`` marker) or Chromium."""
    return item.get_closest_marker("node") is not None or uses_browser(item)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    if ON_CI and report.skipped and needs_ci_tool(item):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else ""
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where it must run: {reason}"
