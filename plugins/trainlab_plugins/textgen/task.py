"""The runtime of ``text-generation``: data to tokens, the model, the steps, the export, the predictor.

Imported when a run starts, so torch and transformers load here.

One module because the pieces share the task's state in order: the rows the
data step makes are the ones packing and length grouping order, the model
step's tokenizer is the one the export and the predictor save, and resume
restores all of them together; the data readers, templates, masking, memory
model, metrics and export helpers each live in their own module already.
"""

from __future__ import annotations

import dataclasses
import json
import random
import statistics
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import torch

from trainlab import (
    DataError,
    DataSummary,
    EvalBatch,
    InputItem,
    RunContext,
    StopRequested,
    Task,
    TaskSpec,
    UsageError,
    __version__,
    check_base_fingerprint,
    check_weights,
    device_memory_bytes,
    model_fingerprint,
    resource_path,
)
from trainlab_plugins.text import finetune as text_finetune
from trainlab_plugins.text import lora_export
from trainlab_plugins.text import models as text_models
from trainlab_plugins.textgen import TINY_CHAT
from trainlab_plugins.textgen import data as chat_data
from trainlab_plugins.textgen import memory as sft_memory
from trainlab_plugins.textgen import templates
from trainlab_plugins.textgen.generate import ChatPredictor, GeneratedText, generate_answers
from trainlab_plugins.textgen.metrics import GenerationMetrics
from trainlab_plugins.textgen.model import IGNORE, SFTModel, base_lm

GPU_24GB = 24 * sft_memory.GiB  # the card the memory answer is asked about (RTX 3090/4090, A10, L4)

DESCRIBE_CHARS = 300
TRUNCATION_WARNING_SHARE = 0.05
MEGABATCH = 50  # batches sorted together by length (a window wide enough to match lengths, narrow enough to stay random)
PROMPT_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".txt")


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of a batch: one example, or several packed (``segments`` of (ids, trained))."""

    segments: tuple[tuple[tuple[int, ...], tuple[bool, ...]], ...]
    key: int  # the first example's index in its split
    packed: bool = False  # a row of a packed split: position ids, no attention mask

    def __len__(self) -> int:
        return sum(len(ids) for ids, _ in self.segments)


class Rows(list):
    """A split's rows, with their lengths in tokens (the memory probe takes the longest)."""

    @property
    def lengths(self) -> list[int]:
        return [len(row) for row in self]


def pack(lengths: Sequence[int], max_length: int, seed: int) -> list[list[int]]:
    """Examples grouped into rows of at most ``max_length`` tokens: shuffled by ``seed``, then first fit."""
    order = list(range(len(lengths)))
    random.Random(seed).shuffle(order)
    rows: list[list[int]] = []
    room: list[int] = []
    for i in order:
        for r, free in enumerate(room):
            if lengths[i] <= free:
                rows[r].append(i)
                room[r] -= lengths[i]
                break
        else:
            rows.append([i])
            room.append(max_length - lengths[i])
    return rows


def collate_rows(rows: Sequence[Row], pad_id: int, *, packed: bool) -> dict[str, Any]:
    """Right-padded ids, labels (``IGNORE`` off the trained tokens and at each example's first token).

    Unpacked: with an attention mask.  Packed: no mask, ``position_ids``
    restarting at 0 for each example (and for the padding after them), so
    that no token attends across examples.
    """
    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    labels = torch.full((len(rows), width), IGNORE, dtype=torch.long)
    positions = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for b, row in enumerate(rows):
        at = 0
        for seg_ids, trained in row.segments:
            n = len(seg_ids)
            seg = torch.tensor(seg_ids, dtype=torch.long)
            ids[b, at : at + n] = seg
            on = torch.tensor(trained, dtype=torch.bool)
            on[0] = False  # nothing predicts an example's first token
            labels[b, at : at + n] = torch.where(on, seg, torch.full_like(seg, IGNORE))
            positions[b, at : at + n] = torch.arange(n)
            mask[b, at : at + n] = 1
            at += n
        if at < width:
            positions[b, at:] = torch.arange(width - at)
    batch: dict[str, Any] = {"input_ids": ids, "labels": labels, "keys": [r.key for r in rows], "lengths": torch.tensor([len(r) for r in rows])}
    if packed:
        batch["position_ids"] = positions
    else:
        batch["attention_mask"] = mask
    return batch


