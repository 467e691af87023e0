"""The plugin kit: fixtures and a conformance suite for TrainLab plugin authors.

Shipped with TrainLab as a pytest plugin (the ``pytest11`` entry point
``trainlab`` names ``trainlab.testing.pytest_plugin``), so a plugin's own
tests get the fixtures by installing TrainLab::

    from trainlab.testing import PluginConformance

    class TestMyPlugin(PluginConformance):
        plugin = "my-plugin"                     # the entry-point name
        def make_tiny_data(self, task_id, folder):
            ...                                  # write a few learnable examples, return the path

``docs/plugin-kit.md`` describes every fixture, check and flag.  The pytest
plugin loads in every pytest session wherever TrainLab is installed, so
nothing here imports torch, Qt or pytest-qt until a fixture or check needs
it; this package's names are imported on first use.
"""

from __future__ import annotations

from trainlab.testing.checks import CHECKS, RUN_CHECKS, STATIC_CHECKS, CheckFailed, CheckResult, CheckSkipped, CheckWarned
from trainlab.testing.engine import HeadlessEngine
from trainlab.testing.runs import TaskKit
from trainlab.testing.target import PluginTarget


def __getattr__(name: str):
    # The suite a plugin's tests subclass, imported when a test module asks for it.
    if name == "PluginConformance":
        from trainlab.testing.conformance import PluginConformance

        globals()[name] = PluginConformance
        return PluginConformance
    raise AttributeError(f"module 'trainlab.testing' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), "PluginConformance"])


__all__ = ["CHECKS", "RUN_CHECKS", "STATIC_CHECKS", "CheckFailed", "CheckResult", "CheckSkipped", "CheckWarned", "HeadlessEngine", "PluginConformance",
           "PluginTarget", "TaskKit"]
