"""Plugin discovery with per-plugin isolation.

How a plugin is loaded (``docs/plugins.md``, "How TrainLab loads plugins"):

1. A third-party plugin TrainLab has not seen before, or whose files or
   version changed, is first loaded in a child process with a time limit
   (``trainlab.pluginhost.probe``): one that hangs, exits or crashes there is
   reported ``failed`` and never imported here.  The verdict is cached, so
   a start-up with known plugins starts no process.
2. Entry points in the group ``trainlab.plugins`` are then imported one by
   one, each in its own try/except; every hook call is made on one plugin at
   a time, so a plugin that raises is marked ``failed`` with its traceback
   and the others go on.  (pluggy's own ``load_setuptools_entrypoints`` and
   hook calls stop at the first error, so the host does the isolation.)
3. What cannot be right is said as a warning, the plugin staying ``ok``:
   functions named like hooks but not marked ``@trainlab.hookimpl``, hook
   implementations no hook specification knows (with the closest real
   name), no hook implemented at all, and a task whose factory module cannot
   be found (looked up without importing it: heavy task code stays unloaded
   until a run needs it).

Once a run starts, calls into the task's code are attributed to its plugin
by ``trainlab.engine.plugin_calls``.

Order: the built-in plugins (distribution ``trainlab``) first, then the others
sorted by entry-point name; for a task id offered twice the first keeps it.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata as md
import logging
import os
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import pluggy

from trainlab.api import hookspecs
from trainlab.api.descriptors import Preset, TaskSpec
from trainlab.api.errors import UsageError, did_you_mean
from trainlab.api.params import ENGINE_PARAMS
from trainlab.api.version import PLUGIN_API_VERSION, SUPPORTED_OLDER_MAJORS
from trainlab.pluginhost import probe as pluginprobe
from trainlab.pluginhost.status import PluginStatus
from trainlab.system.user_settings import load_settings, save_settings

GROUP = "trainlab.plugins"
BUILTIN_DIST = "trainlab"
# pluggy's marker attribute on a function decorated with @trainlab.hookimpl
IMPL_MARKER = f"{hookspecs.PROJECT}_impl"

log = logging.getLogger("trainlab.plugins")


@dataclass
class PluginRecord:
    """What discovery learned about one plugin."""

    name: str  # the entry-point name
    value: str  # what the entry point points at
    distribution: str
    version: str
    builtin: bool
    status: str = PluginStatus.OK  # a PluginStatus
    message: str = ""
    traceback: str = ""
    warnings: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    api_version: str = ""
    module: Any = None
    probe: dict[str, Any] = field(default_factory=dict)  # how loading it in a child process went, if it was tried
    load_seconds: float | None = None  # how long importing its module took here (None: not imported)

    @property
    def path(self) -> str:
        """The file of the plugin's module ("" until it is imported)."""
        return str(getattr(self.module, "__file__", "") or "")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entry_point": self.value,
            "distribution": self.distribution,
            "version": self.version,
            "builtin": self.builtin,
            "api_version": self.api_version,
            "tasks": list(self.tasks),
            "status": self.status,
            "message": self.message,
            "warnings": list(self.warnings),
            "traceback": self.traceback,
            "probe": dict(self.probe),
            "path": self.path,
            "load_seconds": self.load_seconds,
        }


@dataclass
class TaskEntry:
    spec: TaskSpec
    plugin: PluginRecord


def safe_mode() -> bool:
    return os.environ.get("TRAINLAB_DISABLE_PLUGINS", "").strip().lower() in {"1", "true", "yes", "on"}


def blocked_names() -> set[str]:
    """Blocked by the user: settings ``blocked_plugins`` plus TRAINLAB_BLOCK_PLUGINS."""
    names = {str(n) for n in load_settings().get("blocked_plugins", []) if n}
    env = os.environ.get("TRAINLAB_BLOCK_PLUGINS", "")
    names.update(n.strip() for n in env.split(",") if n.strip())
    return names


def set_blocked(name: str, blocked: bool) -> None:
    settings = load_settings()
    names = set(settings.get("blocked_plugins", []))
    (names.add if blocked else names.discard)(name)
    settings["blocked_plugins"] = sorted(names)
    save_settings(settings)


def _dist_of(ep: md.EntryPoint) -> tuple[str, str]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "", ""
    return dist.metadata["Name"] or "", dist.version or ""


def _candidate(ep: md.EntryPoint) -> pluginprobe.Candidate:
    dist, version = _dist_of(ep)
    dist_path = getattr(getattr(ep, "dist", None), "_path", None)
    return pluginprobe.Candidate(ep.name, ep.value, GROUP, dist, version, str(dist_path) if dist_path else None)


