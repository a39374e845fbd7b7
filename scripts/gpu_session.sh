#!/usr/bin/env bash
# One prepared GPU session (docs/gpu.md says what it checks and why, most valuable first: the machine's
# facts, the GPU tests, an independent timing, the kit's runs), for a lent machine with
# torch/JAX installed, no network and no Docker. Every step has its own time limit under one overall
# deadline; runs end with SIGINT (the kit keeps finished cells); results are tarred after each run so
# a cut-off session still brings back what finished.
#
#   OUT=/some/dir DEADLINE_S=420 bash scripts/gpu_session.sh     (PLAN=third, the default: claims first)
#
# Needs, as wheels in .whl/ where the machine lacks them (the 2026-11-26 H100 had Python 3.12 without
# these; fetched on a machine with network, then carried):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 -d .whl jsonschema==4.26.0 \
#     referencing==0.37.0 jsonschema-specifications==2025.9.1 rpds-py==0.30.0 ruptures==1.1.10 docker==7.1.0
# DEVICE=cpu runs the same steps on the CPU (to rehearse the script on a machine without a GPU;
# tests/scripts/test_gpu_session.py does, with CLAIMS_S=60 to shorten the claims step).
set -u
OUT=${OUT:?set OUT to the directory that comes back}
DEADLINE_S=${DEADLINE_S:-420}  # one call of at most 7 minutes leaves a 15-minute lease room to rerun
DEVICE=${DEVICE:-gpu}
PY=${PY:-$(command -v python3)}
W=${W:-/tmp/rk}
START=$(date +%s)
mkdir -p "$W/results" "$OUT"
LOG="$OUT/session.log"
FACTS="$OUT/facts.txt"
export PYTHONUNBUFFERED=1 REPROKIT_STAND_INS=1 MPLBACKEND=Agg

left() { echo $(( DEADLINE_S - ($(date +%s) - START) )); }
# step NAME BUDGET_S CMD...: runs CMD with SIGINT at min(BUDGET, time left - 25 s), logs its status
step() {
  local name=$1 budget=$2; shift 2
  local l; l=$(( $(left) - 25 ))
  (( l < budget )) && budget=$l
  if (( budget < 5 )); then echo "== $name: SKIPPED (no time left)" | tee -a "$LOG"; return 0; fi
  echo "== $name (limit ${budget}s, t=$(( $(date +%s) - START ))s): $*" | tee -a "$LOG"
  timeout -s INT -k 15 "$budget" "$@" >>"$LOG" 2>&1
  local rc=$?
  echo "== $name: rc=$rc at t=$(( $(date +%s) - START ))s" | tee -a "$LOG"
}
pack() { tar -C "$W" -czf "$OUT/results.tar.gz.tmp" results && mv "$OUT/results.tar.gz.tmp" "$OUT/results.tar.gz"; }

WHEELS=${WHEELS:-.whl}
if ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$WHEELS"/*.whl >>"$LOG" 2>&1 && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

# 1. facts of the machine, one line each
{
  echo "date: $(date -u +%FT%TZ)"; echo "python: $PY ($("$PY" -V 2>&1))"; uname -a; nproc
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit,mig.mode.current,persistence_mode,compute_mode --format=csv 2>&1
  "$PY" - <<'EOF' 2>&1
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print("cuda available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, "cc", "%d.%d" % (p.major, p.minor), "SMs", p.multi_processor_count,
          "mem GiB", round(p.total_memory / 2**30, 1))
    print("arch_list", torch.cuda.get_arch_list())
print("default matmul.allow_tf32", torch.backends.cuda.matmul.allow_tf32,
      "cudnn.allow_tf32", torch.backends.cudnn.allow_tf32,
      "float32_matmul_precision", torch.get_float32_matmul_precision())
try:
    import jax
    print("jax", jax.__version__, "devices", jax.devices(), "default_matmul_precision",
          jax.config.jax_default_matmul_precision)
except Exception as e:
    print("jax: not usable:", type(e).__name__, e)
import importlib
for m in ("numpy", "pandas", "scipy", "jinja2", "jsonschema", "ruptures", "pynvml", "yaml", "rich",
          "matplotlib", "docker"):
    try:
        mod = importlib.import_module(m)
        print(m, getattr(mod, "__version__", "?"))
    except Exception as e:
        print(m, "MISSING", type(e).__name__, e)
EOF
} >"$FACTS" 2>&1
nvidia-smi -q >"$OUT/nvidia-smi-q.txt" 2>&1

