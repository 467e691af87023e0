"""What the text tasks share: reading, tokens, batches, the model, its export, texts to predict.

``TextTask`` goes before a family base class in a task's bases
(``class TextRegressionTask(TextTask, RegressionTask)``).  It reads the files
(each label through the family's ``LabelKind``), tokenises every split once
(``tokencache``), batches by length (``batching``), resolves, builds and
saves the model (``models``: one place for every text task), and reads the
texts to predict.  A family supplies what differs:

* ``label_kind()``: how a label cell reads;
* ``fit_labels(label_names, ctx)``: label names, label checks, target
  scaling; after reading, before tokenising;
* ``targets(split)``: a split's targets as one array;
* ``problem_type`` and ``head_labels()``: the model's outputs;
* ``split_counts()``, ``family_summary(summary)`` and ``count_lines``: the
  data summary's counts, warnings and first console lines;
* ``export_info()``: what ``trainlab.json`` records beside the model;
* ``load_predictor``.

Imported only when a run starts, so torch and transformers may load here.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import torch

from trainlab import DataError, DataSummary, RunContext, TaskSpec, UsageError, __version__, check_base_fingerprint, device_memory_bytes, model_fingerprint
from trainlab_plugins.text import finetune, lora_export, models
from trainlab_plugins.text.batching import PadCollator, length_grouped_batches, random_batches, sorted_batches
from trainlab_plugins.text.data import Columns, TextData, TextSplit, read_data, read_texts
from trainlab_plugins.text.labels import LabelKind
from trainlab_plugins.text.token_cache import cached_encode, tokenizer_digest
from trainlab_plugins.text.tokencache import EncodedSplit, encode_split, length_stats

TRUNCATION_WARNING_SHARE = 0.05
DESCRIBE_CHARS = 300  # texts in eval.json's example lists are cut to this
TEXT_FILE_SUFFIXES = (".txt", ".csv", ".tsv", ".jsonl")
# The output layers transformers adds on top of an encoder (BERT's classifier,
# DistilBERT's pre_classifier, a decoder's score): initialised anew on a
# pretrained model, so they learn at ``head_lr``.
HEAD_MODULES = frozenset({"classifier", "pre_classifier", "score"})
# head_lr=auto on a pretrained encoder: a new linear layer learns at a
# from-scratch rate; at the encoder's fine-tuning rate (2e-5 to 5e-5) it barely
# moves in a few hundred steps, and every label stays below its threshold.
HEAD_LR_AUTO = 1e-3


class TextTask:
    """The shared runtime of the text tasks (a mixin: the family base class follows it)."""

    problem_type: str | None = None  # transformers' config.problem_type of the head
    # dropout=auto on a pretrained model: this rate for every dropout (None:
    # the model's own); a family that declares the dropout parameter sets it
    auto_dropout: float | None = None
    # how the summary says what validation was carved out of
    split_note = "held out {share} of each label of {source} for validation"

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
        self.token_cache: dict[str, str] = {}  # per split: "hit" (ids read from the disk cache) or "built"
        self.source: models.ModelSource | None = None
        self.tokenizer: Any = None
        self.collator: PadCollator | None = None
        self.finetune: finetune.FinetunePlan | None = None

    # -- what a family supplies ------------------------------------------------
    def label_kind(self) -> LabelKind:
        raise NotImplementedError

    def fit_labels(self, label_names: Sequence[str] | None, ctx: RunContext) -> None:
        raise NotImplementedError

    def targets(self, split: TextSplit) -> np.ndarray:
        raise NotImplementedError

    def head_labels(self) -> list[str]:
        return list(self.label_names)

    def split_counts(self) -> dict[str, dict[str, int]]:
        raise NotImplementedError

    def family_summary(self, summary: DataSummary) -> None:
        """Add the family's warnings and figures to ``summary``."""

    def count_lines(self, summary: DataSummary) -> list[str]:
        raise NotImplementedError

    def export_info(self) -> dict[str, Any]:
        return {}

    # -- data ---------------------------------------------------------------
    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        exported = Path(ctx.run_dir) / "model" if ctx.run_dir is not None else None
        info = models.read_run_info(exported) if exported is not None else {}
        if ctx.purpose == "evaluate" and info.get("finetune") == "lora":
            # a LoRA run's checkpoints hold adapters over its base model: that
            # model must still be the one it was trained on
            base = Path(str(info.get("base_model") or ""))
            check_base_fingerprint(base, str(info.get("base_fingerprint") or ""), what=f"the run in {ctx.run_dir}")
            self.source = models.ModelSource("folder", str(base), base)
        elif ctx.purpose == "evaluate" and exported is not None and (exported / "config.json").is_file():
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
        self.data = read_data(data_path, self.columns, fraction, ctx.seed, whole=ctx.whole_data, label_kind=self.label_kind())
        self.fit_labels(label_names, ctx)

        self.tokenizer = models.load_tokenizer(self.source)
        use_type_ids = "token_type_ids" in getattr(self.tokenizer, "model_input_names", ["token_type_ids"])
        self.encoded, self.token_cache = {}, {}
        key_parts = (tokenizer_digest(self.tokenizer, self.source.path), self.max_length, use_type_ids)
        for name, split in self.data.splits.items():
            targets = self.targets(split)
            self.encoded[name], self.token_cache[name] = cached_encode(
                split, targets, key_parts, lambda: encode_split(self.tokenizer, split, targets, self.max_length, use_type_ids)
            )
        self.finetune = self._plan_finetune(ctx)
        pad_id = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        # multiples of 8 keep tensor-core shapes on CUDA; on a CPU they only add padding
        self.collator = PadCollator(pad_id, multiple=8 if ctx.is_cuda else 1)
        summary = self._summary()
        if ctx.purpose == "resume" and self.source.kind == "preset":
            # the weights come from the run's checkpoint, not the preset's random start
            summary.extra["model"] = f"{self.source.name} (built-in preset; weights from the run's checkpoint)"
        elif ctx.purpose == "evaluate":
            what = f"{self.source.name} (built-in preset)" if self.source.kind == "preset" else self.source.describe()
            summary.extra["model"] = f"{what} with the run's trained weights"
        # other data evaluated whole is read into the "val" split: name it as the data it is
        data_name = Path(data_path).name if ctx.whole_data else ""
        for line in self.summary_lines(summary):
            ctx.log(renamed_split(line, "val", data_name) if data_name else line)
        return summary

    def _plan_finetune(self, ctx: RunContext) -> finetune.FinetunePlan:
        assert self.source is not None
        config = models.model_config(self.source, self.tokenizer, self.head_labels(), self.problem_type, self.dropout_rate())
        capacity = device_memory_bytes(ctx.device)

        def memory_tight(n_params: int, mode: str) -> bool:
            # weights + gradients + two AdamW moments (16 bytes a parameter) when
            # every weight trains; about the fp32 weights alone with adapters
            per_param = 16 if mode == "full" else 2 if mode == "qlora" else 4
            return n_params * per_param > 0.5 * capacity

        return finetune.plan_finetune(self.params, config, preset=self.source.kind == "preset", device=ctx.device, memory_tight=memory_tight)

    def _summary(self) -> DataSummary:
        assert self.data is not None
        tokens = {name: length_stats(enc, self.max_length) for name, enc in self.encoded.items()}
        summary = DataSummary(
            label_names=list(self.label_names),
            counts=self.split_counts(),
            skipped=dict(self.data.skipped.counts),
            skipped_examples=list(self.data.skipped.examples),
            extra={
                "model": self.source.describe() if self.source else "",
                "files": [str(f.resolve()) for f in self.data.files],
                "tokens": tokens,
                "max_length": self.max_length,
                "length_grouping": self.length_grouping,
                "token_cache": dict(self.token_cache),
            },
        )
        if self.finetune is not None:
            summary.extra["finetune"] = self.finetune.to_json()
        if self.source is not None and self.source.kind == "folder" and self.finetune is not None and self.finetune.mode in ("lora", "qlora"):
            # recorded in run.json: what the adapters are trained over
            summary.extra["base_model"] = {"path": str(self.source.path), "fingerprint": model_fingerprint(self.source.path)}
            # shown before Start: what model/ will hold, and the disk it takes
            policy = "never" if self.finetune.mode == "qlora" else str(self.params.get("merged_model") or "auto")
            base_bytes = models.weights_bytes(self.source)
            merged = lora_export.keeps_merged(policy, base_bytes)
            summary.extra["finetune"]["outputs"] = {"merged_model": merged, "merged_model_bytes": base_bytes if merged else 0}
        if self.data.split_from:
            share = f"{float(self.params.get('val_fraction') or 0.2):.0%}"
            summary.extra["val_split"] = self.split_note.format(share=share, source=self.data.split_from)
        self.family_summary(summary)
        if "train" in self.data.splits:
            stats = tokens["train"]
            if stats.get("examples") and stats["truncated"] >= TRUNCATION_WARNING_SHARE * stats["examples"]:
                summary.warnings.append(
                    f"{stats['truncated']} of {stats['examples']} training texts are longer than max_length="
                    f"{self.max_length} tokens and get truncated (95% are at most {stats['p95']} tokens); "
                    "consider --set max_length=N"
                )
            seen = set(self.data.splits["train"].texts)
            for name in ("val", "test"):
                split = self.data.splits.get(name)
                overlap = sum(1 for text in split.texts if text in seen) if split is not None else 0
                if overlap:
                    summary.warnings.append(f"{overlap} {name} texts also appear in training (scores will look better than they are)")
        return summary

    def summary_lines(self, summary: DataSummary) -> list[str]:
        """The data summary as a few lines for the console and the run log."""
        lines = self.count_lines(summary)
        if summary.skipped:
            reasons = ", ".join(f"{reason} {n}" for reason, n in summary.skipped.items())
            where = ", ".join(f"{place} ({why})" for place, why in summary.skipped_examples[:3])
            lines.append(f"skipped {sum(summary.skipped.values())} rows: {reasons}; e.g. {where}")
        for split, stats in summary.extra.get("tokens", {}).items():
            if stats.get("examples"):
                lines.append(
                    f"{split} length in tokens: mean {stats['mean']}, median {stats['median']}, 95% <= {stats['p95']}, "
                    f"max {stats['max']}; {stats['truncated']} truncated at max_length {stats['max_length']}"
                )
        hits = [split for split, how in summary.extra.get("token_cache", {}).items() if how == "hit"]
        if hits:
            lines.append(f"token ids of {', '.join(hits)} read from the cache (nothing tokenised)")
        if summary.extra.get("val_split"):
            lines.append(summary.extra["val_split"])
        if summary.extra.get("model"):
            lines.append(f"model: {summary.extra['model']}")
        outputs = summary.extra.get("finetune", {}).get("outputs")
        if outputs:
            lines.append(
                f"LoRA outputs: adapters in adapter/ and the merged model in model/ (about {outputs['merged_model_bytes'] / 1e9:.1f} GB)"
                if outputs["merged_model"]
                else "LoRA outputs: adapters only (adapter/); model/ names the base model and its fingerprint"
            )
        return lines

    def head_learning_rate(self) -> float | None:
        """The learning rate of the new output layers (``head_lr``), or None: the run's ``lr`` for every weight.

        ``auto``: ``HEAD_LR_AUTO`` (or ``lr`` where that is larger) for a
        pretrained model, ``lr`` for a preset trained from scratch.
        """
        value = str(self.params.get("head_lr", "same")).strip().lower()
        lr = float(self.params.get("lr") or 0.0)
        if value == "same":
            return None
        if value == "auto":
            return max(HEAD_LR_AUTO, lr) if self.source is not None and self.source.kind != "preset" else None
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0 < number <= 10:
            raise UsageError(f"bad value for parameter head_lr: {value!r}; use auto, same or a learning rate (e.g. --set head_lr=1e-3)")
        return number

    def dropout_rate(self) -> float | None:
        """Every dropout rate of the model (``dropout``), or None: the model's own.

        ``auto``: the family's ``auto_dropout`` on a pretrained model, the
        model's own on a preset trained from scratch; ``model``: the model's
        own; or a number.  A task without the parameter keeps the model's own.
        """
        value = str(self.params.get("dropout", "model")).strip().lower()
        if value == "model":
            return None
        if value == "auto":
            return self.auto_dropout if self.source is not None and self.source.kind != "preset" else None
        try:
            number = float(value)
        except ValueError:
            number = -1.0
        if not 0 <= number < 1:
            raise UsageError(f"bad value for parameter dropout: {value!r}; use auto, model or a rate from 0 to below 1 (e.g. --set dropout=0.1)")
        return number

    def parameter_groups(self, model: torch.nn.Module, weight_decay: float) -> list[dict[str, Any]]:
        groups = super().parameter_groups(model, weight_decay)
        head_lr = self.head_learning_rate()
        if head_lr is None:
            return groups
        head = {id(p) for name, p in model.named_parameters() if HEAD_MODULES.intersection(name.split("."))}
        split: list[dict[str, Any]] = []
        for group in groups:
            body = [p for p in group["params"] if id(p) not in head]
            top = [p for p in group["params"] if id(p) in head]
            split += [{**group, "params": body}] if body else []
            split += [{**group, "params": top, "lr": head_lr}] if top else []
        return split

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
        plan = self.finetune or self._plan_finetune(ctx)
        # evaluating, the model only takes the run's trained weights: what would train is no news
        log = ctx.log if ctx.purpose != "evaluate" else _quiet
        model = models.build_model(
            self.source,
            self.tokenizer,
            self.head_labels(),
            log,
            problem_type=self.problem_type,
            quantize_4bit_on=ctx.device if plan.mode == "qlora" else None,
            dropout=self.dropout_rate(),
        )
        return finetune.apply_finetune(model, plan, log)

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
            "task": self.spec.id,
            "trainlab_version": __version__,
            "model": self.source.name if self.source else "",
            "label_names": list(self.label_names),
            "max_length": self.max_length,
            "text_column": self.columns.text,
            "text_pair_column": self.columns.pair,
            **self.export_info(),
        }
        model = models.unwrap(model)
        if finetune.is_peft(model):
            assert self.source is not None and self.finetune is not None
            # 4-bit weights merged would need bitsandbytes to load: QLoRA keeps adapters only
            policy = "never" if self.finetune.mode == "qlora" else str(self.params.get("merged_model") or "auto")
            lora_export.save_lora_outputs(model, self.tokenizer, Path(out_dir), info, self.source, policy, ctx.log)
            return
        models.save_model_folder(model, self.tokenizer, Path(out_dir), info)

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
                raise DataError(f"{raw}: no such file (to predict for this string itself, add a space or a word)")
            elif raw.strip():
                items.append(raw)
        if not items:
            raise UsageError("no texts to predict (the inputs were empty)")
        return items


def renamed_split(line: str, split: str, name: str) -> str:
    """``line`` of the data summary with a leading split name said as ``name``."""
    for sep in (":", " "):
        if line.startswith(split + sep):
            return name + line[len(split):]
    return line


def _quiet(message: str) -> None:
    """A log that drops what it is given (evaluation builds a model only to load trained weights into it)."""
