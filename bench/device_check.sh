#!/usr/bin/env bash
# Telemetry on a real NVIDIA GPU: does NVML see the training?
#
# Run from the repository root on a machine with an NVIDIA GPU and TrainLab
# installed (PYTHON picks the interpreter, default .venv/bin/python or python3):
#
#     bash bench/device_check.sh            # about a minute
#
# 1. `trainlab doctor --json`: the GPUs, driver check, torch kernels, bf16.
# 2. The sampler (real NVML, every 0.5 s) beside a short CUDA training loop:
#    utilisation above 0 during training, memory used rising above the idle
#    baseline, this process among the GPU's processes, torch's allocated
#    memory attributed to the right GPU (NVML and torch matched by UUID).
# 3. A real run of the engine (the toy fixture task on cuda): its
#    metrics.jsonl holds `system` events naming the GPU and torch's memory.
# 4. bench/telemetry_overhead.py with the real NVML.
#
# Prints what it saw; the last line is a JSON object with every check; the
# exit status is 0 only when every check passed.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-}"
if [ -z "$PYTHON" ]; then
    if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
export TRAINLAB_HOME="$WORK/home"

echo "== nvidia-smi" >&2
nvidia-smi --query-gpu=index,name,driver_version,memory.total,utilization.gpu --format=csv >&2 || echo "nvidia-smi not available" >&2

echo "== trainlab doctor" >&2
"$PYTHON" -m trainlab doctor --json >"$WORK/doctor.json"
echo "doctor exit status $?" >&2

echo "== bench/telemetry_overhead.py" >&2
"$PYTHON" bench/telemetry_overhead.py --json --seconds 10 --rounds 6 >"$WORK/overhead.out"
tail -n 1 "$WORK/overhead.out" >"$WORK/overhead.json"

"$PYTHON" - "$WORK" <<'EOF'
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

work = Path(sys.argv[1])
checks = {}
facts = {}


def check(name, ok, detail=""):
    checks[name] = bool(ok)
    print(f"{'PASS' if ok else 'FAIL'} {name}" + (f": {detail}" if detail else ""), file=sys.stderr)


doctor = json.loads((work / "doctor.json").read_text())
facts["doctor"] = {
    "driver": doctor["driver"],
    "torch": {k: doctor["torch"].get(k) for k in ("version", "cuda", "cudnn", "arch_list", "cuda_available")},
    "gpus": doctor["gpus"],
    "devices": doctor["devices"],
    "warnings": doctor["warnings"],
}
print(json.dumps(facts["doctor"], indent=1), file=sys.stderr)
check("doctor sees a GPU", doctor["gpus"], f"{len(doctor['gpus'])} GPU(s)")
check("doctor: driver new enough", doctor["driver"].get("new_enough") is True, doctor["driver"].get("message", ""))
check("doctor: a GPU usable by torch", any(g.get("usable") for g in doctor["gpus"]))

# -- the sampler beside a CUDA training loop --------------------------------------------
import torch

from trainlab.telemetry import TelemetrySampler

check("torch sees a CUDA GPU", torch.cuda.is_available(), f"torch {torch.__version__}, CUDA {torch.version.cuda}")
if not torch.cuda.is_available():
    print(json.dumps({"device_check": "telemetry", "ok": False, "checks": checks, "facts": facts}))
    sys.exit(1)

samples, phase = [], {"name": "idle"}
sampler = TelemetrySampler(0.5)
sampler.start(lambda s: samples.append((phase["name"], s)))
time.sleep(1.6)  # idle baseline: a few samples before CUDA starts

phase["name"] = "train"
device = torch.device("cuda", 0)
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
    torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(),
    torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(128, 10),
).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
x = torch.randn(128, 3, 128, 128, device=device)
y = torch.randint(0, 10, (128,), device=device)
hold = []
began = time.monotonic()
steps = 0
while time.monotonic() - began < 12:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    steps += 1
    if steps % 50 == 0 and len(hold) < 8:
        hold.append(torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=device))  # memory rising
torch.cuda.synchronize()
phase["name"] = "after"
time.sleep(1.1)
sampler.close()
print(f"trained {steps} steps in 12 s; {len(samples)} samples", file=sys.stderr)

