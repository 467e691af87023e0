#!/usr/bin/env bash
# What the GPU check machine needs beside the working tree: run this HERE,
# right before the device tool's `run` (it has no network; see docs/gpu-check.md).
#
#     bash bench/gpu_bundle.sh                  # writes .whl/ (ignored; `carry` it)
#     bash bench/gpu_bundle.sh --no-download    # TrainLab's wheel only
#     bash bench/gpu_bundle.sh --print-stamp    # the sources' stamp, nothing built
#
# .whl/ then holds
#   trainlab-VERSION-py3-none-any.whl   built from the current sources (tracked
#                                       and untracked-not-ignored files)
#   platformdirs-*.whl                  what the machine's Python lacks and
#                                       headless TrainLab imports (pure Python;
#                                       jeepney, PySide6, pyqtgraph: desktop only)
#   tree.sha256                         stamp of the sources the wheel was built
#                                       from; gpu_check.sh compares it with the
#                                       tree it runs in (a stale wheel is a failure)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT_DIR="$ROOT/.whl"
DOWNLOAD=1
# Packages the machine's Python (torch, torchvision, transformers, safetensors,
# psutil, nvidia-ml-py, pluggy, numpy, pillow there) lacks.
# peft (and accelerate, which it needs) for the LoRA checks: pure Python;
# liger-kernel (pure Python over the triton torch ships) for textgen_fused_loss
EXTRA=("platformdirs>=4" "peft>=0.13" "accelerate>=0.26" "liger-kernel")

tree_stamp() {
    # What the device tool copies (tracked and untracked-not-ignored files);
    # there is no .git on the device, where `find` lists the same files.
    if git rev-parse --git-dir >/dev/null 2>&1; then
        git ls-files -z --cached --others --exclude-standard -- core plugins resources desktop pyproject.toml \
            | while IFS= read -r -d '' name; do [ -f "$name" ] && printf '%s\0' "$name"; done
    else
        find core plugins resources desktop pyproject.toml -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0
    fi | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum | cut -c1-64
}

while [ $# -gt 0 ]; do
    case "$1" in
        --out) OUT_DIR="$2"; shift ;;
        --no-download) DOWNLOAD=0 ;;
        --print-stamp) tree_stamp; exit 0 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) echo "gpu_bundle.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
    if [ -x .venv/bin/python ]; then PY=.venv/bin/python; else PY=python3; fi
fi

mkdir -p "$OUT_DIR"
rm -f "$OUT_DIR"/trainlab-*.whl "$OUT_DIR/tree.sha256"
SRC="$(mktemp -d)"
trap 'rm -rf "$SRC"' EXIT
# Built from a copy, so the checkout gets no build/ or egg-info.
if git rev-parse --git-dir >/dev/null 2>&1; then
    git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' name; do
        [ -f "$name" ] && printf '%s\0' "$name"
    done | tar --null -T - -cf - | tar -xf - -C "$SRC"
else
    tar --exclude=.venv --exclude=.whl --exclude=__pycache__ -cf - . | tar -xf - -C "$SRC"
fi
"$PY" -m pip wheel -q --no-deps --no-build-isolation --no-index -w "$OUT_DIR" "$SRC" >&2
tree_stamp >"$OUT_DIR/tree.sha256"
echo "built $(basename "$(ls "$OUT_DIR"/trainlab-*.whl)")" >&2

if [ "$DOWNLOAD" = 1 ]; then
    for package in "${EXTRA[@]}"; do
        # The machine's Python: 3.12 on x86-64 (pure-Python wheels match any platform).
        if ! "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
            --platform manylinux2014_x86_64 -d "$OUT_DIR" "$package" >&2; then
            echo "warning: could not download $package; TrainLab runs without it when TRAINLAB_HOME is set (gpu_check.sh sets it)" >&2
        fi
    done
fi
du -sh "$OUT_DIR" >&2
ls -1 "$OUT_DIR" >&2
