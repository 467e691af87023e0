"""The kit's checks, by name: the static ones here, the ones that train in ``trainlab.testing.runs``.

A check is a function that returns a line saying what it saw, raises
``CheckFailed`` with a message naming what is wrong, ``CheckWarned`` for
something that works but should change (a plugin API 1 plugin), or
``CheckSkipped``.
Both the pytest suite (``PluginConformance``) and ``trainlab plugins check``
call them, so an author sees the same verdict in both.  The static checks
train nothing; they need no torch beyond importing the task factories.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable

from trainlab.api.descriptors import InputSpec
from trainlab.api.version import PLUGIN_API_VERSION, SUPPORTED_OLDER_MAJORS
from trainlab.pluginhost.host import import_factory
from trainlab.pluginhost.status import PluginStatus
from trainlab.testing.target import PluginTarget, host_for, kit_environment, record_of

# Modules an entry point must not import: discovery runs before every
# start-up, before the window shows (docs/plugins.md, "Declare: cheap").
HEAVY_MODULES = ("torch", "torchvision", "transformers", "tensorflow", "jax", "PySide6", "PyQt5", "PyQt6", "pyqtgraph")


class CheckFailed(AssertionError):
    """A check's verdict: the message says what is wrong and where."""


class CheckSkipped(Exception):
    """The check does not apply (a capability the plugin does not claim, no data for it, a run it needs failed)."""


class CheckWarned(Exception):
    """The plugin works, but should change what the message names (it loads through an adapter)."""


class CheckStatus(StrEnum):
    """A check's verdict, as ``trainlab plugins check --json`` writes it."""

    PASSED = "passed"
    WARNED = "warned"
    FAILED = "failed"
    SKIPPED = "skipped"
    EXPECTED_FAILURE = "expected-failure"


@dataclass(frozen=True)
class CheckResult:
    check: str
    task: str  # "" for a check of the whole plugin
    status: CheckStatus
    message: str = ""

    @property
    def label(self) -> str:
        return f"{self.check}[{self.task}]" if self.task else self.check

    def to_json(self) -> dict[str, Any]:
        return {"check": self.check, "task": self.task, "status": self.status, "message": self.message}


def run_check(name: str, task: str, func: Callable[[], str | None], expected_failures: dict[str, str] | None = None) -> CheckResult:
    """Run one check and say how it went; an expected failure that passes is a failure (remove it from the list)."""
    expected = expected_failures or {}
    reason = expected.get(f"{name}[{task}]") or expected.get(name)
    try:
        message = func() or ""
    except CheckSkipped as exc:
        return CheckResult(name, task, CheckStatus.SKIPPED, str(exc))
    except CheckWarned as exc:
        return CheckResult(name, task, CheckStatus.WARNED, str(exc))
    except CheckFailed as exc:
        if reason:
            return CheckResult(name, task, CheckStatus.EXPECTED_FAILURE, f"{reason} ({exc})")
        return CheckResult(name, task, CheckStatus.FAILED, str(exc))
    except Exception as exc:  # noqa: BLE001 - a plugin's bug is this check's verdict, not the kit's crash
        if reason:
            return CheckResult(name, task, CheckStatus.EXPECTED_FAILURE, f"{reason} ({type(exc).__name__}: {exc})")
        return CheckResult(name, task, CheckStatus.FAILED, f"{type(exc).__name__}: {exc}")
    if reason:
        return CheckResult(name, task, CheckStatus.FAILED, f"listed as an expected failure ({reason}) but passed: remove it from expected_failures")
    return CheckResult(name, task, CheckStatus.PASSED, message)


# -- static checks (the plugin as a whole) -------------------------------------------


class StaticKit:
    """One plugin's discovery, done once, for the static checks."""

    def __init__(self, target: PluginTarget, home: Path | None = None):
        self.target = target
        self.home = home  # None: the user's (trainlab plugins check); a kit's own under pytest
        self._registry = None

    @property
    def registry(self):
        if self._registry is None:
            if self.home is None:
                self._registry = host_for(self.target)
            else:
                with kit_environment(self.home):  # the first-sight probe's verdict is kept there
                    self._registry = host_for(self.target)
        return self._registry

    @property
    def record(self):
        return record_of(self.registry, self.target)

    def task_ids(self) -> list[str]:
        return [tid for tid, entry in self.registry.tasks.items() if entry.plugin is self.record]

    def loaded(self):
        record = self.record
        if record.status == PluginStatus.FAILED:
            raise CheckFailed(f"plugin {record.name!r} failed to load: {record.message}")
        if record.status != PluginStatus.OK:
            raise CheckFailed(f"plugin {record.name!r} is {record.status}: {record.message}")
        return record


