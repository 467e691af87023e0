"""The plugins dialog: what was discovered, what failed and why, block/unblock.

Modelled on napari's plugin error dialog: one row per plugin, and for the
selected one its message, warnings and (for a failed plugin) the traceback,
folded away until asked for.  Blocking writes the user's settings through
``trainlab.pluginhost.host.set_blocked``; discovery has already happened, so the
change applies at the next start and the dialog says so.
"""

from __future__ import annotations

from PySide6.QtCore import QItemSelectionModel, QSize, Qt, Signal
from PySide6.QtGui import QColor, QFontDatabase, QGuiApplication, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QToolButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.pluginhost import host as pluginhost
from trainlab.pluginhost.host import PluginRecord, PluginRegistry
from trainlab.pluginhost.status import NOT_LOADED, PluginStatus

# Medium tones that read on light and dark palettes alike.
STATUS_COLORS = {
    "ok": "#2e9d5b",
    "failed": "#d64545",
    "incompatible": "#d98a1c",
    "blocked": "#8a8f98",
    "disabled": "#8a8f98",
}

COLUMNS = ("name", "version", "distribution", "tasks", "status")


def status_icon(status: str, size: int = 12) -> QIcon:
    """A filled dot in the status colour (colour is never the only cue: text follows)."""
    pixmap = QPixmap(size, size)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(STATUS_COLORS.get(status, "#8a8f98")))
    painter.drawEllipse(1, 1, size - 2, size - 2)
    painter.end()
    return QIcon(pixmap)