class PluginRegistry:
    """The discovered plugins and the tasks they offer."""

    def __init__(self) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.plugins: list[PluginRecord] = []
        self.tasks: dict[str, TaskEntry] = {}

    # -- discovery -----------------------------------------------------------
    @classmethod
    def discover(cls, entry_points: Iterable[md.EntryPoint] | None = None) -> "PluginRegistry":
        registry = cls()
        eps = list(entry_points) if entry_points is not None else list(md.entry_points(group=GROUP))
        seen: set[tuple[str, str]] = set()
        unique = []
        for ep in eps:  # the same distribution can be visible twice on sys.path
            if (ep.name, ep.value) not in seen:
                seen.add((ep.name, ep.value))
                unique.append(ep)
        unique.sort(key=lambda ep: (_dist_of(ep)[0].lower() != BUILTIN_DIST, ep.name))
        blocked = blocked_names()
        verdicts = pluginprobe.check(
            _candidate(ep)
            for ep in unique
            if _dist_of(ep)[0].lower() != BUILTIN_DIST and ep.name not in blocked and not safe_mode()
        )
        for ep in unique:
            registry._load(ep, blocked, verdicts.get(_candidate(ep).key))
        for record in registry.plugins:
            if record.status == PluginStatus.OK:
                registry._collect_tasks(record)
        for record in registry.plugins:
            if record.status == PluginStatus.OK:
                registry._collect_presets(record)
        return registry

    def _load(self, ep: md.EntryPoint, blocked: set[str], verdict: pluginprobe.Verdict | None = None) -> None:
        dist, version = _dist_of(ep)
        self._load_plugin(ep.name, ep.value, dist, version, ep.load, blocked, verdict)

    def add_plugin(self, plugin: Any, name: str, version: str = "") -> PluginRecord:
        """Register a plugin object in this process (scripts, notebooks, benchmarks).

        It goes through the same checks and isolation as an entry point; its
        tasks are added unless an earlier plugin already has their ids.
        """
        record = self._load_plugin(name, repr(plugin), "", version, lambda: plugin, set())
        if record.status == PluginStatus.OK:
            self._collect_tasks(record)
        return record

    def _load_plugin(
        self,
        name: str,
        value: str,
        dist: str,
        version: str,
        load: Callable[[], Any],
        blocked: set[str],
        verdict: pluginprobe.Verdict | None = None,
    ) -> PluginRecord:
        record = PluginRecord(name=name, value=value, distribution=dist, version=version, builtin=dist.lower() == BUILTIN_DIST)
        self.plugins.append(record)
        if name in blocked:
            record.status, record.message = PluginStatus.BLOCKED, "blocked by the user (trainlab plugins --unblock NAME)"
            return record
        if safe_mode() and not record.builtin:
            record.status, record.message = PluginStatus.DISABLED, "safe mode (TRAINLAB_DISABLE_PLUGINS=1): built-ins only"
            return record
        if verdict is not None:
            record.probe = verdict.to_json()
            if verdict.failed:  # importing it here would hang or end this process
                record.status, record.message, record.traceback = PluginStatus.FAILED, verdict.message, verdict.detail
                if not verdict.cached:
                    log.warning("plugin %s %s", name, verdict.message)
                return record
        started = time.perf_counter()
        try:
            module = load()
        except BaseException as exc:  # noqa: BLE001 - a broken plugin must never be fatal
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._fail(record, f"could not be imported: {type(exc).__name__}: {exc}")
            return record
        finally:
            record.load_seconds = time.perf_counter() - started
        record.module = module
        version_text = self._call(record, "trainlab_api_version", {})
        if record.status != PluginStatus.OK:
            return record
        if not version_text:
            self._fail(record, "does not declare trainlab_api_version()")
            return record
        record.api_version = str(version_text)
        try:
            major, minor = (int(x) for x in str(version_text).split(".")[:2])
        except ValueError:
            self._fail(record, f"trainlab_api_version() returned {version_text!r}, expected 'MAJOR.MINOR'")
            return record
        current = f"{PLUGIN_API_VERSION[0]}.{PLUGIN_API_VERSION[1]}"
        if major in SUPPORTED_OLDER_MAJORS:
            # Plugin API 1 tasks are single-label classification with logits and
            # (label, probability) predictions: the 2.0 defaults mean exactly
            # that, so they run as they are (docs/plugins.md "Versions").
            record.warnings.append(
                f"built for plugin API {major}.{minor}; runs through the plugin API {major} adapter of this "
                f"TrainLab ({current}) as single-label classification: see docs/plugins.md (Versions) to move to {PLUGIN_API_VERSION[0]}.0"
            )
        elif major != PLUGIN_API_VERSION[0]:
            record.status = PluginStatus.INCOMPATIBLE
            supported = ", ".join(f"{m}.x" for m in (PLUGIN_API_VERSION[0], *SUPPORTED_OLDER_MAJORS))
            record.message = (
                f"built for plugin API {major}.x; this TrainLab provides {current} and loads plugins for {supported}: "
                "rebuild the plugin for a supported version (docs/plugins.md, Versions)"
            )
            return record
        elif minor > PLUGIN_API_VERSION[1]:
            record.warnings.append(
                f"built for plugin API {major}.{minor}, newer than this TrainLab's {current}; some features may not work"
            )
        try:
            self.pm.register(module, name=name)
        except Exception as exc:  # noqa: BLE001
            self._fail(record, f"could not be registered: {type(exc).__name__}: {exc}")
            return record
        record.warnings.extend(hook_warnings(self.pm, module))
        return record

    def _fail(self, record: PluginRecord, message: str) -> None:
        record.status = PluginStatus.FAILED
        record.message = message
        tb = traceback.format_exc()
        record.traceback = "" if tb.startswith("NoneType: None") else tb

    def _impls(self, record: PluginRecord, hook_name: str) -> list[Callable[..., Any]]:
        if record.module is None:
            return []
        caller = getattr(self.pm.hook, hook_name)
        plugin = self.pm.get_plugin(record.name)
        if plugin is None:  # not registered yet: read the function off the module
            func = getattr(record.module, hook_name, None)
            return [func] if callable(func) else []
        return [impl.function for impl in caller.get_hookimpls() if impl.plugin is plugin]

    def _call(self, record: PluginRecord, hook_name: str, kwargs: dict[str, Any]) -> Any:
        """Call one plugin's implementation of a hook; failures mark the plugin."""
        for func in self._impls(record, hook_name):
            try:
                return func(**kwargs)
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt):
                    raise
                self._fail(record, f"{hook_name}() raised {type(exc).__name__}: {exc}")
                return None
        return None

    def _collect_tasks(self, record: PluginRecord) -> None:
        specs = self._call(record, "trainlab_tasks", {})
        if record.status != PluginStatus.OK or specs is None:
            return
        if isinstance(specs, TaskSpec):
            specs = [specs]
        if not isinstance(specs, (list, tuple)):
            self._fail(record, f"trainlab_tasks() returned {type(specs).__name__}, expected a list of TaskSpec")
            return
        rejected = []
        for spec in specs:
            if not isinstance(spec, TaskSpec):
                rejected.append(f"trainlab_tasks() returned {type(spec).__name__}, not a TaskSpec")
                continue
            problems = spec.validate(ENGINE_PARAMS)
            if problems:
                rejected.append("invalid task descriptor: " + "; ".join(problems))
                continue
            owner = self.tasks.get(spec.id)
            if owner is not None:
                rejected.append(f"task {spec.id!r} is already provided by plugin {owner.plugin.name!r}; ignored")
                continue
            self.tasks[spec.id] = TaskEntry(spec, record)
            record.tasks.append(spec.id)
            problem = factory_problem(spec.factory)
            if problem:
                record.warnings.append(f"task {spec.id!r}: {problem}; a run of it will fail")
        if rejected and not record.tasks:
            record.status, record.message = PluginStatus.FAILED, "; ".join(rejected)
            # keep it out of later hook calls
            self.pm.unregister(name=record.name)
        else:
            record.warnings.extend(rejected)

    def _collect_presets(self, record: PluginRecord) -> None:
        for task_id, entry in list(self.tasks.items()):
            presets = self._call(record, "trainlab_presets", {"task_id": task_id})
            if record.status != PluginStatus.OK:
                # a failure here takes its tasks away too
                for tid in record.tasks:
                    self.tasks.pop(tid, None)
                return
            if not presets:
                continue
            spec = entry.spec
            known = {p.name for p in spec.presets}
            added = []
            for preset in presets:
                if not isinstance(preset, Preset):
                    record.warnings.append(f"trainlab_presets({task_id!r}) returned {type(preset).__name__}, not a Preset")
                elif preset.name in known:
                    record.warnings.append(f"preset {preset.name!r} of task {task_id!r} already exists; ignored")
                else:
                    candidate = TaskSpec(**{**spec.__dict__, "presets": (*spec.presets, *added, preset)})
                    problems = candidate.validate(ENGINE_PARAMS)
                    if problems:
                        record.warnings.append(f"preset {preset.name!r}: " + "; ".join(problems))
                    else:
                        added.append(preset)
                        known.add(preset.name)
            if added:
                entry.spec = TaskSpec(**{**spec.__dict__, "presets": (*spec.presets, *added)})

    # -- queries ---------------------------------------------------------------
    def task(self, task_id: str) -> TaskEntry:
        entry = self.tasks.get(task_id)
        if entry is None:
            known = ", ".join(sorted(self.tasks)) or "none"
            raise UsageError(f"unknown task {task_id!r}{did_you_mean(task_id, self.tasks)} (available: {known}; see `trainlab plugins`)")
        return entry

    def run_callbacks(self, task_id: str, params: dict[str, Any]) -> list[Any]:
        return [callback for _, callback in self.run_callbacks_by_plugin(task_id, params)]

    def run_callbacks_by_plugin(self, task_id: str, params: dict[str, Any]) -> list[tuple[str, Any]]:
        """(plugin name, callback) for every callback the plugins give a run of ``task_id``."""
        callbacks: list[tuple[str, Any]] = []
        for record in self.plugins:
            if record.status != PluginStatus.OK:
                continue
            result = self._call(record, "trainlab_run_callbacks", {"task_id": task_id, "params": dict(params)})
            if isinstance(result, Sequence):
                callbacks.extend((record.name, callback) for callback in result)
        return callbacks

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.plugins]


