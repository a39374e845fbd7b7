#!/usr/bin/env bash
# The modern GPU image (images/modern, flavour gpu) built on this machine for real, started without a
# GPU, and its CUDA binaries audited for today's GPUs.
#
#   scripts/modern_gpu_image.sh [WHEELHOUSE]      (default results/modern-gpu-wheels)
#   STEPS="build check" scripts/modern_gpu_image.sh WHEELHOUSE    (some steps only)
#
# Steps (STEPS, default all four):
#   download  pip download the flavour's pins into WHEELHOUSE (about 6.4 GB; every sha256 checked)
#   build     reproduce.py build --image modern --flavour gpu --wheelhouse WHEELHOUSE (offline)
#   check     a container of the image without a GPU (no network, the image's unprivileged user):
#             torch, TensorFlow and JAX import, and each says it has no GPU (exit 1 otherwise)
#   audit     reproduce.py audit-binaries --image modern --wheelhouse WHEELHOUSE: every library with
#             device code runs on sm_90 and sm_100 (native SASS, or PTX that compiles)
# Not run by CI: 6.4 GB of wheels and a 12.4 GB image (docs/measurements.md has the figures).
set -euo pipefail
cd "$(dirname "$0")/.."
HOUSE=${1:-results/modern-gpu-wheels}
STEPS=${STEPS:-download build check audit}
has() { [[ " $STEPS " == *" $1 "* ]]; }

if has download; then
    echo "== download: images/modern/requirements-gpu.txt into $HOUSE"
    mkdir -p "$HOUSE"
    python -m pip download --progress-bar off -q -r images/modern/requirements-gpu.txt -d "$HOUSE"
    du -sh "$HOUSE"
fi
if has build; then
    echo "== build"
    python reproduce.py build --image modern --flavour gpu --wheelhouse "$HOUSE"
fi
if has check; then
    echo "== check: the image without a GPU"
    docker run -i --rm --network none --user 1000:1000 reprokit/modern:gpu python - <<'EOF'
import sys

import jax
import tensorflow as tf
import torch

said = {"torch": (torch.__version__, f"CUDA {torch.version.cuda}", torch.cuda.is_available()),
        "tensorflow": (tf.__version__, f"built with CUDA {tf.test.is_built_with_cuda()}",
                       bool(tf.config.list_physical_devices("GPU"))),
        "jax": (jax.__version__, f"backend {jax.default_backend()}",
                any(d.platform == "gpu" for d in jax.devices()))}
for name, (version, build, gpu) in said.items():
    print(f"{name} {version} ({build}): {'a GPU' if gpu else 'no GPU'}")
sys.exit(1 if any(gpu for _, _, gpu in said.values()) else 0)
EOF
fi
if has audit; then
    echo "== audit"
    python reproduce.py audit-binaries --image modern --wheelhouse "$HOUSE"
fi
