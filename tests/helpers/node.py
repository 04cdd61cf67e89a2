"""Node.js for the tests that run the JS: found once, asked for one way.

A test that runs Node takes the ``node`` fixture (conftest), which gives
Node's path or skips the test, and fails it under ``CI=true`` (CI installs
Node). A test that needs more than Node (onnxruntime-web, TypeScript) checks
that after, with ``helpers.ci.skip_or_fail``.
"""

from __future__ import annotations

import shutil

from helpers.ci import skip_or_fail

#: Node's path, or None where it is not on PATH.
NODE = shutil.which("node")


def need_node(why: str = "CI must run the JS") -> str:
    """Node's path; else skip (fail under ``CI=true``, saying *why*)."""
    if NODE is None:
        skip_or_fail("node is not on PATH", why)
    assert NODE is not None
    return NODE
