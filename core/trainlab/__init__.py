"""TrainLab: train and fine-tune deep-learning models offline, without code.

Importing this package is cheap (no torch, no Qt) and makes the process
offline: Hugging Face libraries are told never to reach the network before
anything can import them.

This module is also the public plugin API: plugin authors import from
``trainlab`` only (see ``docs/plugins.md``)::

    from trainlab import hookimpl, TaskSpec, Param, Preset, ClassificationTask

``docs/plugins.md`` ("What to import") describes every public name.
"""

from __future__ import annotations

import os as _os

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

# Module paths of the earlier layout keep importing, with a warning, for one
# release (trainlab.system.moved).
from trainlab.system import moved as _moved  # noqa: E402
from trainlab.system.release import TRAINLAB_VERSION as __version__  # noqa: E402 - a leaf, after the offline rule

_moved.install()

# The public API is imported on first use (PEP 562), module by module, so that
# ``import trainlab`` stays cheap for the window's start-up and the CLI's --version.
# Every module named here must itself import no torch, numpy or Qt
# (tests/core/api/test_public_api.py checks it).  Plugins reach TrainLab only through
# these names: an import-linter contract in pyproject.toml forbids them every
# other trainlab module.
_API = {
    # Declaring a task: descriptors, the runtime base classes, errors.
    "PLUGIN_API_VERSION": "trainlab.api",
    "ClassificationTask": "trainlab.api.families",
    "MultiLabelTask": "trainlab.api.families",
    "RegressionTask": "trainlab.api.families",
    "MetricAccumulator": "trainlab.api.families",
    "DetectionMetrics": "trainlab.api.families",
    "Metric": "trainlab.api",
    "InputSpec": "trainlab.api",
    "OutputSpec": "trainlab.api",
    # A batch's examples that do not stack (detection's images and box dicts):
    # counted and split by item, not along their tensors' dimension 0.
    "ExampleList": "trainlab.api.batches",
    # What an evaluation reports besides its metrics, typed (plugin API 2.1):
    # declared in TaskSpec.details, drawn by the window's results page.
    "Table": "trainlab.api.details",
    "ExampleRows": "trainlab.api.details",
    "Series": "trainlab.api.details",
    "Figure": "trainlab.api.details",
    "Column": "trainlab.api.details",
    "Line": "trainlab.api.details",
    "Box": "trainlab.api.details",
    "BoxedImage": "trainlab.api.details",
    "Values": "trainlab.api.details",
    "Detail": "trainlab.api.details",
    "FAMILY_DETAILS": "trainlab.api.details",
    "VIEW_ENTRY_POINT_GROUP": "trainlab.api.details",
    # What a trained model says about one input, one type per family.
    "Prediction": "trainlab.api.predictions",
    "LabelScores": "trainlab.api.predictions",
    "InputItem": "trainlab.api.predictions",
    "LabelSet": "trainlab.api.predictions",
    "Number": "trainlab.api.predictions",
    "DataError": "trainlab.api",
    "RunFailed": "trainlab.api",
    "DataSummary": "trainlab.api",
    "EvalBatch": "trainlab.api",
    "Param": "trainlab.api",
    "Preset": "trainlab.api",
    "RunContext": "trainlab.api",
    "StopRequested": "trainlab.api",
    "Task": "trainlab.api",
    "TaskSpec": "trainlab.api",
    "UsageError": "trainlab.api",
    "hookimpl": "trainlab.api.hookspecs",
    # Engine callbacks (trainlab_run_callbacks) and the log event they emit.
    "Callback": "trainlab.api.callbacks",
    "RunControl": "trainlab.api.callbacks",
    "RunState": "trainlab.api.callbacks",
    "Log": "trainlab.api.events",
    # Files (and folders) a plugin writes into a run or a model folder: complete
    # or absent, never half-written (a temporary beside it, fsync, rename).
    "atomic_write": "trainlab.system.fileio",
    "atomic_write_folder": "trainlab.system.fileio",
    "atomic_write_json": "trainlab.system.fileio",
    "atomic_write_text": "trainlab.system.fileio",
    "read_json": "trainlab.system.fileio",
    # Weights a plugin exports: safetensors carrying their checksum, verified
    # on load (a damaged file is a one-line error naming it).
    "add_checksum": "trainlab.system.fileio",
    "save_safetensors": "trainlab.system.fileio",
    "verify_safetensors": "trainlab.system.fileio",
    # Models on this machine, found without the network.
    "FolderCheck": "trainlab.models.catalog",
    "check_text_model_folder": "trainlab.models.catalog",
    "model_store_dir": "trainlab.system.paths",
    "resolve_model": "trainlab.models.catalog",
    # Pickled weights are read only with weights_only=True; these refuse the
    # rest in one line that names the file and what it tried to call.
    "check_weights": "trainlab.models.catalog",
    "refuse_pickle": "trainlab.models.catalog",
    "weight_files": "trainlab.models.catalog",
    # Disposable derived data a plugin keeps between runs (token ids): a
    # folder per named cache under TrainLab's cache, one size cap over all
    # (`trainlab cache list|clear`); mark an entry used after reading or
    # writing it so the cap evicts the least recently used first.
    "cache_dir": "trainlab.system.cache",
    "cache_entry_used": "trainlab.system.cache",
    # What a fine-tune trains (docs/finetuning.md): the engine-wide parameter a
    # task re-declares with the modes it supports, size classes, QLoRA's
    # requirements, and the base model fingerprint adapters are checked against.
    "FINETUNE_PARAM": "trainlab.api.finetune",
    "GRADIENT_CHECKPOINTING_PARAM": "trainlab.api.finetune",
    "LORA_PARAMS": "trainlab.api.finetune",
    "check_base_fingerprint": "trainlab.api.finetune",
    "check_quantized_training": "trainlab.api.finetune",
    "model_fingerprint": "trainlab.api.finetune",
    "resolve_finetune": "trainlab.api.finetune",
    "size_class": "trainlab.api.finetune",
    # What a device can hold (GPU memory, or free RAM on a CPU): for size choices.
    "device_memory_bytes": "trainlab.engine.memory",
    # Files shipped inside TrainLab (sample data, vocabularies).
    "resource_path": "trainlab_resources",
}


