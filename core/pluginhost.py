"""Plugin discovery with per-plugin isolation.

Entry points in the group ``trainlab.plugins`` are loaded one by one, each in
its own try/except; every hook call is made on one plugin at a time, so a
plugin that raises is marked ``failed`` with its traceback and the others go
on.  (pluggy's own ``load_setuptools_entrypoints`` and hook calls stop at the
first error, so the host does the isolation.)

Order: the built-in plugins (distribution ``trainlab``) first, then the others
sorted by entry-point name; for a task id offered twice the first keeps it.
"""

from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import threading
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

import pluggy

from trainlab import hookspecs
from trainlab.api import PLUGIN_API_VERSION, SUPPORTED_OLDER_MAJORS, Preset, TaskSpec, UsageError
from trainlab.params import ENGINE_PARAMS

GROUP = "trainlab.plugins"
BUILTIN_DIST = "trainlab"
STATUSES = ("ok", "failed", "incompatible", "blocked", "disabled")


@dataclass
class PluginRecord:
    """What discovery learned about one plugin."""

    name: str  # the entry-point name
    value: str  # what the entry point points at
    distribution: str
    version: str
    builtin: bool
    status: str = "ok"
    message: str = ""
    traceback: str = ""
    warnings: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    api_version: str = ""
    module: Any = None

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
        }


@dataclass
class TaskEntry:
    spec: TaskSpec
    plugin: PluginRecord


def safe_mode() -> bool:
    return os.environ.get("TRAINLAB_DISABLE_PLUGINS", "").strip().lower() in {"1", "true", "yes", "on"}


def blocked_names() -> set[str]:
    """Blocked by the user: settings ``blocked_plugins`` plus TRAINLAB_BLOCK_PLUGINS."""
    from trainlab.paths import load_settings

    names = {str(n) for n in load_settings().get("blocked_plugins", []) if n}
    env = os.environ.get("TRAINLAB_BLOCK_PLUGINS", "")
    names.update(n.strip() for n in env.split(",") if n.strip())
    return names


def set_blocked(name: str, blocked: bool) -> None:
    from trainlab.paths import load_settings, save_settings

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
        for ep in unique:
            registry._load(ep, blocked)
        for record in registry.plugins:
            if record.status == "ok":
                registry._collect_tasks(record)
        for record in registry.plugins:
            if record.status == "ok":
                registry._collect_presets(record)
        return registry

    def _load(self, ep: md.EntryPoint, blocked: set[str]) -> None:
        dist, version = _dist_of(ep)
        self._load_plugin(ep.name, ep.value, dist, version, ep.load, blocked)

    def add_plugin(self, plugin: Any, name: str, version: str = "") -> PluginRecord:
        """Register a plugin object in this process (scripts, notebooks, benchmarks).

        It goes through the same checks and isolation as an entry point; its
        tasks are added unless an earlier plugin already has their ids.
        """
        record = self._load_plugin(name, repr(plugin), "", version, lambda: plugin, set())
        if record.status == "ok":
            self._collect_tasks(record)
        return record

    def _load_plugin(
        self, name: str, value: str, dist: str, version: str, load: Callable[[], Any], blocked: set[str]
    ) -> PluginRecord:
        record = PluginRecord(name=name, value=value, distribution=dist, version=version, builtin=dist.lower() == BUILTIN_DIST)
        self.plugins.append(record)
        if name in blocked:
            record.status, record.message = "blocked", "blocked by the user (trainlab plugins --unblock NAME)"
            return record
        if safe_mode() and not record.builtin:
            record.status, record.message = "disabled", "safe mode (TRAINLAB_DISABLE_PLUGINS=1): built-ins only"
            return record
        try:
            module = load()
        except BaseException as exc:  # noqa: BLE001 - a broken plugin must never be fatal
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._fail(record, f"could not be imported: {type(exc).__name__}: {exc}")
            return record
        record.module = module
        version_text = self._call(record, "trainlab_api_version", {})
        if record.status != "ok":
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
            record.status = "incompatible"
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

    def _fail(self, record: PluginRecord, message: str) -> None:
        record.status = "failed"
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
        if record.status != "ok" or specs is None:
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
        if rejected and not record.tasks:
            record.status, record.message = "failed", "; ".join(rejected)
            # keep it out of later hook calls
            self.pm.unregister(name=record.name)
        else:
            record.warnings.extend(rejected)

    def _collect_presets(self, record: PluginRecord) -> None:
        for task_id, entry in list(self.tasks.items()):
            presets = self._call(record, "trainlab_presets", {"task_id": task_id})
            if record.status != "ok":
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
            raise UsageError(f"unknown task {task_id!r} (available: {known}; see `trainlab plugins`)")
        return entry

    def run_callbacks(self, task_id: str, params: dict[str, Any]) -> list[Any]:
        callbacks: list[Any] = []
        for record in self.plugins:
            if record.status != "ok":
                continue
            result = self._call(record, "trainlab_run_callbacks", {"task_id": task_id, "params": dict(params)})
            if isinstance(result, Sequence):
                callbacks.extend(result)
        return callbacks

    def to_json(self) -> list[dict[str, Any]]:
        return [p.to_json() for p in self.plugins]


def load_factory(path: str) -> Any:
    """Import ``"module:attr"``; UsageError if that fails."""
    module_name, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception as exc:  # noqa: BLE001
        raise UsageError(f"cannot load task factory {path!r}: {type(exc).__name__}: {exc}") from exc
    return obj


_registry: PluginRegistry | None = None
_registry_lock = threading.Lock()


def registry(refresh: bool = False) -> PluginRegistry:
    """The process-wide registry, discovered on first use (thread-safe: the
    window discovers it in a background thread)."""
    global _registry
    with _registry_lock:
        if _registry is None or refresh:
            _registry = PluginRegistry.discover()
        return _registry
