"""Typed evaluation details: what an evaluation shows besides its metrics.

A task's evaluation (its ``MetricAccumulator.compute``) reports metrics
(``trainlab.Metric``) and may add *details*, each one of four kinds:

* ``Table``: rows of named, typed columns (a per-class AP table, the error
  of each series);
* ``ExampleRows``: one row per evaluated example, the worst first (the
  worst forecast windows; prompt, expected and generated answers side by
  side; images with their true and predicted boxes);
* ``Series``: x/y lines on one plot (a precision-recall curve, the error by
  forecast step);
* ``Figure``: a picture file, or a matrix drawn as a heat map.

A task declares the details its evaluation produces in
``TaskSpec.details`` (none declared: its family's, ``FAMILY_DETAILS``), in
the order the results page shows them.  A declaration is the detail without
its data; the accumulator fills it in (``MetricAccumulator.report(...,
details={name: rows})``) or reports a complete detail itself.  Each detail
is written into ``eval.json`` under ``details`` in its JSON form, which says
its kind, title and columns, so the window draws a report without the plugin
that wrote it.

Columns (``Column``) are of kind ``text``, ``number`` (shown as a metric of
that ``display`` and ``unit``), ``image`` (a path), ``image_boxes`` (a
``BoxedImage``: a path and boxes, true and predicted) or ``series`` (a
``Series`` drawn small in its cell).

A detail naming a ``view`` is drawn by the Qt widget another package
registered under that name in the ``trainlab.views`` entry point group
(loaded by the window only), the generic drawing otherwise.

A prediction's ``Prediction.display()`` answers one of these too (or a
``Values`` or a plain text), for try-it to show it.

Plain frozen dataclasses: no torch, no numpy, no Qt.  One module although
it is long: the four kinds share their parts (columns, boxes, lines) and
their JSON form, which change together, and a plugin author reads them as
one reference of the eval.json format.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Iterable, Mapping, Sequence

DETAIL_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}$")
COLUMN_KINDS = ("text", "number", "image", "image_boxes", "series")
BOX_ROLES = ("true", "predicted")
LINE_STYLES = ("line", "points", "steps", "dashed")
NUMBER_DISPLAYS = ("percent", "loss", "score", "count", "number")  # as Metric.display
VIEW_ENTRY_POINT_GROUP = "trainlab.views"


def _number(value: Any) -> float | None:
    """A JSON number as a float (None stays None; NaN and infinities as JSON has no such number)."""
    if value is None or isinstance(value, bool):
        return None
    if hasattr(value, "item"):
        value = value.item()
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number


def _json_number(value: float | None) -> float | str | None:
    if value is None:
        return None
    return value if math.isfinite(value) else str(value)


def _read_number(value: Any) -> float | None:
    if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
        return float(value)
    return _number(value)


# -- values inside cells -------------------------------------------------------
@dataclass(frozen=True)
class Box:
    """One box on an image, in the image's pixels: ``(x0, y0)`` top left, ``(x1, y1)`` bottom right.

    ``role`` is ``true`` (an annotated box) or ``predicted`` (the model's,
    with its ``score``).
    """

    x0: float
    y0: float
    x1: float
    y1: float
    label: str = ""
    score: float | None = None
    role: str = "predicted"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"box": [self.x0, self.y0, self.x1, self.y1], "label": self.label, "role": self.role}
        if self.score is not None:
            out["score"] = _json_number(self.score)
        return out

    @classmethod
    def from_json(cls, data: Any) -> "Box":
        if isinstance(data, Box):
            return data
        if not isinstance(data, Mapping):
            raise ValueError(f"a box is an object with 'box': [x0, y0, x1, y1], not {data!r}")
        coords = data.get("box")
        if not isinstance(coords, (list, tuple)) or len(coords) != 4 or any(_number(v) is None for v in coords):
            raise ValueError(f"a box's 'box' is [x0, y0, x1, y1], not {coords!r}")
        score = data.get("score")
        role = str(data.get("role") or "predicted")
        return cls(*(float(v) for v in coords), label=str(data.get("label") or ""),
                   score=_read_number(score) if score is not None else None, role=role)


@dataclass(frozen=True)
class BoxedImage:
    """An image with boxes drawn over it (true and predicted), for an ``image_boxes`` cell."""

    image: str
    boxes: tuple[Box, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "image", str(self.image))
        object.__setattr__(self, "boxes", tuple(Box.from_json(b) for b in self.boxes))

    @property
    def true_boxes(self) -> tuple[Box, ...]:
        return tuple(b for b in self.boxes if b.role == "true")

    @property
    def predicted_boxes(self) -> tuple[Box, ...]:
        return tuple(b for b in self.boxes if b.role != "true")

    def to_json(self) -> dict[str, Any]:
        return {"image": self.image, "boxes": [b.to_json() for b in self.boxes]}

    @classmethod
    def from_json(cls, data: Any) -> "BoxedImage":
        if isinstance(data, BoxedImage):
            return data
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, Mapping) or not isinstance(data.get("image"), str):
            raise ValueError(f"an image with boxes is an object with 'image' and 'boxes', not {data!r}")
        boxes = data.get("boxes") or []
        if not isinstance(boxes, (list, tuple)):
            raise ValueError(f"'boxes' is a list of boxes, not {boxes!r}")
        return cls(data["image"], tuple(Box.from_json(b) for b in boxes))


@dataclass(frozen=True)
class Line:
    """One line of a ``Series``: its ``y`` values at ``x`` (empty: 0, 1, 2, ...)."""

    y: tuple[float, ...]
    x: tuple[float, ...] = ()
    label: str = ""
    style: str = "line"  # line, points, steps or dashed

    def __post_init__(self) -> None:
        object.__setattr__(self, "y", tuple(_plain_float(v) for v in self.y))
        object.__setattr__(self, "x", tuple(_plain_float(v) for v in self.x))

    @property
    def xs(self) -> tuple[float, ...]:
        return self.x if self.x else tuple(float(i) for i in range(len(self.y)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"y": [_json_number(v) for v in self.y]}
        if self.x:
            out["x"] = [_json_number(v) for v in self.x]
        if self.label:
            out["label"] = self.label
        if self.style != "line":
            out["style"] = self.style
        return out

    @classmethod
    def from_json(cls, data: Any) -> "Line":
        if isinstance(data, Line):
            return data
        if isinstance(data, (list, tuple)):
            return cls(tuple(_read_float(v) for v in data))
        if not isinstance(data, Mapping) or not isinstance(data.get("y"), (list, tuple)):
            raise ValueError(f"a line is an object with 'y' (and 'x', 'label'), not {data!r}")
        x = data.get("x") or []
        if not isinstance(x, (list, tuple)):
            raise ValueError(f"a line's 'x' is a list of numbers, not {x!r}")
        return cls(tuple(_read_float(v) for v in data["y"]), tuple(_read_float(v) for v in x),
                   str(data.get("label") or ""), str(data.get("style") or "line"))


def _plain_float(value: Any) -> float:
    number = _read_number(value)
    if number is None:
        raise ValueError(f"{value!r} is not a number")
    return number


def _read_float(value: Any) -> float:
    number = _read_number(value)
    return float("nan") if number is None else number


@dataclass(frozen=True)
class Values:
    """Named numbers in one unit: a prediction of several values (a forecast of H steps), for try-it."""

    values: tuple[tuple[str, float], ...]
    unit: str = ""
    display: str = "number"  # as Metric.display

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple((str(k), _plain_float(v)) for k, v in self.values))

    def to_json(self) -> dict[str, Any]:
        return {"kind": "values", "values": [[k, _json_number(v)] for k, v in self.values], "unit": self.unit,
                "display": self.display}


@dataclass(frozen=True)
class Column:
    """One column of a ``Table`` or ``ExampleRows``.

    ``kind``: ``text``, ``number``, ``image`` (a path), ``image_boxes`` (a
    ``BoxedImage``) or ``series`` (a ``Series``, or a list of numbers).  A
    number reads as ``display`` says (as ``Metric.display``: percent, score,
    loss, number, count or a format spec), followed by ``unit``.
    """

    name: str
    title: str = ""
    kind: str = "text"
    display: str = "number"
    unit: str = ""
    help: str = ""

    def validate(self) -> list[str]:
        problems = []
        if not isinstance(self.name, str) or not self.name:
            problems.append(f"column name {self.name!r} is empty")
        if self.kind not in COLUMN_KINDS:
            problems.append(f"column {self.name!r}: kind {self.kind!r} is not one of {', '.join(COLUMN_KINDS)}")
        if self.kind == "number" and self.display not in NUMBER_DISPLAYS:
            try:
                format(0.5, self.display)
            except (ValueError, TypeError):
                problems.append(f"column {self.name!r}: display {self.display!r} is neither a kind ({', '.join(NUMBER_DISPLAYS)}) "
                                "nor a format spec")
        return problems

    def cell(self, value: Any) -> Any:
        """``value`` as this column holds it (raising ValueError when it cannot)."""
        if value is None:
            return None
        if self.kind == "number":
            number = _read_number(value)
            if number is None:
                raise ValueError(f"column {self.name!r} holds numbers, not {value!r}")
            return number
        if self.kind == "image_boxes":
            return BoxedImage.from_json(value)
        if self.kind == "series":
            return Series.cell(value)
        return str(value)

    def cell_json(self, value: Any) -> Any:
        value = self.cell(value)
        if isinstance(value, Series):
            return value.cell_json()
        if isinstance(value, BoxedImage):
            return value.to_json()
        if isinstance(value, float):
            return _json_number(value)
        return value

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.title:
            out["title"] = self.title
        if self.kind == "number":
            out["display"] = self.display
        if self.unit:
            out["unit"] = self.unit
        if self.help:
            out["help"] = self.help
        return out

    @classmethod
    def from_json(cls, data: Any) -> "Column":
        if isinstance(data, Column):
            return data
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, Mapping) or not isinstance(data.get("name"), str):
            raise ValueError(f"a column is an object with a 'name', not {data!r}")
        return cls(data["name"], str(data.get("title") or ""), str(data.get("kind") or "text"),
                   str(data.get("display") or "number"), str(data.get("unit") or ""), str(data.get("help") or ""))

    @property
    def shown_title(self) -> str:
        return self.title or self.name


# -- the details ---------------------------------------------------------------
@dataclass(frozen=True)
class Detail:
    """What every detail has: a ``name`` (lower_snake_case, its key), a ``title``,
    a ``help`` line, and the ``view`` that draws it when not the generic one."""

    kind: ClassVar[str] = "detail"
    name: str = ""
    title: str = ""
    help: str = ""
    view: str = ""

    @property
    def shown_title(self) -> str:
        return self.title or self.name.replace("_", " ").capitalize()

    def validate(self) -> list[str]:
        """Problems with this detail (declaration or data); empty when it is usable."""
        problems = []
        if not isinstance(self.name, str) or not DETAIL_NAME_RE.match(self.name):
            problems.append(f"detail name {self.name!r} is not lower_snake_case")
        return problems

    def filled(self, data: Any) -> "Detail":
        """This declaration with its data (rows, lines, a picture): what ``report`` writes."""
        raise NotImplementedError

    @property
    def empty(self) -> bool:
        raise NotImplementedError

    def _head(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.title:
            out["title"] = self.title
        if self.help:
            out["help"] = self.help
        if self.view:
            out["view"] = self.view
        return out

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def declaration(self) -> "Detail":
        """This detail without its data."""
        return self.filled(None)


def _columns(columns: Iterable[Any]) -> tuple[Column, ...]:
    return tuple(Column.from_json(c) for c in columns)


def _rows(columns: Sequence[Column], rows: Iterable[Any], where: str) -> tuple[dict[str, Any], ...]:
    if rows is None:
        return ()
    if isinstance(rows, (str, bytes, Mapping)):
        raise ValueError(f"{where}: rows are a list of objects, not {type(rows).__name__}")
    by_name = {c.name: c for c in columns}
    out = []
    for index, row in enumerate(rows):
        if isinstance(row, (list, tuple)):  # values in column order
            if len(row) != len(columns):
                raise ValueError(f"{where}: row {index} has {len(row)} values for {len(columns)} columns")
            row = dict(zip((c.name for c in columns), row))
        if not isinstance(row, Mapping):
            raise ValueError(f"{where}: row {index} is {type(row).__name__}, not an object")
        clean = {}
        for key, value in row.items():
            column = by_name.get(str(key))
            try:
                clean[str(key)] = column.cell(value) if column is not None else value
            except ValueError as exc:
                raise ValueError(f"{where}: row {index}: {exc}") from None
        out.append(clean)
    return tuple(out)


def _rows_json(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    by_name = {c.name: c for c in columns}
    return [{k: by_name[k].cell_json(v) if k in by_name else v for k, v in row.items()} for row in rows]


@dataclass(frozen=True)
class Table(Detail):
    """Rows of typed columns, drawn as a table (per-class AP, the error of each series)."""

    kind: ClassVar[str] = "table"
    columns: tuple[Column, ...] = ()
    rows: tuple[Mapping[str, Any], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", _columns(self.columns))
        object.__setattr__(self, "rows", _rows(self.columns, self.rows, self.name or self.kind))

    def validate(self) -> list[str]:
        problems = super().validate()
        if not self.columns:
            problems.append(f"{self.kind} {self.name!r}: no columns")
        for column in self.columns:
            problems += [f"{self.kind} {self.name!r}: {p}" for p in column.validate()]
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            problems.append(f"{self.kind} {self.name!r}: a column name appears twice")
        return problems

    @property
    def empty(self) -> bool:
        return not self.rows

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.name == name), None)

    def filled(self, data: Any) -> "Table":
        if isinstance(data, Table):
            data = data.rows
        return replace(self, rows=tuple(data) if data is not None else ())

    def to_json(self) -> dict[str, Any]:
        return {**self._head(), "columns": [c.to_json() for c in self.columns],
                "rows": _rows_json(self.columns, self.rows)}

    @classmethod
    def _from_json(cls, data: Mapping[str, Any], **head: Any) -> "Table":
        return cls(**head, columns=_columns(data.get("columns") or ()), rows=data.get("rows") or ())


@dataclass(frozen=True)
class ExampleRows(Table):
    """One row per evaluated example, shown the worst first and sortable by any column.

    ``worst`` names the number column that ranks them and
    ``higher_is_worse`` which way (an error: True; a score: False); without
    it the rows keep the order given.  ``total`` is how many examples were
    evaluated, when the rows are only the worst few.

    ``input_column`` names the key of each row holding the example as the
    task's predictor takes it (a path, a text, a row as a CSV line), and
    ``truth_column`` what is true of it (shown as text; of a series, its
    line labelled ``true``): try-it's "Random validation example" draws from
    these rows.  Either may be a key of the
    rows that is not a shown column.
    """

    kind: ClassVar[str] = "examples"
    worst: str = ""
    higher_is_worse: bool = True
    total: int | None = None
    input_column: str = ""
    truth_column: str = ""

    def validate(self) -> list[str]:
        problems = super().validate()
        if self.worst and self.column(self.worst) is None:
            problems.append(f"examples {self.name!r}: worst {self.worst!r} is not one of its columns")
        elif self.worst and self.column(self.worst).kind != "number":
            problems.append(f"examples {self.name!r}: worst {self.worst!r} is not a number column")
        return problems

    def worst_first(self) -> tuple[Mapping[str, Any], ...]:
        """The rows, the worst first (rows without a value last)."""
        if not self.worst:
            return self.rows
        sign = -1.0 if self.higher_is_worse else 1.0

        def key(row: Mapping[str, Any]) -> tuple[int, float]:
            value = row.get(self.worst)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or math.isnan(value):
                return (1, 0.0)
            return (0, sign * float(value))

        return tuple(sorted(self.rows, key=key))

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.worst:
            out["worst"] = self.worst
            out["higher_is_worse"] = self.higher_is_worse
        if self.total is not None:
            out["total"] = self.total
        if self.input_column:
            out["input_column"] = self.input_column
        if self.truth_column:
            out["truth_column"] = self.truth_column
        return out

    def example_inputs(self) -> list[tuple[str, str]]:
        """(input, what is true of it) of each row naming its input."""
        if not self.input_column:
            return []
        out = []
        for row in self.rows:
            value = row.get(self.input_column)
            if isinstance(value, BoxedImage):  # an image with its boxes: the image is the input
                value = value.image
            if value is None or str(value).strip() == "":
                continue
            truth = row.get(self.truth_column) if self.truth_column else None
            column = self.column(self.truth_column) if self.truth_column else None
            if isinstance(truth, Series):  # its line labelled "true", else its first
                line = next((ln for ln in truth.lines if ln.label == "true"), truth.lines[0] if truth.lines else None)
                truth = ", ".join(f"{v:.4g}" for v in line.y) if line is not None else None
            elif isinstance(truth, float) and column is not None:
                truth = f"{truth:.6g}{' ' + column.unit if column.unit else ''}"
            out.append((str(value), "" if truth is None else str(truth)))
        return out

    @classmethod
    def _from_json(cls, data: Mapping[str, Any], **head: Any) -> "ExampleRows":
        total = data.get("total")
        return cls(**head, columns=_columns(data.get("columns") or ()), rows=data.get("rows") or (),
                   worst=str(data.get("worst") or ""), higher_is_worse=bool(data.get("higher_is_worse", True)),
                   total=int(total) if isinstance(total, (int, float)) and not isinstance(total, bool) else None,
                   input_column=str(data.get("input_column") or ""), truth_column=str(data.get("truth_column") or ""))


@dataclass(frozen=True)
class Series(Detail):
    """Lines on one plot (a precision-recall curve per class, the error by forecast step)."""

    kind: ClassVar[str] = "series"
    lines: tuple[Line, ...] = ()
    x_label: str = ""
    y_label: str = ""
    unit: str = ""  # of y

    def __post_init__(self) -> None:
        object.__setattr__(self, "lines", tuple(Line.from_json(line) for line in self.lines))

    def validate(self) -> list[str]:
        problems = super().validate()
        for line in self.lines:
            if line.style not in LINE_STYLES:
                problems.append(f"series {self.name!r}: line style {line.style!r} is not one of {', '.join(LINE_STYLES)}")
            if line.x and len(line.x) != len(line.y):
                problems.append(f"series {self.name!r}: a line has {len(line.x)} x values for {len(line.y)} y values")
        return problems

    @property
    def empty(self) -> bool:
        return not any(line.y for line in self.lines)

    def filled(self, data: Any) -> "Series":
        if data is None:
            return replace(self, lines=())
        if isinstance(data, Series):
            return replace(self, lines=data.lines)
        return replace(self, lines=tuple(data))

    def to_json(self) -> dict[str, Any]:
        out = {**self._head(), "lines": [line.to_json() for line in self.lines]}
        for key in ("x_label", "y_label", "unit"):
            if getattr(self, key):
                out[key] = getattr(self, key)
        return out

    def cell_json(self) -> dict[str, Any]:
        """The JSON form inside a table cell: the lines (and the axes' labels when named)."""
        out = self.to_json()
        for key in ("kind", "name"):
            out.pop(key, None)
        return out

    @classmethod
    def cell(cls, value: Any) -> "Series":
        """A series cell's value: a ``Series``, a ``Line``, lines, a list of numbers, or their JSON."""
        if isinstance(value, Series):
            return value
        if isinstance(value, Line):
            return cls(lines=(value,))
        if isinstance(value, Mapping):
            if "lines" in value:
                return cls._from_json(value)
            return cls(lines=(Line.from_json(value),))
        if isinstance(value, (list, tuple)):
            if all(isinstance(v, (Line, Mapping)) for v in value) and value:
                return cls(lines=tuple(Line.from_json(v) for v in value))
            return cls(lines=(Line.from_json(list(value)),))
        raise ValueError(f"a series is a list of numbers or of lines, not {value!r}")

    @classmethod
    def _from_json(cls, data: Mapping[str, Any], **head: Any) -> "Series":
        lines = data.get("lines") or []
        if not isinstance(lines, (list, tuple)):
            raise ValueError(f"'lines' is a list of lines, not {lines!r}")
        return cls(**head, lines=tuple(Line.from_json(line) for line in lines), x_label=str(data.get("x_label") or ""),
                   y_label=str(data.get("y_label") or ""), unit=str(data.get("unit") or ""))


@dataclass(frozen=True)
class Figure(Detail):
    """A picture: an ``image`` file (PNG, JPEG or SVG; relative to the run folder, or absolute),
    or a ``matrix`` of numbers drawn as a heat map with its row and column labels."""

    kind: ClassVar[str] = "figure"
    image: str = ""
    matrix: tuple[tuple[float, ...], ...] = ()
    row_labels: tuple[str, ...] = ()
    column_labels: tuple[str, ...] = ()
    caption: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "matrix", tuple(tuple(_read_float(v) for v in row) for row in self.matrix))
        object.__setattr__(self, "row_labels", tuple(str(v) for v in self.row_labels))
        object.__setattr__(self, "column_labels", tuple(str(v) for v in self.column_labels))

    @property
    def empty(self) -> bool:
        return not self.image and not self.matrix

    def validate(self) -> list[str]:
        problems = super().validate()
        widths = {len(row) for row in self.matrix}
        if len(widths) > 1:
            problems.append(f"figure {self.name!r}: the matrix's rows differ in length")
        if self.row_labels and self.matrix and len(self.row_labels) != len(self.matrix):
            problems.append(f"figure {self.name!r}: {len(self.row_labels)} row labels for {len(self.matrix)} rows")
        return problems

    def filled(self, data: Any) -> "Figure":
        if data is None:
            return replace(self, image="", matrix=())
        if isinstance(data, Figure):
            return replace(self, image=data.image, matrix=data.matrix, row_labels=data.row_labels or self.row_labels,
                           column_labels=data.column_labels or self.column_labels, caption=data.caption or self.caption)
        if isinstance(data, str):
            return replace(self, image=data)
        return replace(self, matrix=tuple(tuple(row) for row in data))

    def to_json(self) -> dict[str, Any]:
        out = self._head()
        if self.image:
            out["image"] = self.image
        if self.matrix:
            out["matrix"] = [[_json_number(v) for v in row] for row in self.matrix]
            out["row_labels"] = list(self.row_labels)
            out["column_labels"] = list(self.column_labels)
        if self.caption:
            out["caption"] = self.caption
        return out

    @classmethod
    def _from_json(cls, data: Mapping[str, Any], **head: Any) -> "Figure":
        return cls(**head, image=str(data.get("image") or ""), matrix=tuple(data.get("matrix") or ()),
                   row_labels=tuple(data.get("row_labels") or ()), column_labels=tuple(data.get("column_labels") or ()),
                   caption=str(data.get("caption") or ""))


