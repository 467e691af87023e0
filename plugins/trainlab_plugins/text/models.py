"""Which model a run uses, and building, saving and loading it offline.

``model`` is the ``tiny-bert`` preset (a small BERT, randomly initialised,
with the vocabulary shipped inside TrainLab), a folder holding a
transformers model, or a name that ``trainlab.resolve_model`` finds in the
model store or the Hugging Face cache.  Everything loads with
``local_files_only=True``: the hub is never asked.

A folder's weights are checked when the model is chosen (``resolve_source``,
so in ``prepare``, before a run folder exists): damaged safetensors and
pickles that would run code are refused there with one line, not found by
transformers half-way into a run.  The weights TrainLab saves carry a
checksum (``trainlab.system.fileio``) that ``load_trained`` verifies.
"""

from __future__ import annotations

import json
import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from trainlab import (
    UsageError,
    add_checksum,
    atomic_write_folder,
    check_base_fingerprint,
    check_text_model_folder,
    check_weights,
    refuse_pickle,
    resolve_model,
    resource_path,
    weight_files,
)

TINY_BERT = "tiny-bert"
# Small enough to train from scratch on a CPU in a minute or two; 512
# positions so any max_length a user picks for a base model works here too.
TINY_BERT_CONFIG = {
    "hidden_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 512,
    "max_position_embeddings": 512,
    "type_vocab_size": 2,
    "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1,
}
RUN_INFO_FILE = "trainlab.json"  # beside the model: what TrainLab trained it with
ADAPTER_DIR = "adapter"  # a LoRA run's adapters alone, beside model/


@dataclass(frozen=True)
class ModelSource:
    """Where a model comes from: ``kind`` is ``preset`` or ``folder``."""

    kind: str
    name: str  # as the user gave it
    path: Path  # the model folder, or the preset's tokenizer folder

    def describe(self) -> str:
        if self.kind == "preset":
            return f"{self.name} (built-in preset, trained from scratch)"
        return f"{self.name} ({self.path})" if str(self.path) != self.name else str(self.path)


def tiny_bert_vocab_dir() -> Path:
    return resource_path("vocab", "tiny-bert")


def resolve_source(model: str) -> ModelSource:
    """The model a parameter value names; UsageError says what is wrong."""
    model = str(model).strip()
    if not model:
        raise UsageError("parameter model is empty; use tiny-bert, a model folder or a model name")
    if model == TINY_BERT:
        return ModelSource("preset", model, tiny_bert_vocab_dir())
    candidate = Path(model).expanduser()
    if candidate.is_dir():
        check = check_text_model_folder(candidate)
        if not check.usable:
            raise UsageError(f"model folder {candidate} cannot be used: missing {check.describe_missing()}")
        check_weights(candidate)
        return ModelSource("folder", model, candidate.resolve())
    if candidate.exists():
        raise UsageError(f"model {model!r} is a file; give the folder that holds config.json, the tokenizer and the weights")
    if model.startswith((".", "~", os.sep)) or model.count("/") > 1:
        raise UsageError(f"model folder {candidate}: no such folder")
    try:
        path = resolve_model(model)
    except UsageError as exc:
        if "/" in model:
            raise UsageError(f"{exc} (nor is there a folder {candidate.resolve()})") from None
        raise
    check = check_text_model_folder(path)
    if not check.usable:
        raise UsageError(f"model {model!r} ({path}) cannot be used: missing {check.describe_missing()}")
    check_weights(path)
    return ModelSource("folder", model, path)


def _quiet_transformers() -> None:
    # Loading bars and "newly initialized" notices would clutter the run's
    # output; TrainLab reports what matters itself.
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()


def load_tokenizer(source: ModelSource) -> Any:
    from transformers import AutoTokenizer

    _quiet_transformers()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source.path), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the tokenizer of model {source.describe()}: {exc}") from None
    if tokenizer.pad_token is None:
        # Decoder tokenizers (Qwen, Llama, Mistral) often have no pad token, and
        # batches above one cannot be padded without it (transformers#34055).
        # The end-of-text token stands in: the classifier reads the rightmost
        # token that is not the pad token (transformers >= 4.49, either padding
        # side), so it never reads a pad; no new embedding row is needed.
        stand_in = tokenizer.eos_token or tokenizer.unk_token or tokenizer.bos_token
        if stand_in is None:
            raise UsageError(f"the tokenizer of model {source.describe()} has no pad, end-of-text or unknown token to pad batches with")
        tokenizer.pad_token = stand_in
    return tokenizer


