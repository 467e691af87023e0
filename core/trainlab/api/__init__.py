"""The public plugin API: what a task plugin declares and what it implements.

Plugins reach it through the root package (``from trainlab import TaskSpec,
hookimpl, ...``); TrainLab's own code imports each name from the module that
defines it.  Everything here is importable without torch:

* descriptors (``trainlab.api.descriptors``): ``TaskSpec``, ``Param``,
  ``Preset``, ``Metric``, ``InputSpec``, read and validated cheaply at
  discovery;
* the runtime (``trainlab.api.taskbase``): ``Task``, ``RunContext``,
  ``DataSummary``, ``EvalBatch``, instantiated when a run starts through the
  descriptor's ``factory`` path; the family base classes that build on it
  (``ClassificationTask``, ``RegressionTask``, ``MultiLabelTask``) are in
  ``trainlab.api.families``, the typed predictions in ``trainlab.api.predictions``;
* the errors that become exit codes (``trainlab.api.errors``).

Compatibility follows ``PLUGIN_API_VERSION`` = (major, minor): a minor bump
only adds, a major bump removes or changes.  Plugin API 2.0 added task
families, declared metrics, typed predictions, declared inputs and model
formats, and fitted state; a plugin built for 1.x keeps working through the
adapter described in ``docs/plugins.md`` ("Versions").  Any other major is
reported ``incompatible`` and not loaded.
"""

from __future__ import annotations

from trainlab.api.errors import DataError, RunFailed, StopRequested, UsageError

# The names this package gathered when it was one module, for code written
# against it (a plugin API 1 plugin's ``from trainlab.api import TaskSpec``):
# each read from its module on first use, so that importing one module of the
# API loads no other (but the errors, which every layer raises).
_GATHERED = {
    **dict.fromkeys(("PLUGIN_API_VERSION", "SUPPORTED_OLDER_MAJORS"), "version"),
    **dict.fromkeys(("FAMILIES", "FAMILY_METRICS", "INPUT_KINDS", "PARAM_NAME_RE", "PARAM_TYPES", "TASK_ID_RE", "InputSpec",
                     "Metric", "OutputSpec", "Param", "Preset", "TaskSpec"), "descriptors"),
    **dict.fromkeys(("DataSummary", "EvalBatch", "RunContext", "Task"), "taskbase"),
    # plugin API 1 had it here; it is a family base class now
    "ClassificationTask": "families",
}


def __getattr__(name: str):
    where = _GATHERED.get(name)
    if where == "version":
        from trainlab.api import version as module
    elif where == "descriptors":
        from trainlab.api import descriptors as module
    elif where == "taskbase":
        from trainlab.api import taskbase as module
    elif where == "families":
        from trainlab.api import families as module
    else:
        raise AttributeError(f"module 'trainlab.api' has no attribute {name!r}")
    value = getattr(module, name)
    globals()[name] = value
    return value


__all__ = sorted([*_GATHERED, "DataError", "RunFailed", "StopRequested", "UsageError"])
