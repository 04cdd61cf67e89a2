# MyST links that name no URL are resolved through every domain
# (myst_parser's MystReferenceResolver asks each one for resolve_any_xref).
extensions = ["myst_parser", "sphinx_ragcite"]
project = "MyST references"
exclude_patterns = ["_build"]
myst_heading_anchors = 2
