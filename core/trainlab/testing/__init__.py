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

_NAMES = {
    "PluginConformance": "trainlab.testing.conformance",
    "CHECKS": "trainlab.testing.checks",
    "STATIC_CHECKS": "trainlab.testing.checks",
    "RUN_CHECKS": "trainlab.testing.checks",
    "CheckFailed": "trainlab.testing.checks",
    "CheckSkipped": "trainlab.testing.checks",
    "CheckResult": "trainlab.testing.checks",
    "PluginTarget": "trainlab.testing.target",
    "TaskKit": "trainlab.testing.runs",
    "HeadlessEngine": "trainlab.testing.engine",
}


def __getattr__(name: str):
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'trainlab.testing' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *_NAMES])


__all__ = sorted(_NAMES)
