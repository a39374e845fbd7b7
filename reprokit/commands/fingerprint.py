"""`reproduce.py fingerprint [--environments [--no-build]]`: this host's fingerprint as JSON.

With `--environments` it also carries what each local stack's environment can use here (the
`environments` section, probed by running each interpreter: reprokit/runners/env_probe.py), so the file
plans a GPU run elsewhere with `preflight --runner local --device gpu --fingerprint FILE`."""

from __future__ import annotations

import json
import sys

from reprokit.probes import fingerprint


def add_arguments(p) -> None:
    p.add_argument("--environments", action="store_true",
                   help="also probe each local stack's environment (what its framework can use here)")
    p.add_argument("--no-build", action="store_true",
                   help="with --environments: probe only the environments already made (builds none)")


def run(args) -> int:
    doc = fingerprint.host_fingerprint()
    if args.environments:
        from reprokit.runners import env_probe

        doc["environments"] = env_probe.host_environments(
            build=not args.no_build, say=lambda m: print(m, file=sys.stderr))
    print(json.dumps(doc, indent=1))
    return 0
