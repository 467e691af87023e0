"""Time-series forecasting: the hooks TrainLab reads at start-up (no torch, no Qt here)."""

import trainlab
from trainlab import (
    Column,
    ExampleRows,
    InputSpec,
    Metric,
    OutputSpec,
    Param,
    Series,
    Table,
    TaskSpec,
)

CONTEXT = 8  # the values a forecast starts from: one field each in try-it


@trainlab.hookimpl
def trainlab_api_version() -> str:
    return "2.1"


@trainlab.hookimpl
def trainlab_tasks():
    return [
        TaskSpec(
            id="series-forecast",
            title="Time-series forecasting",
            description=f"The next values of each series from its last {CONTEXT} (a small network on normalised windows).",
            factory="trainlab_forecast.task:ForecastTask",
            family="forecasting",
            metrics=(
                Metric("mae", "MAE", False, "number", "Mean absolute error of every forecast value, in the series' units."),
                Metric("smape", "sMAPE", False, "percent", "Symmetric mean absolute percentage error."),
                Metric("naive_mae", "Naive MAE", False, "number",
                       "MAE of repeating the last value: the baseline to beat (not a monitor: it does not change).",
                       monitorable=False),
            ),
            monitor="mae",
            data_kind="file",
            data_help="A CSV with 'series' and 'value' columns, each series' rows in time order.",
            input=InputSpec(kind="row", title=f"the last {CONTEXT} values", columns=tuple(f"t-{i}" if i else "t" for i in range(CONTEXT - 1, -1, -1))),
            output=OutputSpec(kind="forecast", field="values", shape=("horizon",)),
            params=(
                Param("horizon", "int", 4, "How many values to forecast.", minimum=1, maximum=256),
                Param("hidden", "int", 32, "Hidden units.", minimum=1, maximum=4096),
                Param("val_share", "float", 0.25, "Share of each series' windows, at its end, held out.", minimum=0.05, maximum=0.9),
            ),
            defaults={"lr": 3e-3, "epochs": 40, "batch_size": 32},
            sample_data="trainlab_forecast:sample/series.csv",
            details=(
                Table("per_series", "Each series", columns=(
                    Column("series", "Series"), Column("windows", "Windows", "number", "count"),
                    Column("mae", "MAE", "number"), Column("naive_mae", "Naive MAE", "number"),
                    Column("smape", "sMAPE", "number", "percent"))),
                ExampleRows("worst_windows", "Worst windows", columns=(
                    Column("series", "Series"), Column("start", "Start", "number", "count"),
                    Column("forecast", "Given, true and forecast", "series"), Column("mae", "MAE", "number")),
                    worst="mae", input_column="input", truth_column="forecast", view="forecast-windows",
                    help="The windows forecast worst; choose one to see it whole."),
                Series("error_by_step", "Error by step ahead", x_label="steps ahead", y_label="MAE"),
            ),
        )
    ]