def import_factory(path: str) -> Any:
    """Import ``"module:attr"``; whatever the import raises, raised as it is."""
    module_name, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def load_factory(path: str) -> Any:
    """Import ``"module:attr"``; UsageError if that fails."""
    try:
        return import_factory(path)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"cannot load task factory {path!r}: {type(exc).__name__}: {exc}") from exc


def factory_problem(path: str) -> str:
    """Why ``"module:attr"`` cannot load, as far as is known without importing anything ('' if none).

    The module is looked up on the path; the attribute is checked only when
    the module is imported already (the plugin's own module, usually).
    """
    import sys

    module_name, _, attr = path.partition(":")
    if pluginprobe.locate_module(module_name) is None:
        return f"its factory module {module_name!r} cannot be found (factory {path!r})"
    obj: Any = sys.modules.get(module_name)
    if obj is None or not attr:
        return ""
    for part in attr.split("."):
        if not hasattr(obj, part):
            return f"its factory {path!r} names {part!r}, which module {module_name} does not define"
        obj = getattr(obj, part)
    return ""


def hook_warnings(pm: pluggy.PluginManager, plugin: Any) -> list[str]:
    """What a plugin author most likely got wrong about its hooks: forgotten
    ``@trainlab.hookimpl``, a misspelt hook name, no hook implemented at all."""
    # pluggy makes a caller for every name a plugin implements: only those with a spec are hooks
    specs = sorted(name for name, caller in vars(pm.hook).items() if getattr(caller, "spec", None) is not None)
    unmarked, unknown = [], []
    for name in sorted(dir(plugin)):
        if name.startswith("__"):
            continue
        try:
            value = getattr(plugin, name)
        except Exception:  # noqa: BLE001 - a property that raises is no hook either
            continue
        marked = callable(value) and getattr(value, IMPL_MARKER, None) is not None
        if name in specs:
            # trainlab_api_version is read off the module even unmarked (before registering)
            if callable(value) and not marked and name != "trainlab_api_version":
                unmarked.append(name)
        elif callable(value) and (marked or name.startswith(f"{hookspecs.PROJECT}_")):
            unknown.append(name)
    warnings = []
    if unmarked:
        names = ", ".join(f"{n}()" for n in unmarked)
        warnings.append(f"{names} not marked @trainlab.hookimpl, so TrainLab never calls it: add the decorator")
    for name in unknown:
        close = difflib.get_close_matches(name, specs, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else f" (the hooks: {', '.join(specs)})"
        warnings.append(f"{name}() is not a TrainLab hook{hint}, so TrainLab never calls it")
    implemented = {caller.name for caller in pm.get_hookcallers(plugin) or []} & set(specs) - {"trainlab_api_version"}
    if not implemented:
        warnings.append("implements no hook besides trainlab_api_version(), so it adds nothing (no tasks, presets or callbacks)")
    return warnings


_registry: PluginRegistry | None = None
_registry_lock = threading.Lock()


def discovered() -> PluginRegistry | None:
    """The process-wide registry if discovery has run, else None (never discovers)."""
    return _registry


def registry(refresh: bool = False) -> PluginRegistry:
    """The process-wide registry, discovered on first use (thread-safe: the
    window discovers it in a background thread)."""
    global _registry
    with _registry_lock:
        if _registry is None or refresh:
            _registry = PluginRegistry.discover()
        return _registry


def sample_path(task_id: str):
    """The bundled sample data of an installed task (its TaskSpec's ``sample_data``), as a path."""
    spec = registry().task(task_id).spec
    path = spec.sample_path()
    if path is None:
        raise UsageError(f"task {task_id} ships no sample data")
    return path