def model_config(
    source: ModelSource, tokenizer: Any, label_names: Sequence[str], problem_type: str | None = None, dropout: float | None = None
) -> Any:
    """The transformers config of the sequence classifier a run builds (reads no weights).

    ``dropout``: every dropout rate the config holds (hidden, attention,
    classifier: each architecture names its own) set to it; None keeps the
    model's own.
    """
    id2label = dict(enumerate(label_names))
    label2id = {name: i for i, name in id2label.items()}
    head = {"problem_type": problem_type} if problem_type else {}
    if source.kind == "preset":
        from transformers import BertConfig

        config = BertConfig(
            vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id, num_labels=len(label_names),
            id2label=id2label, label2id=label2id, **head, **TINY_BERT_CONFIG,
        )
        if dropout is not None:
            set_dropout(config, dropout)
        return config
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(
            str(source.path), num_labels=len(label_names), id2label=id2label, label2id=label2id, local_files_only=True, **head
        )
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load model {source.describe()}: {exc}") from None
    if getattr(config, "pad_token_id", None) is None and tokenizer.pad_token_id is not None:
        config.pad_token_id = tokenizer.pad_token_id  # what a decoder's classifier reads the last real token by
    if dropout is not None:
        set_dropout(config, dropout)
    return config


def set_dropout(config: Any, rate: float) -> None:
    """Every dropout rate of ``config`` set to ``rate`` (a None classifier rate, which falls back to the hidden one, too)."""
    for key, value in config.to_dict().items():
        rated = isinstance(value, (int, float)) and not isinstance(value, bool)
        if "dropout" in key and (rated or (value is None and key == "classifier_dropout")):
            setattr(config, key, float(rate))


def weights_bytes(source: ModelSource) -> int:
    """Bytes of the base model's weight files (0 for the built-in preset)."""
    return 0 if source.kind == "preset" else sum(f.stat().st_size for f in weight_files(source.path))


