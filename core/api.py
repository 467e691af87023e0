"""The public plugin API: what a task plugin declares and what it implements.

Plugins reach it through the root package (``from trainlab import TaskSpec,
hookimpl, ...``); this module gathers it for TrainLab's own code.  Everything
here is importable without torch:

* descriptors (``trainlab.descriptors``): ``TaskSpec``, ``Param``,
  ``Preset``, ``Metric``, ``InputSpec``, read and validated cheaply at
  discovery;
* the runtime (``trainlab.taskbase``): ``Task``, ``RunContext``,
  ``DataSummary``, ``EvalBatch``, instantiated when a run starts through the
  descriptor's ``factory`` path; the family base classes that build on it
  (``ClassificationTask``, ``RegressionTask``, ``MultiLabelTask``) are in
  ``trainlab.families``, the typed predictions in ``trainlab.predictions``;
* the errors that become exit codes.

Compatibility follows ``PLUGIN_API_VERSION`` = (major, minor): a minor bump
only adds, a major bump removes or changes.  Plugin API 2.0 added task
families, declared metrics, typed predictions, declared inputs and model
formats, and fitted state; a plugin built for 1.x keeps working through the
adapter described in ``docs/plugins.md`` ("Versions").  Any other major is
reported ``incompatible`` and not loaded.
"""

from __future__ import annotations

PLUGIN_API_VERSION: tuple[int, int] = (2, 0)
# Majors whose plugins still load (through the adapter), besides the current one.
SUPPORTED_OLDER_MAJORS: tuple[int, ...] = (1,)


class UsageError(Exception):
    """Bad usage or bad input: exit code 2, message names what is at fault."""

    exit_code = 2


class DataError(UsageError):
    """The data cannot be used as given (names the file, row or option)."""


class RunFailed(Exception):
    """A run that started and then failed: exit code 1."""

    exit_code = 1


class StopRequested(KeyboardInterrupt):
    """Raised by task code that honoured ``RunContext.should_stop`` (a long data scan).

    A KeyboardInterrupt, so that ``except Exception`` in task code lets it
    through and whatever handles Ctrl-C handles it too (exit 130).
    """

    exit_code = 130



from trainlab.descriptors import (  # noqa: E402 - after the errors they may name
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
from trainlab.taskbase import DataSummary, EvalBatch, RunContext, Task  # noqa: E402


def __getattr__(name: str):
    # ClassificationTask lived here in plugin API 1; it is a family base class now.
    if name == "ClassificationTask":
        from trainlab.families.classification import ClassificationTask

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
