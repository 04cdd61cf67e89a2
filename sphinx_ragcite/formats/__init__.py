"""The ``_ragcite/`` file formats, each reader beside its writer (both sides)."""
