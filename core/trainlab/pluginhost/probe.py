"""Trying a new or changed plugin in a separate process before importing it here.

A plugin's entry-point module runs arbitrary code at import: one that sleeps
forever would hang every command and the window, one that calls
``os._exit`` or crashes the interpreter would take the process down with no
word.  No in-process guard helps with the last two, and a time limit on an
import in a thread leaves that thread holding the module's import lock
(anything importing the module later waits forever) and, for a C extension
that never releases the GIL, freezes the process anyway.  So:

* The first time TrainLab sees a plugin (or a changed one), it loads it in a
  child process (``python -m trainlab.pluginhost.probe``: import the entry point,
  call its discovery hooks) with a time limit, ``TRAINLAB_PLUGIN_IMPORT_TIMEOUT``
  seconds (default 20).  New plugins are tried in parallel.
* A plugin whose child did not come back in time, exited, or crashed is
  reported ``failed`` with what happened and is never imported in this
  process; one whose child came back is imported here as before (a plain
  Python error at import then fails it here, with its traceback).
* The verdict is kept in ``plugin-probes.json`` in TrainLab's cache folder
  (under ``TRAINLAB_HOME`` when set) and in the user's cache folder, which
  every home reads after its own (``TRAINLAB_SHARED_CACHE`` moves it), so a
  plugin that hangs costs its limit once per user, not once per new home.
  It is keyed by entry-point name and value,
  distribution name and version, and the size and modification time of the
  entry-point module and of its packages' ``__init__`` files (found without
  importing them) and of the distribution's metadata folder.  A start-up
  whose plugins are all known pays a JSON read and a few ``stat`` calls; a
  changed or upgraded plugin is tried again; deleting both files forgets
  every verdict.

Built-in plugins are part of TrainLab and are never tried this way; nor are
blocked plugins, plugins in safe mode, or plugin objects added in-process.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from trainlab.system import paths
from trainlab.system.fileio import atomic_write_json

TIMEOUT_ENV = "TRAINLAB_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_TIMEOUT_S = 20.0
CACHE_NAME = "plugin-probes.json"
MARKER = "TRAINLAB-PROBE "
MAX_PARALLEL = 4


def timeout_s() -> float:
    try:
        value = float(os.environ.get(TIMEOUT_ENV, "") or DEFAULT_TIMEOUT_S)
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


def locate_module(name: str) -> Any:
    """The ``ModuleSpec`` of module ``name`` without importing it or its packages; None if absent.

    ``importlib.util.find_spec("a.b")`` imports ``a`` first (running its
    ``__init__``); this looks ``a.b`` up in ``a``'s folders instead, unless
    ``a`` is imported already.
    """
    parts = name.split(".")
    spec = None
    for depth in range(1, len(parts) + 1):
        full = ".".join(parts[:depth])
        module = sys.modules.get(full)
        if module is not None:
            spec = getattr(module, "__spec__", None)
            if spec is None and depth == len(parts):
                return importlib.machinery.ModuleSpec(full, None)  # __main__ and the like: present
        elif depth == 1:
            try:
                spec = importlib.util.find_spec(full)  # top level: asks the finders, imports nothing
            except (ImportError, ValueError):
                return None
        else:
            locations = getattr(spec, "submodule_search_locations", None)
            if not locations:
                return None
            spec = importlib.machinery.PathFinder.find_spec(full, list(locations))
        if spec is None:
            return None
    return spec


def _stat(path: str | None) -> list[Any] | None:
    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [path, st.st_mtime_ns, st.st_size]


def fingerprint(value: str, dist_path: str | None) -> list[Any]:
    """What identifies the code an entry point would run, found without importing it."""
    module = value.partition(":")[0].strip()
    parts = module.split(".")
    files: list[Any] = []
    for depth in range(1, len(parts) + 1):
        spec = locate_module(".".join(parts[:depth]))
        if spec is None:
            files.append([".".join(parts[:depth]), None])
            break
        files.append(_stat(getattr(spec, "origin", None)) or [spec.name, "no file"])
    files.append(_stat(dist_path))
    return files


@dataclass
class Verdict:
    """How loading a plugin in a child process went."""

    result: str  # loaded, hung, exited, crashed; unchecked when no child could be started
    message: str = ""  # for a failure: what the user reads
    detail: str = ""  # the child's last stderr lines
    checked: float = 0.0
    cached: bool = False

    @property
    def failed(self) -> bool:
        return self.result not in ("loaded", "unchecked")

    def to_json(self) -> dict[str, Any]:
        return {"result": self.result, "checked": self.checked, "cached": self.cached}


@dataclass
class Candidate:
    """An entry point to load: enough to try it in a child process and to key its verdict."""

    name: str
    value: str
    group: str
    distribution: str
    version: str
    dist_path: str | None = None

    @property
    def key(self) -> str:
        return f"{self.name}={self.value} [{self.distribution} {self.version}]"


def cache_path() -> Path:
    return paths.cache_dir() / CACHE_NAME


def shared_cache_path() -> Path:
    """The verdicts every TrainLab home of this user reads: a plugin that hangs at
    import costs its time limit once, not once per new ``TRAINLAB_HOME``."""
    return paths.shared_cache_dir() / CACHE_NAME


def _cache_paths() -> list[Path]:
    """Where verdicts are read (the home's first) and written."""
    own, shared = cache_path(), shared_cache_path()
    return [own] if _same_file(own, shared) else [own, shared]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.abspath(a) == os.path.abspath(b) or os.path.samefile(a, b)
    except OSError:
        return False


def _read_cache(path: Path | None = None) -> dict[str, Any]:
    try:
        data = json.loads((path or cache_path()).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(entries: dict[str, Any]) -> None:
    for path in _cache_paths():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            current = _read_cache(path)  # another process may have added its own since
            current.update(entries)
            atomic_write_json(path, current)
        except OSError:
            pass  # a read-only folder: the plugin is tried again next time, nothing worse


class _KnownVerdicts:
    """The home's verdicts, then the shared ones; each file read only when a plugin is not in the one before."""

    def __init__(self) -> None:
        self._paths = _cache_paths()
        self._read: list[dict[str, Any]] = []

    def find(self, key: str, prints: list[Any]) -> dict[str, Any] | None:
        for index, path in enumerate(self._paths):
            if index == len(self._read):
                self._read.append(_read_cache(path))
            entry = self._read[index].get(key)
            if isinstance(entry, dict) and entry.get("fingerprint") == prints:
                return entry
        return None


def check(candidates: Iterable[Candidate]) -> dict[str, Verdict]:
    """The verdict for each candidate (by ``key``): from the cache, or by trying it now."""
    candidates = list(candidates)
    if not candidates or getattr(sys, "frozen", False):  # a frozen app has no python to run the child with
        return {}
    known = _KnownVerdicts()
    verdicts: dict[str, Verdict] = {}
    todo: list[tuple[Candidate, list[Any]]] = []
    for candidate in candidates:
        prints = fingerprint(candidate.value, candidate.dist_path)
        entry = known.find(candidate.key, prints)
        if entry is not None:
            verdicts[candidate.key] = Verdict(
                entry.get("result", "loaded"), entry.get("message", ""), entry.get("detail", ""), entry.get("checked", 0.0), cached=True
            )
        else:
            todo.append((candidate, prints))
    if todo:
        limit = timeout_s()
        if len(todo) == 1:
            found = [probe(todo[0][0], limit)]
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=min(MAX_PARALLEL, len(todo)), thread_name_prefix="trainlab-probe") as pool:
                found = list(pool.map(lambda item: probe(item[0], limit), todo))
        entries = {}
        for (candidate, prints), verdict in zip(todo, found):
            verdicts[candidate.key] = verdict
            if verdict.result == "unchecked":
                continue  # tried again next time
            entries[candidate.key] = {
                "fingerprint": prints,
                "result": verdict.result,
                "message": verdict.message,
                "detail": verdict.detail,
                "checked": verdict.checked,
            }
        if entries:
            _write_cache(entries)
    return verdicts


def probe(candidate: Candidate, limit: float) -> Verdict:
    """Load ``candidate`` in a child process, within ``limit`` seconds."""
    request = {
        "sys_path": [p for p in sys.path],
        "name": candidate.name,
        "value": candidate.value,
        "group": candidate.group,
        "distribution": candidate.distribution,
        "version": candidate.version,
        "deadline": time.time() + limit,
    }
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    why = "TrainLab loads a new or changed plugin in a separate process first"
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.time()
        try:
            proc = subprocess.Popen(
                [sys.executable, "-X", "faulthandler", "-m", "trainlab.pluginhost.probe_child"],
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                env=env,
            )
        except OSError as exc:  # no interpreter to start: load it in-process, as before there were probes
            return Verdict("unchecked", "", f"could not start a process to try it in: {exc}", started)
        try:
            assert proc.stdin is not None
            proc.stdin.write((json.dumps(request) + "\n").encode("utf-8"))
            proc.stdin.close()
        except OSError:
            pass  # it is gone already: its exit code says how
        try:
            code = proc.wait(limit)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        out.seek(0)
        err.seek(0)
        output = out.read().decode("utf-8", "replace")
        detail = "\n".join(err.read().decode("utf-8", "replace").strip().splitlines()[-20:])
    if any(line.startswith(MARKER) for line in output.splitlines()):
        return Verdict("loaded", "", "", started)
    if code is None:
        return Verdict(
            "hung",
            f"could not be loaded: loading it did not finish within {limit:g} s ({why}), so it was not imported; "
            f"fix or remove it, or raise the limit with {TIMEOUT_ENV}",
            detail,
            started,
        )
    if code < 0:
        try:
            how = f"it crashed ({signal.Signals(-code).name})"
        except ValueError:
            how = f"it was killed by signal {-code}"
        return Verdict("crashed", f"could not be loaded: {how} while loading ({why}), so it was not imported", detail, started)
    return Verdict(
        "exited",
        f"could not be loaded: it ended the process with exit code {code} while loading ({why}), so it was not imported",
        detail,
        started,
    )
