"""The runtime of ``text-classification``: data, model and steps for the engine.

Imported only when a run starts (the factory path of the task descriptor),
so torch and transformers may load here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from trainlab import ClassificationTask, DataError, DataSummary, RunContext, TaskSpec, UsageError, __version__
from trainlab.plugins.text import TASK_ID, models
from trainlab.plugins.text.batching import PadCollator, length_grouped_batches, random_batches, sorted_batches
from trainlab.plugins.text.data import Columns, TextData, check_labels, label_order, read_data, read_texts
from trainlab.plugins.text.tokencache import EncodedSplit, encode_split, length_stats

TRUNCATION_WARNING_SHARE = 0.05
DESCRIBE_CHARS = 300  # misclassified texts in eval.json are cut to this
PREDICT_BATCH = 64
TEXT_FILE_SUFFIXES = (".txt", ".csv", ".tsv", ".jsonl")


class TextClassificationTask(ClassificationTask):
    """Sequence classification with a BERT-family model from transformers."""

    def __init__(self, spec: TaskSpec, params: Mapping[str, Any]):
        super().__init__(spec, params)
        self.columns = Columns(
            text=str(self.params.get("text_column") or "text"),
            label=str(self.params.get("label_column") or "label"),
            pair=str(self.params.get("text_pair_column") or ""),
        )
        self.max_length = int(self.params.get("max_length") or 128)
        self.length_grouping = bool(self.params.get("length_grouping", True))
        self.data: TextData | None = None
        self.encoded: dict[str, EncodedSplit] = {}
        self.source: models.ModelSource | None = None
        self.tokenizer: Any = None
        self.collator: PadCollator | None = None

    # -- data ---------------------------------------------------------------
    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        exported = Path(ctx.run_dir) / "model" if ctx.run_dir is not None else None
        if ctx.purpose == "evaluate" and exported is not None and (exported / "config.json").is_file():
            # evaluating a finished run: its own model folder has the tokenizer,
            # even if the pretrained model it started from is gone from the store
            self.source = models.ModelSource("folder", str(exported), exported)
        else:
            self.source = models.resolve_source(str(self.params.get("model") or models.TINY_BERT))
        limit = models.position_limit(self.source)
        if limit is not None and self.max_length > limit:
            raise UsageError(
                f"max_length {self.max_length} is more than model {self.source.describe()} supports ({limit} tokens); "
                f"use --set max_length={limit} or less"
            )
        fraction = float(self.params.get("val_fraction") or 0.2)
        self.data = read_data(data_path, self.columns, fraction, ctx.seed, whole=ctx.whole_data)
        trained = label_names is not None
        if trained:
            self.label_names = list(label_names)
        else:
            self.label_names = label_order(self.data.splits["train"].labels)
            if len(self.label_names) < 2:
                only = self.label_names[0] if self.label_names else "none"
                raise DataError(
                    f"{self.data.splits['train'].path}: classification needs at least two labels in training; found only {only!r}"
                )
        check_labels(self.data, self.label_names, trained)

        self.tokenizer = models.load_tokenizer(self.source)
        use_type_ids = "token_type_ids" in getattr(self.tokenizer, "model_input_names", ["token_type_ids"])
        label_ids = {name: i for i, name in enumerate(self.label_names)}
        self.encoded = {
            name: encode_split(self.tokenizer, split, label_ids, self.max_length, use_type_ids)
            for name, split in self.data.splits.items()
        }
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        # multiples of 8 keep tensor-core shapes on CUDA; on a CPU they only add padding
        self.collator = PadCollator(pad_id, multiple=8 if ctx.is_cuda else 1)
        summary = self._summary()
        # other data evaluated whole is read into the "val" split: name it as the data it is
        names = {"val": Path(data_path).name} if ctx.whole_data else {}
        for line in describe_summary(summary, names):
            ctx.log(line)
        return summary

    def _summary(self) -> DataSummary:
        assert self.data is not None
        counts = {}
        for name, split in self.data.splits.items():
            per_label = dict.fromkeys(self.label_names, 0)
            for label in split.labels:
                per_label[label] += 1
            counts[name] = per_label
        tokens = {name: length_stats(enc, self.max_length) for name, enc in self.encoded.items()}
        summary = DataSummary(
            label_names=list(self.label_names),
            counts=counts,
            skipped=dict(self.data.skipped.counts),
            skipped_examples=list(self.data.skipped.examples),
            extra={
                "model": self.source.describe() if self.source else "",
                "files": [str(f.resolve()) for f in self.data.files],
                "tokens": tokens,
                "max_length": self.max_length,
                "length_grouping": self.length_grouping,
            },
        )
        if self.data.split_from:
            summary.extra["val_split"] = (
                f"held out {float(self.params.get('val_fraction') or 0.2):.0%} of each label of {self.data.split_from} for validation"
            )
        if "train" in counts:
            warning = summary.imbalance_warning("train")
            if warning:
                summary.warnings.append(warning)
            stats = tokens["train"]
            if stats.get("examples") and stats["truncated"] >= TRUNCATION_WARNING_SHARE * stats["examples"]:
                summary.warnings.append(
                    f"{stats['truncated']} of {stats['examples']} training texts are longer than max_length="
                    f"{self.max_length} tokens and get truncated (95% are at most {stats['p95']} tokens); "
                    "consider --set max_length=N"
                )
            for name in ("val", "test"):
                split = self.data.splits.get(name)
                if split is None:
                    continue
                absent = [label for label, n in counts[name].items() if n == 0]
                if absent:
                    summary.warnings.append(f"{name} has no examples of: {', '.join(absent[:10])}")
                seen = set(self.data.splits["train"].texts)
                overlap = sum(1 for text in split.texts if text in seen)
                if overlap:
                    summary.warnings.append(f"{overlap} {name} texts also appear in training (scores will look better than they are)")
        return summary

    def splits(self) -> list[str]:
        return list(self.encoded) if self.encoded else ["train", "val"]

    def dataset(self, split: str) -> EncodedSplit:
        return self.encoded[split]

    def collate(self, items: list[Any]) -> dict[str, Any]:
        assert self.collator is not None, "prepare() first"
        return self.collator(items)

    def batch_order(self, split: str, epoch: int, batch_size: int, seed: int) -> list[list[int]]:
        encoded = self.encoded[split]
        if split == "train":
            if self.length_grouping:
                return length_grouped_batches(encoded.lengths, batch_size, seed, epoch)
            return random_batches(len(encoded), batch_size, seed, epoch)
        if self.length_grouping:
            return sorted_batches(encoded.lengths, batch_size)
        return [list(range(i, min(i + batch_size, len(encoded)))) for i in range(0, len(encoded), batch_size)]

    def loader_options(self, split: str, ctx: RunContext) -> dict[str, Any]:
        # Items are slices of a tokenised array and collation is a few numpy
        # copies: worker processes would cost more than they save.
        return {"num_workers": 0, "pin_memory": ctx.is_cuda}

    def label_counts(self) -> list[int]:
        encoded = self.encoded.get("train")
        if encoded is None:
            return []
        return np.bincount(encoded.labels, minlength=len(self.label_names)).tolist()

    def describe_examples(self, split: str, keys: Sequence[Any]) -> list[str]:
        assert self.data is not None
        rows = self.data.splits[split]
        out = []
        for key in keys:
            text = rows.texts[int(key)]
            if rows.pairs is not None:
                text = f"{text} [SEP] {rows.pairs[int(key)]}"
            out.append(text if len(text) <= DESCRIBE_CHARS else text[: DESCRIBE_CHARS - 1] + "…")
        return out

    # -- model --------------------------------------------------------------
    def build_model(self, ctx: RunContext) -> torch.nn.Module:
        if self.source is None or self.tokenizer is None:
            raise RuntimeError("prepare() must run before build_model()")
        return models.build_model(self.source, self.tokenizer, self.label_names, ctx.log)

    def load_trained_model(self, model_dir: Path, ctx: RunContext) -> torch.nn.Module:
        return models.load_trained(model_dir)

    def to_device(self, batch: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        non_blocking = ctx.is_cuda
        return {k: v.to(ctx.device, non_blocking=non_blocking) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}

    def forward(self, model: torch.nn.Module, batch: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
        return model(**inputs).logits, batch["labels"]

    def batch_keys(self, batch: dict[str, Any]) -> Sequence[Any]:
        return batch["keys"]

    # -- outputs ------------------------------------------------------------
    def save_model(self, model: torch.nn.Module, out_dir: Path, ctx: RunContext) -> None:
        info = {
            "task": TASK_ID,
            "trainlab_version": __version__,
            "model": self.source.name if self.source else "",
            "label_names": list(self.label_names),
            "max_length": self.max_length,
            "text_column": self.columns.text,
            "text_pair_column": self.columns.pair,
        }
        models.save_model_folder(model, self.tokenizer, Path(out_dir), info)

    def load_predictor(self, model_dir: Path, device: Any) -> Callable[[list[str], int], list[list[tuple[str, float]]]]:
        return TextPredictor(Path(model_dir), device)

    def expand_inputs(self, inputs: Iterable[str]) -> list[str]:
        """Texts from the command line: strings, ``-`` (stdin lines), or files of texts.

        A ``.txt`` file gives a text per line; ``.csv``/``.tsv``/``.jsonl``
        the text column.  An argument that names no existing file is a text,
        unless it looks like a file name (no spaces, a text-file suffix).
        """
        items: list[str] = []
        for raw in inputs:
            raw = str(raw)
            if raw == "-":
                items += [line.rstrip("\r\n") for line in sys.stdin if line.strip()]
                continue
            path = Path(raw).expanduser()
            looks_like_file = not any(ch.isspace() for ch in raw) and path.suffix.lower() in TEXT_FILE_SUFFIXES
            if looks_like_file and path.is_file():
                items += read_texts(path, self.columns)
            elif looks_like_file:
                raise DataError(f"{raw}: no such file (to classify this string itself, add a space or a word)")
            elif raw.strip():
                items.append(raw)
        if not items:
            raise UsageError("no texts to predict (the inputs were empty)")
        return items


def describe_summary(summary: DataSummary, names: Mapping[str, str] | None = None) -> list[str]:
    """The data summary as a few lines for the console and the run log;
    ``names`` says a split's data in other words (``val`` -> ``other.csv``)."""
    names = names or {}
    lines = []
    for split, per_label in summary.counts.items():
        split = names.get(split, split)
        shown = ", ".join(f"{label} {n}" for label, n in list(per_label.items())[:12])
        more = f", ... ({len(per_label)} labels)" if len(per_label) > 12 else ""
        lines.append(f"{split}: {sum(per_label.values())} texts ({shown}{more})")
    if summary.skipped:
        reasons = ", ".join(f"{reason} {n}" for reason, n in summary.skipped.items())
        where = ", ".join(f"{place} ({why})" for place, why in summary.skipped_examples[:3])
        lines.append(f"skipped {sum(summary.skipped.values())} rows: {reasons}; e.g. {where}")
    for split, stats in summary.extra.get("tokens", {}).items():
        split = names.get(split, split)
        if stats.get("examples"):
            lines.append(
                f"{split} length in tokens: mean {stats['mean']}, median {stats['median']}, 95% <= {stats['p95']}, "
                f"max {stats['max']}; {stats['truncated']} truncated at max_length {stats['max_length']}"
            )
    if summary.extra.get("val_split"):
        lines.append(summary.extra["val_split"])
    if summary.extra.get("model"):
        lines.append(f"model: {summary.extra['model']}")
    return lines


