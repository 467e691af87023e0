"""The parameter form, generated from a task's schema.

One row per parameter of ``trainlab.api.params.full_schema`` (the engine's and the
task's own) that the task uses (``TaskSpec.uses_param``: no class weighting for
a family without classes): a line edit for numbers and text (so a bad value can be typed,
seen and fixed rather than silently clamped), a check box for booleans, a
combo box for choices (editable for open choices such as a model preset list
that also takes a folder), with the help text, default and range as tooltip.
Every edit is checked with the parameter's own rules; a bad value is marked
in place with the reason under it, and ``validityChanged(False)`` lets the
window disable Start.

The form is a view of a ``trainlab.viewmodel.param_values.ParamValues`` (``param_values``):
an edit sets the value at the ``explicit`` level, what the window remembered
goes in at the ``remembered`` level (``load_remembered``), and the fields show
what the model resolves, presets included (choosing a model preset shows its
values).  ``remembered_values`` is what differs from the levels below, which
is what the window keeps per task: a later plugin version's better default is
not masked by a value the user never touched.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.descriptors import Param, TaskSpec
from trainlab.api.params import ENGINE_PARAMS, full_schema, preset_for
from trainlab.viewmodel.devices import DeviceChoice, GpuInfo
from trainlab.viewmodel.param_values import EXPLICIT, REMEMBERED, ParamValues, format_value
from trainlab_desktop.run.gpu_picker import LaunchChoice, LaunchPicker

GROUP_ORDER = ("model", "task", "data", "training", "hardware", "output")


__all__ = ["ParamsForm", "format_value"]


class _Field:
    """One parameter's editor, its error label and its row widget."""

    def __init__(self, param: Param, editor: QWidget, error: QLabel, row: QWidget, label: QLabel):
        self.param = param
        self.editor = editor
        self.error = error
        self.row = row
        self.label = label
        self.message = ""

    def text(self) -> str:
        editor = self.editor
        if isinstance(editor, QCheckBox):
            return "true" if editor.isChecked() else "false"
        if isinstance(editor, QComboBox):
            text = editor.currentText()
            index = editor.findText(text, Qt.MatchFlag.MatchExactly)
            if index >= 0 and editor.itemData(index) is not None:
                return str(editor.itemData(index))
            return text.strip()
        return editor.text().strip()

    def set_text(self, value: str) -> None:
        editor = self.editor
        if isinstance(editor, QCheckBox):
            editor.setChecked(value.strip().lower() in ("1", "true", "yes", "on", "y"))
        elif isinstance(editor, QComboBox):
            index = editor.findData(value)
            if index < 0:
                index = editor.findText(value, Qt.MatchFlag.MatchExactly)
            if index >= 0:
                editor.setCurrentIndex(index)
            elif editor.isEditable():
                editor.setEditText(value)
            else:
                # keep the bad value visible so it can be flagged, not lost
                editor.addItem(value, value)
                editor.setCurrentIndex(editor.count() - 1)
            show_start(editor)
        else:
            editor.setText(value)


def show_start(combo: QComboBox) -> None:
    """An editable combo box shows the start of its text ("auto — Small CNN sized
    to the data"), not its end, when the text is longer than the box."""
    if combo.isEditable() and combo.lineEdit() is not None:
        combo.lineEdit().setCursorPosition(0)


