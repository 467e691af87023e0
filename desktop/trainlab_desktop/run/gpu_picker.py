"""Which processes a run is: one, or a data-parallel group over several GPUs (or CPU processes).

Shown only where there is a choice (a machine with one GPU, or none, keeps
the form it had):

* ``GpuPicker``: a check box per GPU NVML sees, and "all", when there are
  two or more.  Two or more checked make the run a group, one process per
  GPU (``trainlab train --gpus 0,2``); one checked is that GPU's ``cuda:N``
  in the device field, an ordinary run.
* the CPU processes, an advanced setting where the run is on the CPU:
  ``--nproc-per-node N --device cpu``, gloo between them.  On most desktops
  N processes are slower than one process with all the cores (each rank gets
  cores / N threads and they all-reduce every step); it pays on many-core
  machines where one process does not scale, and the command line has it
  anyway, so it is there but out of sight.
* ``LaunchSummary``, next to Start while the run is a group: the world size
  and the effective batch, from the engine's own ``effective_batch``.

The state is a ``LaunchChoice`` (plain, no Qt): what ``RunProcess`` turns into
the launcher's arguments.  The launch options are not task parameters, as on
the command line: they are neither remembered with the task's values nor in
``run.json``'s ``parameters`` (its ``launch`` records them).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Sequence

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QCheckBox, QFormLayout, QLabel, QSpinBox, QVBoxLayout, QWidget

from trainlab.engine.torchrun import effective_batch
from trainlab.viewmodel.devices import GpuInfo


@dataclass(frozen=True)
class LaunchChoice:
    """The processes of one run, as the window chose them."""

    gpus: tuple[int, ...] = ()  # CUDA numbers (what --gpus takes); a group when two or more
    telemetry_indices: tuple[int, ...] = ()  # the same GPUs as NVML (and so the GPU panel) numbers them
    cpu_processes: int = 1

    @property
    def world_size(self) -> int:
        if len(self.gpus) > 1:
            return len(self.gpus)
        return max(1, int(self.cpu_processes))

    @property
    def group(self) -> bool:
        """Several processes: the run goes through the launcher (torchrun)."""
        return self.world_size > 1

    @property
    def on_gpus(self) -> bool:
        return len(self.gpus) > 1

    def launch_args(self) -> list[str]:
        """The command line's launch options for this choice (empty for one process)."""
        if self.on_gpus:
            return ["--gpus", ",".join(str(n) for n in self.gpus)]
        if self.group:
            return ["--nproc-per-node", str(self.world_size), "--device", "cpu"]
        return []


def runs_on_cpu(device: str, gpus: Sequence[GpuInfo]) -> bool:
    """Whether a one-process run with ``device`` would use the CPU (as far as the window can tell without torch)."""
    device = (device or "auto").strip().lower()
    return device == "cpu" or (device == "auto" and not gpus)


def gpu_text(gpu: GpuInfo) -> str:
    memory = f", {gpu.memory_bytes / 2**30:.0f} GB" if gpu.memory_bytes else ""
    return f"{gpu.index}: {gpu.name}{memory}"


