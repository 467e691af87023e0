"""Failures in plugin code, attributed to their plugin and the method that raised.

The engine calls into a task plugin at a handful of places (the factory,
``prepare``, ``build_model``, the steps, the datasets and collate function
behind the DataLoaders, the metric accumulator, ``save_model``, the
predictor...).  When one of those raises, the user must learn whose code it
was and where: ``PluginCalls`` is the one mechanism that says so.

* ``with calls.call("prepare"): task.prepare(...)`` marks a region that *is*
  a call into the plugin: whatever it raises is the plugin's, in that method.
* ``calls.attribute(exc)`` (and ``with calls.around():``) is for a region of
  engine code that calls into the plugin, the training loop above all: it is
  applied once, where the loop's failure is caught, never per step, and it
  finds the method from the traceback (the outermost frame that runs the
  task's own code: a method of the task instance, or a function of the
  plugin's modules or of the family base classes they build on).  A failure
  with no plugin frame in its traceback is the engine's and is left as it is.

What the user then sees:

* any exception but a ``UsageError`` becomes ``PluginCallError`` (a
  ``RunFailed``: exit 1) reading ``plugin 'toy' (task toy-classification)
  failed in build_model: ValueError: ...``, chained to the original, whose
  traceback goes to the log (console only with ``-v``) and run.json;
* a ``UsageError`` or ``DataError`` the plugin raised is its own verdict on
  the input (exit 2): it keeps its type and message, and a third-party
  plugin's gets `` (plugin 'toy', in prepare)`` appended, so the user knows
  whose check said it;
* a full disk or quota, or a file-size limit (ENOSPC, EDQUOT, EFBIG, or a
  native writer's error saying so) is never the plugin's: it passes through
  unattributed, and the engine says which disk or file;
* either way ``failure_of(exc)`` gives the ``PluginFailure`` (plugin, task,
  method, exception), which run.json, the Finished event, ``RunOutcome`` and
  ``--json`` carry as ``failure``.

Nothing here imports torch.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import Any, Iterator

from trainlab.api.errors import RunFailed, UsageError
from trainlab.api.taskbase import Task
from trainlab.pluginhost.host import discovered
from trainlab.system.fileio import is_out_of_room

log = logging.getLogger("trainlab.plugins")

# Code that runs on behalf of a task although TrainLab ships it: the family
# base classes (their steps, accumulators and datasets) a plugin builds on.
FAMILY_CODE = "trainlab.api.families"
# How a child process (trainlab.engine.child_main) hands a failure to its parent, on stderr
FAILURE_PREFIX = "trainlab: failure: "


@dataclass(frozen=True)
class PluginFailure:
    """Which plugin's code failed, in which method, with what."""

    plugin: str
    task: str
    method: str
    exception: str  # "ValueError: bad shape", one line

    def to_json(self) -> dict[str, str]:
        return {"plugin": self.plugin, "task": self.task, "method": self.method, "exception": self.exception}

    def describe(self) -> str:
        task = f" (task {self.task})" if self.task else ""
        who = f"plugin {self.plugin!r}" if self.plugin else "the task's code"  # a task made outside the registry
        return f"{who}{task} failed in {self.method}: {self.exception}"


class PluginCallError(RunFailed):
    """Plugin code raised: exit 1, with a message naming the plugin and the method."""

    def __init__(self, failure: PluginFailure):
        super().__init__(failure.describe())
        self.plugin_failure = failure


def failure_of(exc: BaseException | None) -> PluginFailure | None:
    """The attribution of an exception raised by plugin code, if it has one."""
    failure = getattr(exc, "plugin_failure", None)
    return failure if isinstance(failure, PluginFailure) else None


def failure_fields(exc: BaseException | None) -> dict[str, Any]:
    """What a ``--json`` error object adds for a plugin's failure: plugin, method, task, failure."""
    failure = failure_of(exc)
    if failure is None:
        return {}
    return {"plugin": failure.plugin, "method": failure.method, "task": failure.task, "failure": failure.to_json()}


def attributed(calls: "PluginCalls", exc: BaseException) -> tuple[BaseException, dict[str, str] | None]:
    """``(exc attributed, its failure as JSON or None)``: what the executor records of a failure."""
    exc = calls.attribute(exc)
    failure = failure_of(exc)
    return exc, failure.to_json() if failure is not None else None


def one_line(exc: BaseException) -> str:
    """``Type: message`` on one line (a DataLoader worker's re-raised error: its last line)."""
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if len(lines) > 1 and lines[0].startswith("Caught ") and "Original Traceback" in text:
        return lines[-1]  # torch: "Caught X in DataLoader worker process 0." ... "X: message"
    message = lines[0] if lines else ""
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def package_of(module: str) -> str:
    """The package a plugin's module belongs to: its top-level package, or for
    TrainLab's built-in plugins their own folder (``trainlab_plugins.image``)."""
    parts = module.split(".")
    if parts[0] == "trainlab":
        return ".".join(parts[:3])
    return parts[0]


