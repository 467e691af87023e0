"""The runtime of series-forecast (imported when a run starts): windows, a small network, its own evaluation."""

import csv
from dataclasses import dataclass
from pathlib import Path

import torch
from trainlab import (
    DataError,
    DataSummary,
    EvalBatch,
    Line,
    MetricAccumulator,
    Prediction,
    Series,
    Task,
    atomic_write_json,
    read_json,
    save_safetensors,
)

from trainlab_forecast import CONTEXT

WORST = 12  # windows listed in eval.json


@dataclass(frozen=True)
class Forecast(Prediction):
    """The next ``len(values)`` values of a series, after the ``history`` it was given."""

    values: tuple
    history: tuple = ()
    kind = "forecast"

    def to_json(self):
        return {"kind": self.kind, "values": list(self.values)}

    def summary(self):
        return "next: " + ", ".join(f"{v:.4g}" for v in self.values)

    def display(self):
        steps = range(1, len(self.values) + 1)
        return Series("forecast", x_label="steps ahead", lines=(
            Line(self.history, range(1 - len(self.history), 1), "given"),
            Line(self.values, steps, "forecast", "dashed"),
        ))

    @classmethod
    def csv_header(cls, top_k, label_names):  # plugin API 2.0's form, without the run: one column
        return ["forecast"]

    @classmethod
    def csv_columns(cls, top_k, label_names, *, spec=None, params=None, predictions=()):
        """A column per step ahead: the run's horizon."""
        horizon = int((params or {}).get("horizon") or max((len(p.values) for p in predictions), default=1))
        return [f"step_{i}" for i in range(1, horizon + 1)]

    def csv_row(self, top_k, label_names):
        return [f"{v:.6g}" for v in self.values]


def smape(pred, true):
    return float((2 * (pred - true).abs() / (pred.abs() + true.abs()).clamp(min=1e-8)).mean())


class ForecastMetrics(MetricAccumulator):
    """outputs: the forecasts [n, H] in the series' units; targets: the true values [n, H]; keys: (series, start)."""

    family = "forecasting"

    def compute(self):
        keys = self.example_keys() or []
        if not self.samples:
            nan = float("nan")
            return self.report({"mae": nan, "smape": nan, "naive_mae": nan}, windows=0)
        pred, true = self.outputs, self.targets
        history = torch.stack([self.task.window(key)[0] for key in keys])
        errors = (pred - true).abs()
        naive = (history[:, -1:] - true).abs()
        window_mae = errors.mean(1)
        per_series = []
        for index, name in enumerate(self.task.series_names):
            mine = torch.tensor([k[0] == index for k in keys])
            if mine.any():
                per_series.append({"series": name, "windows": int(mine.sum()), "mae": float(errors[mine].mean()),
                                   "naive_mae": float(naive[mine].mean()), "smape": smape(pred[mine], true[mine])})
        steps = list(range(1, true.shape[1] + 1))
        worst = []
        for i in window_mae.argsort(descending=True)[:WORST].tolist():
            series, start = keys[i]
            given = history[i].tolist()
            worst.append({
                "series": self.task.series_names[series], "start": start, "mae": float(window_mae[i]),
                "forecast": [Line(given, range(1 - len(given), 1), "given"), Line(true[i].tolist(), steps, "true"),
                             Line(pred[i].tolist(), steps, "forecast", "dashed")],
                "input": ",".join(f"{v:.6g}" for v in given),
            })
        return self.report(
            {"mae": float(errors.mean()), "smape": smape(pred, true), "naive_mae": float(naive.mean())},
            windows=len(keys),
            details={
                "per_series": per_series,
                "worst_windows": worst,
                "error_by_step": [Line(errors.mean(0).tolist(), steps, "model"),
                                  Line(naive.mean(0).tolist(), steps, "repeat the last value", "dashed")],
            },
        )


class Windows(torch.utils.data.Dataset):
    def __init__(self, task, keys):
        self.task, self.keys = task, keys

    def __len__(self):
        return len(self.keys)

    def __getitem__(self, i):
        x, y = self.task.window(self.keys[i])
        return x, y, torch.tensor(self.keys[i])


def normalise(x):
    """Each window by its own level and spread: the network learns shapes, not levels."""
    mean, std = x.mean(-1, keepdim=True), x.std(-1, keepdim=True).clamp(min=1e-3)
    return (x - mean) / std, mean, std


