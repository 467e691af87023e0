"""The plugin API reference: every hook a TrainLab plugin can implement.

A plugin is a module (or object) named by an entry point in the group
``trainlab.plugins``.  It implements some of these hooks, marked with
``@trainlab.hookimpl``.  Grouped by phase:

* declaration: ``trainlab_api_version`` (required)
* discovery: ``trainlab_tasks``, ``trainlab_presets``
* run time: ``trainlab_run_callbacks``

Discovery hooks must be cheap: no torch, no model loading.  Each call into a
plugin is isolated by the host: it calls one plugin's implementation at a
time (so no hook here is ``firstresult``), and an exception marks that plugin
``failed`` while the others go on.  ``tests/core/api/test_hookspecs.py`` checks that every hook here has
the ``trainlab_`` prefix, a docstring and annotations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Sequence

import pluggy

if TYPE_CHECKING:  # pragma: no cover
    from trainlab.api.callbacks import Callback
    from trainlab.api.descriptors import Preset, TaskSpec

PROJECT = "trainlab"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


# -- declaration ---------------------------------------------------------------


@hookspec
def trainlab_api_version() -> str:
    """The plugin API version this plugin was built for, as ``"MAJOR.MINOR"``.

    Required.  A different major than ``trainlab.PLUGIN_API_VERSION`` makes the
    plugin ``incompatible``; a newer minor loads it with a warning.
    """


# -- discovery ---------------------------------------------------------------


@hookspec
def trainlab_tasks() -> Sequence[TaskSpec]:
    """The tasks this plugin contributes, as ``trainlab.TaskSpec`` descriptors.

    Called once at discovery.  Must not import torch or other heavy modules:
    the descriptor's ``factory`` path is imported only when a run starts.  A
    task id already taken by an earlier plugin is reported and ignored.
    """


@hookspec
def trainlab_presets(task_id: str) -> Sequence[Preset]:
    """Extra model presets for a task, possibly one of another plugin.

    Called once per discovered task.  Return an empty sequence for tasks the
    plugin does not extend.  Presets whose name the task already has are
    reported and ignored.
    """


# -- run time ------------------------------------------------------------------


@hookspec
def trainlab_run_callbacks(task_id: str, params: Mapping[str, Any]) -> Sequence[Callback]:
    """Engine callbacks (``trainlab.Callback`` instances) for a run.

    Called when a run starts, in the process that trains, with the run's
    resolved parameters.  Use it for loggers or custom stopping rules: a
    callback reads the run through ``trainlab.RunState``, steers it only
    through ``state.control`` (a ``trainlab.RunControl``) and may add a line
    to the run's log with ``state.emit(trainlab.Log(message=...))``.  Return
    an empty sequence to add none.
    """