class GpuPicker(QWidget):
    """A check box per GPU and one for all of them; ``changed`` on every change."""

    changed = Signal()

    def __init__(self, gpus: Sequence[GpuInfo], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("gpu_picker")
        self.gpus = list(gpus)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.all_box = QCheckBox(self.tr("All %n GPUs", "", len(self.gpus)), self)
        self.all_box.setObjectName("gpu_all")
        self.all_box.setToolTip(self.tr("One process per GPU, every GPU of this machine"))
        self.all_box.clicked.connect(self._all_clicked)
        layout.addWidget(self.all_box)
        self.boxes: list[QCheckBox] = []
        for gpu in self.gpus:  # one a line: GPU names are long, and the form column is narrow
            box = QCheckBox(gpu_text(gpu), self)
            box.setObjectName(f"gpu_{gpu.index}")
            box.toggled.connect(self._box_toggled)
            layout.addWidget(box)
            self.boxes.append(box)
        self.note = QLabel(self.tr("Check two or more to train on them together, one process per GPU "
                                   "(the effective batch grows with them)."), self)
        self.note.setProperty("role", "muted")
        self.note.setWordWrap(True)
        layout.addWidget(self.note)
        self.setToolTip(self.tr("Several GPUs: one data-parallel run, one process per GPU (command line: --gpus 0,2).\n"
                                "One GPU: the same as choosing it as the device."))

    def selected(self) -> list[int]:
        return [gpu.index for gpu, box in zip(self.gpus, self.boxes) if box.isChecked()]

    def set_selected(self, indices: Sequence[int]) -> None:
        wanted = set(indices)
        for gpu, box in zip(self.gpus, self.boxes):
            blocker = box.blockSignals(True)
            box.setChecked(gpu.index in wanted)
            box.blockSignals(blocker)
        self._box_toggled()

    def _all_clicked(self, checked: bool) -> None:
        self.set_selected([g.index for g in self.gpus] if checked else [])

    def _box_toggled(self, *_args: Any) -> None:
        chosen = self.selected()
        self.all_box.setChecked(len(chosen) == len(self.gpus))
        self.changed.emit()


class LaunchPicker(QObject):
    """The GPU picker and the CPU processes, as rows of the parameter form's hardware group.

    The form rebuilds its rows for every task; these widgets outlive that
    (``detach`` before a rebuild, ``add_rows`` into the new one), so a choice
    stays as the user made it.
    """

    changed = Signal()
    gpuChosen = Signal(int)  # exactly one GPU checked: the device field takes it

    def __init__(self, parent: QWidget):
        super().__init__(parent)
        self.owner = parent
        self.gpus: list[GpuInfo] = []
        self.picker: GpuPicker | None = None
        self.picker_label = QLabel(self.tr("GPUs:"), parent)
        self.cpu_label = QLabel(self.tr("CPU processes:"), parent)
        self.cpu_spin = QSpinBox(parent)
        self.cpu_spin.setObjectName("cpu_processes")
        self.cpu_spin.setRange(1, max(1, os.cpu_count() or 1))
        self.cpu_spin.setToolTip(self.tr(
            "Train on the CPU as one data-parallel run of this many processes (gloo), each with a share of the cores.\n"
            "Usually slower than one process on a desktop; it can pay on a machine with many cores.\n"
            "Command line: --nproc-per-node N --device cpu"))
        self.cpu_label.setBuddy(self.cpu_spin)
        self.cpu_spin.valueChanged.connect(lambda _: self.changed.emit())
        self._advanced = False
        self._on_form = False  # the rows are in the form (add_rows), not set aside (detach)
        self._on_cpu = True
        for widget in (self.picker_label, self.cpu_label, self.cpu_spin):
            widget.hide()

    def set_gpus(self, gpus: Sequence[GpuInfo]) -> None:
        self.gpus = list(gpus)
        if self.picker is not None:
            self.picker.deleteLater()
            self.picker = None
        if len(self.gpus) > 1:
            self.picker = GpuPicker(self.gpus, self.owner)
            self.picker.changed.connect(self._picked)
            self.picker_label.setBuddy(self.picker)
        self._update_visibility()

    def detach(self) -> None:
        """Take the rows out of the form about to be rebuilt."""
        self._on_form = False
        for widget in self._widgets():
            widget.setParent(self.owner)
            widget.hide()

    def add_rows(self, form: QFormLayout) -> None:
        if self.picker is not None:
            form.addRow(self.picker_label, self.picker)
        form.addRow(self.cpu_label, self.cpu_spin)
        self._on_form = True
        self._update_visibility()

    def _widgets(self) -> list[QWidget]:
        return [w for w in (self.picker_label, self.picker, self.cpu_label, self.cpu_spin) if w is not None]

    def show_advanced(self, show: bool) -> None:
        self._advanced = show
        self._update_visibility()

    def set_device(self, device: str) -> None:
        """The device field's value: the CPU processes apply to a run on the CPU only."""
        on_cpu = runs_on_cpu(device, self.gpus)
        if on_cpu != self._on_cpu:
            self._on_cpu = on_cpu
            self._update_visibility()
            self.changed.emit()

    def _update_visibility(self) -> None:
        on_form = self._on_form
        if self.picker is not None:
            self.picker.setVisible(on_form)
            self.picker_label.setVisible(on_form)
        cpu = on_form and self._on_cpu and not self.gpu_group() and (self._advanced or self.cpu_spin.value() > 1)
        self.cpu_spin.setVisible(cpu)
        self.cpu_label.setVisible(cpu)

    def gpu_group(self) -> bool:
        return self.picker is not None and len(self.picker.selected()) > 1

    def _picked(self) -> None:
        chosen = self.picker.selected() if self.picker is not None else []
        if len(chosen) == 1:
            self.gpuChosen.emit(chosen[0])
        self._update_visibility()
        self.changed.emit()

    def choice(self) -> LaunchChoice:
        """What the form describes now."""
        chosen = self.picker.selected() if self.picker is not None else []
        if len(chosen) > 1:
            by_index = {g.index: g for g in self.gpus}
            return LaunchChoice(gpus=tuple(chosen), telemetry_indices=tuple(by_index[n].telemetry_index for n in chosen))
        if self._on_cpu and self.cpu_spin.value() > 1:
            return LaunchChoice(cpu_processes=self.cpu_spin.value())
        return LaunchChoice()


class LaunchSummary(QLabel):
    """Next to Start while the run is a group: "World size 2 · effective batch 64", the product in the tooltip."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("launch_summary")
        self.hide()

    def show_for(self, choice: LaunchChoice, params: dict[str, Any] | None) -> None:
        if not choice.group:
            self.clear()
            self.hide()
            return

        world = choice.world_size
        text = self.tr("World size %1").replace("%1", str(world))
        tip = [self.tr("%1 processes, one per GPU").replace("%1", str(world)) if choice.on_gpus
               else self.tr("%1 CPU processes").replace("%1", str(world))]
        try:
            batch, accum = int(params["batch_size"]), int(params["grad_accum"])  # type: ignore[index]
        except (KeyError, TypeError, ValueError):
            batch = accum = 0  # a parameter being typed: the world size alone
        if batch and accum:
            text += " \u00b7 " + self.tr("effective batch %1").replace("%1", str(effective_batch(batch, world, accum)))
            per = self.tr("per GPU") if choice.on_gpus else self.tr("per process")
            tip.append(self.tr("Effective batch: %1 %2 \u00d7 %3 processes \u00d7 %4 accumulation: the examples of one "
                               "optimizer step.").replace("%1", str(batch)).replace("%2", per).replace("%3", str(world))
                       .replace("%4", str(accum)))
        tip.append(self.tr("The batch size is per process, and the learning rate is not rescaled for you."))
        self.setText(text)
        self.setToolTip("\n".join(tip))
        self.show()
