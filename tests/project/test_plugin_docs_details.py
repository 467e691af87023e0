"""docs/plugins.md's examples of plugin API 2.1 work as written: typed details and a prediction's display hint.

The test takes the doc's code blocks as they are, runs the accumulator on
evaluation batches as the engine gives them (two processes' shares merged,
as a run over two GPUs would), and reads what it reports back from eval.json.
"""

from __future__ import annotations

import json
import re
import sys
import types

import pytest

from helpers import ROOT

DOC = ROOT / "docs" / "plugins.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def doc_module(first_line: str, monkeypatch) -> dict:
    """The names the doc's python block starting with ``# first_line`` defines, run as a module of that name."""
    body = next(b for lang, b in BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang == "python" and b.startswith(f"# {first_line}\n"))
    module = types.ModuleType(first_line.removesuffix(".py"))
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(body, first_line, "exec"), module.__dict__)  # noqa: S102 - the doc's own example
    return module.__dict__


def test_the_details_example_reports_its_declared_details_into_eval_json(monkeypatch):
    torch = pytest.importorskip("torch")
    from trainlab import EvalBatch, ExampleRows, Series, Table
    from trainlab.runfolder.eval_report import EvalRecord

    example = doc_module("details_example.py", monkeypatch)
    spec = example["SPEC"]
    assert spec.validate() == []

    class Task:  # what the accumulator asks of the task: its spec and a window's input values
        def __init__(self):
            self.spec = spec

        def history(self, key):
            return [10.0 + key[1], 11.0 + key[1]]

    def batch(series, starts, error):
        true = torch.tensor([[1.0, 2.0, 3.0]] * len(starts))
        pred = true + torch.tensor([[error, 0.0, 2 * error]] * len(starts))
        return EvalBatch(loss_sum=(pred - true).abs().sum(), outputs=pred, targets=true, keys=[(series, s) for s in starts])

    accumulator = example["ForecastMetrics"](Task(), "val")
    accumulator.update(batch("north", [0, 1], 0.5))
    other = example["ForecastMetrics"](Task(), "val")  # another process's share
    other.update(batch("south", [0, 1, 2], 2.0))
    accumulator.merge(other.state())
    report = accumulator.compute()

    read = EvalRecord.from_json(json.loads(json.dumps(report))).primary
    assert read.declared_metrics == {"mae": pytest.approx((2 * 0.5 + 3 * 2.0) * 3 / 5 / 3)}
    assert read.other_numbers == {"windows": 5.0}  # a count, not a metric
    per_series, worst, by_step, numbers = read.view_details(spec.details)
    assert numbers.name == "other_numbers" and numbers.rows == ({"name": "windows", "value": 5.0},)
    assert isinstance(per_series, Table) and [r["series"] for r in per_series.rows] == ["north", "south"]
    assert isinstance(worst, ExampleRows) and worst.worst_first()[0]["series"] == "south"
    assert [line.label for line in worst.rows[0]["forecast"].lines] == ["given", "true", "forecast"]
    assert worst.example_inputs()[0] == ("10.0,11.0", "1, 2, 3")  # the input try-it predicts, and the true values
    assert isinstance(by_step, Series) and by_step.lines[0].y == pytest.approx((1.4, 0.0, 2.8))


def test_the_display_example_plots_the_given_values_and_the_forecast(monkeypatch):
    from trainlab import Series

    forecast = doc_module("display_example.py", monkeypatch)["Forecast"]((8.5, 9.0), (7.0, 7.5, 8.0))
    assert forecast.summary() == "next: 8.5, 9"
    shown = forecast.display()
    assert isinstance(shown, Series) and [line.label for line in shown.lines] == ["given", "forecast"]
    assert shown.lines[0].xs == (-2.0, -1.0, 0.0) and shown.lines[1].xs == (1.0, 2.0)