DETAIL_KINDS: dict[str, type[Detail]] = {cls.kind: cls for cls in (Table, ExampleRows, Series, Figure)}


@dataclass(frozen=True)
class UnknownDetail(Detail):
    """A detail of a kind this TrainLab does not know (written by a newer one): kept as written."""

    kind: ClassVar[str] = "unknown"
    data: Mapping[str, Any] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return False

    def filled(self, data: Any) -> "UnknownDetail":
        return self

    def to_json(self) -> dict[str, Any]:
        return dict(self.data)


def detail_from_json(data: Any) -> Detail:
    """A detail from its JSON form (``Detail.to_json``); ValueError naming what is wrong."""
    if isinstance(data, Detail):
        return data
    if not isinstance(data, Mapping):
        raise ValueError(f"a detail is an object, not {type(data).__name__}")
    kind, name = data.get("kind"), data.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("a detail has no 'name'")
    cls = DETAIL_KINDS.get(str(kind))
    head = {"name": name, "title": str(data.get("title") or ""), "help": str(data.get("help") or ""),
            "view": str(data.get("view") or "")}
    if cls is None:
        return UnknownDetail(**head, data=dict(data))
    try:
        return cls._from_json(data, **head)  # type: ignore[attr-defined]
    except ValueError as exc:
        raise ValueError(f"detail {name!r}: {exc}") from None


