"""Typed evaluation details drawn generically (``trainlab.api.details``).

Every family's results page can show them; a plugin family's page is made of
them (after its metrics):

- ``Table``: a sortable table, each column as its kind says (numbers in
  their declared display and unit, images as thumbnails, images with their
  boxes drawn over them, series as small line drawings);
- ``ExampleRows``: the same table sorted the worst first, and below it the
  chosen row in full: its texts side by side, its images large with their
  boxes (true ones solid, predicted ones dashed, each with its label and
  score; a score-threshold slider when the predicted boxes have scores) and
  its series on a plot;
- ``Series``: its lines on one plot, with a legend;
- ``Figure``: its picture, or its matrix as a heat map;
- a detail naming a ``view``: the widget another package registered under
  that name in the ``trainlab.views`` entry point group (``custom_views``);
  the generic drawing, with a note, when it cannot be loaded.

Images are read as ``image`` paths say: absolute, or relative to the run
folder.  Thumbnails are read off the GUI thread (``ThumbnailLoader``).
"""

from __future__ import annotations

import math
import os
from typing import Any, Iterable, Sequence

from PySide6.QtCore import QCoreApplication, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QIcon, QImage, QImageReader, QPainter, QPalette, QPen, QPixmap
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QScrollArea,
    QSizePolicy,
    QSlider,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from trainlab.api.details import Box, BoxedImage, Column, Detail, ExampleRows, Figure, Series, Table
from trainlab_desktop.common.formatting import format_metric
from trainlab_desktop.results.custom_views import custom_view
from trainlab_desktop.results.widgets import NumberItem, ThumbnailLoader, section_label, setup_table

CELL_IMAGE = 64  # pixels: an image cell's thumbnail
SPARK = QSize(120, 36)  # a series cell's drawing
PREVIEW = 360  # the chosen row's images
TABLE_ROWS_SHOWN = 12  # a table taller than this scrolls
TRUE_BOX = QColor("#1f9d55")
PREDICTED_BOX = QColor("#e07b00")
SCORE_THRESHOLD = 0.3  # predicted boxes are drawn from this score until a slider says otherwise
LINE_COLOURS = ("#2f6fde", "#e0493e", "#1f9d55", "#8e44ad", "#e07b00", "#16a2b8", "#8a8f98")


def number_text(column: Column, value: Any) -> str:
    """A number cell as its column declares: its display, then its unit."""
    text = format_metric(column.name, value, column.display, detail=True)
    if column.unit and text != format_metric(None, None) and column.display != "percent":
        text = f"{text}{column.unit}" if column.unit in ("\u00b0", "\u2030") else f"{text} {column.unit}"
    return text


def resolve_image(path: str, run_dir: str) -> str:
    """An image path as written in eval.json: absolute, or relative to the run folder."""
    if not path or os.path.isabs(path) or not run_dir:
        return path
    candidate = os.path.join(run_dir, path)
    return candidate if os.path.exists(candidate) else path


def draw_boxes(painter: QPainter, boxes: Iterable[Box], scale: float, font_px: int = 11) -> None:
    """``boxes`` over an image drawn at ``scale``: true ones solid green, predicted ones dashed orange, labelled."""
    if font_px > 0:  # 0: a thumbnail, too small for labels
        font = painter.font()
        font.setPixelSize(font_px)
        painter.setFont(font)
    for box in boxes:
        colour = TRUE_BOX if box.role == "true" else PREDICTED_BOX
        pen = QPen(colour, 2)
        if box.role != "true":
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        rect = QRectF(QPointF(box.x0 * scale, box.y0 * scale), QPointF(box.x1 * scale, box.y1 * scale))
        painter.drawRect(rect)
        text = box.label + (f" {box.score:.2f}" if box.score is not None and math.isfinite(box.score) else "")
        if text.strip() and font_px > 0:
            metrics = painter.fontMetrics()
            width, height = metrics.horizontalAdvance(text) + 4, metrics.height()
            top = rect.top() - height if rect.top() >= height else rect.top()
            if box.role != "true":  # predicted labels under the box's top edge, so a matching pair both read
                top = rect.bottom() - height if rect.bottom() - height >= rect.top() else rect.top()
            painter.fillRect(QRectF(rect.left(), top, width, height), colour)
            painter.setPen(QColor("white"))
            painter.drawText(QRectF(rect.left() + 2, top, width, height), Qt.AlignmentFlag.AlignVCenter, text)


