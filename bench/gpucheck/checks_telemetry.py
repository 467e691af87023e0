"""Telemetry on a real NVIDIA GPU (what bench/device_check.sh checked), and NVML matched to torch."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time

from gpucheck.common import ROOT, CheckEnv, Outcome, read_events, say

GiB = 2**30


def _bare(uuid: str) -> str:
    uuid = str(uuid).strip().lower()
    for prefix in ("gpu-", "mig-"):
        if uuid.startswith(prefix):
            return uuid[len(prefix) :]
    return uuid


def check_nvml_match(env: CheckEnv, out: Outcome) -> None:
    """Every torch device found in NVML by UUID; telemetry puts torch's memory on that GPU."""
    import torch

    from trainlab.telemetry import TelemetrySampler

    sampler = TelemetrySampler(0.5)
    try:
        status = sampler.open()
        out.fact("gpu_status", status)
        if not env.cuda:
            sampler.sample()  # the no-GPU path runs too
            return
        import pynvml

        pynvml.nvmlInit()
        nvml = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            nvml[_bare(uuid.decode() if isinstance(uuid, bytes) else uuid)] = i
        torch_uuids = {i: _bare(str(torch.cuda.get_device_properties(i).uuid)) for i in range(torch.cuda.device_count())}
        out.fact("nvml_uuids", nvml)
        out.fact("torch_uuids", torch_uuids)
        out.fact("CUDA_VISIBLE_DEVICES", os.environ.get("CUDA_VISIBLE_DEVICES"))
        by_uuid = {nvml[u]: i for i, u in torch_uuids.items() if u in nvml}
        out.expect("every torch CUDA device found in NVML by UUID", len(by_uuid) == len(torch_uuids), f"{by_uuid} (NVML index -> torch index)")

        before = sampler.sample()
        hold = torch.empty(2 * GiB, dtype=torch.uint8, device="cuda:0")
        torch.cuda.synchronize()
        time.sleep(0.3)  # NVML's memory counter follows the driver, not the call
        after = sampler.sample()
        mine = [g for g in after.gpus if g.get("torch_device") == "cuda:0"]
        out.expect("telemetry names exactly one GPU as cuda:0", len(mine) == 1, [g.get("torch_device") for g in after.gpus])
        if not mine:
            return
        gpu = mine[0]
        nvml_index_of_cuda0 = next((n for n, t in by_uuid.items() if t == 0), None)
        out.expect("that GPU is the one NVML gives cuda:0's UUID", gpu["index"] == nvml_index_of_cuda0,
                   f"telemetry says NVML GPU {gpu['index']}, UUID says {nvml_index_of_cuda0}")  # fmt: skip
        out.expect("torch's allocated memory attributed to it", (gpu.get("torch_allocated_bytes") or 0) >= 2 * GiB,
                   f"{(gpu.get('torch_allocated_bytes') or 0) / GiB:.2f} GiB")  # fmt: skip
        old = next((g for g in before.gpus if g["index"] == gpu["index"]), {})
        rise = (gpu.get("memory_used_bytes") or 0) - (old.get("memory_used_bytes") or 0)
        out.expect("NVML memory used on that GPU rose by the 2 GiB", rise >= 1.9 * GiB, f"+{rise / GiB:.2f} GiB")
        del hold
    finally:
        sampler.close()


def check_telemetry_sampler(env: CheckEnv, out: Outcome) -> None:
    """The sampler (real NVML, every 0.5 s) beside a CUDA training loop."""
    import torch

    from trainlab.telemetry import TelemetrySampler

    device = torch.device(env.device)
    samples, phase = [], {"name": "idle"}
    sampler = TelemetrySampler(0.5)
    sampler.start(lambda s: samples.append((phase["name"], s)))
    time.sleep(1.6)  # idle baseline: a few samples before the loop starts
    phase["name"] = "train"
    torch.manual_seed(0)
    width, side, batch = env.pick((64, 128, 128), (8, 16, 8))
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, width, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(width, 2 * width, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(2 * width, 10),
    ).to(device)  # fmt: skip
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(batch, 3, side, side, device=device)
    y = torch.randint(0, 10, (batch,), device=device)
    hold = []
    seconds = env.pick(6.0, 1.5)
    began, steps = time.monotonic(), 0
    while time.monotonic() - began < seconds:
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        steps += 1
        if env.cuda and steps % 25 == 0 and len(hold) < 8:
            hold.append(torch.empty(256 * 1024 * 1024, dtype=torch.uint8, device=device))  # memory rising
    env.sync()
    phase["name"] = "after"
    time.sleep(1.1)
    sampler.close()
    say(f"  trained {steps} steps in {seconds:g} s; {len(samples)} samples")
    out.expect("sampler: no problems reported", not sampler.problems, "; ".join(sampler.problems))
    if not env.cuda:
        out.fact("gpu_status", samples[-1][1].gpu_status if samples else None)
        return
    idle = [s for p, s in samples if p == "idle"]
    train = [s for p, s in samples if p == "train"]
    out.expect("sampler: NVML ok", all(s.gpu_status == "ok" for _, s in samples), samples[-1][1].gpu_status if samples else "no samples")
    mine = [g for s in train for g in s.gpus if g.get("torch_device") == "cuda:0"]
    out.expect("sampler: torch's cuda:0 matched to an NVML GPU", mine)
    index = mine[0]["index"] if mine else 0

    def series(batch_of, key):
        return [g.get(key) for s in batch_of for g in s.gpus if g["index"] == index and g.get(key) is not None]

    util = series(train, "utilization_percent")
    used_idle, used_train = series(idle, "memory_used_bytes"), series(train, "memory_used_bytes")
    out.fact("utilization_percent_during_training", util)
    out.expect("utilisation above 0 during training", util and max(util) > 0, f"max {max(util) if util else None} %")
    rise = (max(used_train) - max(used_idle)) if used_idle and used_train else 0
    out.expect("memory used rising during training", rise > 512 * 2**20, f"+{rise / GiB:.2f} GiB over the idle baseline")
    out.expect("memory used grows while the loop allocates", used_train and used_train[-1] > used_train[0],
               f"{used_train[:1]} -> {used_train[-1:]}")  # fmt: skip
    allocated = [s.torch_allocated_bytes for s in train if s.torch_allocated_bytes]
    out.expect("torch allocated memory reported", allocated, f"max {max(allocated) / GiB:.2f} GiB" if allocated else "")
    last = next((g for g in train[-1].gpus if g["index"] == index), {}) if train else {}
    procs = last.get("processes")
    if procs is None:
        out.fact("processes", "per-process memory not supported here")
    elif any(p["pid"] == os.getpid() and p["this_process"] for p in procs):
        out.expect("this process listed on its GPU", True)
    elif procs and all(p.get("name") is None for p in procs):
        # In a container NVML answers with the host's pids, which this pid namespace cannot see.
        out.fact("processes", f"{len(procs)} process(es) under host pids (a container): this one cannot be told apart")
    else:
        out.expect("this process listed on its GPU", False, procs)
    for key in ("name", "temperature_c", "power_w", "power_limit_w", "sm_clock_mhz", "fan_percent", "memory_total_bytes"):
        out.fact(key, last.get(key))
    del hold


