"""``python -m toprank.datasets fetch [NAME ...] [--data-home DIR]``: see :func:`toprank.datasets.main`."""

import sys

from toprank.datasets import main

sys.exit(main())