class ParamsForm(QWidget):
    """Edits the parameters of one task (``param_values``); ``values()`` gives them as text."""

    validityChanged = Signal(bool)
    valuesChanged = Signal()
    presetApplied = Signal(str)
    launchChanged = Signal()  # the GPUs or CPU processes of the run (launch_choice)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._spec: TaskSpec | None = None
        self.param_values: ParamValues | None = None  # the model this form edits
        self._engine_params: tuple[Param, ...] = ENGINE_PARAMS
        self._fields: dict[str, _Field] = {}
        self._valid = True
        self._device_choices: list[DeviceChoice] = []
        self._building = False

        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self._body = QWidget(self)
        self._body_layout = QVBoxLayout(self._body)
        self._body_layout.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(self._body)

        buttons = QHBoxLayout()
        self.advanced_toggle = QCheckBox(self.tr("Show advanced settings"), self)
        self.advanced_toggle.toggled.connect(self._show_advanced)
        self.reset_button = QPushButton(self.tr("Reset to defaults"), self)
        self.reset_button.setToolTip(self.tr("Set every parameter back to the task's defaults"))
        self.reset_button.clicked.connect(self.reset_defaults)
        buttons.addWidget(self.advanced_toggle)
        buttons.addStretch(1)
        buttons.addWidget(self.reset_button)
        outer.addLayout(buttons)
        self._preset_note = self._make_preset_note()
        # the GPU picker and the CPU processes: rows under the device, outliving the rebuilds
        self.launch_picker = LaunchPicker(self)
        self.launch_picker.changed.connect(self._launch_changed)
        self.launch_picker.gpuChosen.connect(lambda n: self._fields["device"].set_text(f"cuda:{n}") if "device" in self._fields else None)

    # -- building ----------------------------------------------------------
    def _make_preset_note(self) -> QLabel:
        note = QLabel(self._body)
        note.setProperty("role", "muted")
        note.setWordWrap(True)
        note.hide()
        return note

    def group_title(self, group: str) -> str:
        titles = {
            "model": self.tr("Model"),
            "task": self.tr("Task"),
            "data": self.tr("Data"),
            "training": self.tr("Training"),
            "hardware": self.tr("Hardware"),
            "output": self.tr("Output"),
        }
        return titles.get(group, group.capitalize())

    def set_device_choices(self, choices: list[DeviceChoice], gpus: list[GpuInfo] | None = None) -> None:
        """The device field's choices; ``gpus`` (NVML's): two or more show the GPU picker."""
        if gpus is not None:
            self.launch_picker.set_gpus(gpus)
        self._device_choices = list(choices)
        field = self._fields.get("device")
        if field is not None and isinstance(field.editor, QComboBox):
            self._fill_device_combo(field.editor)
            self._show(["device"])

    def set_task(self, spec: TaskSpec | None, engine_params: tuple[Param, ...] = ENGINE_PARAMS) -> None:
        """Build the rows for ``spec``'s schema, filled with its defaults."""
        self._building = True
        try:
            self._spec = spec
            self._engine_params = tuple(engine_params)
            self.param_values = ParamValues(spec, self._engine_params) if spec is not None else None
            self._fields.clear()
            old = self._body
            self._body = QWidget(self)
            self._body_layout = QVBoxLayout(self._body)
            self._body_layout.setContentsMargins(0, 0, 0, 0)
            self.layout().replaceWidget(old, self._body)
            self.launch_picker.detach()
            old.deleteLater()
            self._preset_note = self._make_preset_note()
            if spec is None:
                return
            schema = full_schema(spec, self._engine_params)
            groups: dict[str, list[Param]] = {}
            for param in schema.values():
                if spec.uses_param(param.name):  # class_weighting only for a task with classes
                    groups.setdefault(param.group or "task", []).append(param)
            order = [g for g in GROUP_ORDER if g in groups] + [g for g in groups if g not in GROUP_ORDER]
            for group in order:
                params = groups.get(group)
                if not params:
                    continue
                heading = QLabel(self.group_title(group), self._body)
                heading.setProperty("role", "subheading")
                self._body_layout.addWidget(heading)
                form = QFormLayout()
                form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
                form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                for param in params:
                    self._add_row(form, param)
                    if param.name == "model":
                        form.addRow("", self._preset_note)
                    if param.name == "device":
                        self.launch_picker.add_rows(form)
                self._body_layout.addLayout(form)
            self._body_layout.addStretch(1)
        finally:
            self._building = False
        self._show(self._fields)
        self._show_advanced(self.advanced_toggle.isChecked())
        self._launch_changed()

    def _add_row(self, form: QFormLayout, param: Param) -> None:
        title = param.title or param.name.replace("_", " ").capitalize()
        label = QLabel(title + ":", self._body)
        tooltip = self._tooltip(param)
        label.setToolTip(tooltip)
        editor = self._editor(param)
        editor.setToolTip(tooltip)
        editor.setObjectName(f"param_{param.name}")
        editor.setAccessibleName(title)
        error = QLabel(self._body)
        error.setProperty("role", "error")
        error.setWordWrap(True)
        error.hide()
        row = QWidget(self._body)
        box = QVBoxLayout(row)
        box.setContentsMargins(0, 0, 0, 0)
        box.setSpacing(2)
        line = QHBoxLayout()
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(editor, 1)
        browse = self._browse_button(param, editor)
        if browse is not None:
            line.addWidget(browse)
        box.addLayout(line)
        box.addWidget(error)
        label.setBuddy(editor)
        form.addRow(label, row)
        self._fields[param.name] = _Field(param, editor, error, row, label)

    def _tooltip(self, param: Param) -> str:
        parts = [param.help] if param.help else []
        if param.type == "choice" and param.choices:
            parts.append(self.tr("Choices: %s") % ", ".join(param.choices))
            if param.open_choices:
                parts.append(self.tr("Other values are accepted too."))
        if param.minimum is not None and param.maximum is not None:
            parts.append(self.tr("Range: %s to %s") % (format_value(param.minimum), format_value(param.maximum)))
        elif param.minimum is not None:
            parts.append(self.tr("At least %s") % format_value(param.minimum))
        elif param.maximum is not None:
            parts.append(self.tr("At most %s") % format_value(param.maximum))
        parts.append(self.tr("Default: %s") % (format_value(param.default) or self.tr("(none)")))
        parts.append(self.tr("Command line: --set %s=VALUE") % param.name)
        return "\n".join(parts)

    def _editor(self, param: Param) -> QWidget:
        if param.type == "bool":
            box = QCheckBox(self._body)
            box.toggled.connect(lambda _=None, name=param.name: self._edited(name))
            return box
        if param.type == "choice":
            combo = QComboBox(self._body)
            combo.setEditable(param.open_choices)
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(12)
            combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            if param.name == "device" and self._device_choices:
                self._fill_device_combo(combo)
            else:
                names = list(param.choices)
                presets = self._spec.presets if (self._spec and param.name == "model") else ()
                for preset in presets:
                    if preset.name not in names:
                        names.append(preset.name)
                for name in names:
                    preset = preset_for(self._spec, name) if presets else None
                    label = name
                    if preset is not None and preset.title and preset.title != name:
                        label = f"{name} \u2014 {preset.title}"
                    combo.addItem(label, name)
                    if preset is not None and preset.description:
                        combo.setItemData(combo.count() - 1, preset.description, Qt.ItemDataRole.ToolTipRole)
            combo.currentTextChanged.connect(lambda _=None, name=param.name: self._edited(name))
            combo.activated.connect(lambda _=None, c=combo: show_start(c))
            return combo
        edit = QLineEdit(self._body)
        edit.setPlaceholderText(format_value(param.default))
        edit.setClearButtonEnabled(param.type in ("str", "path"))
        edit.textChanged.connect(lambda _=None, name=param.name: self._edited(name))
        return edit

    def _fill_device_combo(self, combo: QComboBox) -> None:
        blocker = combo.blockSignals(True)
        combo.clear()
        for choice in self._device_choices:
            combo.addItem(choice.label, choice.value)
        combo.blockSignals(blocker)

    def _browse_button(self, param: Param, editor: QWidget) -> QToolButton | None:
        wants_folder = param.type == "path" or (param.type == "choice" and param.open_choices and param.name == "model")
        if not wants_folder:
            return None
        button = QToolButton(self._body)
        button.setText("\u2026")
        button.setToolTip(self.tr("Choose a folder"))

        def browse() -> None:
            folder = QFileDialog.getExistingDirectory(self, self.tr("Choose a folder"))
            if folder:
                field = self._fields[param.name]
                field.set_text(folder)

        button.clicked.connect(browse)
        return button

    # -- values ------------------------------------------------------------
    @property
    def spec(self) -> TaskSpec | None:
        return self._spec

    def field_editor(self, name: str) -> QWidget:
        return self._fields[name].editor

    def values(self) -> dict[str, str]:
        """Every parameter as text (what the user sees)."""
        return self.param_values.texts() if self.param_values is not None else {}

    def typed_values(self) -> dict[str, Any]:
        """Every parameter typed, as a run resolves them; UsageError names a bad one."""
        return self.param_values.resolved() if self.param_values is not None else {}

    def default_values(self, model: str | None = None) -> dict[str, Any]:
        """Defaults of the task, with the preset of ``model`` applied."""
        return self.param_values.defaults(model) if self.param_values is not None else {}

    def remembered_values(self) -> dict[str, str]:
        """Values that differ from the defaults (task defaults + chosen preset)."""
        return self.param_values.to_remember() if self.param_values is not None else {}

    def set_values(self, values: Mapping[str, Any]) -> list[str]:
        """Set ``values`` as the user's own (model first, so its preset applies
        before the other values); returns the names this task does not know."""
        return self._set_level(values, EXPLICIT)

    def load_remembered(self, values: Mapping[str, Any]) -> list[str]:
        """What the window kept for this task, at the ``remembered`` level."""
        return self._set_level(values, REMEMBERED)

    def _set_level(self, values: Mapping[str, Any], level: str) -> list[str]:
        if self.param_values is None:
            return list(values)
        changed, unknown = self.param_values.update(values, level)
        self._show(changed)
        return unknown

    def reset_defaults(self) -> None:
        if self.param_values is None:
            return
        self._show(self.param_values.reset() | set(self._fields))

    def _show(self, names) -> None:
        """Write the model's values of ``names`` into their fields (not an edit)."""
        self._building = True
        try:
            for name in names:
                if name in self._fields:
                    self._fields[name].set_text(self.param_values.text(name))
        finally:
            self._building = False
        self._update_preset_note()
        self._revalidate()
        if "device" in names and self.param_values is not None:
            self.launch_picker.set_device(self.param_values.text("device"))

    # -- the processes of the run ------------------------------------------
    def launch_choice(self) -> LaunchChoice:
        """One process, or a group over the checked GPUs (or CPU processes): not a task parameter."""
        return self.launch_picker.choice()

    def _launch_changed(self) -> None:
        field = self._fields.get("device")
        if field is not None:  # several GPUs checked: they are the devices
            group = self.launch_picker.gpu_group()
            field.editor.setEnabled(not group)
            field.editor.setToolTip(self.tr("The GPUs checked below are the devices of this run") if group else self._tooltip(field.param))
        self.launchChanged.emit()

    # -- validation --------------------------------------------------------
    def errors(self) -> dict[str, str]:
        return {name: field.message for name, field in self._fields.items() if field.message}

    def is_valid(self) -> bool:
        return self._valid

    def check(self, param: Param, text: str) -> str:
        """Why ``text`` is not a valid value of ``param`` ('' when it is)."""
        if text == "" and param.type in ("int", "float", "choice") and param.default is not None:
            return self.tr("A value is required.")
        if param.type == "int":
            try:
                number: float = int(text)
            except ValueError:
                return self.tr("Enter a whole number.")
        elif param.type == "float":
            try:
                number = float(text)
            except ValueError:
                return self.tr("Enter a number (for example 0.001 or 1e-3).")
            if not math.isfinite(number):
                return self.tr("Enter a finite number.")
        if param.type in ("int", "float"):
            if param.minimum is not None and number < param.minimum:
                return self.tr("Must be at least %s.") % format_value(param.minimum)
            if param.maximum is not None and number > param.maximum:
                return self.tr("Must be at most %s.") % format_value(param.maximum)
        if param.type == "choice" and not param.open_choices and text not in param.choices:
            return self.tr("Choose one of: %s.") % ", ".join(param.choices)
        try:
            param.coerce(text)
        except ValueError as exc:
            return str(exc)
        return ""

    def _edited(self, name: str) -> None:
        if self._building or self.param_values is None:
            return
        field = self._fields.get(name)
        if field is None:
            return
        # The edited field keeps what was typed; the others show what changed
        # with it (a model preset's values).
        others = self.param_values.set(name, field.text(), EXPLICIT) - {name}
        if others:
            self._show(others)
        if name == "model":
            self._update_preset_note()
            if preset_for(self._spec, field.text()) is not None:
                self.presetApplied.emit(field.text())
        if name == "device":
            self.launch_picker.set_device(field.text())
        self._validate_field(field)
        self._update_validity()
        self.valuesChanged.emit()

    def _validate_field(self, field: _Field) -> None:
        message = self.check(field.param, field.text())
        field.message = message
        field.error.setText(message)
        field.error.setVisible(bool(message))
        field.editor.setProperty("invalid", bool(message))
        # re-polish so the [invalid="true"] style rule takes effect
        field.editor.style().unpolish(field.editor)
        field.editor.style().polish(field.editor)
        if message and not field.row.isVisible() and field.param.advanced:
            self.advanced_toggle.setChecked(True)

    def _revalidate(self) -> None:
        for field in self._fields.values():
            self._validate_field(field)
        self._update_validity()

    def _update_validity(self) -> None:
        valid = not self.errors()
        if valid != self._valid:
            self._valid = valid
            self.validityChanged.emit(valid)

    def _update_preset_note(self) -> None:
        field = self._fields.get("model")
        preset = preset_for(self._spec, field.text()) if (field and self._spec) else None
        if preset is not None and preset.description:
            self._preset_note.setText(preset.description)
            self._preset_note.show()
        else:
            self._preset_note.hide()

    def _show_advanced(self, show: bool) -> None:
        self.launch_picker.show_advanced(show)
        for field in self._fields.values():
            if field.param.advanced:
                visible = show or bool(field.message)
                field.row.setVisible(visible)
                field.label.setVisible(visible)