def position_limit(source: ModelSource) -> int | None:
    """How many tokens the model's position embeddings allow (None: no limit known)."""
    if source.kind == "preset":
        return TINY_BERT_CONFIG["max_position_embeddings"]
    try:
        config = json.loads((source.path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    limit = config.get("max_position_embeddings")
    if not isinstance(limit, int):
        return None
    # RoBERTa-style models offset positions by the padding index
    if config.get("model_type") in {"roberta", "xlm-roberta", "camembert", "longformer"}:
        limit -= int(config.get("pad_token_id") or 1) + 1
    return limit


def build_model(
    source: ModelSource,
    tokenizer: Any,
    label_names: Sequence[str],
    log: Callable[[str], None],
    problem_type: str | None = None,
    quantize_4bit_on: Any = None,
    dropout: float | None = None,
) -> Any:
    """A sequence model with one output per name in ``label_names`` (new weights for the head).

    ``problem_type`` is transformers' (``regression``: one output, the name
    is the target's; ``multi_label_classification``: an output per label);
    it goes into ``config.json``, so that plain transformers and its
    pipelines read the outputs as the task meant them.  None keeps
    transformers' default (single-label classification).  ``dropout``: as
    ``model_config``'s.
    """
    _quiet_transformers()
    config = model_config(source, tokenizer, label_names, problem_type, dropout)
    if source.kind == "preset":
        from transformers import BertForSequenceClassification

        return BertForSequenceClassification(config)
    import torch
    from transformers import AutoModelForSequenceClassification

    if torch.get_default_device().type == "meta":
        # the memory estimate's model: shapes and dtypes only, no weights read
        # (from_pretrained refuses the meta device)
        model = AutoModelForSequenceClassification.from_config(config, dtype=getattr(config, "dtype", None) or torch.float32)
        model.trainlab_new_modules = _modules_not_in_checkpoint(model, source.path)
        return model
    # safetensors are verified once per file version, so this is cheap after
    # resolve_source; a pickle refused by transformers is caught below
    check_weights(source.path, pickles=False)
    quantized: dict[str, Any] = {}
    if quantize_4bit_on is not None:  # QLoRA: checked for CUDA and bitsandbytes in prepare
        from transformers import BitsAndBytesConfig

        quantized = {
            "quantization_config": BitsAndBytesConfig(
                load_in_4bit=True,
                bnb_4bit_quant_type="nf4",
                bnb_4bit_use_double_quant=True,
                bnb_4bit_compute_dtype=torch.bfloat16,
            ),
            "device_map": {"": quantize_4bit_on},
        }
    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(
            str(source.path),
            config=config,
            ignore_mismatched_sizes=True,  # a head trained for other labels is replaced
            local_files_only=True,
            output_loading_info=True,
            **quantized,
        )
    except pickle.UnpicklingError as exc:  # resolve_source checked; the folder changed since
        raise refuse_pickle(_pickle_in(source.path), exc, model_folder=source.path) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load model {source.describe()}: {exc}") from None
    new = sorted(set(info.get("missing_keys") or []) | {str(k[0]) if isinstance(k, tuple) else str(k) for k in info.get("mismatched_keys") or []})
    if new:
        shown = ", ".join(new[:4]) + (", ..." if len(new) > 4 else "")
        outputs = "a regression output" if problem_type == "regression" else f"{len(label_names)} labels"
        log(f"model {source.describe()}: new weights for {outputs} ({shown})")
    # which layers start random: LoRA must train and save them with the head,
    # or they reload random (a BERT folder without its pooler, say)
    model.trainlab_new_modules = sorted({key.rsplit(".", 1)[0] for key in new if "." in key})
    return model


def _pickle_in(folder: Path) -> Path:
    files = [f for f in weight_files(folder) if f.suffix != ".safetensors"]
    return files[0] if files else folder


def load_trained(model_dir: Path) -> Any:
    """The sequence classifier in a trained run's model folder, its weights verified first.

    A LoRA run that kept its adapters only (``trainlab.json`` says
    ``adapters_only``) is its base model, checked against the recorded
    fingerprint, with the run's ``adapter/`` merged in.
    """
    from transformers import AutoModelForSequenceClassification

    _quiet_transformers()
    info = read_run_info(Path(model_dir))
    if info.get("adapters_only"):
        return _base_with_adapters(Path(model_dir), info)
    check_weights(Path(model_dir))
    try:
        return AutoModelForSequenceClassification.from_pretrained(str(model_dir), local_files_only=True)
    except pickle.UnpicklingError as exc:
        raise refuse_pickle(_pickle_in(Path(model_dir)), exc, model_folder=Path(model_dir)) from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the model in {model_dir}: {exc}") from None


def unwrap(model: Any) -> Any:
    """The plain transformers model under DDP or torch.compile wrappers."""
    while True:
        inner = getattr(model, "module", None) or getattr(model, "_orig_mod", None)
        if inner is None:
            return model
        model = inner


def save_model_folder(model: Any, tokenizer: Any, out_dir: Path, info: dict[str, Any]) -> None:
    """Write a folder plain transformers loads: safetensors, tokenizer, labels.

    Written beside ``out_dir`` first and swapped in (``atomic_write_folder``),
    so a crash never leaves a half-written model where a finished one was.
    """
    model = unwrap(model)
    saved_limit = tokenizer.model_max_length

    def write(folder: Path) -> None:
        model.save_pretrained(str(folder))
        for weights in sorted(folder.glob("*.safetensors")):
            add_checksum(weights)  # also gives it the umask's mode: safetensors writes 0600
        # the trained length becomes the tokenizer's limit, so that
        # pipeline(..., truncation=True) cuts texts as training did
        tokenizer.model_max_length = int(info.get("max_length") or saved_limit)
        tokenizer.save_pretrained(str(folder))
        (folder / RUN_INFO_FILE).write_text(json.dumps(info, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

    try:
        atomic_write_folder(Path(out_dir), write)
    finally:
        tokenizer.model_max_length = saved_limit


def read_run_info(model_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(model_dir) / RUN_INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _base_with_adapters(model_dir: Path, info: dict[str, Any]) -> Any:
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification

    base = Path(str(info.get("base_model") or ""))
    adapter_dir = model_dir.parent / ADAPTER_DIR
    check_base_fingerprint(base, str(info.get("base_fingerprint") or ""), what=f"the run in {model_dir.parent}")
    if not (adapter_dir / "adapter_config.json").is_file():
        raise UsageError(f"{model_dir} keeps adapters only, but {adapter_dir} has no adapter_config.json")
    check_weights(adapter_dir)
    try:
        # the config saved beside the tokenizer has the run's labels and pad token
        config = _saved_config(model_dir)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(base), config=config, ignore_mismatched_sizes=True, local_files_only=True
        )
        return PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot load the adapters in {adapter_dir} onto {base}: {exc}") from None


def _saved_config(folder: Path) -> Any:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(folder), local_files_only=True)


def _modules_not_in_checkpoint(model: Any, folder: Path) -> list[str]:
    """The layers ``from_pretrained`` would initialise anew, read from the safetensors headers alone."""
    from safetensors import safe_open

    saved: set[str] = set()
    for path in weight_files(folder):
        if path.suffix != ".safetensors":
            return []  # a pickle's names cannot be read without loading it
        with safe_open(str(path), framework="pt") as handle:
            saved.update(handle.keys())
    prefix = getattr(model, "base_model_prefix", "")
    missing = set()
    for key in model.state_dict():
        bare = key[len(prefix) + 1 :] if prefix and key.startswith(prefix + ".") else key
        if key not in saved and bare not in saved and f"{prefix}.{key}" not in saved:
            missing.add(key.rsplit(".", 1)[0])
    return sorted(missing)
