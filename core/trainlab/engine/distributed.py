"""One rank of a run over several processes (torchrun): the process group and what crosses it.

A rank is a ``trainlab train`` process that finds torchrun's variables
(``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR``...; under ``srun``
the ``SLURM_*`` ones, mapped by ``map_slurm``).  ``start`` joins the group
(NCCL between GPUs, gloo on the CPU or where NCCL is missing) and makes the
``RankGroup`` that ``current()`` returns to the engine for as long as the run
lasts: torch.distributed is process-wide, so this is too.  Every rank plans
its run from the same request (task, parameters, data, plugins found through
their entry points); nothing but tensors, bytes and JSON crosses processes.

What the engine asks of it (through the DDP strategy, ``strategy_ddp``,
which holds the model's side: DDP's wrapper, its buffers, the out-of-memory
flags):

* ``shard_batches``: the task's batch order for the whole group (batches of
  ``batch_size x world_size``, from the seed and the epoch) cut into each
  rank's share, example ``i`` of a global batch going to rank ``i % world``:
  the semantics of ``DistributedSampler`` with ``set_epoch``.  A global
  batch smaller than the world pads the short ranks with a repeat weighted 0,
  so every rank steps and no example counts twice.
* ``merge_accumulator``: the validation split's batches dealt out whole (no
  padding), each rank's ``MetricAccumulator.state()`` sent to every rank and
  merged in rank order, so all ranks compute the same report (best checkpoint
  and early stopping agree) and every example counts once.
* ``agree_if_due`` / ``agree``: the stop and pause flags combined (max)
  over a gloo group on the CPU (no device sync).  During an epoch the
  agreement travels while the steps compute: started after the same step on
  every rank (about every 0.1 s of training) and acted on one interval later,
  so no rank waits for it; after each epoch (and while paused) the ranks
  agree at once.  Either way every rank stops or pauses after the same step.
* ``rank_rng_states`` / ``restore_rank_rng``: each rank's random generators
  in the last checkpoint, so a resume at the same world size is exact.
* telemetry: rank 0 raises a flag in the agreement's collective every
  telemetry interval (at most ``MAX_GATHER_SECONDS``), and then every rank
  sends its ``RankTelemetry.record()`` (host, device, torch memory; NVML of its
  own GPU on another machine) to the others; rank 0's telemetry callback
  writes the last gather into its samples.  No collective per step.
* ``gather_bytes`` / ``gather_json`` / ``barrier``: bytes, JSON and a
  meeting point over the gloo control group (the DDP strategy's
  out-of-memory flags travel on it on GPUs).

Collectives have a time limit (``TRAINLAB_COLLECTIVE_TIMEOUT`` seconds,
default 120): a rank that dies fails the others within it, never a hang
(a peer's closed connection usually fails them at once).
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.api.families import accumulator_for
from trainlab.engine.recorder import RunRecorder
from trainlab.telemetry.ranks import RankTelemetry

DEFAULT_TIMEOUT_SECONDS = 120.0
AGREE_SECONDS = 0.1  # how often, in training time, the ranks agree on stop and pause
MAX_AGREE_INTERVAL = 1000  # steps
HOLD_SECONDS = 0.5  # while paused, how often the ranks agree again
MAX_GATHER_SECONDS = 5.0  # the ranks' telemetry reaches rank 0 at least this often (while training or paused)
_current: "RankGroup | None" = None


def current() -> "RankGroup | None":
    """The group this process is a rank of, while a distributed run lasts; else None."""
    return _current


def world_size() -> int:
    return _current.world_size if _current is not None else 1


def map_slurm(env: dict[str, str] | os._Environ = os.environ) -> dict[str, str]:
    """torchrun's variables from ``srun``'s, where torchrun's are absent; what was set.

    ``MASTER_ADDR`` is ``SLURM_LAUNCH_NODE_IPADDR`` (the node ``srun`` ran
    on) unless given; ``MASTER_PORT`` is ``15000 + SLURM_JOB_ID % 5000``
    unless given, so each job of a shared cluster gets its own.
    """
    if "RANK" in env or "SLURM_PROCID" not in env or "SLURM_NTASKS" not in env:
        return {}
    if int(env.get("SLURM_NTASKS", "1")) <= 1:
        return {}
    mapped = {
        "RANK": env["SLURM_PROCID"],
        "WORLD_SIZE": env["SLURM_NTASKS"],
        "LOCAL_RANK": env.get("SLURM_LOCALID", "0"),
        "LOCAL_WORLD_SIZE": env.get("SLURM_NTASKS_PER_NODE", "1").split("(")[0].split(",")[0],
        "GROUP_RANK": env.get("SLURM_NODEID", "0"),
    }
    if "MASTER_ADDR" not in env:
        addr = env.get("SLURM_LAUNCH_NODE_IPADDR")
        if not addr:
            raise UsageError("srun: set MASTER_ADDR to the first node's address (SLURM_LAUNCH_NODE_IPADDR is not set)")
        mapped["MASTER_ADDR"] = addr
    if "MASTER_PORT" not in env:
        mapped["MASTER_PORT"] = str(15000 + int(env.get("SLURM_JOB_ID", "0")) % 5000)
    for key, value in mapped.items():
        env[key] = value
    return mapped


def in_rank_environment(env: dict[str, str] | os._Environ = os.environ) -> bool:
    """Whether this process was started as a rank (by torchrun, or by srun once mapped)."""
    map_slurm(env)
    return "RANK" in env and "WORLD_SIZE" in env


@dataclass
class _Agreement:
    """An agreement on its way: the flags the all-reduce fills in, and the step after which every rank acts on it."""

    flags: Any
    work: Any
    apply_at: int


@dataclass
class RankGroup:
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    backend: str
    device: str  # the rank's device, "cpu" or "cuda:N"
    launch: dict[str, Any] = field(default_factory=dict)
    control_group: Any = None  # gloo group for flags and bytes (None: the default group is gloo)
    preflight: str = ""  # what the consumer-card preflight found (distributed_preflight)
    hosts: list[str] = field(default_factory=list)  # every rank's host, rank order (device_records)
    telemetry_records: list[dict[str, Any]] = field(default_factory=list)  # rank 0: the last telemetry gather
    _last_agree: tuple[int, float] | None = None
    _agree_interval: int = 1  # steps between agreements, as the ranks last agreed (agree_if_due)
    _pending_agreement: "_Agreement | None" = None  # started, not yet acted on
    _telemetry: Any = None  # this rank's RankTelemetry, once start_telemetry ran
    _gather_seconds: float = 0.0  # rank 0: how often the ranks' telemetry is gathered (0: never)
    _last_gather: float = 0.0

    @property
    def writer(self) -> bool:
        """Rank 0 alone writes the run folder and the index."""
        return self.rank == 0

    def record(self) -> dict[str, Any]:
        """What run.json keeps of the group (no collective: planning may fail on one rank)."""
        extra = {"launch": self.launch} if self.launch else {}
        if self.preflight:
            extra["preflight"] = self.preflight
        return {"world_size": self.world_size, "backend": self.backend, **extra}

    def device_records(self) -> list[dict[str, Any]]:
        """Every rank's host, device and GPU name, in rank order (collective)."""
        gpu = ""
        if self.device.startswith("cuda"):
            import torch

            gpu = torch.cuda.get_device_name(self.local_rank_device())
        records = self.gather_json({"host": socket.gethostname(), "device": self.device, "gpu": gpu, "visible": os.environ.get("CUDA_VISIBLE_DEVICES", "")})
        self.hosts = [str(record["host"]) for record in records]
        return records

    def local_rank_device(self) -> int:
        return int(self.device.split(":", 1)[1]) if ":" in self.device else 0

    # -- what the engine asks --------------------------------------------------
    def shard_batches(self, global_batches: list[list[int]]) -> tuple[list[list[int]], list[int], list[int]]:
        """(this rank's batches, their real example counts, the global batch sizes)."""
        mine, real, sizes = [], [], []
        for batch in global_batches:
            share = list(batch[self.rank :: self.world_size])
            sizes.append(len(batch))
            real.append(len(share))
            if not share:  # fewer examples than ranks: step on a repeat that weighs nothing
                share = [batch[0]] if batch else []
            mine.append(share)
        return mine, real, sizes

    def eval_batches(self, batches: list[list[int]]) -> list[list[int]]:
        return batches[self.rank :: self.world_size]

    def merge_accumulator(self, task: Any, split: str, accumulator: Any) -> Any:
        """A fresh accumulator holding every rank's share, merged in rank order."""
        blobs = self.gather_bytes(_state_bytes(accumulator.state()))
        merged = task.metric_accumulator(split)
        if merged is None:  # a task of a built-in family that left it to the family
            merged = accumulator_for(task, split)
        for blob in blobs:
            merged.merge(_state_from_bytes(blob))
        return merged

    def agree_if_due(self, control: Any, step: int) -> None:
        """The agreement between steps, without waiting for it: about every AGREE_SECONDS of training.

        An agreement started after step ``s`` (every rank starts it after the
        same step) travels while the next steps compute, and every rank acts
        on it after step ``s + interval``, the interval it agreed before, and
        starts the next one there.  A stop or pause asked for reaches every
        rank within about two intervals, after the same step on each.  A
        collective that every rank waited for after each step's all-reduce
        cost about 4 % of a step of the image workload on two shared cores
        (py-spy, docs/distributed.md): each wait was one rank catching up
        with the other.  Rank 0 proposes the next interval from its step time.
        """
        pending = self._pending_agreement
        if pending is not None:
            if step < pending.apply_at:
                return
            self._apply_agreement(control)
            if control.stop_requested or control.paused:
                return  # the loop stops or holds here; what follows agrees in agree or hold_paused
        now = time.perf_counter()
        proposal = 0
        if self.writer and self._last_agree is not None and step > self._last_agree[0]:
            per_step = (now - self._last_agree[1]) / (step - self._last_agree[0])
            proposal = int(min(MAX_AGREE_INTERVAL, max(1, AGREE_SECONDS / max(per_step, 1e-6))))
        self._last_agree = (step, now)
        self._start_agreement(control, proposal, apply_at=step + self._agree_interval)

    def agree(self, control: "AgreedControl", proposal: int = 0) -> int:
        """Stop and pause as one, now: every rank's flags combined (max) into ``control``'s agreed
        view (what the loop reads); returns rank 0's proposal.  An agreement still travelling
        (``agree_if_due``) is acted on first, so every rank sees the same sequence."""
        if self._pending_agreement is not None:
            self._apply_agreement(control)
        self._start_agreement(control, proposal, apply_at=0)
        return self._apply_agreement(control)

    def _start_agreement(self, control: "AgreedControl", proposal: int, *, apply_at: int) -> None:
        import torch
        import torch.distributed as dist

        real = control.own
        gather = 1 if self.writer and self._gather_due() else 0  # rank 0 alone says when
        flags = torch.tensor([1 if real.stop_requested else 0, 1 if real.paused else 0, proposal, gather], dtype=torch.int32)
        work = dist.all_reduce(flags, op=dist.ReduceOp.MAX, group=self.control_group, async_op=True)
        self._pending_agreement = _Agreement(flags, work, apply_at)

    def _apply_agreement(self, control: "AgreedControl") -> int:
        """Wait for the agreement on its way (if it has not arrived yet) and act on it; rank 0's proposal."""
        pending, self._pending_agreement = self._pending_agreement, None
        assert pending is not None
        pending.work.wait()
        flags = pending.flags
        real = control.own
        if flags[0]:
            if not real.stop_requested:
                real.request_stop("stopped on another rank")
            control.stop_requested, control.paused = True, False
        else:
            # The group is paused while any rank's own control is.  Only the
            # agreed view changes here: a rank paused by another's request has
            # nothing of its own to resume, and its own flag would hold the
            # group after that rank is resumed.
            control.paused = bool(flags[1])
        if flags[3]:
            self.gather_telemetry()
        self._agree_interval = max(1, int(flags[2]) or self._agree_interval)
        return int(flags[2])

    # -- telemetry, across the group ---------------------------------------------------
    def start_telemetry(self, every: float) -> None:
        """Every rank's telemetry to rank 0 now (collective: every rank calls it with the
        run's ``telemetry_every``), and from then on about every ``every`` seconds."""
        if not every:
            return
        self._gather_seconds = min(float(every), MAX_GATHER_SECONDS)
        self.gather_telemetry()

    def gather_telemetry(self) -> None:
        """Every rank's ``RankTelemetry.record()`` to every rank (collective); rank 0 keeps them."""
        if self._telemetry is None:
            elsewhere = len(self.hosts) > self.rank and self.hosts[self.rank] != self.hosts[0]
            self._telemetry = RankTelemetry(self.rank, self.local_rank, self.device, read_nvml=elsewhere)
        records = self.gather_json(self._telemetry.record())
        self._last_gather = time.monotonic()
        if self.writer:
            self.telemetry_records = records

    def _gather_due(self) -> bool:
        return bool(self._gather_seconds) and time.monotonic() - self._last_gather >= self._gather_seconds

    def hold_paused(self, control: "AgreedControl") -> None:
        """Wait, with every rank, until none is paused any more (or a stop comes).

        One agreement per round on every rank: a rank paused itself wakes as
        soon as it is resumed (or stopped), the others look again every
        ``HOLD_SECONDS``, so a resume or a stop reaches every rank within that.
        """
        real = control.own
        while True:
            if real.paused:
                real.wait_while_paused(HOLD_SECONDS)
            else:  # held for another rank: its resume comes through the agreement
                time.sleep(HOLD_SECONDS)
            self.agree(control)
            if control.stop_requested or not control.paused:
                return

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier(group=self.control_group)

    def rank_rng_states(self) -> list[dict[str, Any]]:
        """Every rank's generators as JSON (torch CPU/CUDA as hex, Python, NumPy), rank order."""
        import random

        import numpy as np
        import torch

        version, state, gauss = random.getstate()
        name, keys, pos, has_gauss, cached = np.random.get_state()
        own = {
            "torch": torch.get_rng_state().numpy().tobytes().hex(),
            "python": [version, list(state), gauss],
            "numpy": [name, keys.tolist(), int(pos), int(has_gauss), float(cached)],
        }
        if self.device.startswith("cuda"):
            own["cuda"] = torch.cuda.get_rng_state(self.local_rank_device()).numpy().tobytes().hex()
        return self.gather_json(own)

    def restore_rank_rng(self, states: list[dict[str, Any]]) -> bool:
        """This rank's generators as saved; False when the checkpoint had no state for this rank."""
        import random

        import numpy as np
        import torch

        if self.rank >= len(states):
            return False
        own = states[self.rank]
        torch.set_rng_state(torch.frombuffer(bytearray(bytes.fromhex(own["torch"])), dtype=torch.uint8))
        version, state, gauss = own["python"]
        random.setstate((version, tuple(state), gauss))
        name, keys, pos, has_gauss, cached = own["numpy"]
        np.random.set_state((name, np.asarray(keys, dtype=np.uint32), pos, has_gauss, cached))
        if "cuda" in own and self.device.startswith("cuda"):
            torch.cuda.set_rng_state(torch.frombuffer(bytearray(bytes.fromhex(own["cuda"])), dtype=torch.uint8), self.local_rank_device())
        return True

    def first_problem(self, problem: str) -> str:
        """The first rank's problem ('' for none), named by rank and host, on every rank."""
        said = self.gather_json({"problem": problem, "host": socket.gethostname()})
        for rank, report in enumerate(said):
            if report["problem"]:
                return f"rank {rank} on {report['host']}: {report['problem']}"
        return ""

    def check_everywhere(self, problem: str) -> None:
        """Raise UsageError on every rank when any rank found a problem ('' for none), naming it."""
        found = self.first_problem(problem)
        if found:
            raise UsageError(found)

    def broadcast_text(self, text: str) -> str:
        """Rank 0's ``text`` on every rank."""
        return self.gather_bytes(text.encode("utf-8"))[0].decode("utf-8")

    # -- bytes and JSON across the group ------------------------------------------
    def gather_json(self, value: Any) -> list[Any]:
        return [json.loads(blob.decode("utf-8")) for blob in self.gather_bytes(json.dumps(value).encode("utf-8"))]

    def gather_bytes(self, blob: bytes) -> list[bytes]:
        """Every rank's ``blob``, in rank order, on every rank (CPU tensors over the gloo group)."""
        import torch
        import torch.distributed as dist

        size = torch.tensor([len(blob)], dtype=torch.int64)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(self.world_size)]
        dist.all_gather(sizes, size, group=self.control_group)
        longest = max(int(s.item()) for s in sizes)
        padded = torch.zeros(longest, dtype=torch.uint8)
        if blob:
            padded[: len(blob)] = torch.frombuffer(bytearray(blob), dtype=torch.uint8)
        parts = [torch.zeros(longest, dtype=torch.uint8) for _ in range(self.world_size)]
        dist.all_gather(parts, padded, group=self.control_group)
        return [part[: int(s.item())].numpy().tobytes() for part, s in zip(parts, sizes)]


