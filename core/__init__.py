"""TrainLab: train and fine-tune deep-learning models offline, without code.

Importing this package is cheap (no torch, no Qt) and makes the process
offline: Hugging Face libraries are told never to reach the network before
anything can import them.

This module is also the public plugin API: plugin authors import from
``trainlab`` only (see ``docs/plugins.md``)::

    from trainlab import hookimpl, TaskSpec, Param, Preset, ClassificationTask
"""

from __future__ import annotations

import os as _os

__version__ = "0.1.0"

# The offline rule (CONTRACT.md "Offline"): set before huggingface_hub is
# imported anywhere, so its module-level constants see them.
_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
}
for _key, _value in _OFFLINE_ENV.items():
    _os.environ[_key] = _value

from trainlab.api import (  # noqa: E402  (offline env first)
    PLUGIN_API_VERSION,
    ClassificationTask,
    DataError,
    DataSummary,
    EvalBatch,
    Param,
    Preset,
    RunContext,
    Task,
    TaskSpec,
    UsageError,
)
from trainlab.hookspecs import hookimpl  # noqa: E402

__all__ = [
    "PLUGIN_API_VERSION",
    "ClassificationTask",
    "DataError",
    "DataSummary",
    "EvalBatch",
    "Param",
    "Preset",
    "RunContext",
    "Task",
    "TaskSpec",
    "UsageError",
    "__version__",
    "hookimpl",
]
