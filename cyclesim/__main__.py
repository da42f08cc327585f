"""`python -m cyclesim` is the `cyclesim` command (useful from a worktree or without the script)."""

import sys

from cyclesim.cli import main

sys.exit(main())
