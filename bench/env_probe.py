"""Environment probe: what one stack's interpreter can use, asked of the interpreter itself.

    python env_probe.py FRAMEWORK      FRAMEWORK: torch, tensorflow, theano, mxnet, keras, jax, python
    python env_probe.py --key          what the host's probe cache is keyed by (no framework import)

Run by the host (reprokit/runners/env_probe.py) with the stack's interpreter and environment
variables, once per interpreter and installed packages: the host never imports a framework itself.
Prints one line, PREFIX followed by JSON: the framework part of the stack fingerprint
(stack_fingerprint.collect: version, CUDA build, cuDNN version, compiled architecture list, the
devices the framework sees) and the names of the installed distributions. The host decides from it which
devices the environment can use; this script decides nothing.

Python 3.5 syntax (2.7-compatible), standard library plus the framework; never imports reprokit.
GPU branches: the torch and JAX answers ran on one NVIDIA H100 (torch 2.11 / JAX 0.11, 2026-11-26,
docs/gpu-run), each seeing the GPU (run.json `environments` of every run there). Those of TensorFlow,
Theano, MXNet and Keras have never run on a GPU (that machine had none of them).
"""
from __future__ import print_function

import json
import os
import sys

PREFIX = "REPROKIT_ENV_PROBE "


def key():
    """Interpreter, prefix and every *.dist-info / *.egg-info name on sys.path: a new or upgraded
    package changes it, so the host probes again."""
    names = []
    for entry in sys.path:
        if entry and os.path.isdir(entry):
            try:
                names.extend(sorted(n for n in os.listdir(entry)
                                    if n.endswith((".dist-info", ".egg-info", ".egg-link"))))
            except OSError:
                pass
    return {"executable": sys.executable, "version": "%d.%d.%d" % sys.version_info[:3],
            "prefix": sys.prefix, "dists": names}


def probe(framework):
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import stack_fingerprint
    fp = stack_fingerprint.collect(framework)
    # the installed distributions tell what no import does on a host without a GPU (a jax CUDA
    # plugin, for one); the CUDA libraries found by dlopen are left out: they may be the host's,
    # not the framework's own copies
    return {"python": fp.get("python"), "framework": fp.get("framework"), "dists": key()["dists"]}


def main(argv):
    if len(argv) > 1 and argv[1] == "--key":
        out = key()
    else:
        out = probe(argv[1] if len(argv) > 1 else "python")
    sys.stdout.write("\n" + PREFIX + json.dumps(out, sort_keys=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