class PluginCalls:
    """Calls into one plugin's code for one task (and, once made, its instance)."""

    def __init__(self, plugin: str, task_id: str, *, builtin: bool = False, packages: tuple[str, ...] = (), task: Any = None):
        self.plugin = plugin
        self.task_id = task_id
        self.builtin = builtin
        self.packages = tuple(p for p in packages if p and p != "trainlab")
        self.task = task

    @classmethod
    def of(cls, entry: Any, task: Any = None) -> "PluginCalls":
        """For a registry ``TaskEntry`` (``pluginhost.TaskEntry``)."""
        record = entry.plugin
        packages = {package_of(entry.spec.factory.partition(":")[0])}
        module = getattr(record, "module", None)
        if module is not None:
            packages.add(package_of(getattr(module, "__name__", None) or type(module).__module__))
        return cls(record.name, entry.spec.id, builtin=record.builtin, packages=tuple(sorted(packages)), task=task)

    @classmethod
    def for_task(cls, task_id: str, task: Any = None) -> "PluginCalls":
        """For task ``task_id`` of the registry as discovered (never discovering
        here: whoever holds a task id found it there already)."""
        found = discovered()
        entry = found.tasks.get(task_id) if found is not None else None
        if entry is not None:
            return cls.of(entry, task)
        module = type(task).__module__ if task is not None else ""
        return cls("", task_id, packages=(package_of(module),) if module else (), task=task)

    # -- regions -----------------------------------------------------------------
    @contextlib.contextmanager
    def call(self, method: str) -> Iterator[None]:
        """A region that is one call into the plugin: what it raises is ``method``'s."""
        try:
            yield
        except (KeyboardInterrupt, GeneratorExit):
            raise
        except BaseException as exc:  # noqa: BLE001 - SystemExit from plugin code is the plugin's too
            attributed = self.attribute(exc, method=method)
            if attributed is exc:
                raise
            raise attributed from exc

    @contextlib.contextmanager
    def around(self) -> Iterator[None]:
        """Engine code that calls into the plugin: attribute what the plugin's frames raised."""
        try:
            yield
        except Exception as exc:
            attributed = self.attribute(exc)
            if attributed is exc:
                raise
            raise attributed from exc

    def bad_result(self, method: str, value: Any, expected: str) -> PluginCallError:
        """The error for a plugin method that returned the wrong kind of value."""
        return self._failed(method, f"returned {type(value).__name__}, expected {expected}", None)

    # -- attribution ------------------------------------------------------------
    def attribute(self, exc: BaseException, method: str | None = None) -> BaseException:
        """``exc`` attributed to this plugin, or ``exc`` itself when it is not the plugin's.

        With ``method`` the failure is that method's; without, the traceback
        must show the plugin's code, which names the method.  A UsageError
        comes back as itself, annotated; anything else as a PluginCallError.
        """
        if failure_of(exc) is not None or isinstance(exc, (KeyboardInterrupt, GeneratorExit)):
            return exc
        if is_out_of_room(exc):  # a full disk or a file-size limit is the storage's, whoever's code wrote
            return exc
        if method is None:
            if isinstance(exc, SystemExit):
                return exc
            method = self._method_in(exc)
            if method is None or (isinstance(exc, RunFailed) and self._raised_by_trainlab(exc)):
                return exc  # the engine's own failure (or verdict) where it called the plugin
        if isinstance(exc, UsageError):
            exc.plugin_failure = PluginFailure(self.plugin, self.task_id, method, one_line(exc))  # type: ignore[attr-defined]
            if not self.builtin and self.plugin:  # a built-in's checks are TrainLab's own
                exc.args = (f"{exc} (plugin {self.plugin!r}, in {method})",)
            log.debug("plugin %r rejected the input in %s: %s", self.plugin, method, exc)
            return exc
        return self._failed(method, one_line(exc), exc)

    def _failed(self, method: str, what: str, exc: BaseException | None) -> PluginCallError:
        failure = PluginFailure(self.plugin, self.task_id, method, what)
        if exc is not None:
            log.debug("%s", failure.describe(), exc_info=(type(exc), exc, exc.__traceback__))
        return PluginCallError(failure)

    def _is_plugin_module(self, module: str) -> bool:
        if module == FAMILY_CODE or module.startswith(FAMILY_CODE + "."):
            return True
        return any(module == p or module.startswith(p + ".") for p in self.packages)

    def _method_in(self, exc: BaseException) -> str | None:
        """The method of the outermost plugin frame in ``exc``'s traceback."""
        tb = exc.__traceback__
        loader_frames = False
        while tb is not None:
            frame = tb.tb_frame
            code = frame.f_code
            if code.co_argcount and code.co_varnames[0] == "self":
                owner = frame.f_locals.get("self")
                if owner is not None and (owner is self.task or (self.task is None and _is_task(owner))):
                    return code.co_name
            module = frame.f_globals.get("__name__", "")
            if self._is_plugin_module(module):
                return code.co_qualname
            loader_frames = loader_frames or module.startswith("torch.utils.data")
            tb = tb.tb_next
        if loader_frames and str(exc).startswith("Caught "):
            # re-raised from a DataLoader worker process: its frames are not here
            return "dataset/collate (in a DataLoader worker)"
        return None

    def _raised_by_trainlab(self, exc: BaseException) -> bool:
        tb = exc.__traceback__
        if tb is None:
            return False
        while tb.tb_next is not None:
            tb = tb.tb_next
        module = tb.tb_frame.f_globals.get("__name__", "")
        return (module == "trainlab" or module.startswith("trainlab.")) and not self._is_plugin_module(module)


def _is_task(obj: Any) -> bool:
    return isinstance(obj, Task)


def plugin_calls(task: Any) -> PluginCalls:
    """The ``PluginCalls`` of a task instance (found in the registry by its spec's id)."""
    return PluginCalls.for_task(getattr(getattr(task, "spec", None), "id", "") or "", task)
