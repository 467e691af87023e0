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

# The public API is imported on first use (PEP 562), so that ``import
# trainlab`` stays cheap for the window's start-up and the CLI's --version.
_API = {
    "PLUGIN_API_VERSION": "trainlab.api",
    "ClassificationTask": "trainlab.api",
    "DataError": "trainlab.api",
    "DataSummary": "trainlab.api",
    "EvalBatch": "trainlab.api",
    "Param": "trainlab.api",
    "Preset": "trainlab.api",
    "RunContext": "trainlab.api",
    "StopRequested": "trainlab.api",
    "Task": "trainlab.api",
    "TaskSpec": "trainlab.api",
    "UsageError": "trainlab.api",
    "hookimpl": "trainlab.hookspecs",
}


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'trainlab' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_API])


__all__ = [
    "PLUGIN_API_VERSION",
    "ClassificationTask",
    "DataError",
    "DataSummary",
    "EvalBatch",
    "Param",
    "Preset",
    "RunContext",
    "StopRequested",
    "Task",
    "TaskSpec",
    "UsageError",
    "__version__",
    "hookimpl",
]