def _scored(box: Box) -> bool:
    return box.role != "true" and box.score is not None and math.isfinite(box.score)


def boxes_above(boxes: Iterable[Box], threshold: float) -> tuple[Box, ...]:
    """``boxes`` without the predicted ones scored under ``threshold`` (true and unscored boxes stay)."""
    return tuple(b for b in boxes if not _scored(b) or b.score >= threshold)


def has_scored_boxes(boxes: Iterable[Box]) -> bool:
    """Whether any predicted box has a score, so that a threshold means something."""
    return any(_scored(b) for b in boxes)


class ScoreSlider(QWidget):
    """A score threshold from 0 to 1 in steps of 0.01, with its value written beside it."""

    changed = Signal(float)

    def __init__(self, value: float = SCORE_THRESHOLD, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("scoreThreshold")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(QLabel(self.tr("Score threshold")))
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 100)
        self.slider.setPageStep(5)
        self.slider.setValue(round(value * 100))
        self.slider.setToolTip(self.tr("Predicted boxes scored under this are hidden"))
        self.value_label = QLabel()
        self.value_label.setMinimumWidth(self.value_label.fontMetrics().horizontalAdvance("0.00") + 4)
        layout.addWidget(self.slider, 1)
        layout.addWidget(self.value_label)
        self.slider.valueChanged.connect(self._moved)
        self._moved(self.slider.value(), emit=False)

    def value(self) -> float:
        return self.slider.value() / 100.0

    def set_value(self, value: float) -> None:
        self.slider.setValue(round(value * 100))

    def _moved(self, position: int, emit: bool = True) -> None:
        self.value_label.setText(f"{position / 100:.2f}")
        if emit:
            self.changed.emit(position / 100.0)


def boxed_image(path: str, boxes: Sequence[Box], size: int, image: QImage | None = None) -> QPixmap:
    """The image at ``path`` scaled to fit ``size`` with its boxes drawn over it (null when unreadable).

    ``image``: the image already read (a thumbnail), scaled from the file's own size.
    """
    reader = QImageReader(path)
    reader.setAutoTransform(True)
    original = reader.size()
    if image is None:
        if original.isValid():
            reader.setScaledSize(original.scaled(size, size, Qt.AspectRatioMode.KeepAspectRatio))
        image = reader.read()
    if image.isNull():
        return QPixmap()
    pixmap = QPixmap.fromImage(image.convertToFormat(QImage.Format.Format_ARGB32))
    scale = pixmap.width() / original.width() if original.isValid() and original.width() else 1.0
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    draw_boxes(painter, boxes, scale, font_px=0 if size <= CELL_IMAGE else 12)
    painter.end()
    return pixmap