STK="--python torch-0.1=$PY --python torch-1.3=$PY --python torch-modern=$PY --python jax-modern=$PY"
run() {  # run NAME BUDGET SUITE CELLS...
  local name=$1 budget=$2 suite=$3; shift 3
  step "$name" "$budget" "$PY" reproduce.py run --suite "$suite" --cells "$@" --quick --repeat 1 \
    --device "$DEVICE" --runner local --results "$W/results" $STK
  pack
}

# 2. the GPU tests (NVML fingerprint, GPU peak, GPU state) and the machine as the kit sees it
step pytest-gpu 60 "$PY" -m pytest -q -p no:cacheprovider -m gpu tests/probes tests/stacks/test_end_sync_probe.py -o addopts=""
step fingerprint 40 sh -c "'$PY' reproduce.py fingerprint > '$OUT/fingerprint.json'"
# 3. an independent check of one 000 config, beside the kit's cells
[ "$DEVICE" = gpu ] && step independent 60 "$PY" scripts/gpu_independent_check.py --out "$W/results/independent-check.json"
pack
# 4. the kit's GPU runs, most valuable first. PLAN=first (the 2026-11-26 session: every PyTorch and
# JAX cell once, --quick) or PLAN=second (what that session left open, docs/gpu-run/README.md: the
# smallest 000 configuration at the full budget in 3 processes, where --quick's 6 samples missed the
# independent timing by up to 14 %, and the 003 PyTorch cells the first session had no time for)
PLAN=${PLAN:-third}
if [ "$PLAN" = third ]; then
  # claims first. Source 003's PyTorch cells with the design by role under --time-limit:
  # the cells whose claims can be decided on this GPU run 3 to 6 processes each until decided, in order
  # of claim pairs per second; the rest (context) once, if time is left. Then the smallest 000
  # configuration in 3 processes beside the independent timing of step 3.
  T=$(( $(left) - 150 )); (( T > ${CLAIMS_S:-300} )) && T=${CLAIMS_S:-300}  # CLAIMS_S: a shorter rehearsal
  step stacked-2019-claims $(( T + 40 )) "$PY" reproduce.py run --suite stacked-lstm-2019 --cells '003/pytorch/*' \
    --time-limit "${T}s" --device "$DEVICE" --runner local --results "$W/results" $STK
  pack
  step legacy-000-small-3 90 "$PY" reproduce.py run --suite legacy-2017 --cells '000/pytorch/nn_lstm/b128-s30-h512' \
    --repeat 3 --device "$DEVICE" --runner local --results "$W/results" $STK
  pack
  # 003's suspicious PyTorch cuDNN forward rows (L428-L430) and its missing final sync: the
  # as-published forward records the loop with that sync added and a launch-queue probe (GPU only)
  run tail-003 45 stacked-lstm-2019 '003/pytorch/eager_cudnn/forward'
elif [ "$PLAN" = first ]; then
  run legacy-2017-torch 110 legacy-2017 '000/pytorch/*' '001/*'
  run modern-torch 120 modern 'modern/000/pytorch/*' 'modern/001/pytorch/*' 'modern/003/pytorch/*'
  run stacked-2019-torch 60 stacked-lstm-2019 '003/pytorch/eager_cudnn/*' '003/pytorch/jit_static/*' '003/pytorch/eager_fine_grained/*'
  run modern-jax 70 modern 'modern/000/jax/*' 'modern/001/jax/*'
else
  full() {  # full NAME BUDGET SUITE CELLS...: the full budget, 3 interleaved processes per cell
    local name=$1 budget=$2 suite=$3; shift 3
    step "$name" "$budget" "$PY" reproduce.py run --suite "$suite" --cells "$@" --repeat 3 \
      --device "$DEVICE" --runner local --results "$W/results" $STK
    pack
  }
  full small-000-full 150 modern 'modern/000/pytorch/nn_lstm/b128-s30-h512*'
  full legacy-000-small-full 90 legacy-2017 '000/pytorch/nn_lstm/b128-s30-h512'
  run stacked-2019-rest 150 stacked-lstm-2019 '003/pytorch/*'
  run modern-003-jax 60 modern 'modern/003/jax/*'
fi
step preflight 20 sh -c "for s in legacy-2017 stacked-lstm-2019 cudnn-lstm-2018 modern; do '$PY' reproduce.py preflight --suite \$s --runner local --device $DEVICE $STK; done"
# 5. render what each run has (an interrupted run may have no report yet)
for r in "$W"/results/*/; do
  [ -f "$r/run.json" ] && step "report $(basename "$r")" 30 "$PY" reproduce.py report "$r"
done
pack
echo "== done at t=$(( $(date +%s) - START ))s" | tee -a "$LOG"
