"""``trainlab export RUN_DIR --format gguf``: a run's (or a model folder's) causal LM as ``model.gguf`` and an Ollama ``Modelfile``.

Nothing is compiled and llama.cpp is not needed: the weights are read from
the folder's safetensors one tensor at a time, renamed and reordered as
llama.cpp expects (``trainlab.models.gguf.arch``), written as float16 or
Q8_0 (``trainlab.models.gguf.quant``; 1-D tensors, norms and biases, stay
float32 as llama.cpp's converter keeps them), with the hyper-parameters,
the tokenizer and its chat template (``trainlab.models.gguf.vocab``) as
metadata, by the ``gguf`` package's writer.  Both files are written to a
temporary name and renamed: an interrupted export leaves the previous ones.

A LoRA run's ``model/`` is already the merged model; a run that kept its
adapters only (QLoRA) is merged here, in float32 on the CPU, from the base
model its ``trainlab.json`` names.
"""

from __future__ import annotations

import contextlib
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from trainlab.api.errors import UsageError
from trainlab.models.gguf import arch as archs
from trainlab.models.gguf.modelfile import render_modelfile
from trainlab.models.gguf.quant import quantizable, quantize_q8_0
from trainlab.models.gguf.vocab import read_vocabulary
from trainlab.system.fileio import atomic_write, atomic_write_text

QUANTS = ("f16", "q8_0")
GGUF_FILE = "model.gguf"
MODELFILE = "Modelfile"
RUN_INFO_FILE = "trainlab.json"  # what TrainLab trained a model folder with (the text plugins write it)
EXTRA_HINT = "pip install 'trainlab[gguf]'"
OLLAMA_DEFAULT_CONTEXT = 4096
TEXT_GENERATION = "text-generation"


def gguf_module() -> Any:
    """The ``gguf`` package, or a one-line UsageError naming the extra that installs it."""
    try:
        import gguf
    except ImportError:
        raise UsageError(f"GGUF export needs the gguf extra: {EXTRA_HINT}") from None
    return gguf


@dataclass
class GGUFExport:
    """What an export wrote."""

    gguf: str
    modelfile: str
    architecture: str
    quant: str
    tensors: int
    quantized: int  # tensors written as Q8_0
    kept_f16: list[str]  # 2-D tensors whose rows do not cut into blocks of 32 (written f16 under q8_0)
    vocab_size: int
    tokenizer: str  # gpt2 | llama
    pre_tokenizer: str
    template_family: str
    stop_tokens: list[str]
    bytes: int
    source: str
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def model_folder(path: Path) -> tuple[Path, Path]:
    """(model folder, where the files go) for a run directory (its ``model/``) or a model folder."""
    path = Path(path).expanduser()
    task = str(_read_json(path / "run.json", missing_ok=True).get("task") or "") if (path / "run.json").is_file() else ""
    if task and task != TEXT_GENERATION:
        raise UsageError(f"{path}: a {task} run; GGUF export writes text-generation models (causal language models)")
    if (path / "model" / "config.json").is_file():
        return path / "model", path
    if (path / "config.json").is_file():
        return path, path
    if (path / "run.json").is_file():
        raise UsageError(f"{path}: the run has no model/ folder (did it finish?)")
    raise UsageError(f"{path}: neither a run directory with a model/ folder nor a model folder (config.json)")


