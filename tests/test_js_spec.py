"""js/spec.js is what tools/write_js_spec.py writes now: the constants and
the script order the browser engine shares with Python are never copied by
hand, so a change on the Python side that is not carried over fails here."""

from __future__ import annotations

import subprocess
import sys

from sphinx_ragcite.extension import assets
from sphinx_ragcite.extension.js_spec import SPEC_JS, render, spec_values

from helpers.repo import REPO


def test_spec_js_is_what_the_tool_writes() -> None:
    written = (REPO / "js" / SPEC_JS).read_text("utf-8")
    assert written == render(), "js/spec.js is stale: run python tools/write_js_spec.py"


def test_the_tool_says_when_the_file_is_stale(tmp_path) -> None:
    tool = REPO / "tools" / "write_js_spec.py"
    fresh = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True
    )
    assert fresh.returncode == 0, fresh.stdout
    stale = tmp_path / SPEC_JS
    stale.write_text(render().replace('"store"', '"stale"'), "utf-8")
    check = [sys.executable, str(tool), "--check", "--path", str(stale)]
    refused = subprocess.run(check, capture_output=True, text=True)
    assert refused.returncode == 1
    assert "is stale: run python tools/write_js_spec.py" in refused.stdout
    subprocess.run([sys.executable, str(tool), "--path", str(stale)], check=True)
    assert stale.read_text("utf-8") == render()


def test_the_script_order_is_the_builds() -> None:
    scripts = spec_values()["SCRIPTS"]
    assert scripts["page"] == [n.removesuffix(".js") for n in assets.WIDGET_SCRIPTS]
    assert scripts["page"][:2] == ["lib", "spec"], (
        "the registry and the spec load first"
    )
    assert scripts["worker"][-1] == "store"
