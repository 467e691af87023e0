"""The runtime of tabular-anomaly (imported when a run starts): an autoencoder, its own metrics and prediction."""

import csv
from dataclasses import dataclass
from pathlib import Path

import torch
from trainlab import DataError, DataSummary, EvalBatch, MetricAccumulator, Prediction, Task, atomic_write_json, read_json, save_safetensors


@dataclass(frozen=True)
class AnomalyScore(Prediction):
    """A row's reconstruction error and whether it is above the fitted threshold."""

    score: float
    anomalous: bool
    kind = "anomaly_score"

    def to_json(self):
        return {"kind": self.kind, "score": self.score, "anomalous": self.anomalous}

    def summary(self):
        return f"{'anomaly' if self.anomalous else 'normal'} (score {self.score:.4g})"

    @classmethod
    def csv_header(cls, top_k, label_names):
        return ["score", "anomalous"]

    def csv_row(self, top_k, label_names):
        return [f"{self.score:.6g}", "1" if self.anomalous else "0"]


def roc_auc(scores, labels) -> float:
    """The Mann-Whitney statistic: the chance that an anomaly outscores a normal row (ties count half)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    greater = (pos[:, None] > neg[None, :]).float().sum() + 0.5 * (pos[:, None] == neg[None, :]).float().sum()
    return float(greater / (len(pos) * len(neg)))


def average_precision(scores, labels) -> float:
    order = torch.argsort(scores, descending=True)
    hits = labels[order].float()
    if not hits.sum():
        return float("nan")
    precision = hits.cumsum(0) / torch.arange(1, len(hits) + 1)
    return float((precision * hits).sum() / hits.sum())


class AnomalyAccumulator(MetricAccumulator):
    family = "anomaly"

    def compute(self):
        scores, labels = self.outputs.float(), self.targets.long()
        return self.report(
            {"roc_auc": roc_auc(scores, labels), "average_precision": average_precision(scores, labels)},
            anomalies=int(labels.sum()),
            normal=int((labels == 0).sum()),
        )


class Rows(torch.utils.data.Dataset):
    def __init__(self, x, y, keys):
        self.x, self.y, self.keys = x, y, keys

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return self.x[i], self.y[i], self.keys[i]


class AnomalyTask(Task):
    x_mean = x_std = None
    threshold = None

    def prepare(self, data_path, ctx, label_names=None):
        column = self.params["label_column"]
        with open(data_path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.DictReader(handle)
            if column not in (reader.fieldnames or []):
                raise DataError(f"{data_path}: no {column!r} column (columns: {', '.join(reader.fieldnames or [])})")
            rows = list(reader)
        if len(rows) < 10:
            raise DataError(f"{data_path}: {len(rows)} rows; at least 10 are needed")
        self.features = [c for c in rows[0] if c != column]
        x, y = [], []
        for line, row in enumerate(rows, start=2):
            try:
                x.append([float(row[c]) for c in self.features])
                flag = int(float(row[column] or 0))
            except (TypeError, ValueError):
                raise DataError(f"{data_path}, line {line}: every column must hold a number") from None
            if flag not in (0, 1):
                raise DataError(f"{data_path}, line {line}: {column} must be 0 or 1, not {row[column]!r}")
            y.append(flag)
        x, y = torch.tensor(x), torch.tensor(y)
        order = torch.randperm(len(y), generator=torch.Generator().manual_seed(ctx.seed))
        n_val = max(2, int(len(y) * float(self.params["val_fraction"])))
        train, val = (order[:0], order) if ctx.whole_data else (order[n_val:], order[:n_val])
        train = train[y[train] == 0]  # the autoencoder learns the normal rows only
        if self.x_mean is None:
            self.x_mean, self.x_std = x[train].mean(0), x[train].std(0).clamp(min=1e-6)
        x = (x - self.x_mean) / self.x_std
        self.data = {split: Rows(x[idx], y[idx], (idx + 2).tolist()) for split, idx in (("train", train), ("val", val))}
        counts = {split: {"normal": int((d.y == 0).sum()), "anomaly": int((d.y == 1).sum())} for split, d in self.data.items()}
        return DataSummary(label_names=[], counts=counts)

    def dataset(self, split):
        return self.data[split]

    def build_model(self, ctx):
        n, hidden, code = len(self.features), int(self.params["hidden"]), int(self.params["bottleneck"])
        return torch.nn.Sequential(
            torch.nn.Linear(n, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, code),
            torch.nn.Linear(code, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, n),
        )

    def _errors(self, model, batch):
        x, y, keys = batch
        return ((model(x) - x) ** 2).mean(1), y, keys

    def train_step(self, model, batch, ctx):
        errors, y, _ = self._errors(model, batch)
        return errors.mean(), len(errors)

    def eval_step(self, model, batch, ctx):
        errors, y, keys = self._errors(model, batch)
        return EvalBatch(loss_sum=(errors * (y == 0)).sum(), outputs=errors.detach(), targets=y, keys=keys.tolist())

    def metric_accumulator(self, split):
        return AnomalyAccumulator(self, split)

    def calibrate(self, split, accumulator):
        normal = accumulator.outputs[accumulator.targets == 0].float()
        if len(normal):
            self.threshold = float(torch.quantile(normal, float(self.params["quantile"])))

    def describe_examples(self, split, keys):
        return [f"line {key}" for key in keys]

    def fitted_state(self):
        return {"features": self.features, "x_mean": self.x_mean.tolist(), "x_std": self.x_std.tolist(), "threshold": self.threshold}

    def load_fitted_state(self, state):
        self.features = list(state["features"])
        self.x_mean, self.x_std = torch.tensor(state["x_mean"]), torch.tensor(state["x_std"])
        self.threshold = state.get("threshold")

    def save_model(self, model, out_dir, ctx):
        save_safetensors(out_dir / "model.safetensors", {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()})
        info = {"format": "trainlab-anomaly-autoencoder", "features": self.features, "hidden": int(self.params["hidden"]),
                "bottleneck": int(self.params["bottleneck"]), "x_mean": self.x_mean.tolist(), "x_std": self.x_std.tolist(),
                "threshold": self.threshold}
        atomic_write_json(out_dir / "model.json", info)

    def load_trained_model(self, model_dir, ctx):
        from safetensors.torch import load_file

        info = read_json(Path(model_dir) / "model.json")
        self.features = info["features"]
        self.params.update(hidden=int(info["hidden"]), bottleneck=int(info["bottleneck"]))
        model = self.build_model(ctx)
        model.load_state_dict(load_file(str(Path(model_dir) / "model.safetensors")))
        return model

    def load_predictor(self, model_dir, device):
        model = self.load_trained_model(model_dir, None).to(device).eval()

        def predict(items, top_k):
            answers = []
            for item in items:
                try:
                    values = [float(v) for v in item.split(",")]
                except ValueError:
                    values = []
                if len(values) != len(self.features):
                    answers.append(DataError(f"{item!r}: expected {len(self.features)} numbers ({', '.join(self.features)})"))
                    continue
                x = ((torch.tensor([values]) - self.x_mean) / self.x_std).to(device)
                with torch.inference_mode():
                    score = float(((model(x) - x) ** 2).mean())
                answers.append(AnomalyScore(score, self.threshold is not None and score > self.threshold))
            return answers

        return predict
