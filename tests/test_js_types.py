"""``tsc --noEmit``: the JSDoc types of every js/ module hold across files.

Each script says ``// @ts-check``; only the TypeScript compiler (pinned in
package.json, from ``npm ci``) checks that one module's calls match another's
types and ``js/types.d.ts``. Without Node or node_modules the test skips
saying so, and fails under ``CI=true``.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from helpers.ci import skip_or_fail
from helpers.repo import REPO

TSC = REPO / "node_modules" / ".bin" / "tsc"


@pytest.mark.slow
def test_tsc_finds_no_type_errors(node: str) -> None:
    if not TSC.exists():
        skip_or_fail(
            "TypeScript is not installed: run `npm ci`", "the JS types must be checked"
        )
    pinned = json.loads((REPO / "package.json").read_text())["devDependencies"]
    installed = json.loads(
        (REPO / "node_modules" / "typescript" / "package.json").read_text()
    )["version"]
    assert installed == pinned["typescript"], "run `npm ci`: node_modules is stale"
    result = subprocess.run(
        [str(TSC), "--noEmit", "-p", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_tsconfig_covers_every_module_and_its_tests() -> None:
    config = json.loads((REPO / "tsconfig.json").read_text())
    assert config["compilerOptions"]["strict"] is True
    assert config["compilerOptions"]["checkJs"] is True
    assert set(config["include"]) == {"js/*.js", "js/test/*.js", "js/types.d.ts"}
    unchecked = [
        path.relative_to(REPO)
        for path in [*REPO.glob("js/*.js"), *REPO.glob("js/test/*.js")]
        if not path.read_text("utf-8").startswith("// @ts-check")
    ]
    assert unchecked == []
