"""The module paths of the earlier layout, kept working for one release.

TrainLab's modules moved into subpackages (``trainlab.events`` is
``trainlab.api.events``, ``trainlab.desktop`` is ``trainlab_desktop``, the
built-in plugins are ``trainlab_plugins``; docs/contract.md "Names and
layout"). A script, a plugin or an entry point that still names an old module
imports it through the finder below, which hands back the module under its
new name and says so with a ``DeprecationWarning``. The next release removes
this module.

This is also the one place where TrainLab imports its own modules by a name
held in a string (``tests/project/test_lazy_imports.py`` refuses it anywhere
else): an old name is data, and the modules it leads to are imported under
their new names, which the layer contracts check.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys
import warnings

# Old name -> new name. A child of an old name not listed here keeps its own
# name under the new parent (``trainlab.queue.store`` ->
# ``trainlab.scheduling.queue_store``).
MOVED = {
    "trainlab.engine.batches": "trainlab.api.batches",
    "trainlab.queue.leases": "trainlab.engine.gpu_leases",
    "trainlab.queue.locks": "trainlab.system.locks",
    "trainlab.cache": "trainlab.system.cache",
    "trainlab.cli_listings": "trainlab.cli.listings",
    "trainlab.curves": "trainlab.viewmodel.curves",
    "trainlab.descriptors": "trainlab.api.descriptors",
    "trainlab.desktop": "trainlab_desktop",
    "trainlab.desktop._bridge": "trainlab_desktop.common.sample_bridge",
    "trainlab.desktop.about": "trainlab_desktop.dialogs.about",
    "trainlab.desktop.axes": "trainlab_desktop.plots.axes",
    "trainlab.desktop.background": "trainlab_desktop.common.background",
    "trainlab.desktop.cache_dialog": "trainlab_desktop.dialogs.cache",
    "trainlab.desktop.confusion": "trainlab_desktop.results.confusion",
    "trainlab.desktop.curves": "trainlab.viewmodel.curves",
    "trainlab.desktop.data_panel": "trainlab_desktop.run.data_panel",
    "trainlab.desktop.devices": "trainlab.viewmodel.devices",
    "trainlab.desktop.estimate": "trainlab.viewmodel.estimate",
    "trainlab.desktop.estimate_view": "trainlab_desktop.run.estimate_view",
    "trainlab.desktop.flow_layout": "trainlab_desktop.common.flow_layout",
    "trainlab.desktop.follow": "trainlab.runfolder.tail",
    "trainlab.desktop.formatting": "trainlab_desktop.common.formatting",
    "trainlab.desktop.gpu_panel": "trainlab_desktop.run.gpu_panel",
    "trainlab.desktop.gpu_picker": "trainlab_desktop.run.gpu_picker",
    "trainlab.desktop.group_run": "trainlab.engine.run_process",
    "trainlab.desktop.history": "trainlab_desktop.history.page",
    "trainlab.desktop.history_curves": "trainlab_desktop.history.curve_view",
    "trainlab.desktop.history_table": "trainlab_desktop.history.table",
    "trainlab.desktop.i18n": "trainlab_desktop.common.i18n",
    "trainlab.desktop.log_panel": "trainlab_desktop.run.log_panel",
    "trainlab.desktop.metric_plots": "trainlab_desktop.plots.metric_plots",
    "trainlab.desktop.notify": "trainlab_desktop.common.notify",
    "trainlab.desktop.params_form": "trainlab_desktop.run.params_form",
    "trainlab.desktop.plots": "trainlab_desktop.plots.live_plots",
    "trainlab.desktop.plugins_dialog": "trainlab_desktop.dialogs.plugins",
    "trainlab.desktop.queue_view": "trainlab_desktop.scheduling.queue_view",
    "trainlab.desktop.results": "trainlab_desktop.results.page",
    "trainlab.desktop.results_classification": "trainlab_desktop.results.classification",
    "trainlab.desktop.results_metrics": "trainlab_desktop.results.metrics",
    "trainlab.desktop.results_model": "trainlab.viewmodel.results",
    "trainlab.desktop.results_multilabel": "trainlab_desktop.results.multilabel",
    "trainlab.desktop.results_plots": "trainlab_desktop.results.charts",
    "trainlab.desktop.results_regression": "trainlab_desktop.results.regression",
    "trainlab.desktop.results_widgets": "trainlab_desktop.results.widgets",
    "trainlab.desktop.run_controller": "trainlab_desktop.run.run_controller",
    "trainlab.desktop.run_controls": "trainlab_desktop.run.run_controls",
    "trainlab.desktop.run_dialogs": "trainlab_desktop.dialogs.run",
    "trainlab.desktop.session_view": "trainlab_desktop.run.session_view",
    "trainlab.desktop.settings": "trainlab.viewmodel.settings",
    "trainlab.desktop.style": "trainlab_desktop.common.style",
    "trainlab.desktop.sweep_view": "trainlab_desktop.scheduling.sweep_view",
    "trainlab.desktop.train_page": "trainlab_desktop.run.train_page",
    "trainlab.desktop.tryit": "trainlab_desktop.tryit.page",
    "trainlab.desktop.tryit_inputs": "trainlab_desktop.tryit.inputs",
    "trainlab.desktop.tryit_outputs": "trainlab_desktop.tryit.outputs",
    "trainlab.desktop.welcome": "trainlab_desktop.run.welcome",
    "trainlab.desktop.worker": "trainlab_desktop.run.training_thread",
    "trainlab.doctor": "trainlab.cli.doctor",
    "trainlab.engine.callbacks": "trainlab.api.callbacks",
    "trainlab.engine.records": "trainlab.engine.recorder",
    "trainlab.engine.runner": "trainlab.engine.scripting",
    "trainlab.engine.worker": "trainlab.engine.child_main",
    "trainlab.eval_records": "trainlab.runfolder.eval_report",
    "trainlab.events": "trainlab.api.events",
    "trainlab.families": "trainlab.api.families",
    "trainlab.fileio": "trainlab.system.fileio",
    "trainlab.finetune": "trainlab.api.finetune",
    "trainlab.formats": "trainlab.runfolder.display",
    "trainlab.hookspecs": "trainlab.api.hookspecs",
    "trainlab.launch": "trainlab.engine.torchrun",
    "trainlab.launcher": "trainlab.shortcuts",
    "trainlab.logs": "trainlab.system.logs",
    "trainlab.memory": "trainlab.engine.memory",
    "trainlab.memory_probe": "trainlab.engine.memory_probe",
    "trainlab.metrics": "trainlab.api.metrics",
    "trainlab.modelformats": "trainlab.models.formats",
    "trainlab.modelstore": "trainlab.models.catalog",
    "trainlab.param_values": "trainlab.viewmodel.param_values",
    "trainlab.params": "trainlab.api.params",
    "trainlab.paths": "trainlab.system.paths",
    "trainlab.plugincheck": "trainlab.cli.plugin_check",
    "trainlab.pluginprobe": "trainlab.pluginhost.probe",
    "trainlab.plugins": "trainlab_plugins",
    "trainlab.predictions": "trainlab.api.predictions",
    "trainlab.queue": "trainlab.scheduling",
    "trainlab.queue.actions": "trainlab.scheduling.queue_actions",
    "trainlab.queue.board": "trainlab.scheduling.queue_board",
    "trainlab.queue.execution": "trainlab.scheduling.execution",
    "trainlab.queue.scheduler": "trainlab.scheduling.scheduler",
    "trainlab.queue.store": "trainlab.scheduling.queue_store",
    "trainlab.sweep.board": "trainlab.scheduling.sweep_board",
    "trainlab.sweep.foreground": "trainlab.scheduling.sweep_foreground",
    "trainlab.sweep.space": "trainlab.scheduling.sweep_space",
    "trainlab.sweep.study": "trainlab.scheduling.sweep_study",
    "trainlab.queue.commands": "trainlab.cli.queue_commands",
    "trainlab.queue.runner": "trainlab.scheduling.entry_process",
    "trainlab.records": "trainlab.runfolder.records",
    "trainlab.reporting": "trainlab.cli.reporting",
    "trainlab.resources": "trainlab_resources",
    "trainlab.runs": "trainlab.runfolder.index",
    "trainlab.session": "trainlab.viewmodel.session",
    "trainlab.shadowing": "trainlab.system.shadowing",
    "trainlab.status": "trainlab.runfolder.status",
    "trainlab.sweep": "trainlab.scheduling",
    "trainlab.sweep.commands": "trainlab.cli.sweep_commands",
    "trainlab.tail": "trainlab.runfolder.tail",
    "trainlab.taskbase": "trainlab.api.taskbase",
}

# Names that scripts imported from a module that is now a package of the same
# name: (package, name) -> the module that holds the name now.
MOVED_NAMES = {
    ("trainlab.pluginhost", "registry"): "trainlab.pluginhost.host",
    ("trainlab.pluginhost", "load_factory"): "trainlab.pluginhost.host",
    ("trainlab.pluginhost", "PluginRegistry"): "trainlab.pluginhost.host",
    ("trainlab.cli", "main"): "trainlab.cli.commands",
    ("trainlab.cli", "gui_main"): "trainlab.cli.commands",
}


def new_name(old: str) -> str | None:
    """The module an old dotted name now is, or None when it is no old name."""
    if old in MOVED:
        return MOVED[old]
    parent, _, child = old.rpartition(".")
    while parent:
        if parent in MOVED:
            return MOVED[parent] + old[len(parent):]
        parent, _, _ = parent.rpartition(".")
    return None


def _warn(old: str, new: str) -> None:
    warnings.warn(f"{old} is now {new}; the old name goes in the next release", DeprecationWarning, stacklevel=4)


class _Alias:  # a loader by protocol: importlib.abc would load importlib.resources at every start-up
    def __init__(self, new: str) -> None:
        self.new = new
        self.real_spec = None

    def create_module(self, spec):
        _warn(spec.name, self.new)
        module = importlib.import_module(self.new)
        self.real_spec = module.__spec__
        return module

    def exec_module(self, module) -> None:
        # The import system set the alias's spec on the module: give it back its own.
        module.__spec__ = self.real_spec


class _MovedFinder:  # a meta path finder by protocol, as _Alias
    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(("trainlab.", "trainlab_")):
            return None
        new = new_name(fullname)
        if new is None or new == fullname:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(new))


def install() -> None:
    """Let old module names import (once per process)."""
    if not any(isinstance(finder, _MovedFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _MovedFinder())


def moved_name(package: str, name: str):
    """``name`` of a module that became ``package``, for the package's ``__getattr__``."""
    module = MOVED_NAMES.get((package, name))
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    _warn(f"{package}.{name}", f"{module}.{name}")
    return getattr(importlib.import_module(module), name)
