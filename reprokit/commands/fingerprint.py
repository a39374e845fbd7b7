"""`reproduce.py fingerprint`: this host's fingerprint as JSON."""

from __future__ import annotations

import json

from reprokit import fingerprint


def add_arguments(p) -> None:
    pass


def run(args) -> int:
    print(json.dumps(fingerprint.host_fingerprint(), indent=1))
    return 0
