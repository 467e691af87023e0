"""Typed predictions: what a trained model says about one input.

One frozen dataclass per task family, each with its JSON form (what
``predict --json`` and the window's try-it show) and its CSV columns (what
``predict --out`` writes):

* ``LabelScores`` (classification): labels with probabilities, best first;
  JSON ``{"label", "probability", "predictions": [{"label", "probability"}]}``
  and CSV ``label_1, probability_1, ..., label_k, probability_k``, as
  TrainLab wrote them before plugin API 2;
* ``LabelSet`` (multi-label): the chosen labels and each label's score;
  JSON ``{"labels": [...], "scores": [{"label", "probability"}]}``, CSV
  ``labels`` (joined by ``;``) then ``score_<label>`` per label;
* ``Number`` (regression): JSON ``{"value"}``, CSV ``value``.

A plugin of another family may subclass ``Prediction``.  ``as_prediction``
reads a plugin API 1 predictor's list of ``(label, probability)`` pairs as
``LabelScores``.  No torch, no numpy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence


class Prediction:
    """Base of the typed predictions (a plugin's own family subclasses it)."""

    kind = "prediction"

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def summary(self) -> str:
        """One line for people (the CLI's human output, the window's status)."""
        raise NotImplementedError

    def display(self) -> Any:
        """How try-it draws it (plugin API 2.1), beside ``summary()``.

        A text (``str``), named numbers with a unit (``trainlab.Values``), a
        ``Table``, a ``Series`` (its lines on a plot) or a ``BoxedImage`` (an
        image with its boxes); None, the default: ``summary()`` alone.
        The built-in families' predictions have their own drawing.
        """
        return None

    @classmethod
    def csv_header(cls, top_k: int, label_names: Sequence[str]) -> list[str]:
        raise NotImplementedError

    @classmethod
    def csv_columns(
        cls,
        top_k: int,
        label_names: Sequence[str],
        *,
        spec: Any = None,
        params: Mapping[str, Any] | None = None,
        predictions: Sequence["Prediction"] = (),
    ) -> list[str]:
        """The CSV columns of one ``predict --out`` call's predictions of this type.

        Plugin API 2.1: besides ``top_k`` and the run's ``label_names`` it is
        given the run's ``spec`` (its ``TaskSpec``, None when the plugin is
        gone), its resolved ``params`` (run.json's) and the call's
        ``predictions``, so that a prediction of H values can have H columns.
        By default the columns of ``csv_header(top_k, label_names)``, which is
        what a plugin API 2.0 prediction overrides.
        """
        return list(cls.csv_header(top_k, label_names))

    def csv_row(self, top_k: int, label_names: Sequence[str]) -> list[str]:
        raise NotImplementedError


@dataclass(frozen=True)
class InputItem:
    """One item of ``Task.expand_inputs`` with a name of its own (plugin API 2.1).

    ``value`` is what the predictor is given; ``name`` says which item it is
    in what the user gave (a series' id in a file of series).  ``predict``'s
    ``input`` then reads ``FILE row N (name)``.  A plain item (a string) is
    named by the engine: itself, or ``FILE row N`` for the rows of a file
    given to a task of row inputs.
    """

    value: Any
    name: str = ""


def _scores(pairs: Sequence[Sequence[Any]]) -> tuple[tuple[str, float], ...]:
    return tuple((str(label), float(p)) for label, p in pairs)


@dataclass(frozen=True)
class LabelScores(Prediction):
    """Single-label classification: ``scores`` are (label, probability), best first."""

    scores: tuple[tuple[str, float], ...]
    kind = "label_scores"

    def __post_init__(self) -> None:
        object.__setattr__(self, "scores", _scores(self.scores))

    @property
    def label(self) -> str | None:
        return self.scores[0][0] if self.scores else None

    @property
    def probability(self) -> float | None:
        return self.scores[0][1] if self.scores else None

    def to_json(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "probability": self.probability,
            "predictions": [{"label": label, "probability": p} for label, p in self.scores],
        }

    def summary(self) -> str:
        return ", ".join(f"{label} {p:.3f}" for label, p in self.scores)

    @classmethod
    def csv_header(cls, top_k: int, label_names: Sequence[str]) -> list[str]:
        header = []
        for k in range(1, top_k + 1):
            header += [f"label_{k}", f"probability_{k}"]
        return header

    def csv_row(self, top_k: int, label_names: Sequence[str]) -> list[str]:
        row = []
        for label, p in self.scores[:top_k]:
            row += [label, f"{p:.6f}"]
        return row + [""] * (2 * top_k - len(row))  # top_k may exceed the number of labels


@dataclass(frozen=True)
class LabelSet(Prediction):
    """Multi-label: the ``labels`` at or above their thresholds, and every label's score."""

    labels: tuple[str, ...]
    scores: tuple[tuple[str, float], ...]
    kind = "label_set"

    def __post_init__(self) -> None:
        object.__setattr__(self, "labels", tuple(str(label) for label in self.labels))
        object.__setattr__(self, "scores", _scores(self.scores))

    def to_json(self) -> dict[str, Any]:
        return {"labels": list(self.labels), "scores": [{"label": label, "probability": p} for label, p in self.scores]}

    def summary(self) -> str:
        chosen = "; ".join(self.labels) if self.labels else "(no label)"
        top = ", ".join(f"{label} {p:.3f}" for label, p in sorted(self.scores, key=lambda s: -s[1])[:5])
        return f"{chosen}  [{top}]"

    @classmethod
    def csv_header(cls, top_k: int, label_names: Sequence[str]) -> list[str]:
        return ["labels", *(f"score_{name}" for name in label_names)]

    def csv_row(self, top_k: int, label_names: Sequence[str]) -> list[str]:
        by_label = dict(self.scores)
        return [";".join(self.labels), *(f"{by_label[n]:.6f}" if n in by_label else "" for n in label_names)]


@dataclass(frozen=True)
class Number(Prediction):
    """Regression: the predicted ``value``, in the target's units."""

    value: float
    kind = "number"

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", float(self.value))

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value if math.isfinite(self.value) else str(self.value)}

    def summary(self) -> str:
        return f"{self.value:.6g}"

    @classmethod
    def csv_header(cls, top_k: int, label_names: Sequence[str]) -> list[str]:
        return ["value"]

    def csv_row(self, top_k: int, label_names: Sequence[str]) -> list[str]:
        return [repr(self.value)]


def as_prediction(value: Any) -> Prediction | Exception:
    """A predictor's answer for one input as a typed prediction.

    ``Prediction`` and exceptions (an input that could not be used) pass
    through; a plugin API 1 list of ``(label, probability)`` pairs becomes
    ``LabelScores``; a bare number becomes ``Number``.
    """
    if isinstance(value, (Prediction, Exception)):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return Number(float(value))
    if isinstance(value, (list, tuple)):
        return LabelScores(tuple(value))
    raise TypeError(f"a predictor returned {type(value).__name__}; expected a trainlab Prediction")
