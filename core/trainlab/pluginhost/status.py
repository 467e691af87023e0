"""How loading a plugin went: one word per plugin, in ``trainlab plugins``,
``trainlab doctor`` and the Plugins dialog.  Apart from the host, so the
window can read it without loading the plugin machinery."""

from __future__ import annotations

from enum import StrEnum


class PluginStatus(StrEnum):
    OK = "ok"
    FAILED = "failed"
    INCOMPATIBLE = "incompatible"
    BLOCKED = "blocked"
    DISABLED = "disabled"


STATUSES = tuple(PluginStatus)
NOT_LOADED = frozenset({PluginStatus.FAILED, PluginStatus.INCOMPATIBLE})  # a problem to show, not a choice