def sparkline(series: Series, size: QSize = SPARK, colour: QColor | None = None) -> QPixmap:
    """A series drawn small, for a table cell: every line, no axes."""
    pixmap = QPixmap(size)
    pixmap.fill(Qt.GlobalColor.transparent)
    points = [(x, y) for line in series.lines for x, y in zip(line.xs, line.y) if math.isfinite(x) and math.isfinite(y)]
    if not points:
        return pixmap
    xs, ys = [p[0] for p in points], [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    width, height = size.width() - 4, size.height() - 4

    def at(x: float, y: float) -> QPointF:
        fx = (x - x0) / (x1 - x0) if x1 > x0 else 0.5
        fy = (y - y0) / (y1 - y0) if y1 > y0 else 0.5
        return QPointF(2 + fx * width, 2 + (1 - fy) * height)

    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    for index, line in enumerate(series.lines):
        pen = QPen(QColor(LINE_COLOURS[index % len(LINE_COLOURS)]) if colour is None or index else colour, 1.5)
        if line.style == "dashed":
            pen.setStyle(Qt.PenStyle.DashLine)
        painter.setPen(pen)
        finite = [at(x, y) for x, y in zip(line.xs, line.y) if math.isfinite(x) and math.isfinite(y)]
        if line.style == "points":
            for point in finite:
                painter.drawEllipse(point, 1.5, 1.5)
        else:
            for a, b in zip(finite, finite[1:]):
                painter.drawLine(a, b)
    painter.end()
    return pixmap


class DetailTable(QTableWidget):
    """A ``Table`` or ``ExampleRows``: one column per declared column, sortable;
    example rows start sorted the worst first."""

    def __init__(self, detail: Table, run_dir: str, parent: QWidget | None = None) -> None:
        super().__init__(0, len(detail.columns), parent)
        self.detail = detail
        self.run_dir = run_dir
        self.setObjectName(f"detail_{detail.name}")
        setup_table(self)
        self.setWordWrap(True)
        self.setHorizontalHeaderLabels([c.shown_title for c in detail.columns])
        for index, column in enumerate(detail.columns):
            if column.help:
                self.horizontalHeaderItem(index).setToolTip(column.help)
        header = self.horizontalHeader()
        texts = [i for i, c in enumerate(detail.columns) if c.kind == "text"]
        for index, column in enumerate(detail.columns):
            # texts share the spare width (a prompt and two answers side by side); the rest fit their contents
            mode = QHeaderView.ResizeMode.Stretch if index in texts else QHeaderView.ResizeMode.ResizeToContents
            header.setSectionResizeMode(index, mode)
        if not texts and detail.columns:
            header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self._images: dict[str, list[tuple[QTableWidgetItem, tuple[Box, ...] | None]]] = {}
        self._loader = ThumbnailLoader(CELL_IMAGE, self)
        self._loader.ready.connect(self._thumbnail)
        self._fill()

    def _fill(self) -> None:
        detail = self.detail
        rows = detail.worst_first() if isinstance(detail, ExampleRows) else detail.rows
        self.setSortingEnabled(False)
        self.setRowCount(len(rows))
        for r, row in enumerate(rows):
            for c, column in enumerate(detail.columns):
                item = self._cell(column, row.get(column.name))
                item.setData(Qt.ItemDataRole.UserRole + 1, r)  # the row's place in worst-first order
                self.setItem(r, c, item)
        kinds = {c.kind for c in detail.columns}
        if kinds & {"image", "image_boxes", "series"}:
            images = bool(kinds & {"image", "image_boxes"})
            height = max(CELL_IMAGE if images else 0, SPARK.height() if "series" in kinds else 0)
            self.verticalHeader().setDefaultSectionSize(height + 6)
            self.setIconSize(QSize(max(CELL_IMAGE if images else 0, SPARK.width() if "series" in kinds else 0), height))
        else:
            self.resizeRowsToContents()
        if isinstance(detail, ExampleRows) and detail.worst:
            column = next(i for i, c in enumerate(detail.columns) if c.name == detail.worst)
            order = Qt.SortOrder.DescendingOrder if detail.higher_is_worse else Qt.SortOrder.AscendingOrder
            self.horizontalHeader().setSortIndicator(column, order)
        else:  # the order given, until a header is clicked
            self.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)
        self.setSortingEnabled(True)
        self._loader.request(list(self._images))
        shown = min(len(rows), TABLE_ROWS_SHOWN)
        height = self.horizontalHeader().sizeHint().height() + sum(self.rowHeight(i) for i in range(shown))
        self.setMinimumHeight(min(height + 2 * self.frameWidth() + 4, 480))

    def _cell(self, column: Column, value: Any) -> QTableWidgetItem:
        if value is None:
            return NumberItem("\u2013", None) if column.kind == "number" else QTableWidgetItem("\u2013")
        if column.kind == "number":
            return NumberItem(number_text(column, value), value)
        if column.kind in ("image", "image_boxes"):
            boxed = value if isinstance(value, BoxedImage) else BoxedImage(str(value))
            path = resolve_image(boxed.image, self.run_dir)
            item = QTableWidgetItem(os.path.basename(path))
            item.setToolTip(path if column.kind == "image" else self._boxes_tip(path, boxed))
            item.setData(Qt.ItemDataRole.UserRole, path)
            self._images.setdefault(path, []).append((item, boxed.boxes if column.kind == "image_boxes" else None))
            return item
        if column.kind == "series":
            series = value if isinstance(value, Series) else Series.cell(value)
            item = QTableWidgetItem()
            item.setData(Qt.ItemDataRole.DecorationRole, sparkline(series))
            item.setToolTip(", ".join(line.label for line in series.lines if line.label))
            return item
        text = str(value)
        item = QTableWidgetItem(text if len(text) <= 400 else text[:400] + "\u2026")
        item.setToolTip(text if len(text) <= 2000 else text[:2000] + "\u2026")
        item.setData(Qt.ItemDataRole.UserRole, text)
        return item

    @staticmethod
    def _boxes_tip(path: str, boxed: BoxedImage) -> str:
        predicted = boxes_above(boxed.predicted_boxes, SCORE_THRESHOLD)
        return f"{path}\n" + QCoreApplication.translate("ResultsView", "{true} true, {predicted} predicted boxes").format(
            true=len(boxed.true_boxes), predicted=len(predicted))

    def _thumbnail(self, path: str, icon: QIcon) -> None:
        for item, boxes in self._images.get(path, []):
            if boxes:
                pixmap = icon.pixmap(CELL_IMAGE, CELL_IMAGE)
                item.setIcon(QIcon(boxed_image(path, boxes_above(boxes, SCORE_THRESHOLD), CELL_IMAGE, pixmap.toImage())))
            else:
                item.setIcon(icon)

    def thumbnails_pending(self) -> int:
        return self._loader.pending()

    def column_texts(self, name: str) -> list[str]:
        """The shown text of column ``name``, top to bottom (for tests and copying)."""
        index = next(i for i, c in enumerate(self.detail.columns) if c.name == name)
        return [self.item(r, index).text() for r in range(self.rowCount())]

    def row_values(self, row: int) -> dict[str, Any]:
        """The detail's row shown at ``row`` (after any sorting)."""
        item = self.item(row, 0)
        order = item.data(Qt.ItemDataRole.UserRole + 1) if item is not None else None
        rows = self.detail.worst_first() if isinstance(self.detail, ExampleRows) else self.detail.rows
        return dict(rows[order]) if isinstance(order, int) else {}


