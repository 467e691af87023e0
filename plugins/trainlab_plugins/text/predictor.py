"""Predictions from a text model folder: one runner, one reading of its outputs per family.

``TextModelRunner`` loads the tokenizer and the model of ``RUN_DIR/model``
(nothing else: a copied folder predicts too) and turns texts into the
model's raw outputs, batched by length.  The predictors read those outputs:

* ``LabelScoresPredictor``: softmax, the top k ``(label, probability)``;
* ``NumberPredictor``: the output in the target's units (``Number``);
* ``LabelSetPredictor``: a sigmoid per label against its threshold (``LabelSet``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from trainlab import LabelSet, Number, UsageError
from trainlab_plugins.text import models
from trainlab_plugins.text.tokencache import cut_for_truncation

PREDICT_BATCH = 64


class TextModelRunner:
    """``texts -> outputs [n, num_labels]`` (float32, on the CPU, in input order)."""

    def __init__(self, model_dir: Path, device: Any):
        from transformers import AutoTokenizer

        models._quiet_transformers()
        info = models.read_run_info(model_dir)
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot load the model in {model_dir}: {exc}") from None
        model = models.load_trained(model_dir)
        self.device = torch.device(device) if not isinstance(device, torch.device) else device
        self.model = model.to(self.device).eval()
        self.max_length = int(info.get("max_length") or min(self.tokenizer.model_max_length, 512))
        self.pairs = bool(info.get("text_pair_column"))
        config = self.model.config
        self.labels = [str(config.id2label.get(i, i)) for i in range(config.num_labels)]

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        out = torch.zeros(len(texts), len(self.labels))
        # sorted by length: batches of similar texts pad little
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), PREDICT_BATCH):
            chunk = order[start : start + PREDICT_BATCH]
            firsts, seconds = [], []
            for i in chunk:
                # a model trained on pairs reads "text<TAB>pair"
                first, _, second = texts[i].partition("\t") if self.pairs else (texts[i], "", "")
                # only what can reach the first max_length tokens goes to the tokenizer
                first, second = cut_for_truncation(self.tokenizer, first, second if self.pairs else None, self.max_length)
                firsts.append(first)
                seconds.append(second or "")
            enc = self.tokenizer(
                firsts,
                seconds if self.pairs else None,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            with torch.inference_mode():
                out[chunk] = self.model(**enc).logits.float().cpu()
        return out


class LabelScoresPredictor:
    """``(texts, top_k) -> [[(label, probability), ...], ...]``, best first."""

    def __init__(self, runner: TextModelRunner):
        self.runner = runner
        self.labels = runner.labels

    def __call__(self, texts: list[str], top_k: int = 5) -> list[list[tuple[str, float]]]:
        k = max(1, min(int(top_k), len(self.labels)))
        top = self.runner(texts).softmax(dim=-1).topk(k, dim=-1)
        return [
            [(self.labels[j], float(p)) for j, p in zip(indices, values)]
            for indices, values in zip(top.indices.tolist(), top.values.tolist())
        ]


class NumberPredictor:
    """``(texts, top_k) -> [Number, ...]``: ``to_units`` maps the model's output
    (standardised) to the target's units."""

    def __init__(self, runner: TextModelRunner, to_units: Callable[[torch.Tensor], torch.Tensor]):
        self.runner = runner
        self.to_units = to_units

    def __call__(self, texts: list[str], top_k: int = 1) -> list[Number]:
        values = self.to_units(self.runner(texts)[:, 0].double())
        return [Number(float(v)) for v in values.tolist()]


class LabelSetPredictor:
    """``(texts, top_k) -> [LabelSet, ...]``: the labels whose probability reaches
    their threshold, and every label's probability, both best first."""

    def __init__(self, runner: TextModelRunner, thresholds: Sequence[float]):
        if len(thresholds) != len(runner.labels):
            raise UsageError(f"{len(thresholds)} thresholds for a model with {len(runner.labels)} labels")
        self.runner = runner
        self.labels = runner.labels
        self.thresholds = torch.tensor(list(thresholds), dtype=torch.float32)

    def __call__(self, texts: list[str], top_k: int = 0) -> list[LabelSet]:
        probs = self.runner(texts).sigmoid()
        chosen = probs >= self.thresholds
        out = []
        for row, picks in zip(probs.tolist(), chosen.tolist()):
            order = sorted(range(len(row)), key=lambda j: -row[j])
            out.append(
                LabelSet(
                    tuple(self.labels[j] for j in order if picks[j]),
                    tuple((self.labels[j], row[j]) for j in order),
                )
            )
        return out
