"""``python -m sphinx_ragcite`` is the ``ragcite`` command."""

import sys

from sphinx_ragcite.cli import main

sys.exit(main())