class BoxedImageView(QLabel):
    """One image, large, with its boxes: ``boxes`` are the ones drawn, ``all_boxes`` all it was given.

    Predicted boxes scored under ``threshold`` are not drawn (``set_threshold`` redraws).
    """

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("boxedImage")
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.boxes: tuple[Box, ...] = ()
        self.all_boxes: tuple[Box, ...] = ()
        self.threshold = 0.0
        self.path = ""

    def show_image(self, path: str, boxes: Sequence[Box] = (), threshold: float | None = None) -> bool:
        self.path, self.all_boxes = path, tuple(boxes)
        if threshold is not None:
            self.threshold = threshold
        return self._draw()

    def set_threshold(self, threshold: float) -> None:
        self.threshold = threshold
        if self.path:
            self._draw()

    def _draw(self) -> bool:
        path = self.path
        self.boxes = boxes_above(self.all_boxes, self.threshold)
        pixmap = boxed_image(path, self.boxes, PREVIEW)
        self.setToolTip(path)
        if pixmap.isNull():
            self.setText(self.tr("Cannot read {path}").format(path=path))
            return False
        self.setPixmap(pixmap)
        return True


class RowPreview(QFrame):
    """The chosen example row in full: texts side by side, images large with their boxes, series plotted."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("rowPreview")
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 4, 0, 0)
        self.parts: dict[str, QWidget] = {}
        self.threshold = SCORE_THRESHOLD  # kept from row to row
        self.threshold_slider: ScoreSlider | None = None

    def clear(self) -> None:
        while self.grid.count():
            widget = self.grid.takeAt(0).widget()
            if widget is not None:
                widget.deleteLater()
        self.parts = {}
        self.threshold_slider = None

    def show_row(self, detail: Table, row: dict[str, Any], run_dir: str) -> None:
        self.clear()
        column_index = 0
        for column in detail.columns:
            value = row.get(column.name)
            if value is None or column.kind == "number":
                continue
            widget: QWidget
            if column.kind == "text":
                if len(str(value)) < 60 and "\n" not in str(value):
                    continue  # short texts read well enough in the table
                widget = QPlainTextEdit(str(value))
                widget.setReadOnly(True)
                widget.setMaximumHeight(160)
            elif column.kind in ("image", "image_boxes"):
                boxed = value if isinstance(value, BoxedImage) else BoxedImage(str(value))
                widget = BoxedImageView()
                widget.show_image(resolve_image(boxed.image, run_dir), boxed.boxes, self.threshold)
            else:
                from trainlab_desktop.results.charts import PlotCanvas

                widget = PlotCanvas()
                widget.setMinimumHeight(180)
                draw_series(widget, value if isinstance(value, Series) else Series.cell(value), column.shown_title)
            widget.setObjectName(f"preview_{column.name}")
            self.grid.addWidget(QLabel(column.shown_title), 0, column_index)
            self.grid.addWidget(widget, 1, column_index)
            self.parts[column.name] = widget
            column_index += 1
        views = [w for w in self.parts.values() if isinstance(w, BoxedImageView)]
        if any(w.all_boxes for w in views):
            legend = QLabel(self.tr("Boxes: <span style='color:{t}'>\u25a0 true</span> "
                                    "<span style='color:{p}'>\u25a1 predicted</span>").format(t=TRUE_BOX.name(), p=PREDICTED_BOX.name()))
            legend.setObjectName("boxLegend")
            self.grid.addWidget(legend, 2, 0, 1, max(1, column_index))
        if any(has_scored_boxes(w.all_boxes) for w in views):
            self.threshold_slider = ScoreSlider(self.threshold)
            self.threshold_slider.changed.connect(self._threshold_moved)
            self.grid.addWidget(self.threshold_slider, 3, 0, 1, max(1, column_index))
        self.setVisible(bool(self.parts))

    def _threshold_moved(self, value: float) -> None:
        self.threshold = value
        for widget in self.parts.values():
            if isinstance(widget, BoxedImageView):
                widget.set_threshold(value)


def draw_series(canvas: Any, series: Series, title: str = "") -> list[Any]:
    """``series``' lines on one plot of ``canvas`` (a ``PlotCanvas``), with a legend when they are named."""
    from trainlab_desktop.results.charts import brush, pen

    canvas.clear()
    y_label = series.y_label + (f" ({series.unit})" if series.unit else "")
    plot = canvas.add_plot(0, 0, title, series.x_label, y_label)
    if sum(1 for line in series.lines if line.label) > 1:
        plot.addLegend(offset=(-10, 10))
    items = []
    for index, line in enumerate(series.lines):
        colour = QColor(LINE_COLOURS[index % len(LINE_COLOURS)])
        name = line.label or None
        if line.style == "points":
            item = plot.plot(list(line.xs), list(line.y), pen=None, symbol="o", symbolSize=5,
                             symbolBrush=brush(colour, 160), symbolPen=None, name=name)
        elif line.style == "steps" and len(line.xs) > 1:
            xs = list(line.xs)
            step = xs[1] - xs[0]
            edges = [xs[0] - step / 2] + [(a + b) / 2 for a, b in zip(xs, xs[1:])] + [xs[-1] + step / 2]
            item = plot.plot(edges, list(line.y), stepMode="center", fillLevel=0, brush=brush(colour, 90),
                             pen=pen(colour), name=name)
        else:
            style = {"style": Qt.PenStyle.DashLine} if line.style == "dashed" else {}
            item = plot.plot(list(line.xs), list(line.y), pen=pen(colour, 2, **style), name=name, connect="finite")
        items.append(item)
    return items


