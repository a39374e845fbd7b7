#!/usr/bin/env python3
"""reprokit entry point: see `python reproduce.py --help`."""

import sys

from reprokit.cli import main

if __name__ == "__main__":
    sys.exit(main())