def _state_bytes(state: dict[str, Any]) -> bytes:
    """An accumulator's ``state()`` as bytes without pickle: tensors as safetensors, the rest as JSON."""
    import torch
    from safetensors.torch import save

    tensors = {k: v.contiguous() for k, v in state.items() if isinstance(v, torch.Tensor)}
    plain = {k: v for k, v in state.items() if not isinstance(v, torch.Tensor)}
    head = json.dumps(plain, default=_plain_value).encode("utf-8")
    body = save(tensors) if tensors else b""
    return len(head).to_bytes(8, "little") + head + body


def _state_from_bytes(blob: bytes) -> dict[str, Any]:
    from safetensors.torch import load

    n = int.from_bytes(blob[:8], "little")
    state = json.loads(blob[8 : 8 + n].decode("utf-8"))
    body = blob[8 + n :]
    if body:
        state.update(load(body))
    return state


def _plain_value(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def collective_timeout() -> datetime.timedelta:
    raw = os.environ.get("TRAINLAB_COLLECTIVE_TIMEOUT", "")
    try:
        seconds = float(raw) if raw else DEFAULT_TIMEOUT_SECONDS
    except ValueError:
        raise UsageError(f"TRAINLAB_COLLECTIVE_TIMEOUT={raw!r}: expected seconds") from None
    return datetime.timedelta(seconds=max(5.0, seconds))


def start(device_param: str) -> RankGroup:
    """Join the group torchrun (or srun) started; the rank's device from ``device_param``."""
    global _current
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    local_world = int(os.environ.get("LOCAL_WORLD_SIZE", "1"))
    name = (device_param or "auto").strip().lower()
    use_cuda = name in ("auto", "cuda") and torch.cuda.is_available()
    if name.startswith("cuda:"):
        raise UsageError(f"--device {name} in a run over several processes: each rank takes its own GPU; use --gpus")
    if name in ("cuda",) and not use_cuda:
        raise UsageError("--device cuda: CUDA is not available on this machine")
    device = "cpu"
    backend = "gloo"
    if use_cuda:
        if local_rank >= torch.cuda.device_count():
            raise UsageError(f"rank {rank}: local rank {local_rank} but only {torch.cuda.device_count()} visible GPU(s)")
        device = f"cuda:{local_rank}"
        torch.cuda.set_device(local_rank)
        backend = "nccl" if dist.is_nccl_available() else "gloo"  # Windows: gloo
    from trainlab.engine.distributed_preflight import apply_p2p_preflight, check_all_reduce

    preflight = apply_p2p_preflight().reason if backend == "nccl" and local_world > 1 else ""
    kwargs: dict[str, Any] = {"backend": backend, "timeout": collective_timeout()}
    if backend == "nccl":
        kwargs["device_id"] = torch.device(device)
    dist.init_process_group(**kwargs)
    control = dist.new_group(backend="gloo", timeout=collective_timeout()) if backend != "gloo" else None
    launch = json.loads(os.environ.get("TRAINLAB_LAUNCH", "{}") or "{}")
    check_all_reduce(device, world, rank, elements=1 << 20 if backend == "nccl" else 1024)
    _current = RankGroup(rank, world, local_rank, local_world, backend, device, launch, control, preflight)
    return _current


def finish() -> None:
    """Leave the group (after the run's outcome is known)."""
    global _current
    import torch.distributed as dist

    if _current is not None and _current._telemetry is not None:
        _current._telemetry.close()
    _current = None
    if dist.is_initialized():
        try:
            dist.destroy_process_group()
        except Exception:  # noqa: BLE001 - leaving a group whose peer died must not hide the run's own error
            pass


def peer_lost(error: str) -> bool:
    """Whether a rank's error is only the echo of another rank's end (a closed connection, a timeout)."""
    markers = ("Connection closed by peer", "Connection reset by peer", "Broken pipe", "DistBackendError", "timed out", "Timed out",
               "stopped on another rank", "NCCL communicator was aborted", "ProcessGroupGloo")  # fmt: skip
    return any(marker in error for marker in markers)


def threads_note(group: RankGroup) -> str:
    import torch

    return f"rank {group.rank} of {group.world_size} on {group.device} ({group.backend}), {torch.get_num_threads()} thread(s)"



def folder_problem(run_dir: Any) -> str:
    """'' when this rank sees the run folder rank 0 made (resume and best weights read it)."""
    if (run_dir.path / "run.json").is_file():
        return ""
    return f"cannot see the run folder {run_dir.path}: put --out on a filesystem every machine sees"



class AgreedControl:
    """What the loop of a rank reads for stop and pause: the flags as the ranks last agreed
    (``RankGroup.agree``), so that every rank acts after the same step.  Requests go to the
    rank's own ``RunControl`` (``own``) and count from the next agreement on."""

    def __init__(self, own: Any):
        self.own = own
        self.stop_requested = False
        self.paused = False

    def __getattr__(self, name: str) -> Any:  # request_stop, stop_reason, resume, ...
        return getattr(self.own, name)


class SilentRecorder(RunRecorder):
    """The run record as a rank other than 0 keeps it: the same, written nowhere."""

    def save(self) -> None:
        pass
