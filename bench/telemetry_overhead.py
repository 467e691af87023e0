"""What telemetry costs: the sampler's CPU time, and training steps with and without it.

1. The sampler at 1 Hz for a fixed period (``--seconds``): the CPU time of its
   own thread (``time.thread_time`` read in the thread, so other processes on
   a shared machine do not blur it), as a percentage of one core.  Real NVML
   where it starts; otherwise the fake two-GPU NVML of the tests.
2. A training step (a small MLP on random data, on CUDA when there is one)
   with and without the sampler running beside it, in alternating blocks
   (ABBA order, so drift in the machine's load falls on both sides).  Each
   round's ratio is the mean step time without over the mean with (1.0: no
   cost, 0.99: steps 1 % slower); the figure is the median over rounds.

Human text goes to stderr (none with ``--json``); the last line on stdout is one JSON object with
``cpu_percent_of_core`` (goal <= 1) and ``step_time_ratio`` (goal >= 0.99).

    python bench/telemetry_overhead.py [--seconds 20] [--rounds 10] [--block-seconds 2] [--quick] [--json]
"""

from __future__ import annotations

import importlib.util
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pairs import bench_parser, emit, run_pairs, speaker, spread  # noqa: E402 - bench/ on the path first, when imported
from trainlab.telemetry import TelemetrySampler  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def say(text: str) -> None:  # replaced by main: silent with --json
    print(text, file=sys.stderr, flush=True)


