#!/usr/bin/env bash
# The GPU check: every CUDA path of TrainLab, on one
# NVIDIA GPU, in at most about 6 minutes, ending in ONE JSON line on stdout.
#
#     bash bench/gpu_bundle.sh            # here, first: .whl/ (TrainLab's wheel + what the machine lacks)
#     bash bench/gpu_check.sh             # on the GPU machine (the device tool: docs/gpu-check.md)
#     bash bench/gpu_check.sh --cpu-dry-run   # anywhere: every step at tiny scale on the CPU
#
# Options:
#   --cpu-dry-run     tiny scale, CUDA hidden; CUDA-only checks run their code on
#                     the CPU and report `skipped: no CUDA` (also GPU_CHECK_DRY_RUN=1)
#   --wheels DIR      install TrainLab from the wheels in DIR (default: .whl; in a
#                     dry run, a wheel built from the tree; --wheels .whl tests the bundle)
#   --no-install      use the Python's own TrainLab (a developer's .venv)
#   --only a,b        run only these checks; --skip a,b: all but these
#   --budget S        seconds for all checks together (default 340)
#   --out DIR         write gpu_check.json (every assertion and fact) and logs/ there
#                     (default: $OUT when set, which is what the device tool collects)
#   --python PY       the interpreter (default: .venv/bin/python, else
#                     /opt/torch/.venv/bin/python3, else python3)
#
# Installation, as on a machine without network: pip --no-index --no-deps
# --target a temporary folder, put first on PYTHONPATH; torch, torchvision and
# transformers are the ones the Python already has.  Each check runs in its own
# process under its own time limit (gpucheck/registry.py); a hung check is
# killed and reported, the others still run.  Human lines on stderr; exit 0
# when no check failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DRY="${GPU_CHECK_DRY_RUN:-0}"
WHEELS=""
INSTALL=1
BUDGET=340
ONLY=""
SKIP=""
OUTDIR="${OUT:-}"
PY="${PYTHON:-}"
while [ $# -gt 0 ]; do
    case "$1" in
        --cpu-dry-run) DRY=1 ;;
        --wheels) WHEELS="$2"; shift ;;
        --no-install) INSTALL=0 ;;
        --budget) BUDGET="$2"; shift ;;
        --only) ONLY="$2"; shift ;;
        --skip) SKIP="$2"; shift ;;
        --out) OUTDIR="$2"; shift ;;
        --python) PY="$2"; shift ;;
        -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu_check.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ -z "$PY" ]; then
    # a developer's .venv; the GPU check machine's own Python; any python3
    for candidate in .venv/bin/python /opt/torch/.venv/bin/python3 python3; do
        if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
    done
fi
STARTED=$(date +%s)
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
DRY_JSON=false
[ "$DRY" = 1 ] && DRY_JSON=true

json_text() { printf '"%s"' "$(printf '%s' "$1" | tr '\n\t\r' '   ' | sed 's/\\/\\\\/g; s/"/\\"/g' | cut -c1-1500)"; }
give_up() {  # the one JSON line, when the checks could not even start
    echo "gpu_check.sh: $1" >&2
    printf '{"gpu_check": 1, "ok": false, "dry_run": %s, "error": %s}\n' "$DRY_JSON" "$(json_text "$1")"
    exit 1
}

if [ "$DRY" = 1 ]; then
    export GPU_CHECK_DRY_RUN=1
    export CUDA_VISIBLE_DEVICES=""  # the dry run is the CPU's, even on a GPU machine
fi
"$PY" -c 'import torch' 2>"$WORK/torch.log" || give_up "$PY cannot import torch: $(tail -c 400 "$WORK/torch.log")"
export TRAINLAB_HOME="$WORK/home"  # runs, index and model store stay in the scratch folder
export PYTHONUNBUFFERED=1
export HF_HUB_DISABLE_PROGRESS_BARS=1