def check_api_version(kit: StaticKit) -> str:
    record = kit.record
    if record.status == PluginStatus.INCOMPATIBLE:
        raise CheckFailed(record.message)
    if record.status == PluginStatus.FAILED and not record.api_version:
        raise CheckFailed(f"plugin {record.name!r}: {record.message}")
    major, _, minor = record.api_version.partition(".")
    if int(major) in SUPPORTED_OLDER_MAJORS:
        raise CheckWarned(
            f"trainlab_api_version() returns {record.api_version!r}: the plugin loads through the plugin API {major} adapter "
            f"and works as single-label classification; to move to {PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]}, "
            + "; ".join(_api1_changes(kit))
            + " (docs/plugins.md, Versions)"
        )
    if int(minor or 0) > PLUGIN_API_VERSION[1]:
        raise CheckFailed(f"declares plugin API {record.api_version}, newer than this TrainLab's {PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]}")
    return f"plugin API {record.api_version}"


def _api1_changes(kit: StaticKit) -> list[str]:
    """What a plugin API 1 plugin changes to declare the current API, task by task."""
    current = f"{PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]}"
    changes = [f"return \"{current}\" from trainlab_api_version()"]
    defaults = [tid for tid in kit.task_ids() if kit.registry.tasks[tid].spec.input == InputSpec()]
    if defaults:
        changes.append(f"declare input=trainlab.InputSpec(...) on task(s) {', '.join(defaults)} (it defaults to text)")
    changes.append("return trainlab.LabelScores from the predictor instead of (label, probability) lists")
    changes.append("import the names from trainlab, not trainlab.api")
    return changes


HOOK_SLIPS = ("not marked @trainlab.hookimpl", "is not a TrainLab hook", "implements no hook")


def check_hooks(kit: StaticKit) -> str:
    record = kit.record
    if record.status == PluginStatus.FAILED and "could not be registered" in record.message:
        # pluggy refuses an implementation whose arguments its spec lacks
        raise CheckFailed(record.message)
    kit.loaded()
    slips = [w for w in record.warnings if any(s in w for s in HOOK_SLIPS)]
    if slips:
        raise CheckFailed("; ".join(slips))
    hooks = sorted({caller.name for caller in kit.registry.pm.get_hookcallers(record.module) or []})
    return "implements " + ", ".join(hooks)


def check_entry_point_imports_no_torch(kit: StaticKit) -> str:
    """Import the entry point in a fresh interpreter and list the heavy modules it loaded."""
    target = kit.target
    probe = (
        "import importlib, json, sys\n"
        f"sys.path[:0] = {list(target.extra_path)!r}\n"
        f"importlib.import_module({target.module!r})\n"
        f"print(json.dumps([m for m in {HEAVY_MODULES!r} if m in sys.modules]))\n"
    )
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env)
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise CheckFailed(f"importing {target.module} failed: {tail}")
    heavy = json.loads(proc.stdout.strip().splitlines()[-1])
    if heavy:
        raise CheckFailed(
            f"importing the entry point {target.module} imports {', '.join(heavy)}: discovery runs at every start-up, "
            "so import those inside the task's methods (docs/plugins.md, Declare: cheap)"
        )
    return f"{target.module} imports none of torch, transformers, Qt"


def check_descriptors(kit: StaticKit) -> str:
    record = kit.loaded()
    problems = [w for w in record.warnings if "invalid task descriptor" in w or "returned" in w or "already provided" in w]
    tasks = kit.task_ids()
    if not tasks and not problems:
        hooks = {caller.name for caller in kit.registry.pm.get_hookcallers(record.module) or []}
        if "trainlab_tasks" in hooks:
            problems.append("trainlab_tasks() returned no task")
    for task_id in tasks:
        spec = kit.registry.tasks[task_id].spec
        try:
            factory = import_factory(spec.factory)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"task {task_id!r}: its factory {spec.factory!r} does not import: {type(exc).__name__}: {exc}")
            continue
        if not callable(factory):
            problems.append(f"task {task_id!r}: its factory {spec.factory!r} is not callable")
        if spec.sample_data and spec.sample_path() is None:
            problems.append(f"task {task_id!r}: its sample_data {spec.sample_data!r} is not there")
    if problems:
        raise CheckFailed("; ".join(problems))
    return f"{len(tasks)} task(s), every factory imports: {', '.join(tasks)}" if tasks else "declares no task"


STATIC_CHECKS: dict[str, Callable[[StaticKit], str]] = {
    "api_version": check_api_version,
    "hooks": check_hooks,
    "entry_point_imports_no_torch": check_entry_point_imports_no_torch,
    "descriptors_and_factories": check_descriptors,
}

# The checks that train, per task, and the capability flag each needs ("" none).
RUN_CHECKS: dict[str, str] = {
    "bad_data_raises_data_error": "",
    "data_left_unchanged": "",
    "loss_finite_and_falls": "",
    "events_match_schema": "",
    "saved_model_loads": "export",
    "predicts": "predict",
    "accumulator_merges": "",
    "resume_is_exact": "resume",
    "same_seed_same_result": "",
    "stop_within_one_step": "",
    "writes_only_its_run_folder": "",
    "opens_no_socket": "",
}

CHECKS = (*STATIC_CHECKS, *RUN_CHECKS)
