"""The plugin under test: found by its entry-point name or by its folder, and a host holding it alone.

A NAME is the entry-point name, as ``trainlab plugins --block`` takes it.
A PATH is a plugin's project folder (its ``pyproject.toml`` names the entry
points; the folder, or its ``src/``, goes on the path for an uninstalled
one) or a single module file.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from trainlab.api.errors import UsageError
from trainlab.pluginhost.host import PluginRegistry

GROUP = "trainlab.plugins"


@dataclass(frozen=True)
class PluginTarget:
    """One plugin entry point to check."""

    name: str
    value: str  # "module" or "module:attr"
    distribution: str = ""
    version: str = ""
    extra_path: tuple[str, ...] = ()  # folders to put on sys.path (a plugin not installed)
    entry_point: Any = field(default=None, compare=False, repr=False)

    @property
    def module(self) -> str:
        return self.value.partition(":")[0]

    def make_entry_point(self) -> md.EntryPoint:
        if self.entry_point is not None:
            return self.entry_point
        return md.EntryPoint(self.name, self.value, GROUP)

    def on_path(self) -> None:
        """Make an uninstalled plugin importable in this process."""
        for folder in reversed(self.extra_path):
            if folder not in sys.path:
                sys.path.insert(0, folder)


def installed(name: str) -> PluginTarget | None:
    for ep in md.entry_points(group=GROUP):
        if ep.name == name:
            dist = getattr(ep, "dist", None)
            return PluginTarget(
                ep.name,
                ep.value,
                (dist.metadata["Name"] or "") if dist else "",
                (dist.version or "") if dist else "",
                entry_point=ep,
            )
    return None


def find_targets(name_or_path: str) -> list[PluginTarget]:
    """The entry points NAME or PATH stands for; UsageError naming what is not there."""
    target = installed(name_or_path)
    if target is not None:
        return [target]
    path = Path(name_or_path)
    if path.is_file() and path.suffix == ".py":
        return [PluginTarget(path.stem, path.stem, extra_path=(str(path.resolve().parent),))]
    if path.is_dir():
        return _from_project(path)
    names = sorted({ep.name for ep in md.entry_points(group=GROUP)})
    raise UsageError(
        f"{name_or_path}: no installed plugin of that entry-point name and no such folder or file "
        f"(installed: {', '.join(names) or 'none'})"
    )


def _from_project(folder: Path) -> list[PluginTarget]:
    import tomllib

    pyproject = folder / "pyproject.toml"
    if not pyproject.is_file():
        raise UsageError(f"{folder}: no pyproject.toml (a plugin's project folder names its entry points there)")
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{pyproject}: {exc}") from None
    eps = project.get("entry-points", {}).get(GROUP, {})
    if not eps:
        raise UsageError(f'{pyproject}: no [project.entry-points."{GROUP}"] table, so TrainLab would never find this plugin')
    dist, version = str(project.get("name", "")), str(project.get("version", ""))
    targets = []
    for name, value in sorted(eps.items()):
        known = installed(name)
        if known is not None and known.value == value:
            targets.append(known)  # installed: check what TrainLab really loads
        else:
            roots = [str(p.resolve()) for p in (folder / "src", folder) if p.is_dir()]
            targets.append(PluginTarget(name, value, dist, version, extra_path=tuple(roots[:1])))
    return targets


def host_for(target: PluginTarget):
    """A plugin registry that holds only this plugin, discovered as TrainLab discovers plugins."""
    target.on_path()
    return PluginRegistry.discover(entry_points=[target.make_entry_point()])


def record_of(registry, target: PluginTarget):
    for record in registry.plugins:
        if record.name == target.name:
            return record
    raise LookupError(target.name)


@contextmanager
def kit_environment(home: Path) -> Iterator[None]:
    """TrainLab's home is ``home`` while it lasts (and torch's compile cache is under its cache)."""
    # torch.export keeps a compile cache in the temporary folder unless told
    # otherwise: here it goes under TrainLab's cache, like every other cache.
    env = {
        "TRAINLAB_HOME": str(home),
        "TRAINLAB_SHARED_CACHE": str(Path(home) / "cache"),  # the shared plugin verdicts too
        "TORCHINDUCTOR_CACHE_DIR": str(Path(home) / "cache" / "torchinductor"),
    }
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