def _module(name: str):
    """The module behind a public name: each one an ordinary import, which the layer checks see."""
    if name == "trainlab.api":
        from trainlab import api as module
    elif name == "trainlab.api.batches":
        from trainlab.api import batches as module
    elif name == "trainlab.api.callbacks":
        from trainlab.api import callbacks as module
    elif name == "trainlab.api.details":
        from trainlab.api import details as module
    elif name == "trainlab.api.events":
        from trainlab.api import events as module
    elif name == "trainlab.api.families":
        from trainlab.api import families as module
    elif name == "trainlab.api.finetune":
        from trainlab.api import finetune as module
    elif name == "trainlab.api.hookspecs":
        from trainlab.api import hookspecs as module
    elif name == "trainlab.api.predictions":
        from trainlab.api import predictions as module
    elif name == "trainlab.engine.memory":
        from trainlab.engine import memory as module
    elif name == "trainlab.models.catalog":
        from trainlab.models import catalog as module
    elif name == "trainlab.system.cache":
        from trainlab.system import cache as module
    elif name == "trainlab.system.fileio":
        from trainlab.system import fileio as module
    elif name == "trainlab.system.paths":
        from trainlab.system import paths as module
    elif name == "trainlab_resources":
        import trainlab_resources as module
    else:
        raise AssertionError(name)
    return module


def __getattr__(name: str):
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'trainlab' has no attribute {name!r}")
    value = getattr(_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_API])


__all__ = sorted([*_API, "__version__"])