def fill_details(declared: Sequence[Detail], details: Any) -> list[Detail]:
    """The details an evaluation reports: complete ``Detail`` values as they are,
    and each ``name: data`` pair filled into the declaration of that name."""
    if details is None:
        return []
    by_name = {d.name: d for d in declared}
    if isinstance(details, Mapping):
        out = []
        for name, data in details.items():
            spec = by_name.get(name)
            if isinstance(data, Detail) and (spec is None or type(data) is not type(spec)):
                out.append(replace(data, name=name))  # complete as it is; named by its key
                continue
            if spec is None:
                raise ValueError(f"detail {name!r} is not declared (TaskSpec.details), so its kind is unknown")
            out.append(spec.filled(data))
        return out
    out = []
    for item in details:
        if not isinstance(item, Detail):
            raise ValueError(f"a reported detail is a trainlab Detail (Table, ExampleRows, Series, Figure), not {item!r}")
        out.append(item)
    return out


# The details of each built-in family's evaluation, in the order the results
# page lists them.  Their reports write these under their own keys (as plugin
# API 2.0 did: ``per_class``, ``misclassified``, ...); the reader of eval.json
# gives them back as these details.
_EXAMPLE = Column("example", "Example", "text")
FAMILY_DETAILS: dict[str, tuple[Detail, ...]] = {
    "classification": (
        Table("per_class", "Per class", columns=(
            Column("label", "Class"), Column("precision", "Precision", "number", "percent"),
            Column("recall", "Recall", "number", "percent"), Column("f1", "F1", "number", "score"),
            Column("support", "Support", "number", "count"))),
        ExampleRows("misclassified", "Misclassified examples", columns=(
            _EXAMPLE, Column("true", "True"), Column("predicted", "Predicted"),
            Column("confidence", "Confidence", "number", "percent")), worst="confidence",
            input_column="example", truth_column="true"),
    ),
    "regression": (
        ExampleRows("worst_examples", "Worst examples", columns=(
            _EXAMPLE, Column("true", "True", "number"), Column("predicted", "Predicted", "number"),
            Column("error", "Error", "number"), Column("abs_error", "Absolute error", "number")), worst="abs_error",
            input_column="example", truth_column="true"),
        Series("scatter", "Predicted against true", x_label="true", y_label="predicted"),
        Series("residual_histogram", "Residuals", x_label="predicted \u2212 true", y_label="examples"),
    ),
    "multilabel": (
        Table("per_label", "Per label", columns=(
            Column("label", "Label"), Column("precision", "Precision", "number", "percent"),
            Column("recall", "Recall", "number", "percent"), Column("f1", "F1", "number", "score"),
            Column("support", "Support", "number", "count"), Column("threshold", "Threshold", "number", "score"))),
        ExampleRows("misclassified", "Examples with a wrong label set", columns=(
            _EXAMPLE, Column("true", "True"), Column("predicted", "Predicted"), Column("missed", "Missed"),
            Column("unexpected", "Unexpected"), Column("wrong", "Wrong labels", "number", "count")), worst="wrong",
            input_column="example", truth_column="true"),
    ),
}


__all__ = [
    "BOX_ROLES",
    "COLUMN_KINDS",
    "DETAIL_KINDS",
    "FAMILY_DETAILS",
    "VIEW_ENTRY_POINT_GROUP",
    "Box",
    "BoxedImage",
    "Column",
    "Detail",
    "ExampleRows",
    "Figure",
    "Line",
    "Series",
    "Table",
    "UnknownDetail",
    "Values",
    "detail_from_json",
    "fill_details",
]
