"""What the window remembers between launches.

Stored in the shared ``settings.json`` (``trainlab.system.paths``, under
``TRAINLAB_HOME`` when set) in its own ``"desktop"`` section, so the CLI and
the plugin host (``blocked_plugins``) keep their keys.  Every read goes back to
the file and every write is a read-modify-write: two windows, or a window and
``trainlab plugins --block``, do not overwrite each other's keys.

Plain Python, no Qt: the tests drive it directly.
"""

from __future__ import annotations

from typing import Any

from trainlab.system.user_settings import load_settings, save_settings

SECTION = "desktop"
RUN_MODES = ("thread", "process")


class DesktopSettings:
    """Typed accessors over the ``desktop`` section of settings.json."""

    def _section(self) -> dict[str, Any]:
        section = load_settings().get(SECTION)
        return section if isinstance(section, dict) else {}

    def _update(self, **values: Any) -> None:
        settings = load_settings()
        section = settings.get(SECTION)
        if not isinstance(section, dict):
            section = {}
        section.update(values)
        settings[SECTION] = section
        try:
            save_settings(settings)
        except OSError:
            # A read-only config folder must not stop the window; the values
            # just are not remembered.
            pass

    def get(self, key: str, default: Any = None) -> Any:
        return self._section().get(key, default)

    def set(self, key: str, value: Any) -> None:
        self._update(**{key: value})

    # -- appearance --------------------------------------------------------
    @property
    def theme(self) -> str:
        value = self.get("theme", "system")
        return value if value in ("system", "light", "dark") else "system"

    @theme.setter
    def theme(self, value: str) -> None:
        self.set("theme", value)

    @property
    def language(self) -> str | None:
        """A language code (``en``, ``zh_CN``) or None to follow the system."""
        value = self.get("language")
        return value if isinstance(value, str) and value else None

    @language.setter
    def language(self, value: str | None) -> None:
        self.set("language", value or None)

    # -- runs --------------------------------------------------------------
    @property
    def run_mode(self) -> str:
        value = self.get("run_mode", "thread")
        return value if value in RUN_MODES else "thread"

    @run_mode.setter
    def run_mode(self, value: str) -> None:
        self.set("run_mode", value if value in RUN_MODES else "thread")

    @property
    def last_task(self) -> str | None:
        value = self.get("last_task")
        return value if isinstance(value, str) else None

    @last_task.setter
    def last_task(self, value: str | None) -> None:
        self.set("last_task", value)

    def task_params(self, task_id: str) -> dict[str, str]:
        """Parameter values remembered for ``task_id`` (as the user typed them)."""
        stored = self.get("params_by_task", {})
        values = stored.get(task_id, {}) if isinstance(stored, dict) else {}
        return {str(k): str(v) for k, v in values.items()} if isinstance(values, dict) else {}

    def set_task_params(self, task_id: str, values: dict[str, str]) -> None:
        stored = self.get("params_by_task", {})
        stored = dict(stored) if isinstance(stored, dict) else {}
        stored[task_id] = {str(k): str(v) for k, v in values.items()}
        self.set("params_by_task", stored)

    def task_data(self, task_id: str) -> str:
        stored = self.get("data_by_task", {})
        value = stored.get(task_id, "") if isinstance(stored, dict) else ""
        return value if isinstance(value, str) else ""

    def set_task_data(self, task_id: str, path: str) -> None:
        stored = self.get("data_by_task", {})
        stored = dict(stored) if isinstance(stored, dict) else {}
        stored[task_id] = path
        self.set("data_by_task", stored)

    # -- window --------------------------------------------------------------
    @property
    def geometry(self) -> str:
        value = self.get("geometry", "")
        return value if isinstance(value, str) else ""

    @geometry.setter
    def geometry(self, value: str) -> None:
        self.set("geometry", value)

    @property
    def window_state(self) -> str:
        value = self.get("window_state", "")
        return value if isinstance(value, str) else ""

    @window_state.setter
    def window_state(self, value: str) -> None:
        self.set("window_state", value)
