"""Write js/spec.js, the JS twin of the constants both engines share.

Run after changing ``sphinx_ragcite/answer/spec.py`` or the script lists in
``sphinx_ragcite/extension/assets.py``; ``--check`` exits 1 when the file
is stale (what tests/test_js_spec.py checks).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sphinx_ragcite.extension.js_spec import SPEC_JS, render

TARGET = Path(__file__).resolve().parents[1] / "js" / SPEC_JS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if stale")
    parser.add_argument("--path", type=Path, default=TARGET, help="the file")
    args = parser.parse_args(argv)
    target: Path = args.path
    text = render()
    current = target.read_text(encoding="utf-8") if target.is_file() else None
    if args.check:
        if current != text:
            print(f"{target} is stale: run python tools/write_js_spec.py")
            return 1
        return 0
    if current != text:
        target.write_text(text, encoding="utf-8")
        print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