idle = [s for p, s in samples if p == "idle"]
train = [s for p, s in samples if p == "train"]
check("sampler: NVML ok", all(s.gpu_status == "ok" for _, s in samples), samples[-1][1].gpu_status if samples else "no samples")
check("sampler: no problems reported", not sampler.problems, "; ".join(sampler.problems))
mine = [g for s in train for g in s.gpus if g.get("torch_device") == "cuda:0"]
check("sampler: torch's cuda:0 matched to an NVML GPU by UUID", mine)
index = mine[0]["index"] if mine else 0


def series(batch, key):
    return [g.get(key) for s in batch for g in s.gpus if g["index"] == index]


util = [v for v in series(train, "utilization_percent") if v is not None]
used_idle = [v for v in series(idle, "memory_used_bytes") if v is not None]
used_train = [v for v in series(train, "memory_used_bytes") if v is not None]
facts["utilization_percent_during_training"] = util
facts["memory_used_gib_idle"] = [round(v / 2**30, 2) for v in used_idle]
facts["memory_used_gib_training"] = [round(v / 2**30, 2) for v in used_train]
check("utilisation above 0 during training", util and max(util) > 0, f"max {max(util) if util else None} %")
rise = (max(used_train) - max(used_idle)) if used_idle and used_train else 0
check("memory used rising during training", rise > 512 * 2**20, f"+{rise / 2**30:.2f} GiB over the idle baseline")
rising = used_train and used_train[-1] > used_train[0]
check("memory used grows while the loop allocates", rising, f"{used_train[:1]} -> {used_train[-1:]}")
allocated = [s.torch_allocated_bytes for s in train if s.torch_allocated_bytes]
check("torch allocated memory reported", allocated, f"max {max(allocated) / 2**30:.2f} GiB" if allocated else "")
last = next((g for g in train[-1].gpus if g["index"] == index), {}) if train else {}
procs = last.get("processes")
if procs is None:
    print("note: per-process memory not supported here", file=sys.stderr)
else:
    check("this process listed on its GPU", any(p["pid"] == os.getpid() and p["this_process"] for p in procs), str(procs))
for key in ("temperature_c", "power_w", "power_limit_w", "sm_clock_mhz", "fan_percent", "memory_utilization_percent"):
    facts[key] = last.get(key)
print("last sample of the GPU: " + json.dumps(last), file=sys.stderr)

# -- a real engine run on cuda ----------------------------------------------------------------
import random

rows = ["x0,x1,x2,x3,label"]
rng = random.Random(0)
for r in range(400):
    c = r % 3
    rows.append(",".join(f"{c + rng.gauss(0, 0.5):.3f}" for _ in range(4)) + f",c{c}")
(work / "toy.csv").write_text("\n".join(rows) + "\n")
env = dict(os.environ, PYTHONPATH=os.pathsep.join(["tests/fixtures/plugins", os.environ.get("PYTHONPATH", "")]))
run_dir = work / "run"
proc = subprocess.run(
    [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(work / "toy.csv"),
     "--device", "cuda", "--epochs", "3", "--set", "step_delay=0.08", "--out", str(run_dir), "--json"],
    capture_output=True, text=True, env=env, timeout=300,
)
check("engine run on cuda completed", proc.returncode == 0, proc.stderr[-500:] if proc.returncode else "")
system = []
if (run_dir / "metrics.jsonl").exists():
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        event = json.loads(line)
        if event.get("event") == "system":
            system.append(event)
check("run's metrics.jsonl has system events", len(system) >= 2, f"{len(system)} events")
gpu_events = [g for e in system for g in e.get("gpus", []) if g.get("torch_device")]
check("system events name the run's GPU and torch memory", gpu_events and any(g.get("torch_allocated_bytes") for g in gpu_events))

overhead = json.loads((work / "overhead.json").read_text())
facts["overhead"] = overhead
check("overhead: sampler under 1 % of a core", overhead.get("cpu_percent_of_core", 99) <= 1.0, str(overhead.get("cpu_percent_of_core")))
check("overhead: step time ratio >= 0.99", overhead.get("step_time_ratio", 0) >= 0.99, str(overhead.get("step_time_ratio")))

print(json.dumps({"device_check": "telemetry", "ok": all(checks.values()), "checks": checks, "facts": facts}))
sys.exit(0 if all(checks.values()) else 1)
EOF
