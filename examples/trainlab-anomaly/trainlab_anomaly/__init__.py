"""Tabular anomaly detection: the hooks TrainLab reads at start-up (no torch here)."""

import trainlab
from trainlab import InputSpec, Metric, Param, TaskSpec


@trainlab.hookimpl
def trainlab_api_version() -> str:
    return "2.0"


@trainlab.hookimpl
def trainlab_tasks():
    return [
        TaskSpec(
            id="tabular-anomaly",
            title="Tabular anomaly detection",
            description="Rows of numbers scored by how unlike the normal rows they are (an autoencoder's reconstruction error).",
            factory="trainlab_anomaly.task:AnomalyTask",
            family="anomaly",
            metrics=(
                Metric("roc_auc", "ROC AUC", True, "score", "Chance that an anomaly scores above a normal row."),
                Metric("average_precision", "Average precision", True, "score", "Precision averaged over the anomalies, ranked by score."),
            ),
            monitor="roc_auc",
            data_kind="file",
            input=InputSpec(kind="row", title="comma-separated feature values"),
            params=(
                Param("label_column", "str", "anomaly", "Column holding 1 for an anomaly, 0 for a normal row."),
                Param("bottleneck", "int", 2, "Width of the autoencoder's code.", minimum=1, maximum=1024),
                Param("hidden", "int", 16, "Hidden units.", minimum=1, maximum=4096),
                Param("val_fraction", "float", 0.3, "Share of rows held out for validation.", minimum=0.05, maximum=0.9),
                Param("quantile", "float", 0.95, "Normal validation rows' score quantile above which a row is flagged.", minimum=0.5, maximum=0.9999),
            ),
            defaults={"lr": 1e-2, "epochs": 30, "batch_size": 32},
            sample_data="trainlab_anomaly:sample/rows.csv",
        )
    ]