def export_gguf(
    path: Path | str,
    *,
    quant: str = "f16",
    out_dir: Path | str | None = None,
    system: str = "",
    log: Callable[[str], None] = lambda line: None,
) -> GGUFExport:
    """Write ``model.gguf`` and ``Modelfile`` for the run directory or model folder ``path``."""
    if quant not in QUANTS:
        raise UsageError(f"--quant {quant}: GGUF export writes {' or '.join(QUANTS)}")
    gguf = gguf_module()
    model_dir, default_out = model_folder(Path(path))
    out = Path(out_dir).expanduser() if out_dir else default_out
    config = _read_json(model_dir / "config.json")
    info = _read_json(model_dir / RUN_INFO_FILE, missing_ok=True)
    arch = archs.architecture(config, str(model_dir))
    hyper = archs.hyperparameters(config, arch, str(model_dir))
    tokenizer = _tokenizer(model_dir)
    with _tensor_source(model_dir, config, info, tokenizer, log) as source:
        planned = archs.plan_tensors(source.shapes, arch, hyper, str(model_dir))
        rows = next(t.shape[0] for t in planned if t.name == "token_embd.weight")
        stop_ids = [int(i) for i in info.get("stop_token_ids") or []] or [tokenizer.eos_token_id]
        vocab = read_vocabulary(model_dir, tokenizer, rows, [i for i in stop_ids if i is not None])
        gguf_path = out / GGUF_FILE
        written: dict[str, int] = {}

        def write(tmp: Path) -> None:
            written.update(_write_gguf(gguf, tmp, planned, source, arch, hyper, vocab, quant, model_dir, info, log))

        log(f"writing {gguf_path} ({arch.name}, {quant}, {len(planned)} tensors)")
        atomic_write(gguf_path, write)
    eot = vocab.special.get("eot")
    if eot is not None and eot not in stop_ids:  # a model folder TrainLab did not train: its template's end of turn stops too
        stop_ids.append(eot)
    stop_tokens = [tokenizer.convert_ids_to_tokens(i) for i in stop_ids if i is not None]
    context = hyper.context_length if hyper.context_length < OLLAMA_DEFAULT_CONTEXT else 0
    text, family = render_modelfile(
        GGUF_FILE, vocab.chat_template, stop_tokens, eos_token=tokenizer.eos_token or "", system=system, context_length=context
    )
    atomic_write_text(out / MODELFILE, text)
    warnings = list(vocab.warnings)
    if not family:
        warnings.append("the chat template is not one of chatml, llama3, gemma, phi3, mistral: the Modelfile has no TEMPLATE")
    kept = [t.name for t in planned if quant == "q8_0" and len(t.shape) >= 2 and not quantizable(t.shape)]
    return GGUFExport(
        gguf=str(gguf_path.resolve()),
        modelfile=str((out / MODELFILE).resolve()),
        architecture=arch.name,
        quant=quant,
        tensors=len(planned),
        quantized=written.get("q8_0", 0),
        kept_f16=kept,
        vocab_size=len(vocab.tokens),
        tokenizer=vocab.model,
        pre_tokenizer=vocab.pre,
        template_family=family,
        stop_tokens=stop_tokens,
        bytes=gguf_path.stat().st_size,
        source=str(model_dir.resolve()),
        warnings=warnings,
    )


def _read_json(path: Path, missing_ok: bool = False) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if missing_ok:
            return {}
        raise UsageError(f"{path}: no such file") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None
    return data if isinstance(data, dict) else {}


def _tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    except (OSError, ValueError) as exc:
        raise UsageError(f"{model_dir}: cannot load its tokenizer ({exc})") from None


class _Tensors:
    """The model's tensors by name: their shapes, and each as float32 NumPy when asked."""

    def __init__(self, shapes: Mapping[str, tuple[int, ...]], read: Callable[[str], np.ndarray]):
        self.shapes = dict(shapes)
        self.read = read


@contextlib.contextmanager
def _tensor_source(model_dir: Path, config: Mapping[str, Any], info: Mapping[str, Any], tokenizer: Any, log) -> Iterator[_Tensors]:
    if info.get("adapters_only"):
        yield _merged_adapters(model_dir, info, tokenizer, log)
        return
    files = sorted(model_dir.glob("*.safetensors"))
    if not files:
        raise UsageError(f"{model_dir}: no safetensors weights (GGUF export reads safetensors only, never pickles)")
    from safetensors import safe_open

    with contextlib.ExitStack() as stack:
        handles = [stack.enter_context(safe_open(str(f), framework="pt")) for f in files]
        owner: dict[str, Any] = {}
        shapes: dict[str, tuple[int, ...]] = {}
        for handle in handles:
            names = handle.keys()  # a safetensors file handle is not iterable itself
            for name in names:
                owner[name] = handle
                shapes[name] = tuple(handle.get_slice(name).get_shape())

        def read(name: str) -> np.ndarray:
            return owner[name].get_tensor(name).float().numpy()

        yield _Tensors(shapes, read)


def _merged_adapters(model_dir: Path, info: Mapping[str, Any], tokenizer: Any, log) -> _Tensors:
    """A run that kept its adapters only: the base model with them merged, in float32 on the CPU."""
    import torch
    from transformers import AutoModelForCausalLM

    base = Path(str(info.get("base_model") or ""))
    adapter = model_dir.parent / "adapter"
    if not (base / "config.json").is_file():
        raise UsageError(f"{model_dir} keeps adapters only and its base model {base} is not there to merge them into")
    if not (adapter / "adapter_config.json").is_file():
        raise UsageError(f"{model_dir} keeps adapters only, but {adapter} has no adapter_config.json")
    try:
        from peft import PeftModel
    except ImportError:
        raise UsageError("merging the run's adapters for GGUF export needs peft (pip install peft)") from None
    log(f"merging the adapters of {adapter} into {base} (float32, CPU)")
    lm = AutoModelForCausalLM.from_pretrained(str(base), local_files_only=True, dtype=torch.float32)
    if len(tokenizer) > lm.get_input_embeddings().weight.shape[0]:
        lm.resize_token_embeddings(len(tokenizer), mean_resizing=False)
    with warnings.catch_warnings():  # peft calls transformers' deprecated names: not the user's to see
        warnings.simplefilter("ignore", FutureWarning)
        merged = PeftModel.from_pretrained(lm, str(adapter)).merge_and_unload()
    state = {k: v for k, v in merged.state_dict().items()}
    if getattr(merged.config, "tie_word_embeddings", False):
        state.pop("lm_head.weight", None)
    return _Tensors({k: tuple(v.shape) for k, v in state.items()}, lambda name: state[name].detach().float().numpy())


