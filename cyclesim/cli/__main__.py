"""`python -m cyclesim.cli` is the `cyclesim` command too (as `python -m cyclesim`)."""

import sys

from cyclesim.cli import main

sys.exit(main())
