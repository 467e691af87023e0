"""The public plugin API: what a task plugin declares and what it implements.

Plugins reach it through the root package (``from trainlab import TaskSpec,
hookimpl, ...``); this module gathers it for TrainLab's own code.  Everything
here is importable without torch:

* descriptors (``trainlab.api.descriptors``): ``TaskSpec``, ``Param``,
  ``Preset``, ``Metric``, ``InputSpec``, read and validated cheaply at
  discovery;
* the runtime (``trainlab.api.taskbase``): ``Task``, ``RunContext``,
  ``DataSummary``, ``EvalBatch``, instantiated when a run starts through the
  descriptor's ``factory`` path; the family base classes that build on it
  (``ClassificationTask``, ``RegressionTask``, ``MultiLabelTask``) are in
  ``trainlab.api.families``, the typed predictions in ``trainlab.api.predictions``;
* the errors that become exit codes.

Compatibility follows ``PLUGIN_API_VERSION`` = (major, minor): a minor bump
only adds, a major bump removes or changes.  Plugin API 2.0 added task
families, declared metrics, typed predictions, declared inputs and model
formats, and fitted state; a plugin built for 1.x keeps working through the
adapter described in ``docs/plugins.md`` ("Versions").  Any other major is
reported ``incompatible`` and not loaded.
"""

from __future__ import annotations

from trainlab.api.descriptors import (
    FAMILIES,
    FAMILY_METRICS,
    INPUT_KINDS,
    PARAM_NAME_RE,
    PARAM_TYPES,
    TASK_ID_RE,
    InputSpec,
    Metric,
    Param,
    Preset,
    TaskSpec,
)
from trainlab.api.errors import DataError, RunFailed, StopRequested, UsageError
from trainlab.api.taskbase import DataSummary, EvalBatch, RunContext, Task
from trainlab.api.version import PLUGIN_API_VERSION, SUPPORTED_OLDER_MAJORS


def __getattr__(name: str):
    # ClassificationTask lived here in plugin API 1; it is a family base class now.
    if name == "ClassificationTask":
        from trainlab.api.families.classification import ClassificationTask

        return ClassificationTask
    raise AttributeError(f"module 'trainlab.api' has no attribute {name!r}")


__all__ = [
    "FAMILIES",
    "FAMILY_METRICS",
    "INPUT_KINDS",
    "PARAM_NAME_RE",
    "PARAM_TYPES",
    "PLUGIN_API_VERSION",
    "SUPPORTED_OLDER_MAJORS",
    "TASK_ID_RE",
    "DataError",
    "DataSummary",
    "EvalBatch",
    "InputSpec",
    "Metric",
    "Param",
    "Preset",
    "RunContext",
    "RunFailed",
    "StopRequested",
    "Task",
    "TaskSpec",
    "UsageError",
]
