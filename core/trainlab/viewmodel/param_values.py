"""A task's parameter values as the window edits them, and where each one comes from.

The levels, lowest first, are the contract's ("Parameters" in CONTRACT.md):
``engine`` (the engine's defaults), ``task`` (the task's defaults),
``preset`` (the chosen model preset's overrides), ``remembered`` (what the
window kept from last time) and ``explicit`` (the user's edits, and
``trainlab gui --set``).  ``ParamValues`` holds the two upper levels; the
values are what ``trainlab.api.params.resolve`` makes of them, the one place
where levels combine and presets apply.  So what the form shows is what
``RunRequest(params=values.explicit(), remembered=values.remembered())``
trains with.

Choosing a model preset is itself an edit: it drops the remembered and
explicit values of the parameters that preset sets, so the preset's values
show (as ``--set model=X`` given before the other ``--set`` values).

A value that is not valid for its parameter (typed text such as ``1e``) is
kept as typed, at its level, and named by ``invalid()``; ``resolved()``
raises ``UsageError`` while there is one.  Values are written as text by
``format_value`` (``trainlab.api.assignments``), exactly as ``--set`` takes
them.  No Qt: the tests drive it directly.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from trainlab.api.assignments import format_value
from trainlab.api.descriptors import Param, TaskSpec
from trainlab.api.errors import UsageError
from trainlab.api.params import ENGINE_PARAMS, full_schema, preset_for, resolve

ENGINE, TASK, PRESET, REMEMBERED, EXPLICIT = "engine", "task", "preset", "remembered", "explicit"
LEVELS = (ENGINE, TASK, PRESET, REMEMBERED, EXPLICIT)


class ParamValues:
    """The parameters of one task, each with its value and its level."""

    def __init__(self, spec: TaskSpec, engine_params: Sequence[Param] = ENGINE_PARAMS) -> None:
        self.spec = spec
        self.engine_params = tuple(engine_params)
        self.schema: dict[str, Param] = full_schema(spec, self.engine_params)
        self._set: dict[str, dict[str, Any]] = {REMEMBERED: {}, EXPLICIT: {}}
        self._invalid: dict[str, tuple[str, str]] = {}  # name -> (level, the text as given)
        self._values: dict[str, Any] = resolve(spec, self.engine_params, {}, {})

    # -- reading -----------------------------------------------------------------
    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.schema)

    def __contains__(self, name: object) -> bool:
        return name in self.schema

    def value(self, name: str) -> Any:
        """The typed value (the text as given, while it is not valid)."""
        if name in self._invalid:
            return self._invalid[name][1]
        return self._values[name]

    def text(self, name: str) -> str:
        return self._invalid[name][1] if name in self._invalid else format_value(self._values[name])

    def texts(self) -> dict[str, str]:
        return {name: self.text(name) for name in self.schema}

    def level(self, name: str) -> str:
        """Where the value comes from: one of ``LEVELS``."""
        if name in self._invalid:
            return self._invalid[name][0]
        for level in (EXPLICIT, REMEMBERED):
            if name in self._set[level]:
                return level
        preset = preset_for(self.spec, self._values.get("model"))
        if preset is not None and name in preset.overrides and name != "model":
            return PRESET
        own = any(param.name == name for param in self.spec.params)
        return TASK if own or name in self.spec.defaults else ENGINE

    def invalid(self) -> dict[str, str]:
        """Values that are not valid for their parameter, as given."""
        return {name: text for name, (_, text) in self._invalid.items()}

    def explicit(self) -> dict[str, Any]:
        """The ``explicit`` level (valid values, typed): ``RunRequest.params``."""
        return dict(self._set[EXPLICIT])

    def remembered(self) -> dict[str, Any]:
        """The ``remembered`` level (valid values, typed): ``RunRequest.remembered``."""
        return dict(self._set[REMEMBERED])

    def resolved(self) -> dict[str, Any]:
        """Every value, typed, as a run resolves them; UsageError naming an invalid one."""
        if self._invalid:
            name, (_, text) = next(iter(self._invalid.items()))
            try:
                self.schema[name].coerce(text)
            except ValueError as exc:
                raise UsageError(f"bad value for parameter {exc}") from None
        return dict(self._values)

    def defaults(self, model: Any = None) -> dict[str, Any]:
        """The values below ``remembered``: defaults, with the preset of ``model`` applied."""
        explicit = {"model": model} if model is not None and "model" in self.schema else {}
        try:
            return resolve(self.spec, self.engine_params, {}, explicit)
        except UsageError:
            return resolve(self.spec, self.engine_params, {}, {})

    def to_remember(self) -> dict[str, str]:
        """What the window keeps for this task: values that differ from what the
        levels below ``remembered`` give (a later plugin's better default is
        then not masked by a value nobody chose).  As text, as settings store it."""
        base = self.defaults(self._values.get("model"))
        plain_model = self.defaults().get("model")
        out = {}
        for name in self.schema:
            if name in self._invalid:
                out[name] = self._invalid[name][1]
                continue
            reference = plain_model if name == "model" else base.get(name)
            if self._values[name] != reference:
                out[name] = format_value(self._values[name])
        return out

    # -- editing -------------------------------------------------------------------
    def set(self, name: str, value: Any, level: str = EXPLICIT) -> set[str]:
        """Set ``name`` at ``level``; returns the names whose shown value changed.

        KeyError for a name this task does not have.
        """
        if level not in (REMEMBERED, EXPLICIT):
            raise ValueError(f"values are set at the remembered or explicit level, not {level!r}")
        param = self.schema[name]
        before = self.texts()
        self._invalid.pop(name, None)
        self._set[level].pop(name, None)
        try:
            typed = param.coerce(value)
        except ValueError:
            self._invalid[name] = (level, value if isinstance(value, str) else format_value(value))
        else:
            self._set[level][name] = typed
            if name == "model":
                self._choose_preset(typed)
        self._values = resolve(self.spec, self.engine_params, self._set[REMEMBERED], self._set[EXPLICIT])
        after = self.texts()
        return {n for n in after if after[n] != before[n]}

    def _choose_preset(self, model: Any) -> None:
        preset = preset_for(self.spec, model)
        if preset is None:
            return
        for name in preset.overrides:
            if name == "model":
                continue
            self._invalid.pop(name, None)
            for held in self._set.values():
                held.pop(name, None)

    def update(self, values: Mapping[str, Any], level: str = EXPLICIT) -> tuple[set[str], list[str]]:
        """Set several values (``model`` first, so its preset comes before the
        others); returns (names whose shown value changed, names this task does not have)."""
        unknown = [name for name in values if name not in self.schema]
        changed: set[str] = set()
        for name in sorted((k for k in values if k in self.schema), key=lambda k: k != "model"):
            changed |= self.set(name, values[name], level)
        return changed, unknown

    def reset(self) -> set[str]:
        """Back to the defaults (task defaults and the default model's preset)."""
        before = self.texts()
        self._set = {REMEMBERED: {}, EXPLICIT: {}}
        self._invalid.clear()
        self._values = resolve(self.spec, self.engine_params, {}, {})
        after = self.texts()
        return {n for n in after if after[n] != before[n]}