class TextPredictor:
    """``(texts, top_k) -> [[(label, probability), ...], ...]`` from a model folder alone."""

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

    def __call__(self, texts: list[str], top_k: int = 5) -> list[list[tuple[str, float]]]:
        k = max(1, min(int(top_k), len(self.labels)))
        results: list[list[tuple[str, float]] | None] = [None] * len(texts)
        # sorted by length: batches of similar texts pad little
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), PREDICT_BATCH):
            chunk = order[start : start + PREDICT_BATCH]
            firsts, seconds = [], []
            for i in chunk:
                first, _, second = texts[i].partition("\t") if self.pairs else (texts[i], "", "")
                firsts.append(first)
                seconds.append(second)
            enc = self.tokenizer(
                firsts,
                seconds if self.pairs else None,
                padding=True,
                truncation=True,
                max_length=self.max_length,
                return_tensors="pt",
            ).to(self.device)
            with torch.inference_mode():
                probs = self.model(**enc).logits.float().softmax(dim=-1)
            top = probs.topk(k, dim=-1)
            values, indices = top.values.cpu().tolist(), top.indices.cpu().tolist()
            for row, i in enumerate(chunk):
                results[i] = [(self.labels[j], float(p)) for j, p in zip(indices[row], values[row])]
        return [r or [] for r in results]
