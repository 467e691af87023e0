"""What the command line says about results: every metric as its task declared it.

The CLI's per-epoch lines (``ConsoleProgress``), its ``done:`` line, ``trainlab eval``,
``trainlab runs`` and ``trainlab predict --out`` (CSV or JSON lines) read metrics and
predictions through here, so a regression run reads ``r2 0.953  mae 12.3``
and a classification run ``accuracy 92.5%  macro_f1 0.912`` wherever it is
shown.  A metric is written by its name (the key of ``--set monitor=``, of
``eval.json`` and of ``train --json``) in the ``display`` its task declared
(``trainlab.runfolder.display.format_metric``); a run whose plugin is gone falls back
to the form its name suggests.  No torch here.
"""

from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from trainlab.api.callbacks import Callback
from trainlab.api.errors import UsageError
from trainlab.api.descriptors import FAMILY_METRICS, Metric, TaskSpec
from trainlab.api.events import EvalResult, Log, Phase, Progress, Started, TrainStep
from trainlab.pluginhost.host import registry
from trainlab.runfolder.display import format_metric
from trainlab.system.fileio import atomic_write

# Keys of a report that are numbers but not metrics.
_NOT_METRICS = frozenset({"loss", "samples", "step", "epoch", "time", "labels_per_example"})


def task_spec(task_id: str) -> TaskSpec | None:
    """The installed task's descriptor, or None (a run of a plugin that is gone)."""
    try:
        return registry().tasks[task_id].spec
    except Exception:  # noqa: BLE001 - a listing never fails over one run's plugin
        return None


def declared_metrics(spec: TaskSpec | None, family: str = "") -> tuple[Metric, ...]:
    if spec is not None:
        return spec.metric_specs()
    return FAMILY_METRICS.get(family, ((), ""))[0]


def metric_text(name: str, value: Any, specs: Sequence[Metric] = ()) -> str:
    """``value`` of metric ``name`` in its declared display and unit (``loss`` reads as a loss)."""
    spec = next((m for m in specs if m.name == name), None)
    return format_metric(name, value, spec)  # its display and unit


def metrics_text(metrics: Mapping[str, Any], specs: Sequence[Metric] = (), *, loss: bool = False, sep: str = "  ") -> str:
    """``name value`` for each metric: the declared ones in their declared
    order, then any other number the report carries (``top5_accuracy``)."""
    names = [m.name for m in specs if m.name in metrics]
    names += [k for k in metrics if k not in names and k not in _NOT_METRICS and _is_number(metrics[k])]
    if loss and "loss" in metrics:
        names.append("loss")
    return sep.join(f"{name} {metric_text(name, metrics[name], specs)}" for name in names)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, str):
        return value in ("nan", "inf", "-inf")
    return isinstance(value, (int, float))


def report_metrics(report: Mapping[str, Any], specs: Sequence[Metric] = ()) -> dict[str, Any]:
    """A split report's metrics: its ``metrics`` (plugin API 2), else the
    declared names found at its top level (reports written before)."""
    metrics = report.get("metrics")
    if isinstance(metrics, Mapping) and metrics:
        found = dict(metrics)
    else:
        wanted = [m.name for m in specs] or ["accuracy", "macro_f1"]
        found = {name: report[name] for name in wanted if name in report}
    if "top5_accuracy" in report and "top5_accuracy" not in found:
        found["top5_accuracy"] = report["top5_accuracy"]
    return found


# -- trainlab train ------------------------------------------------------------------


class ConsoleProgress:
    """Human progress on stderr: a line per evaluation, a status line at most every 2 s."""

    def __init__(self, out: Any):
        self.out = out
        self._last = 0.0
        self.metric_specs: tuple = ()
        self.callback = type("ConsoleCallback", (Callback,), {"on_event": lambda _self, e: self.on_event(e)})()

    def on_event(self, event) -> None:
        now = time.monotonic()
        if isinstance(event, Started):
            self.metric_specs = declared_metrics(task_spec(event.task))
            self.out.note(f"run folder: {event.run_dir}  ({event.device}, {event.precision}, {event.total_steps} steps)")
        elif isinstance(event, TrainStep) and now - self._last >= 2.0:
            self._last = now
            units = f"  {event.units_per_second:,.0f} {event.unit}/s" if event.units_per_second else ""
            self.out.note(f"epoch {event.epoch} step {event.step}: loss {event.loss:.4f}  lr {event.lr:.2e}  {event.samples_per_second:.0f} samples/s{units}")
        elif isinstance(event, EvalResult):
            best = "  (best)" if event.best else ""
            shown = metrics_text(event.metrics, self.metric_specs)
            loss = f" loss {event.loss:.4f}" if event.loss is not None else ""  # None: the task measures no loss
            self.out.note(f"epoch {event.epoch}: {event.split}{loss}  {shown}{best}".rstrip())
        elif isinstance(event, Log) and event.level in ("warning", "error", "info"):
            self.out.note(f"{event.level}: {event.message}" if event.level != "info" else event.message)
        elif isinstance(event, Progress) and event.phase == Phase.PAUSED:
            self.out.note("paused")


def done_text(metrics: Mapping[str, Any], specs: Sequence[Metric]) -> str:
    """The ``done:`` line's metrics: the final validation ones, and the test split's when the data has one."""
    text = metrics_text(metrics, specs, sep=", ") or "no validation metrics"
    test = metrics.get("test")
    if isinstance(test, Mapping) and test:
        text += f" (test: {metrics_text(test, specs, sep=', ')})"
    return text


