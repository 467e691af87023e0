"""GPU and system telemetry: NVML and psutil readings as ``SystemSample`` events.

``TelemetrySampler`` reads every NVIDIA GPU through NVML (nvidia-ml-py,
imported as ``pynvml``): utilisation, memory, temperature, power, SM clock,
fan and the processes using it; plus this process's torch CUDA memory (only
when torch is already imported and CUDA initialised: the sampler never imports
torch), and CPU, RAM and free disk through psutil.

Every GPU field is optional: many GPUs answer NotSupported for some (no fan on
passively cooled data-centre cards, no per-process memory under Windows WDDM),
and such a field is simply ``None`` and not asked again.  Without NVML, a
driver or a GPU the sampler is in one state, ``gpu_status`` = "no NVIDIA GPU:
<reason>", and CPU and RAM are still sampled.  A query that fails, or a GPU
that falls off the bus mid-run, is reported once (``problems``, the log, the
``on_problem`` listeners) and sampling goes on.

``TelemetryCallback`` runs a sampler beside a training run and writes its
samples into the run's ``metrics.jsonl`` as ``system`` events.

NVML is injected at the import boundary: pass any object that quacks like the
``pynvml`` module (tests pass a fake one).

The package: ``nvml`` (that boundary: the module, its codes, why it failed),
``sampler`` (the readings, knowing nothing of runs), ``callback`` (the
sampler beside a run) and ``ranks`` (every rank's figures in rank 0's
samples, in a run over several processes).  Import the names from here.
"""

from trainlab.telemetry.callback import TelemetryCallback
from trainlab.telemetry.nvml import import_nvml, init_failure_reason
from trainlab.telemetry.ranks import RANK_FIELDS, RankTelemetry, with_ranks
from trainlab.telemetry.sampler import (
    DEFAULT_INTERVAL,
    GPU_FIELDS,
    MAX_INTERVAL,
    MAX_RUN_INTERVAL,
    MIN_INTERVAL,
    NO_GPU,
    OK,
    TelemetrySampler,
    check_interval,
)

__all__ = [
    "DEFAULT_INTERVAL",
    "GPU_FIELDS",
    "MAX_INTERVAL",
    "MAX_RUN_INTERVAL",
    "MIN_INTERVAL",
    "NO_GPU",
    "OK",
    "RANK_FIELDS",
    "RankTelemetry",
    "TelemetryCallback",
    "TelemetrySampler",
    "check_interval",
    "import_nvml",
    "init_failure_reason",
    "with_ranks",
]
