"""What the test modules share besides fixtures, one module per idea.

Test modules import these (``from helpers.builds import read_passages``):
``tests/`` is on ``sys.path`` under pytest, as the folder of the root
``conftest.py``. The fixtures are in ``conftest.py``; how tests are tiered,
grouped and ordered is in ``plugins/``.

- ``repo``: the checkout's folders and the ``benchmarks`` package.
- ``builds``: building a book (in process or as ``python -m sphinx``), the
  session's shared builds, and readers of a built index.
- ``servers``: free ports, servers in a thread or a child process, the
  plain file server, SSE and waiting.
- ``llm``: a scripted generator that streams what a test tells it to.
- ``node``: where Node is, and the one way a test asks for it.
- ``ci``: a tool a test needs is missing: a skip, a failure under ``CI=true``.
- ``browser``: Chromium's launch options and what tests do on a page.
- ``anchors``: every passage ID is an anchor where its text starts.
- ``mcp``: an MCP client session over HTTP.
"""
