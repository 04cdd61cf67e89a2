"""The benchmarks, and the code tests and tools share with them.

One importable home for what ``tests/``, ``benchmarks/`` and ``tools/`` have in
common: the third-party corpora (``_corpora``), built sites, results and
figures (``_harness``), the dev sets (``devsets``, ``near_topic``),
synthetic question logs (``_question_log``) and the Python/JS parity runner
(``_parity``). Import them as ``from benchmarks import _harness``: the
checkout's root is on ``sys.path`` in an editable install (``pip install -e``)
and under pytest (``pythonpath`` in pyproject.toml); nothing edits
``sys.path``. A benchmark runs as ``python benchmarks/NAME.py`` or ``python -m
benchmarks.NAME``.
"""