def _write_gguf(gguf: Any, path: Path, planned, source: _Tensors, arch, hyper, vocab, quant: str, model_dir: Path, info, log) -> dict[str, int]:
    writer = gguf.GGUFWriter(str(path), arch.name)
    name = str(info.get("run_name") or (model_dir.parent.name if model_dir.name == "model" else model_dir.name))
    writer.add_name(_safe_name(name, vocab.tokens))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0 if quant == "q8_0" else gguf.LlamaFileType.MOSTLY_F16)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    _write_hyper(gguf, writer, arch, hyper, len(vocab.tokens))
    vocab.write(writer)
    counts = {"q8_0": 0, "f16": 0, "f32": 0}
    kinds: list[str] = []
    for tensor in planned:
        kind = _kind(tensor.shape, quant)
        kinds.append(kind)
        counts[kind] += 1
        if kind == "q8_0":
            rows = int(np.prod(tensor.shape[:-1]))
            nbytes = rows * tensor.shape[-1] // 32 * 34
            writer.add_tensor_info(tensor.name, (*tensor.shape[:-1], tensor.shape[-1] // 32 * 34), np.dtype(np.uint8), nbytes,
                                   raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            dtype = np.dtype(np.float16 if kind == "f16" else np.float32)
            writer.add_tensor_info(tensor.name, tensor.shape, dtype, int(np.prod(tensor.shape)) * dtype.itemsize)
    try:
        _write_data(writer, planned, kinds, source)
    finally:
        writer.close()
    return counts


def _write_data(writer: Any, planned, kinds: list[str], source: _Tensors) -> None:
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for tensor, kind in zip(planned, kinds):
        data = tensor.made() if tensor.made is not None else source.read(tensor.source)
        if tensor.transform is not None:
            data = tensor.transform(data)
        if kind == "q8_0":
            data = quantize_q8_0(data)
        elif kind == "f16":
            wide = data
            with np.errstate(over="ignore"):
                data = np.ascontiguousarray(wide, dtype=np.float16)
            if not np.isfinite(data).all() and np.isfinite(wide).all():
                # bf16 weights reach past float16's largest number (65504); Q8_0 scales them into range
                raise UsageError(f"{tensor.source}: weights beyond float16's range (largest {np.abs(wide).max():.4g}); export with --quant q8_0")
        else:
            data = np.ascontiguousarray(data, dtype=np.float32)
        writer.write_tensor_data(data)


def _safe_name(name: str, tokens: list[str]) -> str:
    """``general.name``, kept clear of llama.cpp's rule for Phi-3 by name.

    llama.cpp gives Phi-3's special tokens their strip attributes when the
    model's name contains "phi3" or "phi-3", and stops loading when one of
    them (``</s>``, ``<unk>``, ``<s>``, ``<|endoftext|>``) is not in the
    vocabulary: a run named so with another tokenizer is named apart.
    """
    lowered = name.lower()
    if ("phi3" in lowered or "phi-3" in lowered) and not {"</s>", "<unk>", "<s>", "<|endoftext|>"} <= set(tokens):
        return re.sub(r"(?i)phi-?3", lambda m: m.group(0).replace("-", "")[:3] + " 3", name)
    return name


def _kind(shape: tuple[int, ...], quant: str) -> str:
    if len(shape) < 2:
        return "f32"  # norms, biases, rope factors: as llama.cpp's converter keeps them
    return "q8_0" if quant == "q8_0" and quantizable(shape) else "f16"


def _write_hyper(gguf: Any, writer: Any, arch, hyper, vocab_size: int) -> None:
    writer.add_context_length(hyper.context_length)
    writer.add_embedding_length(hyper.embedding_length)
    writer.add_block_count(hyper.block_count)
    writer.add_feed_forward_length(hyper.feed_forward_length)
    writer.add_head_count(hyper.head_count)
    writer.add_head_count_kv(hyper.head_count_kv)
    writer.add_layer_norm_rms_eps(hyper.rms_eps)
    writer.add_rope_freq_base(hyper.rope_theta)
    writer.add_rope_dimension_count(hyper.rope_dimensions)
    writer.add_vocab_size(vocab_size)
    if hyper.head_dim != hyper.embedding_length // hyper.head_count:
        writer.add_key_length(hyper.head_dim)
        writer.add_value_length(hyper.head_dim)
    if hyper.sliding_window:
        writer.add_sliding_window(hyper.sliding_window)
    rope = hyper.rope
    kind = rope["rope_type"]
    if kind == "linear":
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(float(rope.get("factor", 1.0)))
    elif kind == "yarn":
        writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        writer.add_rope_scaling_factor(float(rope.get("factor", 1.0)))
        original = rope.get("original_max_position_embeddings")
        if original:
            writer.add_rope_scaling_orig_ctx_len(int(original))