# -- TrainLab from wheels ----------------------------------------------------------------------
INSTALL_MSG=""
if [ "$INSTALL" = 1 ]; then
    # The GPU machine installs the carried .whl/; a dry run builds its wheel from
    # the tree as it is now, unless told which wheels to test (--wheels .whl).
    if [ -z "$WHEELS" ] && [ -d "$ROOT/.whl" ] && [ "$DRY" != 1 ]; then WHEELS="$ROOT/.whl"; fi
    if [ -z "$WHEELS" ] && [ "$DRY" = 1 ]; then
        WHEELS="$WORK/wheels"
        echo "== building a TrainLab wheel from this tree (dry run)" >&2
        PYTHON="$PY" bash "$ROOT/bench/gpu_bundle.sh" --no-download --out "$WHEELS" >"$WORK/bundle.log" 2>&1 \
            || give_up "building the wheel failed: $(tail -c 800 "$WORK/bundle.log")"
    fi
    if [ -n "$WHEELS" ]; then
        ls "$WHEELS"/trainlab-*.whl >/dev/null 2>&1 || give_up "no trainlab-*.whl in $WHEELS (run bench/gpu_bundle.sh first)"
        echo "== installing from $WHEELS: $(cd "$WHEELS" && ls -1 ./*.whl | tr '\n' ' ')" >&2
        "$PY" -m pip install -q --no-index --no-deps --target "$WORK/site" "$WHEELS"/*.whl >"$WORK/pip.log" 2>&1 \
            || give_up "pip install --no-index failed: $(tail -c 800 "$WORK/pip.log")"
        export PYTHONPATH="$WORK/site${PYTHONPATH:+:$PYTHONPATH}"
        export GPU_CHECK_SITE="$WORK/site"
        INSTALL_MSG="pip install --no-index --no-deps --target (scratch)/site: $(cd "$WHEELS" && ls -1 ./*.whl | sed 's|^\./||' | tr '\n' ' ')"
        if [ -f "$WHEELS/tree.sha256" ]; then
            GPU_CHECK_WHEEL_STAMP="$(cat "$WHEELS/tree.sha256")"
            GPU_CHECK_TREE_STAMP="$(bash "$ROOT/bench/gpu_bundle.sh" --print-stamp)"
            export GPU_CHECK_WHEEL_STAMP GPU_CHECK_TREE_STAMP
        fi
    else
        INSTALL_MSG="not installed: no wheels folder (.whl; run bench/gpu_bundle.sh); $PY's own TrainLab"
    fi
else
    INSTALL_MSG="not installed (--no-install): $PY's own TrainLab"
fi
export GPU_CHECK_INSTALL="$INSTALL_MSG"
echo "== $INSTALL_MSG" >&2
if command -v nvidia-smi >/dev/null 2>&1 && [ "$DRY" != 1 ]; then
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,utilization.gpu --format=csv >&2 || true
    nvidia-smi --query-gpu=mig.mode.current --format=csv,noheader 2>/dev/null | sed 's/^/MIG mode: /' >&2 || true
fi

# -- the checks ----------------------------------------------------------------------------------
LEFT=$((BUDGET - ($(date +%s) - STARTED)))
ARGS=(--budget "$LEFT" --work "$WORK/checks")
[ "$DRY" = 1 ] && ARGS+=(--dry-run)
[ -n "$ONLY" ] && ARGS+=(--only "$ONLY")
[ -n "$SKIP" ] && ARGS+=(--skip "$SKIP")
[ -n "$OUTDIR" ] && mkdir -p "$OUTDIR" && ARGS+=(--out "$OUTDIR")
# The driver keeps to its budget; this is the backstop if it ever does not.
PYTHONPATH="$ROOT/bench${PYTHONPATH:+:$PYTHONPATH}" timeout -k 10 $((LEFT + 25)) "$PY" -m gpucheck.driver "${ARGS[@]}" >"$WORK/driver.out"
STATUS=$?
LAST="$(tail -n 1 "$WORK/driver.out")"
case "$LAST" in
    "{"*) printf '%s\n' "$LAST" ;;
    *) give_up "the driver ended (exit $STATUS) without its JSON line: $(tail -c 600 "$WORK/driver.out")" ;;
esac
exit "$STATUS"
