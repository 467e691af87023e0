"""Starting one run as a group of processes through PyTorch's own launcher.

``trainlab train ... --gpus 0,2`` (or ``--nproc-per-node N``, or the
several-machine options) does not train in this process: it starts
``python -m torch.distributed.run`` with an argument list (never a shell),
each rank running ``python -m trainlab train`` with the same task, data and
parameters, and waits for it.  The options carry torchrun's own names so that
a lab's launch script can call ``torchrun ... -m trainlab train ...`` itself;
a rank knows it is one from torchrun's variables (``RANK``, ``WORLD_SIZE``,
...) or, under ``srun``, from the ``SLURM_*`` ones (``map_slurm``).

The launcher keeps stdout for its own one JSON object: the ranks' output goes
to stderr, and rank 0 hands its outcome back through a file named in
``TRAINLAB_LAUNCH_RESULT``.  Each rank leaves its last word (status, error)
in ``TRAINLAB_LAUNCH_REPORTS``, which is how a rank that died is named.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from trainlab.api.errors import UsageError
from trainlab.engine.outcome import EXIT_FAILED, RunOutcome
from trainlab.runfolder.status import RunStatus

# torchrun's names; each takes one value
LAUNCH_OPTIONS = ("--gpus", "--nproc-per-node", "--nnodes", "--node-rank", "--master-addr", "--master-port", "--rdzv-endpoint", "--rdzv-id")
LAUNCH_ENV = "TRAINLAB_LAUNCH"  # JSON: what run.json records of the launch
RESULT_ENV = "TRAINLAB_LAUNCH_RESULT"
REPORTS_ENV = "TRAINLAB_LAUNCH_REPORTS"
# torchrun waits this long for a worker to honour SIGTERM before SIGKILL; the
# ranks stop after their current step and write the last checkpoint in it
SHUTDOWN_SECONDS = 60


def add_launch_options(parser: Any) -> None:
    g = parser.add_argument_group("several GPUs or machines (through torchrun; docs/distributed.md)")
    g.add_argument("--gpus", metavar="N|all|0,2", help="one process per GPU: a count, all, or GPU numbers in PCI bus order (as nvidia-smi)")
    g.add_argument("--nproc-per-node", dest="nproc_per_node", type=int, metavar="N", help="N processes on this machine (CPU processes with gloo where there is no GPU)")
    g.add_argument("--nnodes", type=int, metavar="N", help="machines in the run (give the same on each)")
    g.add_argument("--node-rank", dest="node_rank", type=int, metavar="R", help="this machine's number, 0 to N-1 (with --master-addr)")
    g.add_argument("--master-addr", dest="master_addr", metavar="HOST", help="address of machine 0 (rendezvous)")
    g.add_argument("--master-port", dest="master_port", type=int, metavar="P", help="port on machine 0 (rendezvous)")
    g.add_argument("--rdzv-endpoint", dest="rdzv_endpoint", metavar="HOST:PORT", help="elastic c10d rendezvous (instead of --node-rank)")
    g.add_argument("--rdzv-id", dest="rdzv_id", metavar="ID", help="with --rdzv-endpoint: the run's id, the same on every machine")


@dataclass
class LaunchOptions:
    gpus: list[int] | None = None  # GPU numbers in PCI bus order; None: no --gpus
    nproc_per_node: int = 1
    nnodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: int = 0  # 0: a free port on this machine
    rdzv_endpoint: str = ""
    rdzv_id: str = ""
    device: str = "auto"
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def world_size(self) -> int:
        return self.nproc_per_node * self.nnodes

    def record(self) -> dict[str, Any]:
        """What run.json keeps of the launch (not task parameters)."""
        data = asdict(self)
        data.pop("extra_env")
        data["world_size"] = self.world_size
        return data


def effective_batch(batch_size: int, world_size: int, grad_accum: int) -> int:
    """Examples in one optimizer step: ``batch_size`` per rank x ``world_size`` x ``grad_accum``.

    The one formula: ``run.json``'s ``effective_batch``, ``train --dry-run``
    and the window's figure next to Start all come from here.
    """
    return int(batch_size) * int(world_size) * int(grad_accum)


def wanted(args: Any) -> bool:
    """Whether ``train`` was asked to launch a group of processes."""
    return any(getattr(args, name, None) is not None for name in ("gpus", "nproc_per_node", "nnodes", "node_rank", "master_addr", "master_port", "rdzv_endpoint", "rdzv_id"))


def options_from(args: Any, device: str | None, gpu_count: int | None = None) -> LaunchOptions:
    """Checked launch options; UsageError (exit 2) naming the option at fault."""
    device = (device or "auto").strip().lower()
    opts = LaunchOptions(device=device)
    if args.gpus is not None:
        if device.startswith("cuda:") or device in ("cpu", "mps"):
            raise UsageError(f"--gpus {args.gpus} with --device {device}: choose the GPUs with --gpus alone")
        count = visible_gpu_count() if gpu_count is None else gpu_count
        opts.gpus = parse_gpus(args.gpus, count)
        opts.device = "cuda"
        if args.nproc_per_node is not None and args.nproc_per_node != len(opts.gpus):
            raise UsageError(f"--nproc-per-node {args.nproc_per_node} with --gpus {args.gpus}: one process per GPU ({len(opts.gpus)})")
    if args.nproc_per_node is not None:
        if args.nproc_per_node < 1:
            raise UsageError(f"--nproc-per-node {args.nproc_per_node}: must be at least 1")
        if args.nproc_per_node > 1 and device.startswith("cuda:"):
            raise UsageError(f"--nproc-per-node {args.nproc_per_node} with --device {device}: two processes cannot share one GPU; use --gpus")
    opts.nproc_per_node = len(opts.gpus) if opts.gpus is not None else (args.nproc_per_node or 1)
    if args.nnodes is not None:
        if args.nnodes < 1:
            raise UsageError(f"--nnodes {args.nnodes}: must be at least 1")
        opts.nnodes = args.nnodes
    if args.rdzv_endpoint:
        if args.node_rank is not None or args.master_addr or args.master_port:
            raise UsageError("--rdzv-endpoint replaces --node-rank, --master-addr and --master-port: give one or the other")
        host, _, port = args.rdzv_endpoint.rpartition(":")
        if not host or not port.isdigit():
            raise UsageError(f"--rdzv-endpoint {args.rdzv_endpoint}: expected HOST:PORT")
        if not args.rdzv_id:
            raise UsageError("--rdzv-endpoint needs --rdzv-id ID (the same on every machine)")
        opts.rdzv_endpoint, opts.rdzv_id = args.rdzv_endpoint, str(args.rdzv_id)
    elif args.rdzv_id:
        raise UsageError("--rdzv-id needs --rdzv-endpoint HOST:PORT")
    else:
        if opts.nnodes > 1 and (args.node_rank is None or not args.master_addr or not args.master_port):
            raise UsageError(f"--nnodes {opts.nnodes}: give --node-rank R --master-addr HOST --master-port P (or --rdzv-endpoint and --rdzv-id)")
        if args.node_rank is not None and not 0 <= args.node_rank < opts.nnodes:
            raise UsageError(f"--node-rank {args.node_rank}: must be 0 to {opts.nnodes - 1} with --nnodes {opts.nnodes}")
        opts.node_rank = args.node_rank or 0
        opts.master_addr = args.master_addr or "127.0.0.1"
        if args.master_port is not None and not 0 < args.master_port < 65536:
            raise UsageError(f"--master-port {args.master_port}: not a port number")
        opts.master_port = args.master_port or 0
    return opts


def visible_gpu_count() -> int:
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")  # before CUDA starts: nvidia-smi's numbering
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def parse_gpus(text: str, count: int) -> list[int]:
    """``N`` (the first N), ``all``, or a list (``1,`` or ``0,2``) of GPU numbers."""
    value = str(text).strip().lower()
    if count == 0:
        raise UsageError(f"--gpus {text}: this machine has no usable CUDA GPU (see `trainlab doctor`); --nproc-per-node N runs CPU processes")
    if value == "all":
        return list(range(count))
    if value.isdigit() and "," not in value:
        n = int(value)
        if not 1 <= n <= count:
            raise UsageError(f"--gpus {text}: this machine has {count} GPU(s)")
        return list(range(n))
    try:
        numbers = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise UsageError(f"--gpus {text}: expected a count, all, or GPU numbers such as 0,2") from None
    if not numbers or len(set(numbers)) != len(numbers):
        raise UsageError(f"--gpus {text}: expected distinct GPU numbers such as 0,2")
    bad = [n for n in numbers if not 0 <= n < count]
    if bad:
        raise UsageError(f"--gpus {text}: no GPU {bad[0]} (this machine has {count}: 0..{count - 1})")
    return numbers


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (torchrun binds it a moment later)."""
    import socket  # here, not at the top: every CLI command loads this module, few launch torchrun

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def strip_launch_options(argv: Sequence[str]) -> list[str]:
    """``argv`` of ``train`` without the launch options (what each rank runs)."""
    out: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        name = arg.split("=", 1)[0]
        if name in LAUNCH_OPTIONS:
            skip = "=" not in arg
            continue
        out.append(arg)
    return out