class SeriesView(QWidget):
    """A ``Series``: its lines on one plot."""

    def __init__(self, detail: Series, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        from trainlab_desktop.results.charts import PlotCanvas

        self.detail = detail
        self.canvas = PlotCanvas()
        self.canvas.setMinimumHeight(240)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.canvas)
        self.items = draw_series(self.canvas, detail)


class FigureView(QWidget):
    """A ``Figure``: its picture, or its matrix as a heat map."""

    def __init__(self, detail: Figure, run_dir: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.detail = detail
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.picture: QLabel | None = None
        self.matrix: QTableWidget | None = None
        if detail.image:
            path = resolve_image(detail.image, run_dir)
            self.picture = QLabel()
            self.picture.setObjectName("figureImage")
            self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
            image = QImage(path)
            if image.isNull():
                self.picture.setText(self.tr("Cannot read {path}").format(path=path))
            else:
                if image.width() > 900:
                    image = image.scaledToWidth(900, Qt.TransformationMode.SmoothTransformation)
                self.picture.setPixmap(QPixmap.fromImage(image))
            layout.addWidget(self.picture)
        if detail.matrix:
            self.matrix = self._heat_map(detail)
            layout.addWidget(self.matrix)
        if detail.caption:
            caption = QLabel(detail.caption)
            caption.setWordWrap(True)
            caption.setProperty("role", "muted")
            layout.addWidget(caption)

    def _heat_map(self, detail: Figure) -> QTableWidget:
        rows, columns = len(detail.matrix), max(len(r) for r in detail.matrix)
        table = QTableWidget(rows, columns)
        table.setObjectName("figureMatrix")
        table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        table.setHorizontalHeaderLabels(list(detail.column_labels) or [str(i) for i in range(columns)])
        table.setVerticalHeaderLabels(list(detail.row_labels) or [str(i) for i in range(rows)])
        finite = [v for row in detail.matrix for v in row if math.isfinite(v)]
        low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
        base = self.palette().color(QPalette.ColorRole.Base)
        for r, row in enumerate(detail.matrix):
            for c, value in enumerate(row):
                item = QTableWidgetItem(f"{value:.4g}" if math.isfinite(value) else "\u2013")
                item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                share = (value - low) / (high - low) if high > low and math.isfinite(value) else 0.0
                colour = QColor("#2f6fde")
                colour.setAlphaF(0.12 + 0.75 * share)
                item.setBackground(QBrush(colour if math.isfinite(value) else base))
                table.setItem(r, c, item)
        table.resizeColumnsToContents()
        table.setMinimumHeight(min(60 + 30 * rows, 420))
        return table


class DetailBlock(QWidget):
    """One detail: its title, help line, and its drawing."""

    def __init__(self, detail: Detail, run_dir: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.detail = detail
        self.setObjectName(f"detailBlock_{detail.name}")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 8)
        title = detail.shown_title
        if isinstance(detail, ExampleRows) and detail.total is not None and detail.total > len(detail.rows):
            title = self.tr("{title} (the worst {shown} of {total})").format(title=title, shown=len(detail.rows), total=detail.total)
        self.title = section_label(title)
        layout.addWidget(self.title)
        if detail.help:
            note = QLabel(detail.help)
            note.setWordWrap(True)
            note.setProperty("role", "muted")
            layout.addWidget(note)
        self.table: DetailTable | None = None
        self.preview: RowPreview | None = None
        self.series: SeriesView | None = None
        self.figure: FigureView | None = None
        self.custom: QWidget | None = None
        self.problem = ""
        if detail.view:
            self.custom, self.problem = custom_view(detail, run_dir, self)
            if self.custom is not None:
                layout.addWidget(self.custom)
                return
            note = QLabel(self.problem)
            note.setObjectName("viewProblem")
            note.setWordWrap(True)
            note.setProperty("role", "warning")
            layout.addWidget(note)
        if isinstance(detail, Table):
            self.table = DetailTable(detail, run_dir)
            layout.addWidget(self.table)
            if isinstance(detail, ExampleRows) and any(c.kind != "number" for c in detail.columns):
                self.preview = RowPreview()
                self.preview.setVisible(False)
                layout.addWidget(self.preview)
                self.table.itemSelectionChanged.connect(lambda: self._chosen(run_dir))
        elif isinstance(detail, Series):
            self.series = SeriesView(detail)
            layout.addWidget(self.series)
        elif isinstance(detail, Figure):
            self.figure = FigureView(detail, run_dir)
            layout.addWidget(self.figure)
        else:
            unknown = QLabel(self.tr("This TrainLab cannot draw a detail of this kind; eval.json holds it."))
            unknown.setProperty("role", "muted")
            layout.addWidget(unknown)

    def _chosen(self, run_dir: str) -> None:
        assert self.table is not None and self.preview is not None
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            self.preview.setVisible(False)
            return
        self.preview.show_row(self.table.detail, self.table.row_values(rows[0].row()), run_dir)


class DetailsPanel(QScrollArea):
    """Every detail of a report, one under another, in the order given."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("detailsPanel")
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.blocks: dict[str, DetailBlock] = {}
        self._holder = QWidget()
        self._layout = QVBoxLayout(self._holder)
        self._layout.setContentsMargins(0, 0, 8, 0)
        self._layout.addStretch(1)
        self.setWidget(self._holder)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def show_details(self, details: Sequence[Detail], run_dir: str) -> None:
        for block in self.blocks.values():
            self._layout.removeWidget(block)
            block.deleteLater()
        self.blocks = {}
        for detail in details:
            if detail.empty:
                continue
            block = DetailBlock(detail, run_dir)
            self._layout.insertWidget(self._layout.count() - 1, block)
            self.blocks[detail.name] = block
        self.setVisible(bool(self.blocks))

    def table(self, name: str) -> DetailTable | None:
        block = self.blocks.get(name)
        return block.table if block is not None else None

    def thumbnails_pending(self) -> int:
        return sum(b.table.thumbnails_pending() for b in self.blocks.values() if b.table is not None)
