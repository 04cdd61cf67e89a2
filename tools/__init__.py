"""Scripts that choose or write what the package ships (a ranker, goldens,
thresholds, screenshots). A package so tests import their functions as
``from tools import write_parity_cases``; what they share with the benchmarks
lives in the package ``benchmarks``. Run one as ``python tools/NAME.py``.
"""