def check_telemetry_engine_run(env: CheckEnv, out: Outcome) -> None:
    """A real run of the engine (the toy fixture task) on cuda: its metrics.jsonl names the GPU and torch's memory."""
    rows = ["x0,x1,x2,x3,label"]
    rng = random.Random(0)
    for r in range(400):
        c = r % 3
        rows.append(",".join(f"{c + rng.gauss(0, 0.5):.3f}" for _ in range(4)) + f",c{c}")
    data = env.work / "toy.csv"
    data.write_text("\n".join(rows) + "\n")
    run_env = dict(os.environ)
    run_env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "tests" / "fixtures" / "plugins"), run_env.get("PYTHONPATH", "")])
    run_dir = env.work / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(data), "--device", env.device,
         "--epochs", "2", "--set", "step_delay=0.05", "--set", "telemetry_every=0.5", "--out", str(run_dir), "--json"],
        capture_output=True, text=True, env=run_env, timeout=max(10.0, env.left() - 5),
    )  # fmt: skip
    out.expect("engine run completed", proc.returncode == 0, proc.stderr[-500:] if proc.returncode else "")
    try:
        printed = json.loads(proc.stdout.strip().splitlines()[-1])
        out.fact("run", {k: printed.get(k) for k in ("status", "steps", "samples_per_second")})
    except (ValueError, IndexError):
        out.expect("train --json printed its JSON object", False, proc.stdout[-300:])
    events = read_events(run_dir)
    system = [e for e in events if e.get("event") == "system"]
    out.expect("metrics.jsonl has system events", len(system) >= 2, f"{len(system)} events")
    started = next((e for e in events if e.get("event") == "started"), {})
    out.fact("started", {k: started.get(k) for k in ("device", "precision")})
    if env.cuda:
        out.expect("the run trained on cuda", str(started.get("device", "")).startswith("cuda"), started.get("device"))
        gpu_events = [g for e in system for g in e.get("gpus", []) if g.get("torch_device")]
        out.expect("system events name the run's GPU and torch memory", gpu_events and any(g.get("torch_allocated_bytes") for g in gpu_events))


def check_telemetry_overhead(env: CheckEnv, out: Outcome) -> None:
    """bench/telemetry_overhead.py with the real NVML: the sampler's CPU time and its cost per training step."""
    seconds, rounds, block = env.pick(("5", "4", "1"), ("1", "2", "0.2"))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "telemetry_overhead.py"), "--json", "--seconds", seconds, "--rounds", rounds, "--block-seconds", block],
        capture_output=True, text=True, timeout=max(10.0, env.left() - 5),
    )  # fmt: skip
    try:
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        out.expect("telemetry_overhead.py printed its JSON line", False, (proc.stdout + proc.stderr)[-400:])
        return
    out.fact("nvml", result.get("nvml"))
    out.fact("device", result.get("device"))
    out.figure("sampler_cpu_percent_of_core", result.get("cpu_percent_of_core"))
    out.figure("step_time_ratio", result.get("step_time_ratio"))
    out.figure("step_time_ratios", result.get("step_time_ratios"))
    if env.cuda:
        out.expect("measured with the real NVML", result.get("nvml") == "real", result.get("nvml"))
        out.goal("sampler_cpu_percent_of_core", result.get("cpu_percent_of_core"), at_most=1.0)
        out.goal("step_time_ratio", result.get("step_time_ratio"), at_least=0.99)