def torchrun_command(opts: LaunchOptions, rank_argv: Sequence[str], python: str = sys.executable) -> list[str]:
    cmd = [python, "-m", "torch.distributed.run", "--nproc-per-node", str(opts.nproc_per_node), "--nnodes", str(opts.nnodes)]
    if opts.rdzv_endpoint:
        cmd += ["--rdzv-backend", "c10d", "--rdzv-endpoint", opts.rdzv_endpoint, "--rdzv-id", opts.rdzv_id]
    else:
        cmd += ["--node-rank", str(opts.node_rank), "--master-addr", opts.master_addr, "--master-port", str(opts.master_port)]
    cmd += ["--max-restarts", "0", "--monitor-interval", "0.5", "--shutdown-timeout", str(SHUTDOWN_SECONDS)]
    return [*cmd, "-m", "trainlab", *rank_argv]


def rank_environment(opts: LaunchOptions, base: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
    if opts.gpus is not None:
        visible = env.get("CUDA_VISIBLE_DEVICES")
        if visible:  # the numbers count among what the user already made visible
            chosen = [visible.split(",")[i] for i in opts.gpus]
        else:
            chosen = [str(i) for i in opts.gpus]
        env["CUDA_VISIBLE_DEVICES"] = ",".join(chosen)
    if opts.device == "cpu" or (opts.gpus is None and opts.device == "auto" and visible_gpu_count() == 0):
        # ranks must not oversubscribe the cores: a share each, unless the user chose
        share = max(1, (os.cpu_count() or 1) // opts.nproc_per_node)
        env.setdefault("OMP_NUM_THREADS", str(share))
    env[LAUNCH_ENV] = json.dumps(opts.record())
    env.update(opts.extra_env)
    return env


def launch(opts: LaunchOptions, train_argv: Sequence[str], *, note) -> tuple[int, dict[str, Any] | None]:
    """Run the group; (exit code, rank 0's outcome as JSON or None).

    Ctrl-C and SIGTERM are passed on to torchrun, which stops every rank
    (each keeps the last checkpoint); a second one is passed on too.
    """
    if not opts.rdzv_endpoint and not opts.master_port:
        opts.master_port = free_port(opts.master_addr if opts.nnodes == 1 else "0.0.0.0")
    with tempfile.TemporaryDirectory(prefix="trainlab-launch-") as scratch:
        result_path = Path(scratch) / "outcome.json"
        reports = Path(scratch) / "ranks"
        reports.mkdir()
        env = rank_environment(opts)
        env[RESULT_ENV] = str(result_path)
        env[REPORTS_ENV] = str(reports)
        cmd = torchrun_command(opts, strip_launch_options(train_argv))
        note(f"trainlab: starting {opts.nproc_per_node} process(es) on this machine, world size {opts.world_size}" + (f", GPUs {opts.gpus}" if opts.gpus else ""))
        # stdout stays the launcher's (one JSON object); the ranks and torchrun speak on stderr
        # a session of its own: a terminal's Ctrl-C reaches the group once, through the launcher
        proc = subprocess.Popen(cmd, env=env, stdout=sys.stderr if sys.stderr is not None else subprocess.DEVNULL, start_new_session=True)

        def forward(signum, frame):
            try:
                proc.send_signal(signum)
            except ProcessLookupError:
                pass

        previous = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                previous[sig] = signal.signal(sig, forward)
            except ValueError:  # not the main thread
                pass
        try:
            code = proc.wait()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        outcome = json.loads(result_path.read_text(encoding="utf-8")) if result_path.is_file() else None
        return code, _with_rank_reports(outcome, reports, opts)


def _with_rank_reports(outcome: dict[str, Any] | None, reports: Path, opts: LaunchOptions) -> dict[str, Any] | None:
    """Name the rank that failed first, and what it said, in the outcome."""
    said = {}
    for path in sorted(reports.glob("rank-*.json")):
        try:
            said[int(path.stem.split("-", 1)[1])] = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError):
            continue
    local = range(opts.node_rank * opts.nproc_per_node, (opts.node_rank + 1) * opts.nproc_per_node) if not opts.rdzv_endpoint else sorted(said)
    silent = [r for r in local if r not in said]
    failed = [r for r, report in sorted(said.items()) if report.get("status") == RunStatus.FAILED and not report.get("peer_lost")]
    if outcome is None and said and not (set(said) - set(local)) and 0 not in said:  # a machine without rank 0
        first = said[min(said)]
        outcome = {k: v for k, v in first.items() if k not in ("rank", "host", "peer_lost")}
    if outcome is None:
        return None
    if outcome.get("status") == RunStatus.FAILED and (silent or failed) and not outcome.get("usage_error"):
        if silent:
            why = f"rank {silent[0]} died without a word (killed, or crashed in native code)"
        else:
            why = f"rank {failed[0]} failed: {said[failed[0]].get('error', '')}"
        outcome = dict(outcome, error=f"{why}; {outcome.get('error', '')}".rstrip("; "), failed_rank=(silent or failed)[0])
    return outcome


def train_launched(args: Any, out: Any) -> int:
    """``trainlab train`` with launch options: start the group through torchrun and wait;
    rank 0's outcome is this command's (printed with ``--json``), its exit code too."""
    from trainlab.runfolder.index import RunDir, new_run_id
    from trainlab.system import paths

    if args.isolated:
        raise UsageError("--isolated with several processes: the ranks are child processes already")
    opts = options_from(args, getattr(args, "device", None))
    if opts.nnodes == 1 and not opts.rdzv_endpoint:  # bad input before any process starts (on one machine)
        if args.data and not Path(args.data).exists():
            raise UsageError(f"--data {args.data}: no such file or folder")
        if args.resume and not (Path(args.resume) / "run.json").is_file():
            raise UsageError(f"--resume {args.resume}: not a run folder (no run.json)")
    argv = list(args.argv)
    if not args.resume and not args.out and opts.nnodes == 1 and not opts.rdzv_endpoint:  # chosen here, to name it if rank 0 dies
        run_dir = str(paths.runs_dir() / new_run_id(args.task))
        argv += ["--out", run_dir]
    else:
        run_dir = args.resume or args.out or ""
    code, outcome = launch(opts, argv, note=out.note)
    if outcome is None:  # rank 0 never reported: it died, or the group never formed
        error = f"rank 0 ended without an outcome (torchrun exit {code}); see the messages above"
        record_path = RunDir(run_dir) if run_dir else None
        if record_path is not None and record_path.exists():
            record = record_path.read()
            if record.get("status") == RunStatus.RUNNING:
                record.update(status=RunStatus.FAILED, error=error, pid=None)
                record_path.write(record)
        outcome = {"run_dir": run_dir, "status": RunStatus.FAILED, "error": error, "exit_code": EXIT_FAILED}
    elif outcome.get("failed_rank") is not None and run_dir and RunDir(run_dir).exists():
        record = RunDir(run_dir).read()
        record["error"] = outcome["error"]
        RunDir(run_dir).write(record)
    if outcome.get("status") == RunStatus.FAILED:
        out.note(f"trainlab: the run failed: {outcome.get('error')}")
    elif outcome.get("status") == RunStatus.CANCELLED:
        out.note(f"trainlab: the run was stopped; resume with: trainlab train --resume {outcome.get('run_dir')} (and the same launch options)")
    else:
        out.say(f"done: run folder {outcome.get('run_dir')}")
    out.result(outcome)
    result_code = outcome.get("exit_code")
    return int(result_code) if result_code is not None else RunOutcome.from_json(outcome).exit_code