# -- trainlab eval ---------------------------------------------------------------


def evaluated_what(report: Mapping[str, Any]) -> str:
    """Which data a ``trainlab eval`` report covers, in words."""
    data = str(report.get("data") or "")
    split = str(report.get("split") or "val")
    if report.get("whole_data"):  # other data than the run's own: all of it (RunContext.whole_data)
        return f"all of {data}"
    return f"the {split} split of its own data ({data})"


def eval_lines(report: Mapping[str, Any], spec: TaskSpec | None) -> list[str]:
    """``trainlab eval``'s human report: what was evaluated, the metrics, the family's details."""
    family = str(report.get("family") or (spec.family if spec is not None else "classification"))
    specs = declared_metrics(spec, family)
    metrics = report_metrics(report, specs)
    samples = report.get("samples")
    count = f", {samples} examples" if isinstance(samples, int) else ""
    lines = [f"evaluated {evaluated_what(report)}{count}, {report.get('weights') or 'model'} weights"]
    lines.append("  " + metrics_text({**metrics, "loss": report.get("loss")}, specs, loss=report.get("loss") is not None))
    if family == "classification":
        for row in report.get("per_class") or []:
            lines.append(
                f"  {str(row.get('label')):<24} precision {_f3(row.get('precision'))}  recall {_f3(row.get('recall'))}  "
                f"f1 {_f3(row.get('f1'))}  support {row.get('support')}"
            )
    elif family == "multilabel":
        for row in report.get("per_label") or []:
            lines.append(
                f"  {str(row.get('label')):<24} precision {_f3(row.get('precision'))}  recall {_f3(row.get('recall'))}  "
                f"f1 {_f3(row.get('f1'))}  support {row.get('support')}  threshold {_f3(row.get('threshold'), 2)}"
            )
    elif family == "regression":
        worst = list(report.get("worst_examples") or [])
        if worst:
            lines.append(f"  {len(worst)} worst examples listed in the report; the largest errors:")
            for row in worst[:3]:
                lines.append(
                    f"    {row.get('example')}: true {_g(row.get('true'))}, predicted {_g(row.get('predicted'))} "
                    f"(error {_g(row.get('error'))})"
                )
    return lines


def _f3(value: Any, digits: int = 3) -> str:
    return f"{value:.{digits}f}" if _is_number(value) and not isinstance(value, str) else "\u2013"


def _g(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else str(value)


# -- trainlab predict ------------------------------------------------------------


PREDICTION_FORMATS = (".csv", ".jsonl", ".json")


def predictions_format(path: Path) -> str:
    """``csv``, ``jsonl`` or ``json``, by ``path``'s extension; a UsageError names any other."""
    suffix = path.suffix.lower()
    if suffix not in PREDICTION_FORMATS:
        raise UsageError(f"--out {path}: the file's extension chooses the format, .csv or .jsonl, or .json for one document (not {suffix or 'none'})")
    return suffix[1:]


def write_predictions(
    path: Path,
    results: Sequence[Any],
    top_k: int,
    label_names: Sequence[str],
    prediction_type: type | None,
    *,
    spec: TaskSpec | None = None,
    params: Mapping[str, Any] | None = None,
) -> None:
    """``predict --out``: a CSV (``.csv``), JSON lines (``.jsonl``: one ``predict --json`` answer a line)
    or one JSON document (``.json``): the prediction type's own when it has a ``json_document``
    classmethod (object detection: COCO's results list), else the list of the answers."""
    kind = predictions_format(path)
    if kind == "json":
        import json

        document_of = getattr(prediction_type, "json_document", None)
        if document_of is not None:
            document = document_of([item.input for item in results], [item.prediction for item in results])
        else:
            document = [item.to_json() for item in results]
        atomic_write(path, lambda tmp: tmp.write_text(json.dumps(document, ensure_ascii=False, indent=1), encoding="utf-8"))
        return
    if kind == "jsonl":
        import json

        def write_lines(tmp: Path) -> None:
            with open(tmp, "w", encoding="utf-8") as handle:
                for item in results:
                    handle.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")

        atomic_write(path, write_lines)
        return
    write_predictions_csv(path, results, top_k, label_names, prediction_type, spec=spec, params=params)


def write_predictions_csv(
    path: Path,
    results: Sequence[Any],
    top_k: int,
    label_names: Sequence[str],
    prediction_type: type | None,
    *,
    spec: TaskSpec | None = None,
    params: Mapping[str, Any] | None = None,
) -> None:
    """``input``, the prediction's own columns (``Prediction.csv_columns``, given the run's
    spec, parameters and this call's predictions), ``error``."""
    header: list[str] = []
    if prediction_type is not None:
        predictions = [item.prediction for item in results if item.prediction is not None]
        columns = getattr(prediction_type, "csv_columns", None)
        if columns is not None:
            header = list(columns(top_k, label_names, spec=spec, params=dict(params or {}), predictions=predictions))
        else:  # a prediction type that does not derive from trainlab.Prediction
            header = list(prediction_type.csv_header(top_k, label_names))

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["input", *header, "error"])
            for item in results:
                cells = item.prediction.csv_row(top_k, label_names) if item.prediction is not None else []
                cells = list(cells)[: len(header)] + [""] * (len(header) - len(cells))
                writer.writerow([item.input, *cells, item.error])

    atomic_write(path, write)
