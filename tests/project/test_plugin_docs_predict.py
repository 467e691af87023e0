"""docs/plugins.md section 5's example of CSV columns from the run: run as written, through predict --out's writer."""

from __future__ import annotations

import csv
import re
import sys
import types

from helpers import ROOT

DOC = ROOT / "docs" / "plugins.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.DOTALL)


def test_the_columns_example_writes_a_column_per_step(monkeypatch, tmp_path):
    from trainlab.cli.reporting import write_predictions
    from trainlab.engine.predict import PredictedInput

    body = next(b for lang, b in BLOCK.findall(DOC.read_text(encoding="utf-8")) if lang == "python" and b.startswith("# columns_example.py\n"))
    module = types.ModuleType("columns_example")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look their module up
    exec(compile(body, "columns_example.py", "exec"), module.__dict__)  # noqa: S102 - the doc's own example
    forecast = module.Forecast

    results = [PredictedInput("holdout.csv row 1 (north)", forecast((1.5, 2.25, 3.0)), "", "forecasting"),
               PredictedInput("oops", None, "expected 4 values", "forecasting")]
    table = tmp_path / "out.csv"
    write_predictions(table, results, 3, [], forecast, params={"horizon": 3})
    assert list(csv.reader(table.open(encoding="utf-8", newline=""))) == [
        ["input", "step_1", "step_2", "step_3", "error"],
        ["holdout.csv row 1 (north)", "1.5", "2.25", "3", ""],
        ["oops", "", "", "", "expected 4 values"],
    ]
    # without the run's parameters the predictions say how many steps there are; the 2.0 form stays
    assert forecast.csv_columns(3, [], predictions=[forecast((1.0, 2.0))]) == ["step_1", "step_2"]
    assert forecast.csv_header(3, []) == ["values"]
