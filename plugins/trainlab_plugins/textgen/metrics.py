"""The evaluation of ``text-generation``: loss, perplexity and token accuracy, then generated answers scored.

Teacher-forced figures come from every evaluated token: the loss per
trained token, its ``exp`` (perplexity), and the share of trained tokens the
model's top guess gets right.  Then up to ``eval_generations`` held-out
prompts are answered greedily and scored against their expected answers:
exact match (after trimming whitespace), ROUGE-L F-measure and chrF
(torchmetrics' implementations; ROUGE-L over words, and over single
characters for Chinese, Japanese and Korean, which have no spaces), and the
share of answers that stopped by themselves.  The per-example rows go into
the ``generations`` detail, the worst chrF first.
"""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Sequence

from trainlab import ExampleRows

TOKEN_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]|[^\W_]+", re.UNICODE)
SHOWN_CHARS = 500


def words(text: str) -> list[str]:
    """ROUGE's units: lower-cased words, and each CJK character on its own."""
    return TOKEN_RE.findall(text.lower())


def rouge_l(generated: str, expected: str) -> float:
    from torchmetrics.functional.text import rouge_score

    if not words(generated) or not words(expected):
        return float(words(generated) == words(expected))
    score = rouge_score(generated, expected, rouge_keys="rougeL", tokenizer=words, normalizer=lambda s: s)
    return float(score["rougeL_fmeasure"])


def chrf(generated: str, expected: str) -> float:
    from torchmetrics.functional.text import chrf_score

    if not generated.strip() or not expected.strip():
        return float(generated.strip() == expected.strip())
    return float(chrf_score([generated], [[expected]]))


def exact_match(generated: str, expected: str) -> bool:
    return generated.strip() == expected.strip()


def score_rows(rows: Sequence[dict[str, Any]]) -> tuple[dict[str, float], list[dict[str, Any]]]:
    """The generation metrics over ``rows`` (prompt, expected, generated, stopped) and the rows with their scores."""
    scored = []
    for row in rows:
        scored.append({**row, "exact_match": exact_match(row["generated"], row["expected"]), "rouge_l": rouge_l(row["generated"], row["expected"]), "chrf": chrf(row["generated"], row["expected"])})
    if not scored:
        return {}, []
    n = len(scored)
    metrics = {
        "exact_match": sum(r["exact_match"] for r in scored) / n,
        "rouge_l": sum(r["rouge_l"] for r in scored) / n,
        "chrf": sum(r["chrf"] for r in scored) / n,
        "stopped": sum(bool(r["stopped"]) for r in scored) / n,
    }
    return metrics, scored


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


class GenerationMetrics:
    """A ``MetricAccumulator`` of one pass: token counts summed, generations made in ``compute``."""

    family = "text-generation"

    def __init__(self, task: Any, split: str) -> None:
        self.task = task
        self.split = split
        self._loss: Any = None
        self._counts: Any = None
        self._merged = [0.0, 0.0, 0.0]  # loss, tokens, correct of other processes
        self.samples = 0
        self.keys: list[Any] = []

    def update(self, batch: Any) -> None:
        loss = batch.loss_sum.detach().double()
        counts = batch.outputs.detach().double().sum(0)
        self._loss = loss if self._loss is None else self._loss + loss
        self._counts = counts if self._counts is None else self._counts + counts
        self.samples += len(batch.keys or ())
        self.keys.extend(batch.keys or ())

    def _own(self) -> tuple[float, float, float]:
        loss = float(self._loss.item()) if self._loss is not None else 0.0
        tokens, correct = (float(v) for v in self._counts.tolist()) if self._counts is not None else (0.0, 0.0)
        return loss, tokens, correct

    def state(self) -> dict[str, Any]:
        loss, tokens, correct = self._own()
        return {"loss_sum": loss + self._merged[0], "tokens": tokens + self._merged[1], "correct": correct + self._merged[2], "samples": self.samples, "keys": list(self.keys)}

    def merge(self, state: dict[str, Any]) -> None:
        self._merged[0] += float(state["loss_sum"])
        self._merged[1] += float(state["tokens"])
        self._merged[2] += float(state["correct"])
        self.samples += int(state["samples"])
        self.keys.extend(state.get("keys") or [])

    def compute(self) -> dict[str, Any]:
        state = self.state()
        tokens = max(state["tokens"], 1.0)
        loss = state["loss_sum"] / tokens
        metrics: dict[str, float] = {
            "perplexity": math.exp(min(loss, 700.0)),
            "token_accuracy": state["correct"] / tokens,
        }
        limit = int(self.task.params.get("eval_generations") or 0)
        rows = self.task.generation_rows(self.split, limit) if limit > 0 else []
        gen_metrics, scored = score_rows(rows)
        metrics.update(gen_metrics)
        scored.sort(key=lambda r: r["chrf"])
        shown = [
            {
                "prompt": _cut(r["prompt"]),
                "expected": _cut(r["expected"]),
                "generated": _cut(r["generated"]),
                "chrf": r["chrf"],
                "stopped": "yes" if r["stopped"] else "no (cut at max_new_tokens)",
            }
            for r in scored
        ]
        out: dict[str, Any] = {"family": self.family, "samples": self.samples, "loss": loss, "tokens": int(state["tokens"])}
        out.update(metrics)
        out["metrics"] = dict(metrics)
        if shown:
            declared = {d.name: d for d in self.task.spec.detail_specs()}
            detail = declared.get("generations")
            if isinstance(detail, ExampleRows):
                out["details"] = [dataclasses.replace(detail, rows=tuple(shown), total=len(shown)).to_json()]
        return out
