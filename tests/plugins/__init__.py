"""pytest plugins of the suite, registered in ``conftest.py``'s
``pytest_plugins``: ``environment`` (the process the tests run in),
``scheduling`` (tiers, workers, order) and ``ci`` (no skip on CI)."""