class ForecastTask(Task):
    def prepare(self, data_path, ctx, label_names=None):
        series = {}
        with open(data_path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            missing = {"series", "value"} - set(reader.fieldnames or [])
            if missing:
                raise DataError(f"{data_path}: no {', '.join(sorted(missing))} column (columns: {', '.join(reader.fieldnames or [])})")
            for line, row in enumerate(reader, start=2):
                try:
                    series.setdefault(row["series"], []).append(float(row["value"]))
                except (TypeError, ValueError):
                    raise DataError(f"{data_path}, line {line}: value {row['value']!r} is not a number") from None
        horizon = int(self.params["horizon"])
        self.series_names = list(series)
        self.values = [torch.tensor(v) for v in series.values()]
        parts = {"train": [], "val": []}
        for index, values in enumerate(self.values):
            starts = list(range(len(values) - CONTEXT - horizon + 1))
            held = len(starts) if ctx.whole_data else max(1, round(len(starts) * float(self.params["val_share"])))
            cut = len(starts) - held
            # training windows end before the first held-out value: no peeking at the future
            parts["train"] += [(index, s) for s in starts[: max(0, cut - horizon + 1)]]
            parts["val"] += [(index, s) for s in starts[cut:]]
        if not parts["val"]:
            raise DataError(f"{data_path}: no series is longer than {CONTEXT + horizon} values (context {CONTEXT}, horizon {horizon})")
        self.data = {split: Windows(self, keys) for split, keys in parts.items()}
        return DataSummary(label_names=[], counts={split: {"windows": len(d)} for split, d in self.data.items()})

    def window(self, key):
        index, start = (int(v) for v in key)
        values = self.values[index]
        return values[start : start + CONTEXT], values[start + CONTEXT : start + CONTEXT + int(self.params["horizon"])]

    def dataset(self, split):
        return self.data[split]

    def build_model(self, ctx):
        hidden = int(self.params["hidden"])
        return torch.nn.Sequential(torch.nn.Linear(CONTEXT, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, int(self.params["horizon"])))

    def _forecast(self, model, x):
        z, mean, std = normalise(x.float())
        return model(z) * std + mean

    def train_step(self, model, batch, ctx):
        x, y, _ = batch
        _, mean, std = normalise(x.float())
        loss = torch.nn.functional.l1_loss((self._forecast(model, x) - mean) / std, (y - mean) / std)
        return loss, len(y)

    def eval_step(self, model, batch, ctx):
        x, y, keys = batch
        pred = self._forecast(model, x)
        return EvalBatch(loss_sum=(pred - y).abs().mean(1).sum(), outputs=pred.detach(), targets=y,
                         keys=[tuple(k) for k in keys.tolist()])

    def metric_accumulator(self, split):
        return ForecastMetrics(self, split)

    def describe_examples(self, split, keys):
        return [f"{self.series_names[i]} from {s}" for i, s in keys]

    def save_model(self, model, out_dir, ctx):
        save_safetensors(out_dir / "model.safetensors", {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()})
        atomic_write_json(out_dir / "model.json", {"format": "trainlab-forecast-mlp", "context": CONTEXT,
                                                    "horizon": int(self.params["horizon"]), "hidden": int(self.params["hidden"])})

    def load_trained_model(self, model_dir, ctx):
        from safetensors.torch import load_file

        info = read_json(Path(model_dir) / "model.json")
        self.params.update(horizon=int(info["horizon"]), hidden=int(info["hidden"]))
        model = self.build_model(ctx)
        model.load_state_dict(load_file(str(Path(model_dir) / "model.safetensors")))
        return model

    def load_predictor(self, model_dir, device):
        model = self.load_trained_model(model_dir, None).to(device).eval()

        def predict(items, top_k):
            answers = []
            for item in items:
                try:
                    values = [float(v) for v in item.replace(";", ",").split(",")]
                except ValueError:
                    values = []
                if len(values) != CONTEXT:
                    answers.append(DataError(f"{item!r}: expected the last {CONTEXT} values, comma-separated"))
                    continue
                with torch.inference_mode():
                    out = self._forecast(model, torch.tensor([values], device=device))[0].cpu().tolist()
                answers.append(Forecast(tuple(out), tuple(values)))
            return answers

        return predict
