"""Named caches under TrainLab's cache folder, with one size cap over all of them.

A cache here is disposable derived data (deleting it costs only time), such
as the text tasks' token ids. Each named cache is a folder,
``paths.cache_dir()/data/NAME``, and each of its children (a file or a
folder) is one entry. Entries are evicted whole, least recently used first,
when the caches together pass the limit (the ``cache.limit_gb`` setting,
``DEFAULT_LIMIT_GB`` when unset). Kept apart from TrainLab's small state in
``paths.cache_dir()`` itself (checksum verdicts, the plugin probe) so that
listing, clearing and eviction touch only what can be rebuilt.

An entry's age is its own modification time: ``cache_entry_used`` sets it, so a
reader marks a hit and a writer marks what it just renamed into place.
Names starting with ``.`` are in-flight temporaries; eviction and listing
skip them and ``clear`` removes them too.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.system import paths, user_settings
from trainlab.system.fileio import format_bytes

DEFAULT_LIMIT_GB = 5.0
_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_GB = 1_000_000_000


def caches_root() -> Path:
    return paths.cache_dir() / "data"


def cache_dir(name: str) -> Path:
    """The folder of the named cache (created); every child of it is one entry the size cap may evict."""
    if not _NAME.fullmatch(name or ""):
        raise UsageError(f"cache name {name!r}: use lower-case letters, digits, '-', '_' or '.'")
    folder = caches_root() / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def limit_bytes() -> int:
    """The cap over all named caches, from settings.json (``{"cache": {"limit_gb": 5}}``)."""
    section = user_settings.load_settings().get("cache")
    value = section.get("limit_gb") if isinstance(section, dict) else None
    try:
        gb = float(value) if value is not None else DEFAULT_LIMIT_GB
    except (TypeError, ValueError):
        gb = DEFAULT_LIMIT_GB
    return max(0, int(gb * _GB))


def set_limit_gb(gb: float) -> None:
    if not gb >= 0:
        raise UsageError(f"cache limit {gb!r}: give a size in GB, 0 or more")
    settings = user_settings.load_settings()
    section = settings.get("cache") if isinstance(settings.get("cache"), dict) else {}
    settings["cache"] = {**section, "limit_gb": float(gb)}
    user_settings.save_settings(settings)


@dataclass(frozen=True)
class CacheEntry:
    cache: str
    name: str
    path: str
    bytes: int
    used: float  # unix seconds of the last use


@dataclass
class CacheReport:
    root: str
    limit_bytes: int
    entries: list[CacheEntry] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return sum(entry.bytes for entry in self.entries)

    def by_cache(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for entry in self.entries:
            row = out.setdefault(entry.cache, {"entries": 0, "bytes": 0})
            row["entries"] += 1
            row["bytes"] += entry.bytes
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "limit_bytes": self.limit_bytes,
            "total_bytes": self.total_bytes,
            "caches": self.by_cache(),
            "entries": [entry.__dict__ for entry in self.entries],
        }


def _size(path: Path) -> int:
    try:
        if not path.is_dir() or path.is_symlink():
            return path.lstat().st_size
    except OSError:
        return 0
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
    return total


def _entries() -> list[tuple[Path, CacheEntry]]:
    root = caches_root()
    found: list[tuple[Path, CacheEntry]] = []
    if not root.is_dir():
        return found
    for cache in sorted(root.iterdir()):
        if not cache.is_dir():
            continue
        for child in sorted(cache.iterdir()):
            if child.name.startswith("."):
                continue
            try:
                used = child.stat().st_mtime
            except OSError:
                continue  # evicted by another process meanwhile
            found.append((child, CacheEntry(cache.name, child.name, str(child), _size(child), used)))
    return found


def report() -> CacheReport:
    return CacheReport(root=str(caches_root()), limit_bytes=limit_bytes(), entries=[entry for _, entry in _entries()])


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clear(name: str | None = None) -> int:
    """Removes every entry (of the named cache only, when given) and in-flight temporaries; returns the bytes freed."""
    root = caches_root()
    targets = [root / name] if name else (sorted(root.iterdir()) if root.is_dir() else [])
    freed = 0
    for cache in targets:
        if not cache.is_dir():
            continue
        for child in list(cache.iterdir()):
            freed += _size(child)
            _remove(child)
    return freed


def cache_entry_used(path: Path) -> list[str]:
    """Marks an entry as used now, then evicts the least recently used others while the caches pass the limit.

    Returns the paths evicted. The entry itself is kept even when it alone
    is over the limit (the run that uses it needs it), unless the limit is 0,
    which turns the caches off: then it goes too, and the next run rebuilds.
    """
    path = Path(path)
    now = time.time()
    try:
        os.utime(path, (now, now))
    except OSError:
        pass
    return trim(keep=path if limit_bytes() > 0 else None)


def trim(keep: Path | None = None) -> list[str]:
    """Evicts least recently used entries until the caches fit the limit."""
    cap = limit_bytes()
    entries = _entries()
    total = sum(entry.bytes for _, entry in entries)
    evicted: list[str] = []
    keep_resolved = Path(keep).resolve() if keep is not None else None
    for path, entry in sorted(entries, key=lambda item: item[1].used):
        if total <= cap:
            break
        if keep_resolved is not None and path.resolve() == keep_resolved:
            continue
        _remove(path)
        total -= entry.bytes
        evicted.append(entry.path)
    return evicted


def run_command(action: str, limit_gb: float | None) -> tuple[list[str], dict[str, Any]]:
    """``trainlab cache [list|clear] [--limit-gb GB]``: its lines for people and its JSON object."""
    if limit_gb is not None:
        set_limit_gb(limit_gb)
    freed = clear() if action == "clear" else None
    evicted = trim() if limit_gb is not None else []
    state = report()
    return describe(state, freed=freed, evicted=len(evicted)), {**state.to_json(), "cleared_bytes": freed, "evicted": evicted}


def describe(state: CacheReport, freed: int | None = None, evicted: int = 0) -> list[str]:
    """``trainlab cache``'s lines for people."""
    lines = []
    if freed is not None:
        lines.append(f"cleared {format_bytes(freed)}")
    if evicted:
        lines.append(f"evicted {evicted} entries to fit the new limit")
    for name, row in sorted(state.by_cache().items()):
        lines.append(f"{name:<16} {row['entries']:>5} entries  {format_bytes(row['bytes']):>10}")
    lines.append(f"total {format_bytes(state.total_bytes)} of a {format_bytes(state.limit_bytes)} limit, in {state.root}")
    return lines