def length_grouped_batches(order: list[int], lengths: list[int], batch_size: int, megabatch: int = MEGABATCH) -> list[list[int]]:
    """Batches of rows of similar length, in an order still random: ``order`` (a shuffle) is cut into
    megabatches of ``megabatch`` batches, each sorted longest first and cut into batches; the
    megabatches keep their random order.  The batch holding the longest row goes first, so that a
    run that will not fit in memory says so at its first step, not hours in (as Hugging Face's
    LengthGroupedSampler does).  A function of ``order`` alone: the same shuffle, the same batches."""
    size = batch_size * megabatch
    ordered: list[int] = []
    for start in range(0, len(order), size):
        ordered += sorted(order[start : start + size], key=lambda i: -lengths[i])
    batches = [ordered[i : i + batch_size] for i in range(0, len(ordered), batch_size)]
    if batches:
        longest = max(range(len(batches)), key=lambda b: lengths[batches[b][0]])
        batches.insert(0, batches.pop(longest))
    return batches


class TextGenerationTask(Task):
    """Supervised fine-tuning of a causal LM on conversations or plain text."""

    def __init__(self, spec: TaskSpec, params: Mapping[str, Any]):
        super().__init__(spec, params)
        p = self.params
        self.columns = chat_data.Columns(
            prompt=str(p.get("prompt_column") or "prompt"), response=str(p.get("response_column") or "response"), text=str(p.get("text_column") or "text")
        )
        self.max_length = int(p.get("max_length") or 1024)
        self.packing = bool(p.get("packing", False))
        self.train_on_prompt = bool(p.get("train_on_prompt", False))
        self.template = str(p.get("template") or "auto")
        self.source: text_models.ModelSource | None = None
        self.tokenizer: Any = None
        self.format: templates.ChatFormat | None = None
        self.data: chat_data.ChatData | None = None
        self.encoded: dict[str, list[templates.Encoded]] = {}
        self.examples: dict[str, list[chat_data.Example]] = {}  # per split, aligned with encoded
        self.rows: dict[str, Rows] = {}
        self.plan: text_finetune.FinetunePlan | None = None
        self.eval_model: Any = None  # the model of the last evaluation pass (for its generations)
        self._precision = "fp32"
        self._device = "cpu"
        self.shapes_only = False  # a dry run of a model folder holding config.json but no weights

    # -- data ---------------------------------------------------------------
    def prepare(self, data_path: str, ctx: RunContext, label_names: Sequence[str] | None = None) -> DataSummary:
        exported = Path(ctx.run_dir) / "model" if ctx.run_dir is not None else None
        info = text_models.read_run_info(exported) if exported is not None else {}
        if ctx.purpose == "evaluate" and info.get("finetune") == "lora":
            # a LoRA run's checkpoints hold adapters (and any new token rows) over its base model,
            # which must still be the one it was trained on; its tokenizer gets the same tokens again
            base = Path(str(info.get("base_model") or ""))
            check_base_fingerprint(base, str(info.get("base_fingerprint") or ""), what=f"the run in {ctx.run_dir}")
            self.source = text_models.ModelSource("folder", str(base), base)
        elif ctx.purpose == "evaluate" and exported is not None and (exported / "config.json").is_file():
            self.source = text_models.ModelSource("folder", str(exported), exported)
        else:
            model = str(self.params.get("model") or "").strip()
            if not model:
                raise UsageError("parameter model is empty; give tiny-chat or a folder holding a causal language model (--set model=PATH)")
            if model == TINY_CHAT:
                self.source = text_models.ModelSource("preset", model, resource_path("vocab", TINY_CHAT))
            else:
                self.source = self._resolve_source(model, ctx)
        self.tokenizer = self._load_tokenizer(self.source)
        self.format = templates.setup_tokenizer(self.tokenizer, self.template, self.source.describe())
        self.data = chat_data.read_data(data_path, self.columns, float(self.params.get("val_fraction") or 0.1), ctx.seed, whole=ctx.whole_data)
        stats: dict[str, dict[str, Any]] = {}
        for name, split in self.data.splits.items():
            if ctx.should_stop():
                raise StopRequested()
            self.encoded[name], self.examples[name], stats[name] = self._encode(split)
            if not self.encoded[name]:
                raise DataError(
                    f"{', '.join(str(f) for f in split.files)}: no {name} example fits max_length={self.max_length} tokens "
                    "even with only its last exchange; raise max_length"
                )
            self.rows[name] = self._rows(name, ctx.seed)
        self.plan = self._plan(ctx)
        self._precision = ctx.precision
        self._device = getattr(ctx.device, "type", str(ctx.device))
        summary = self._summary(stats)
        summary.notes = self.summary_lines(summary)  # the window's data check shows them too
        for line in summary.notes:
            ctx.log(line)
        return summary

    def _resolve_source(self, model: str, ctx: RunContext) -> text_models.ModelSource:
        """The model folder; in a dry run also one holding only config.json and a tokenizer (its shapes, for
        the memory model: a 7B answers on a machine that could not load it)."""
        try:
            return text_models.resolve_source(model)
        except UsageError:
            folder = Path(model).expanduser()
            if ctx.purpose != "dry-run" or not (folder / "config.json").is_file() or any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")):
                raise
        self.shapes_only = True
        ctx.log(f"model folder {folder} holds no weights: the dry run reads its shapes from config.json (the memory model's estimate)")
        return text_models.ModelSource("folder", model, folder.resolve())

    def _load_tokenizer(self, source: text_models.ModelSource) -> Any:
        from transformers import AutoTokenizer

        text_models._quiet_transformers()
        try:
            return AutoTokenizer.from_pretrained(str(source.path), local_files_only=True)
        except (OSError, ValueError) as exc:
            raise UsageError(f"cannot load the tokenizer of model {source.describe()}: {exc}") from None

    def _encode(self, split: chat_data.Split) -> tuple[list[templates.Encoded], list[chat_data.Example], dict[str, Any]]:
        assert self.format is not None
        encoded: list[templates.Encoded] = []
        kept: list[chat_data.Example] = []
        lengths: list[int] = []
        dropped_turns = too_long = pieces = 0
        for example in split.examples:
            if example.is_chat:
                enc = templates.encode_chat(self.tokenizer, example.messages, self.format, self.max_length, train_on_prompt=self.train_on_prompt)
                if enc is None:
                    too_long += 1
                    continue
                full = len(enc) if not enc.dropped_turns else None
                lengths.append(full or self.max_length + 1)
                dropped_turns += bool(enc.dropped_turns)
                encoded.append(enc)
                kept.append(example)
            else:
                chunks = templates.encode_plain(self.tokenizer, example.text or "", self.max_length)
                lengths.append(sum(len(c) for c in chunks))
                pieces += len(chunks) > 1
                encoded.extend(chunks)
                kept.extend([example] * len(chunks))
        sorted_lengths = sorted(lengths) or [0]
        stats = {
            "examples": len(split.examples),
            "formats": dict(split.formats),
            "tokens": sum(len(e) for e in encoded),
            "trained_tokens": sum(sum(e.trained) for e in encoded),
            "mean": round(statistics.fmean(lengths), 1) if lengths else 0,
            "median": int(statistics.median(sorted_lengths)),
            "p95": sorted_lengths[min(len(sorted_lengths) - 1, int(0.95 * len(sorted_lengths)))],
            "max": sorted_lengths[-1],
            "early_turns_dropped": dropped_turns,
            "too_long": too_long,
            "split_texts": pieces,
            "max_length": self.max_length,
        }
        return encoded, kept, stats

    def _rows(self, split: str, seed: int) -> Rows:
        encoded = self.encoded[split]
        if self.packing and split == "train":
            groups = pack([len(e) for e in encoded], self.max_length, seed)
        else:
            groups = [[i] for i in range(len(encoded))]
        packed = self.packing and split == "train"
        return Rows(Row(tuple((tuple(encoded[i].ids), tuple(encoded[i].trained)) for i in group), group[0], packed) for group in groups)

    def _summary(self, stats: dict[str, dict[str, Any]]) -> DataSummary:
        assert self.data is not None and self.format is not None and self.source is not None
        summary = DataSummary(
            label_names=[],
            counts={name: {"examples": len(self.encoded[name])} for name in self.encoded},
            count_noun="examples",
            extra={
                "model": self.source.describe(),
                "files": sorted({str(f.resolve()) for s in self.data.splits.values() for f in s.files}),
                "template": self.format.name,
                "added_tokens": list(self.format.added_tokens),
                "stop_tokens": [self.tokenizer.convert_ids_to_tokens(i) for i in self.format.stop_ids],
                "tokens": stats,
                "max_length": self.max_length,
                "packing": self.packing,
                "train_on_prompt": self.train_on_prompt,
            },
        )
        if self.plan is not None:
            summary.extra["finetune"] = self.plan.to_json()
            if self.plan.mode in ("lora", "qlora") and self.source.kind == "folder":
                summary.extra["base_model"] = {"path": str(self.source.path), "fingerprint": model_fingerprint(self.source.path)}
        if self.plan is not None and self.source is not None:
            summary.extra["memory_model"] = self._memory_model().to_json()
            summary.extra["memory_on_gpu"] = self._gpu_answer()
        if self.packing and "train" in self.rows:
            summary.extra["packed_rows"] = len(self.rows["train"])
        if "train" in self.encoded and self.encoded["train"]:
            summary.extra["rendered_example"] = templates.marked(self.tokenizer, self.encoded["train"][0])
        if self.data.split_from:
            summary.extra["val_split"] = f"held out {float(self.params.get('val_fraction') or 0.1):.0%} of {self.data.split_from} for validation"
        train = stats.get("train")
        if train:
            if train["too_long"]:
                summary.warnings.append(
                    f"{train['too_long']} training examples are left out: their last exchange alone is longer than max_length={self.max_length}"
                )
            if train["early_turns_dropped"] >= TRUNCATION_WARNING_SHARE * max(1, train["examples"]):
                summary.warnings.append(
                    f"{train['early_turns_dropped']} of {train['examples']} training chats are longer than max_length={self.max_length} "
                    "and lose their earliest turns (the last answer is always kept); consider --set max_length=N"
                )
        return summary

    def memory_model(self, micro_batch: int) -> dict[str, int] | None:
        """The analytic SFT memory model at ``micro_batch``, for the engine's estimate where its probe cannot load the model."""
        if self.plan is None or self.source is None:
            return None
        m = self._memory_model(micro_batch)
        return {"weights": m.weights + m.adapters, "gradients": m.gradients, "optimizer": m.optimizer, "activations": m.activations + m.logits, "other": m.runtime}

    def _memory_model(self, micro_batch: int | None = None) -> sft_memory.SFTMemory:
        from transformers import AutoConfig

        assert self.plan is not None and self.source is not None
        return sft_memory.sft_memory(
            AutoConfig.from_pretrained(str(self.source.path), local_files_only=True),
            mode=self.plan.mode,
            precision=self._precision,
            max_length=self.max_length,
            micro_batch=micro_batch or int(self.params.get("batch_size") or 1),
            checkpointing=self.plan.gradient_checkpointing,
            lora_rank=self.plan.lora_rank,
            loss_chunk=int(self.params.get("loss_chunk") or 1024),
            device=self._device,
            trained_embeddings=self._trains_embeddings(),
        )

    def _trains_embeddings(self) -> bool:
        """Whether a LoRA run trains the embeddings and output layer in full (the template added tokens)."""
        return self.format is not None and bool(set(self.format.added_tokens) - {templates.PAD_TOKEN})

    def _gpu_answer(self) -> dict[str, Any]:
        """What each fine-tuning mode would need on a GPU in bf16 at this run's batch and max_length, and
        whether it fits a 24 GB card (the question before buying or renting one), whatever this machine is."""
        from transformers import AutoConfig

        assert self.plan is not None and self.source is not None
        config = AutoConfig.from_pretrained(str(self.source.path), local_files_only=True)
        counts = sft_memory.parameter_counts(config)
        batch = int(self.params.get("batch_size") or 1)
        modes = {}
        for mode in ("qlora", "lora", "full"):
            m = sft_memory.sft_memory(
                config, mode=mode, precision="bf16", max_length=self.max_length, micro_batch=batch, checkpointing=True,
                lora_rank=self.plan.lora_rank, loss_chunk=int(self.params.get("loss_chunk") or 1024), counts=counts, device="cuda",
                trained_embeddings=self._trains_embeddings(),
            )
            modes[mode] = {"total": m.total, "fits_24gb": m.fits(GPU_24GB)}
        return {"batch": batch, "max_length": self.max_length, "checkpointing": True, "capacity": GPU_24GB, "modes": modes}

    def summary_lines(self, summary: DataSummary) -> list[str]:
        extra = summary.extra
        lines = []
        for split, st in extra.get("tokens", {}).items():
            formats = ", ".join(f"{k} {v}" for k, v in st.get("formats", {}).items())
            lines.append(
                f"{split}: {summary.counts[split]['examples']} examples ({formats}); length in tokens mean {st['mean']}, "
                f"median {st['median']}, 95% <= {st['p95']}, max {st['max']}; {st['trained_tokens']:,} of {st['tokens']:,} tokens trained"
            )
            cut = []
            if st["early_turns_dropped"]:
                cut.append(f"{st['early_turns_dropped']} lose early turns (from the start; the last answer kept)")
            if st["too_long"]:
                cut.append(f"{st['too_long']} left out (the last exchange alone is too long)")
            if st["split_texts"]:
                cut.append(f"{st['split_texts']} texts cut into pieces of max_length")
            if cut:
                lines.append(f"{split} longer than max_length {st['max_length']}: " + "; ".join(cut))
        lines.append(
            f"template: {extra.get('template')} (stops at {', '.join(extra.get('stop_tokens', []))})"
            + (f"; added tokens {', '.join(extra['added_tokens'])}" if extra.get("added_tokens") else "")
        )
        if extra.get("packed_rows"):
            lines.append(f"packing: {summary.counts['train']['examples']} training examples in {extra['packed_rows']} rows of up to {self.max_length} tokens")
        if extra.get("rendered_example"):
            shown = extra["rendered_example"]
            shown = shown if len(shown) <= 600 else shown[:599] + "…"
            lines.append("first training example, trained part in ⟦ ⟧: " + shown.replace("\n", "\\n"))
        if extra.get("val_split"):
            lines.append(extra["val_split"])
        lines.append(f"model: {extra.get('model')}")
        if extra.get("memory_model"):
            figures = extra["memory_model"]
            lines.append(
                f"SFT memory model (batch {self.params.get('batch_size')}, max_length {self.max_length}): "
                f"about {sft_memory.format_size(figures['total'])} (weights {sft_memory.format_size(figures['weights'])}, "
                f"activations {sft_memory.format_size(figures['activations'])}, logits {sft_memory.format_size(figures['logits'])})"
            )
        gpu = extra.get("memory_on_gpu")
        if gpu:
            sizes = ", ".join(f"{mode} about {sft_memory.format_size(m['total'])}" for mode, m in gpu["modes"].items())
            fitting = [mode for mode, m in gpu["modes"].items() if m["fits_24gb"]]
            lines.append(
                f"on a GPU (bf16, checkpointing, batch {gpu['batch']}, max_length {gpu['max_length']}): {sizes}; "
                + (f"a 24 GB GPU fits {' and '.join(fitting)}" if fitting else "none fits a 24 GB GPU")
            )
        return lines

    def splits(self) -> list[str]:
        return list(self.rows) if self.rows else ["train", "val"]

    def dataset(self, split: str) -> list[Row]:
        return self.rows[split]

    def collate(self, items: list[Any]) -> dict[str, Any]:
        return collate_rows(items, self.tokenizer.pad_token_id, packed=any(r.packed for r in items))

    def batch_order(self, split: str, epoch: int, batch_size: int, seed: int) -> list[list[int]]:
        """Train: the rows shuffled by (seed, epoch), and when not packed grouped by length
        (``length_grouped_batches``): a function of (seed, epoch), so a resumed run skips the
        batches it trained and goes on with the same ones; eval: by length."""
        rows = self.rows[split]
        n = len(rows)
        if split != "train":
            order = sorted(range(n), key=lambda i: -len(rows[i]))
            return [order[i : i + batch_size] for i in range(0, n, batch_size)]
        gen = torch.Generator().manual_seed(seed * 1_000_003 + epoch)
        order = torch.randperm(n, generator=gen).tolist()
        if self.packing:  # packed rows are all about max_length long: nothing to group
            return [order[i : i + batch_size] for i in range(0, n, batch_size)]
        return length_grouped_batches(order, [len(r) for r in rows], batch_size)

    def loader_options(self, split: str, ctx: RunContext) -> dict[str, Any]:
        return {"num_workers": 0, "pin_memory": ctx.is_cuda}

    def describe_examples(self, split: str, keys: Sequence[Any]) -> list[str]:
        out = []
        for key in keys:
            ex = self.examples[split][int(key)]
            text = ex.text if not ex.is_chat else (ex.prompt_messages()[-1]["content"] if ex.prompt_messages() else "")
            text = text or ""
            out.append(text if len(text) <= DESCRIBE_CHARS else text[: DESCRIBE_CHARS - 1] + "…")
        return out

    # -- model --------------------------------------------------------------
    def _plan(self, ctx: RunContext) -> text_finetune.FinetunePlan:
        assert self.source is not None
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(str(self.source.path), local_files_only=True)
        capacity = device_memory_bytes(ctx.device)

        def memory_tight(n_params: int, mode: str) -> bool:
            per_param = 16 if mode == "full" else 2 if mode == "qlora" else 4
            return n_params * per_param > 0.5 * capacity

        preset = self.source.kind == "preset"
        if preset and str(self.params.get("finetune") or "auto") in ("lora", "qlora"):
            raise UsageError(
                f"finetune={self.params.get('finetune')} adapts a pretrained model, but {self.source.name} is trained from scratch "
                "(random weights); use finetune=full or auto, or --set model=FOLDER with a pretrained model"
            )
        plan = text_finetune.plan_finetune(self.params, config, preset=preset, device=ctx.device, memory_tight=memory_tight)
        if plan.mode == "head":
            raise UsageError("finetune=head does not apply to text-generation; use full, lora or qlora")
        return dataclasses.replace(plan, head=())

    def build_model(self, ctx: RunContext) -> torch.nn.Module:
        if self.source is None or self.tokenizer is None:
            raise RuntimeError("prepare() must run before build_model()")
        from transformers import AutoConfig, AutoModelForCausalLM

        text_models._quiet_transformers()
        plan = self.plan or self._plan(ctx)
        config = AutoConfig.from_pretrained(str(self.source.path), local_files_only=True)
        dtype = torch.float32
        if plan.mode in ("lora", "qlora") and ctx.precision == "bf16":
            dtype = torch.bfloat16  # frozen base weights in bf16; the adapters train in fp32
        if torch.get_default_device().type == "meta" or self.source.kind == "preset":  # the memory estimate (shapes only), or from scratch
            lm = AutoModelForCausalLM.from_config(config, dtype=dtype)
        elif self.shapes_only:
            # the memory probe of a dry run: nothing to load; the engine falls back to the memory model
            raise RuntimeError(f"model folder {self.source.path} holds no weights (config.json only)")
        else:
            quantized: dict[str, Any] = {}
            if plan.mode == "qlora":
                from transformers import BitsAndBytesConfig

                quantized = {
                    "quantization_config": BitsAndBytesConfig(
                        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16
                    ),
                    "device_map": {"": ctx.device},
                }
            check_weights(self.source.path, pickles=False)
            try:
                lm = AutoModelForCausalLM.from_pretrained(str(self.source.path), local_files_only=True, dtype=dtype, **quantized)
            except (OSError, ValueError) as exc:
                raise UsageError(f"cannot load model {self.source.describe()} as a causal language model: {exc}") from None
        rows = lm.get_input_embeddings().weight.shape[0]
        if len(self.tokenizer) > rows:
            lm.resize_token_embeddings(len(self.tokenizer), mean_resizing=False)
            ctx.log(f"model: {len(self.tokenizer) - rows} new token embeddings ({', '.join(self.format.added_tokens) if self.format else ''})")
        lm.config.pad_token_id = self.tokenizer.pad_token_id
        if self.format is not None:
            lm.generation_config.eos_token_id = list(self.format.stop_ids)
            lm.generation_config.pad_token_id = self.tokenizer.pad_token_id
        lm = self._apply_finetune(lm, plan, ctx)
        return SFTModel(lm, int(self.params.get("loss_chunk") or 1024))

    def _apply_finetune(self, lm: Any, plan: text_finetune.FinetunePlan, ctx: RunContext) -> Any:
        if plan.gradient_checkpointing:
            kwargs = {"use_reentrant": False}
            if hasattr(lm, "activation_checkpointing_enable"):
                lm.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
            else:
                lm.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
            lm.config.use_cache = False
        if plan.mode in ("lora", "qlora"):
            import warnings

            from peft import LoraConfig, get_peft_model

            if plan.mode == "qlora":
                from peft import prepare_model_for_kbit_training

                lm = prepare_model_for_kbit_training(lm, use_gradient_checkpointing=plan.gradient_checkpointing, gradient_checkpointing_kwargs={"use_reentrant": False})
            # tokens the template added have new embedding rows: they train in full with the adapters
            saved = ["embed_tokens", "lm_head"] if self._trains_embeddings() else None
            config = LoraConfig(
                task_type="CAUSAL_LM",
                r=plan.lora_rank,
                lora_alpha=plan.lora_alpha,
                lora_dropout=plan.lora_dropout,
                target_modules=list(plan.target_modules),
                modules_to_save=saved,
            )
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    lm = get_peft_model(lm, config)
            except ValueError as exc:
                raise UsageError(f"finetune={plan.mode}: {' '.join(str(exc).split())}") from None
            if plan.gradient_checkpointing:
                lm.enable_input_require_grads()
        trainable = sum(p.numel() for p in lm.parameters() if p.requires_grad)
        total = sum(p.numel() for p in lm.parameters())
        what = "every weight" if plan.mode == "full" else f"LoRA rank {plan.lora_rank} adapters"
        ctx.log(
            f"fine-tuning: {what}, {trainable:,} of {total:,} parameters trainable ({trainable / max(total, 1):.2%})"
            + ("; gradient checkpointing on" if plan.gradient_checkpointing else "")
        )
        return lm

    def to_device(self, batch: dict[str, Any], ctx: RunContext) -> dict[str, Any]:
        return {k: v.to(ctx.device, non_blocking=ctx.is_cuda) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}

    @staticmethod
    def _inputs(batch: Mapping[str, Any]) -> dict[str, Any]:
        return {k: batch[k] for k in ("input_ids", "labels", "attention_mask", "position_ids") if k in batch}

    def train_step(self, model: torch.nn.Module, batch: dict[str, Any], ctx: RunContext) -> tuple[torch.Tensor, int]:
        """The mean loss per trained token of the batch (packed or not, the same)."""
        loss_sum, tokens, _ = model(**self._inputs(batch))
        return loss_sum / tokens.clamp(min=1), int(batch["input_ids"].shape[0])

    throughput_unit = "tokens"

    def batch_units(self, batch: dict[str, Any]) -> int:
        """The batch's non-pad tokens (packed rows hold several examples' tokens): the progress shows tokens/s."""
        return int(batch["lengths"].sum())

    def loss_weight(self, batch: dict[str, Any]) -> int:
        """The batch's trained tokens: the engine weighs accumulated micro-batches by them."""
        return int((batch["labels"][:, 1:] != IGNORE).sum())

    def eval_step(self, model: torch.nn.Module, batch: dict[str, Any], ctx: RunContext) -> EvalBatch:
        self.eval_model = model
        loss_sum, tokens, correct = model(**self._inputs(batch))
        counts = torch.stack([tokens.to(torch.float64), correct.to(torch.float64)]).reshape(1, 2)
        return EvalBatch(loss_sum=loss_sum, outputs=counts, targets=torch.zeros(len(batch["keys"])), keys=list(batch["keys"]))

    def metric_accumulator(self, split: str) -> GenerationMetrics:
        return GenerationMetrics(self, split)

    def generation_rows(self, split: str, limit: int) -> list[dict[str, Any]]:
        """Greedy answers to up to ``limit`` prompts of ``split`` with their expected answers (evaluation)."""
        model = self.eval_model
        examples = [e for e in self.examples.get(split, []) if e.is_chat]
        unique = list({e.where: e for e in examples}.values())[:limit]
        if model is None or not unique or self.format is None:
            return []
        lm = _unwrapped(model).lm
        answers = generate_answers(
            lm, self.tokenizer, [e.prompt_messages() for e in unique], self.format.stop_ids,
            max_new_tokens=int(self.params.get("max_new_tokens") or 256), max_length=self.max_length,
        )
        return [
            {"prompt": _last_user(e), "expected": e.answer(), "generated": a.text, "stopped": a.stopped, "where": e.where}
            for e, a in zip(unique, answers)
        ]

    # -- outputs ------------------------------------------------------------
    def _info(self) -> dict[str, Any]:
        return {
            "task": self.spec.id,
            "trainlab_version": __version__,
            "model": self.source.name if self.source else "",
            "max_length": self.max_length,
            "template": self.format.name if self.format else "",
            "stop_token_ids": list(self.format.stop_ids) if self.format else [],
        }

    def save_model(self, model: torch.nn.Module, out_dir: Path, ctx: RunContext) -> None:
        lm = _unwrapped(model).lm
        info = self._info()
        if text_finetune.is_peft(lm):
            assert self.source is not None and self.plan is not None
            policy = "never" if self.plan.mode == "qlora" else "always"
            if policy == "always":
                # merged in fp32 on the CPU: adapters merged into bf16 weights would round every
                # weight they touch, and the merged model would no longer compute what the adapters do
                lm = lm.to(device="cpu", dtype=torch.float32)
            lora_export.save_lora_outputs(lm, self.tokenizer, Path(out_dir), info, self.source, policy, ctx.log)
            _write_generation_config(Path(out_dir), self.format)
            return
        text_models.save_model_folder(lm, self.tokenizer, Path(out_dir), info)
        _write_generation_config(Path(out_dir), self.format)

    def load_trained_model(self, model_dir: Path, ctx: RunContext) -> torch.nn.Module:
        from transformers import AutoModelForCausalLM

        return SFTModel(AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True), int(self.params.get("loss_chunk") or 1024))

    def load_predictor(self, model_dir: Path, device: Any) -> Any:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        text_models._quiet_transformers()
        info = text_models.read_run_info(Path(model_dir))
        if info.get("adapters_only"):
            raise UsageError(f"{model_dir} holds no merged model (QLoRA keeps adapters only); merge it first or load adapter/ with PEFT")
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        lm = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True).to(device).eval()
        stops = list(info.get("stop_token_ids") or [])
        # a model folder TrainLab did not write: the stop tokens its generation config names, and EOS
        configured = lm.generation_config.eos_token_id
        for token in [*(configured if isinstance(configured, list) else [configured]), tokenizer.eos_token_id]:
            if token is not None and token not in stops:
                stops.append(token)
        return ChatPredictor(
            lm,
            tokenizer,
            stops,
            max_new_tokens=int(self.params.get("max_new_tokens") or 256),
            max_length=int(info.get("max_length") or self.max_length),
            temperature=float(self.params.get("temperature") or 0.0),
            top_p=float(self.params.get("top_p") or 1.0),
            as_messages=_as_messages,
        )

    def expand_inputs(self, inputs: Iterable[str]) -> list[Any]:
        """Prompts from the command line: strings, or files of records (JSONL/JSON/CSV/TSV; .txt a prompt per line)."""
        items: list[Any] = []
        for raw in inputs:
            raw = str(raw)
            path = Path(raw).expanduser()
            if path.suffix.lower() in PROMPT_SUFFIXES and not any(ch.isspace() for ch in raw):
                if not path.is_file():
                    raise DataError(f"{raw}: no such file")
                for ex in chat_data.read_prompts(path, self.columns):
                    items.append(InputItem(json.dumps({"messages": ex.prompt_messages()}, ensure_ascii=False), ex.where))
            elif raw.strip():
                items.append(raw)
        if not items:
            raise UsageError("no prompts to answer (the inputs were empty)")
        return items


def _unwrapped(model: Any) -> Any:
    return text_models.unwrap(model)


def _last_user(example: chat_data.Example) -> str:
    users = [m["content"] for m in example.prompt_messages() if m["role"] == "user"]
    return users[-1] if users else ""


def _as_messages(item: Any) -> list[dict[str, str]]:
    if isinstance(item, InputItem):
        item = item.value
    if isinstance(item, str) and item.startswith("{"):
        try:
            record = json.loads(item)
        except json.JSONDecodeError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("messages"), list):
            return list(record["messages"])
    return [{"role": "user", "content": str(item)}]


def _write_generation_config(out_dir: Path, fmt: templates.ChatFormat | None) -> None:
    """generation_config.json stops at the end-of-turn token too, so plain transformers' generate stops by itself."""
    path = out_dir / "generation_config.json"
    if fmt is None or not (out_dir / "config.json").is_file():
        return
    config = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    config["eos_token_id"] = list(fmt.stop_ids)
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


__all__ = ["GeneratedText", "Row", "TextGenerationTask", "base_lm", "collate_rows", "pack"]
