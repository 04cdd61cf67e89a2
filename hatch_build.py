"""Bring onnxruntime-web's WASM runtime into the sdist and the wheel.

``npm ci`` puts the pinned runtime in ``node_modules/``; the sdist keeps its
three files there, and the wheel (built from the checkout or from the sdist)
carries them in ``sphinx_ragcite/static/ort/``. Without them the build says
so in one line and goes on: sites built with that install keep keyword search.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

#: Read, not imported: the build environment has none of the package's
#: dependencies, and this module imports only the standard library.
ASSETS = "sphinx_ragcite/extension/browser_assets.py"


def browser_assets(root: Path) -> Any:
    spec = importlib.util.spec_from_file_location(
        "_ragcite_browser_assets", root / ASSETS
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot read {root / ASSETS}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CustomBuildHook(BuildHookInterface):
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name == "wheel" and version == "editable":
            return  # an editable install finds node_modules/ in the checkout
        root = Path(self.root)
        assets = browser_assets(root)
        dist = root / assets.NPM_DIST
        names = sorted(assets.ORT_FILES.values())
        pinned = assets.pinned_ort_version(root)
        installed = assets.installed_ort_version(root)
        missing = [name for name in names if not (dist / name).is_file()]
        if installed is None:
            why = "not in node_modules/"
        elif installed != pinned:
            why = f"{installed} in node_modules/, package.json pins {pinned}"
        elif missing:
            why = f"missing {', '.join(missing)}"
        else:
            why = ""
        if why:
            self.app.display_warning(
                f"sphinx-ragcite: no browser answers in this {self.target_name} "
                f"({assets.ORT_PACKAGE}: {why}; run `npm ci` first)"
            )
            return
        for name in names:
            target = (
                f"sphinx_ragcite/{assets.WHEEL_FOLDER}/{name}"
                if self.target_name == "wheel"
                else f"{assets.NPM_DIST}/{name}"
            )
            build_data["force_include"][str(dist / name)] = target
        if self.target_name == "sdist":
            # the pinned version, for the wheel built from this sdist
            package_json = root / "node_modules" / assets.ORT_PACKAGE / "package.json"
            build_data["force_include"][str(package_json)] = (
                f"node_modules/{assets.ORT_PACKAGE}/package.json"
            )
