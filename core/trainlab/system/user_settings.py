"""TrainLab's one settings file (``settings.json`` in the user config folder): read whole, replaced atomically.

Each part of TrainLab keeps its own section (the window's ``desktop``, the
caches' ``cache``, the blocked plugins), so that a window and a command line
writing at once do not overwrite each other's keys.
"""

from __future__ import annotations

import json
from typing import Any

from trainlab.system.paths import settings_path


def load_settings() -> dict[str, Any]:
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_settings(settings: dict[str, Any]) -> None:
    from trainlab.system.fileio import atomic_write_text

    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(settings, indent=2, ensure_ascii=False))