def pick_nvml():
    """Real NVML when it starts here, else the tests' fake two-GPU NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        pynvml.nvmlShutdown()
        if count:
            return None, "real", count
    except Exception:  # noqa: BLE001 - no driver, no GPU: use the fake
        pass
    spec = importlib.util.spec_from_file_location("fake_nvml", ROOT / "tests" / "fixtures" / "fake_nvml.py")
    fake = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = fake  # dataclasses look their module up while the class is built
    spec.loader.exec_module(fake)
    nvml = fake.two_gpus(clock=lambda: int(time.monotonic()))
    return nvml, "fake", len(nvml.gpus)


def sampler_cpu(nvml, seconds: float, interval: float) -> dict:
    cpu_at: list[tuple[float, float]] = []
    done = threading.Event()

    def sink(sample) -> None:
        sample.to_json()  # what the run's metrics writer does with each sample
        cpu_at.append((time.perf_counter(), time.thread_time()))

    sampler = TelemetrySampler(interval, nvml=nvml)
    start = time.perf_counter()
    sampler.start(sink)
    done.wait(seconds)
    sampler.close()
    t_last, cpu_last = cpu_at[-1]
    wall = max(t_last - start, 1e-9)
    return {
        "samples": len(cpu_at),
        "wall_seconds": round(wall, 3),
        "cpu_seconds": round(cpu_last, 5),
        "cpu_percent_of_core": round(100.0 * cpu_last / wall, 4),
        "ms_per_sample": round(1000.0 * cpu_last / len(cpu_at), 3),
        "gpu_status": sampler.latest.gpu_status if sampler.latest else "",
    }


def step_ratio(nvml, rounds: int, block_seconds: float, interval: float, threads: int) -> dict:
    import torch

    torch.manual_seed(0)
    if threads:
        # One thread: a CPU step then competes less with whatever else runs on
        # a shared machine, so the with/without difference is less buried.
        torch.set_num_threads(threads)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    width = 1024 if device.type == "cuda" else 512
    model = torch.nn.Sequential(
        torch.nn.Linear(256, width), torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(), torch.nn.Linear(width, 10)
    ).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randn(256, 256, device=device)
    y = torch.randint(0, 10, (256,), device=device)

    def step() -> None:
        loss = torch.nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize()

    # Warm up, and size a block to about block_seconds.
    for _ in range(10):
        step()
    sync()
    began = time.perf_counter()
    for _ in range(20):
        step()
    sync()
    per_step = (time.perf_counter() - began) / 20
    steps = max(20, int(block_seconds / per_step))

    sampler = TelemetrySampler(interval, nvml=nvml)
    sampler.open()

    def block(with_sampler: bool) -> float:
        if with_sampler:
            sampler.start(lambda sample: sample.to_json())
        sync()
        began, cpu = time.perf_counter(), time.thread_time()
        for _ in range(steps):
            step()
        sync()
        seconds, cpu = time.perf_counter() - began, time.thread_time() - cpu
        if with_sampler:
            sampler.stop()
        return seconds / steps, cpu / steps

    blocks = run_pairs({"without": lambda: block(False), "with": lambda: block(True)}, rounds)
    sampler.close()
    # Each round's two blocks ran back to back, under about the same load
    # from the rest of the machine: their ratio is the paired measurement.
    ratios = [w[0] / s[0] for w, s in zip(blocks["without"], blocks["with"])]
    cpu_ratios = [w[1] / s[1] for w, s in zip(blocks["without"], blocks["with"])]
    for r, (w, s) in enumerate(zip(blocks["without"], blocks["with"])):
        say(f"  round {r + 1}/{rounds}: {1000 * w[0]:.3f} ms/step without, {1000 * s[0]:.3f} ms/step with "
            f"(ratio {ratios[r]:.4f}; training thread CPU ratio {cpu_ratios[r]:.4f})")
    without = [w for w, _ in blocks["without"]]
    with_ = [w for w, _ in blocks["with"]]
    return {
        "device": str(device),
        "torch_threads": torch.get_num_threads(),
        "steps_per_block": steps,
        "rounds": rounds,
        "step_ms_without": round(1000 * statistics.median(without), 4),
        "step_ms_with": round(1000 * statistics.median(with_), 4),
        "step_time_ratio": round(statistics.median(ratios), 4),
        "step_time_ratios": [round(r, 4) for r in ratios],
        # The training thread's own CPU time per step: blind to GIL waits, but
        # far less blurred than wall time when other processes share the cores.
        "step_cpu_ratio": round(statistics.median(cpu_ratios), 4),
        "step_time_ratio_spread": spread(ratios),
        "step_cpu_ratio_spread": spread(cpu_ratios),
    }


def main(argv: list[str] | None = None) -> int:
    global say
    parser = bench_parser(__doc__, "5 s of sampling, 2 rounds of 0.5 s blocks")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long to measure the sampler's CPU time")
    parser.add_argument("--interval", type=float, default=1.0, help="sampling interval (0.5 to 5 s)")
    parser.add_argument("--rounds", type=int, default=10, help="alternating with/without rounds of training steps")
    parser.add_argument("--block-seconds", type=float, default=2.0, help="length of one block of steps")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads for the steps (0: torch's default)")
    args = parser.parse_args(argv)
    if args.quick:
        args.seconds, args.rounds, args.block_seconds = 5.0, 2, 0.5
    say = speaker(args)

    nvml, kind, gpus = pick_nvml()
    say(f"telemetry overhead: {kind} NVML, {gpus} GPU(s), sampling every {args.interval:g} s")
    cpu = sampler_cpu(nvml, args.seconds, args.interval)
    say(
        f"  sampler: {cpu['samples']} samples in {cpu['wall_seconds']:.1f} s, {cpu['cpu_seconds'] * 1000:.1f} ms CPU "
        f"= {cpu['cpu_percent_of_core']:.3f} % of a core ({cpu['ms_per_sample']:.2f} ms per sample)"
    )
    steps = step_ratio(nvml, args.rounds, args.block_seconds, args.interval, args.threads)
    say(
        f"  training steps on {steps['device']}: {steps['step_ms_without']:.3f} ms without, "
        f"{steps['step_ms_with']:.3f} ms with the sampler (medians); median paired ratio {steps['step_time_ratio']:.4f}"
    )
    result = {
        "nvml": kind,
        "gpus": gpus,
        "interval_s": args.interval,
        **cpu,
        **steps,
        "goals": {"cpu_percent_of_core": "<= 1", "step_time_ratio": ">= 0.99"},
        "ok": cpu["cpu_percent_of_core"] <= 1.0 and steps["step_time_ratio"] >= 0.99,
    }
    return emit("telemetry_overhead", args, result)


if __name__ == "__main__":
    sys.exit(main())
