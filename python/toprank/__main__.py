import sys

from toprank.cli import main

sys.exit(main())