class PluginsDialog(QDialog):
    """Every discovered plugin with its version, distribution, tasks and status."""

    # (plugin name, blocked) after the user blocked or unblocked a plugin.
    blockChanged = Signal(str, bool)

    def __init__(self, registry: PluginRegistry, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.registry = registry
        self._blocked_at_start = pluginhost.blocked_names()
        self._blocked = set(self._blocked_at_start)
        self.setWindowTitle(self.tr("Plugins"))
        self.setObjectName("PluginsDialog")
        self.resize(860, 560)

        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.safe_mode_note = QLabel(
            self.tr(
                "Safe mode is on (TRAINLAB_DISABLE_PLUGINS): only the built-in plugins were loaded."
            )
        )
        self.safe_mode_note.setWordWrap(True)
        self.safe_mode_note.setVisible(pluginhost.safe_mode())

        self.tree = QTreeWidget()
        self.tree.setObjectName("pluginTable")
        self.tree.setRootIsDecorated(False)
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.tree.setHeaderLabels(
            [self.tr("Plugin"), self.tr("Version"), self.tr("Distribution"), self.tr("Tasks"), self.tr("Status")]
        )
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(4, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.currentItemChanged.connect(self._show_details)

        self.details = self._build_details()

        splitter = QSplitter(Qt.Orientation.Vertical)
        splitter.addWidget(self.tree)
        splitter.addWidget(self.details)
        splitter.setStretchFactor(0, 2)
        splitter.setStretchFactor(1, 3)
        splitter.setChildrenCollapsible(False)

        self.restart_note = QLabel()
        self.restart_note.setObjectName("restartNote")
        self.restart_note.setWordWrap(True)
        self.restart_note.setText(
            self.tr("Blocking and unblocking take effect the next time TrainLab starts.")
        )
        self.restart_note.setVisible(False)

        self.block_button = QPushButton(self.tr("Block"))
        self.block_button.setObjectName("blockButton")
        self.block_button.setToolTip(
            self.tr("A blocked plugin is not imported at the next start; its tasks disappear until unblocked.")
        )
        self.block_button.clicked.connect(self._toggle_block)
        self.copy_button = QPushButton(self.tr("Copy Details"))
        self.copy_button.setToolTip(self.tr("Copy this plugin's status and traceback, for a bug report."))
        self.copy_button.clicked.connect(self._copy_details)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        buttons.accepted.connect(self.accept)
        buttons.addButton(self.block_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.addButton(self.copy_button, QDialogButtonBox.ButtonRole.ActionRole)

        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(self.safe_mode_note)
        layout.addWidget(splitter, 1)
        layout.addWidget(self.restart_note)
        layout.addWidget(buttons)

        self._populate()

    # -- building ----------------------------------------------------------------
    def _build_details(self) -> QWidget:
        box = QFrame()
        box.setFrameShape(QFrame.Shape.StyledPanel)
        self.detail_title = QLabel()
        title_font = self.detail_title.font()
        title_font.setPointSizeF(title_font.pointSizeF() * 1.25)
        title_font.setBold(True)
        self.detail_title.setFont(title_font)
        self.detail_title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail_status = QLabel()
        self.detail_status.setObjectName("detailStatus")
        self.detail_facts = QLabel()
        self.detail_facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.detail_facts.setWordWrap(True)
        self.detail_message = QLabel()
        self.detail_message.setObjectName("detailMessage")
        self.detail_message.setWordWrap(True)
        self.detail_message.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.traceback_toggle = QToolButton()
        self.traceback_toggle.setObjectName("tracebackToggle")
        self.traceback_toggle.setText(self.tr("Traceback"))
        self.traceback_toggle.setCheckable(True)
        self.traceback_toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.traceback_toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.traceback_toggle.setAutoRaise(True)
        self.traceback_toggle.toggled.connect(self._show_traceback)
        self.traceback_view = QPlainTextEdit()
        self.traceback_view.setObjectName("tracebackView")
        self.traceback_view.setReadOnly(True)
        self.traceback_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.traceback_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.traceback_view.setVisible(False)

        head = QHBoxLayout()
        head.addWidget(self.detail_title)
        head.addStretch(1)
        head.addWidget(self.detail_status)
        layout = QVBoxLayout(box)
        layout.addLayout(head)
        layout.addWidget(self.detail_facts)
        layout.addWidget(self.detail_message)
        layout.addWidget(self.traceback_toggle, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.traceback_view, 1)
        layout.addStretch(0)
        return box

    def status_text(self, status: str) -> str:
        texts = {
            "ok": self.tr("Loaded"),
            "failed": self.tr("Failed"),
            "incompatible": self.tr("Incompatible"),
            "blocked": self.tr("Blocked"),
            "disabled": self.tr("Disabled (safe mode)"),
        }
        return texts.get(status, status)

    def _row_status(self, record: PluginRecord) -> str:
        text = self.status_text(record.status)
        if record.name in self._blocked and record.status != PluginStatus.BLOCKED:
            text = self.tr("{status}, blocked after restart").format(status=text)
        elif record.name not in self._blocked and record.status == PluginStatus.BLOCKED:
            text = self.tr("{status}, unblocked after restart").format(status=text)
        elif record.warnings and record.status == PluginStatus.OK:
            text = self.tr("Loaded with warnings")
        return text

    def _populate(self) -> None:
        self.tree.clear()
        problems = 0
        for record in self.registry.plugins:
            item = QTreeWidgetItem(
                [
                    record.name,
                    record.version or "\u2014",
                    (record.distribution or "\u2014") + (self.tr(" (built-in)") if record.builtin else ""),
                    ", ".join(record.tasks) or "\u2014",
                    self._row_status(record),
                ]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, record.name)
            item.setIcon(4, status_icon(_color_key(record)))
            item.setToolTip(0, record.value)
            item.setToolTip(4, record.message or self.status_text(record.status))
            if record.status in NOT_LOADED:
                problems += 1
            self.tree.addTopLevelItem(item)
        total = len(self.registry.plugins)
        tasks = len(self.registry.tasks)
        summary = self.tr("{plugins} plugins found, offering {tasks} tasks.").format(plugins=total, tasks=tasks)
        if problems:
            summary += " " + self.tr("{count} could not be loaded; select one to see why.").format(count=problems)
        self.summary.setText(summary)
        if total:
            # Land on the first problem: that is why people open this dialog.
            first = next(
                (i for i, r in enumerate(self.registry.plugins) if r.status in NOT_LOADED), 0
            )
            self.tree.setCurrentItem(self.tree.topLevelItem(first), 0, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        else:
            self._show_details(None, None)

    # -- behaviour ---------------------------------------------------------------
    def current_record(self) -> PluginRecord | None:
        item = self.tree.currentItem()
        if item is None:
            return None
        name = item.data(0, Qt.ItemDataRole.UserRole)
        return next((r for r in self.registry.plugins if r.name == name), None)

    def select_plugin(self, name: str) -> None:
        for index in range(self.tree.topLevelItemCount()):
            item = self.tree.topLevelItem(index)
            if item.data(0, Qt.ItemDataRole.UserRole) == name:
                self.tree.setCurrentItem(item)
                return
        raise KeyError(name)

    def _show_details(self, current, _previous) -> None:
        record = self.current_record() if current is not None else None
        has = record is not None
        self.block_button.setEnabled(has)
        self.copy_button.setEnabled(has)
        if record is None:
            self.detail_title.setText(self.tr("No plugins found"))
            self.detail_status.clear()
            self.detail_facts.clear()
            self.detail_message.clear()
            self.traceback_toggle.setVisible(False)
            self.traceback_view.setVisible(False)
            return
        self.detail_title.setText(record.name)
        color = STATUS_COLORS[_color_key(record)]
        self.detail_status.setText(
            f'<span style="color:{color}">\u25cf</span> {self._row_status(record)}'
        )
        facts = [
            (self.tr("Entry point"), record.value),
            (self.tr("Distribution"), f"{record.distribution or '-'} {record.version}".strip()),
            (self.tr("Plugin API"), record.api_version or "\u2014"),
            (self.tr("Tasks"), ", ".join(record.tasks) or "\u2014"),
        ]
        self.detail_facts.setText(
            "<table cellspacing='2'>"
            + "".join(f"<tr><td style='padding-right:12px'><b>{_esc(k)}</b></td><td>{_esc(v)}</td></tr>" for k, v in facts)
            + "</table>"
        )
        lines = []
        if record.message:
            lines.append(_esc(record.message))
        for warning in record.warnings:
            lines.append("\u26a0 " + _esc(warning))
        self.detail_message.setText("<br>".join(lines))
        self.detail_message.setVisible(bool(lines))
        self.traceback_toggle.setVisible(bool(record.traceback))
        self.traceback_view.setPlainText(record.traceback)
        # A failed plugin's traceback starts folded: the message says what went wrong.
        self.traceback_toggle.setChecked(False)
        self._show_traceback(False)
        blocked = record.name in self._blocked
        self.block_button.setText(self.tr("Unblock") if blocked else self.tr("Block"))

    def _show_traceback(self, shown: bool) -> None:
        self.traceback_toggle.setArrowType(Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow)
        self.traceback_view.setVisible(shown and bool(self.traceback_view.toPlainText()))

    def _toggle_block(self) -> None:
        record = self.current_record()
        if record is None:
            return
        blocked = record.name not in self._blocked
        pluginhost.set_blocked(record.name, blocked)
        (self._blocked.add if blocked else self._blocked.discard)(record.name)
        self.restart_note.setVisible(self._blocked != self._blocked_at_start)
        item = self.tree.currentItem()
        item.setText(4, self._row_status(record))
        self._show_details(item, None)
        self.blockChanged.emit(record.name, blocked)

    def details_text(self, record: PluginRecord) -> str:
        """Plain text for a bug report: kept English-neutral keys on purpose."""
        parts = [
            f"plugin: {record.name}",
            f"entry point: {record.value}",
            f"distribution: {record.distribution} {record.version}".rstrip(),
            f"api version: {record.api_version}",
            f"status: {record.status}",
            f"tasks: {', '.join(record.tasks)}",
        ]
        if record.message:
            parts.append(f"message: {record.message}")
        parts += [f"warning: {w}" for w in record.warnings]
        if record.traceback:
            parts += ["", record.traceback.rstrip()]
        return "\n".join(parts) + "\n"

    def _copy_details(self) -> None:
        record = self.current_record()
        if record is not None:
            QGuiApplication.clipboard().setText(self.details_text(record))

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt naming
        return QSize(860, 560)


def _color_key(record: PluginRecord) -> str:
    # A plugin that loaded with warnings gets the caution colour.
    if record.status == PluginStatus.OK and record.warnings:
        return "incompatible"
    return record.status if record.status in STATUS_COLORS else "blocked"


def _esc(text: str) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

