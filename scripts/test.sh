#!/usr/bin/env bash
# Install everything the tests need on a fresh Debian 12 machine (apt and pip), start the real
# Docker engine, then run the whole test suite. Called by .ci/run; the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive PIP_DISABLE_PIP_VERSION_CHECK=1

echo "== apt: docker engine, debootstrap, docker-compose, chromium"
if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null \
   || ! command -v docker-compose >/dev/null || ! command -v chromium >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq docker.io debootstrap docker-compose chromium >/dev/null
fi

echo "== pip: the kit with its frameworks and test tools"
python3 -m pip install -q -e '.[frameworks,test]'

if [ -x .ci/docker-setup.sh ]; then
  echo "== docker: start the engine and make the local base image"
  bash .ci/docker-setup.sh
fi

# real Slurm clusters (slurm-wlm, munge) for tests/runners/test_slurm*.py, when those tests run: the one-node
# cluster, and the three-node one (each slurmd in its own network and UTS namespace, with its own CPU
# set) of tests/runners/test_slurm_multinode.py
if [ $# -eq 0 ] || printf '%s\n' "$@" | grep -q slurm; then
  echo "== slurm: munged, slurmctld and slurmd on this machine (scripts/slurm-setup.sh)"
  t0=$(date +%s)
  # a cluster that does not come up fails its own tests (their fixtures run the script again and
  # show why), not the whole run: every other test still runs
  bash scripts/slurm-setup.sh || echo "   slurm setup FAILED: the one-node Slurm tests will fail"
  echo "   slurm setup took $(( $(date +%s) - t0 )) s"
  echo "== slurm: a three-node cluster in network namespaces (scripts/slurm-multinode.sh)"
  t0=$(date +%s)
  bash scripts/slurm-multinode.sh || echo "   multi-node setup FAILED: the multi-node Slurm tests will fail"
  echo "   multi-node setup took $(( $(date +%s) - t0 )) s"
fi

echo "== ruff"
ruff check reprokit reproduce.py tools tests scripts

echo "== pytest"
# Two workers: the tests wait on subprocesses, engines and time limits more than they compute. Every
# test of the Docker engine or the Slurm cluster runs in one of them (tests/conftest.py groups them);
# REPROKIT_TEST_WORKERS=0 runs everything in this process. The groups go out heaviest first, as
# tests/conftest.py orders them from the seconds measured in tests/data/module_seconds.json
# (tools/record_test_seconds.py), not by their number of tests (--no-loadscope-reorder).
python3 -m pytest -q -ra --durations=40 -n "${REPROKIT_TEST_WORKERS:-2}" --dist loadgroup \
  --no-loadscope-reorder "$@"
