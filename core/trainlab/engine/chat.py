"""Chatting with a causal language model, and comparing two: what ``trainlab chat`` and the window's chat share.

A model is a text-generation run (its ``model/``) or any local model folder
with a chat template.  It is loaded through the task's own
``load_predictor`` (a run's task with its parameters; a plain folder through
the installed ``text-generation`` family task), whose predictor streams
(plugin API 2.1: ``stream(messages, ...)`` yields the answer as it is
written, ``prompt(messages)`` is the text the model is given).

A compared model without a chat template of its own (the base model a
fine-tune was given a named template for) uses the other model's, through
its predictor's ``use_chat_template``.

Comparing loads two models.  Each one's weights take its parameter count
times the bytes of its configured dtype; both are held at once only when
their sum, with ``HEADROOM`` for the cache and activations of generation,
fits in the free memory of the device (a GPU's free memory, or on a CPU the
RAM available).  Otherwise they answer one after the other, each loaded
only while it answers.

Nothing here imports torch or transformers until a function needs it: the
window imports this module on its GUI thread.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainlab.api.errors import UsageError
from trainlab.api.params import ENGINE_PARAMS, resolve
from trainlab.engine.context import task_for, trained_task
from trainlab.engine.device import resolve_device
from trainlab.engine.plugin_calls import plugin_calls
from trainlab.pluginhost.host import registry
from trainlab.runfolder.index import RunDir

RUN_INFO = "trainlab.json"
FAMILY = "text-generation"
HEADROOM = 1.2  # memory for generation's cache and activations, over the weights
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8, "int8": 1, "uint8": 1}
GiB = 1 << 30


@dataclass
class ChatSettings:
    """How answers are made: the system prompt and the sampling (temperature 0 is greedy)."""

    system: str = ""
    temperature: float = 0.0
    top_p: float = 1.0
    max_new_tokens: int = 512

    def messages(self, history: Sequence[dict[str, str]]) -> list[dict[str, str]]:
        """The conversation the model is given: the system prompt, then the turns so far."""
        system = [{"role": "system", "content": self.system}] if self.system.strip() else []
        return system + [dict(m) for m in history]


@dataclass(frozen=True)
class ChatSource:
    """What to chat with: the ``folder`` of the model, and the run it comes from (None: a plain model folder)."""

    folder: Path
    run_dir: Path | None = None
    # a model folder whose chat template this one uses when it has none (a base model compared with its fine-tune)
    template_from: Path | None = None

    @property
    def label(self) -> str:
        return self.run_dir.name if self.run_dir is not None else self.folder.name

    def describe(self) -> str:
        return str(self.run_dir if self.run_dir is not None else self.folder)


def read_run_info(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((Path(folder) / RUN_INFO).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def chat_source(given: str | Path, template_from: ChatSource | None = None) -> ChatSource:
    """The model ``given`` names: a run folder (its ``model/``) or a model folder; UsageError otherwise.

    ``template_from``: the model it is compared with, whose chat template it
    borrows when it has none of its own (a base model the fine-tune was
    given a named template for)."""
    path = Path(given).expanduser()
    if template_from is not None:
        found = chat_source(given)
        if not has_chat_template(found.folder) and has_chat_template(template_from.folder):
            return ChatSource(found.folder, found.run_dir, template_from.folder)
        return found
    run = RunDir(path)
    for candidate in (path / "model", path):
        if (candidate / "config.json").is_file():
            if read_run_info(candidate).get("adapters_only"):
                raise UsageError(f"{candidate} holds LoRA adapters only (no merged model); load {candidate.parent / 'adapter'} with PEFT")
            return ChatSource(candidate.resolve(), run.path.resolve() if candidate != path and run.exists() else None)
    if run.exists():
        raise UsageError(f"{path}: has no model/ folder (the run did not complete)")
    raise UsageError(f"{path}: neither a run folder with model/ nor a model folder (no config.json)")


def base_source(source: ChatSource) -> ChatSource | None:
    """The model a run was fine-tuned from, where it is a local folder (run.json's ``model``, or the base a LoRA names)."""
    candidates: list[str] = []
    base = read_run_info(source.folder).get("base_model")
    if isinstance(base, str) and base:
        candidates.append(base)
    if source.run_dir is not None:
        try:
            params = RunDir(source.run_dir).read().get("parameters") or {}
        except (UsageError, OSError, ValueError):
            params = {}
        if isinstance(params.get("model"), str):
            candidates.append(params["model"])
    for candidate in candidates:
        path = Path(candidate).expanduser()
        if (path / "config.json").is_file():
            return chat_source(path, template_from=source)
    return None


# -- memory -------------------------------------------------------------------------
def parameter_count(folder: Path) -> int:
    """Parameters of the model in ``folder``, counted from its config on the meta device (nothing loaded)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.from_pretrained(str(folder), local_files_only=True)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def bytes_per_parameter(folder: Path) -> int:
    """The width of the dtype the config names (what the model loads as), float32 when it names none."""
    try:
        config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    dtype = str(config.get("dtype") or config.get("torch_dtype") or "float32").replace("torch.", "")
    return DTYPE_BYTES.get(dtype, 4)


def model_bytes(folder: Path) -> int:
    """Memory the weights of the model in ``folder`` take once loaded."""
    return parameter_count(folder) * bytes_per_parameter(folder)


def resolve_chat_device(device: str = "auto") -> Any:
    return resolve_device(device)


def available_memory(device: Any) -> int:
    """Free memory on ``device`` now: the GPU's free memory, or on a CPU the RAM available."""
    kind = getattr(device, "type", str(device).split(":")[0])
    if kind == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    import psutil

    return int(psutil.virtual_memory().available)


@dataclass(frozen=True)
class ComparePlan:
    """Whether two models are held together, with the figures that decided it."""

    needs: tuple[int, int]
    free: int

    @property
    def together(self) -> bool:
        return fits_together(self.needs, self.free)

    def line(self) -> str:
        need, free = memory_size(sum(self.needs)), memory_size(self.free)
        if self.together:
            return f"both models answer at once (about {need} of weights, {free} free)"
        return f"the two models answer one after the other: both need about {need} of weights and {free} is free"


def memory_size(n: int) -> str:
    return f"{n / GiB:.1f} GiB" if n >= GiB else f"{n / (1 << 20):.1f} MiB"


def fits_together(needs: Sequence[int], free: int) -> bool:
    return sum(needs) * HEADROOM <= free


def compare_plan(a: ChatSource, b: ChatSource, device: Any, *, a_loaded: bool = False) -> ComparePlan:
    """The figures for holding ``a`` and ``b`` at once; ``a_loaded``: ``a`` is in memory already (its
    weights are not free memory, but they are not needed again either)."""
    needs = (model_bytes(a.folder), model_bytes(b.folder))
    return ComparePlan(needs, available_memory(device) + (needs[0] if a_loaded else 0))


# -- loading and answering ----------------------------------------------------------------
def _family_task() -> str:
    tasks = [tid for tid, entry in registry().tasks.items() if entry.spec.family == FAMILY]
    if not tasks:
        raise UsageError(f"no installed task of the {FAMILY} family can load a model folder")
    return "text-generation" if "text-generation" in tasks else min(tasks)


@dataclass
class ChatModel:
    """A loaded model that streams answers; one caller at a time (``lock``)."""

    source: ChatSource
    predictor: Any
    task: Any
    lock: threading.Lock = field(default_factory=threading.Lock)

    def prompt(self, messages: Sequence[dict[str, str]]) -> str:
        with plugin_calls(self.task).call("the predictor's prompt"):
            return str(self.predictor.prompt(list(messages)))

    def stream(self, messages: Sequence[dict[str, str]], settings: ChatSettings, should_stop: Callable[[], bool] | None = None) -> Iterator[str]:
        with self.lock:
            pieces = self.predictor.stream(
                list(messages),
                max_new_tokens=int(settings.max_new_tokens),
                temperature=float(settings.temperature),
                top_p=float(settings.top_p),
                should_stop=should_stop,
            )
            yield from pieces

    def close(self) -> None:
        """Let the weights go (the next model may need the memory)."""
        self.predictor = None
        import gc

        gc.collect()
        try:
            import torch

            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:
            pass


def load_chat_model(source: ChatSource, device: str = "auto") -> ChatModel:
    """``source``'s model, through its task's ``load_predictor``; UsageError when it cannot chat."""
    import transformers  # noqa: F401 - torch and transformers load here, off the window's GUI thread

    if source.run_dir is not None:
        _, task, ctx = trained_task(RunDir(source.run_dir), device)
        torch_device = ctx.device
    else:
        entry = registry().task(_family_task())
        params = resolve(entry.spec, ENGINE_PARAMS, {}, {"model": str(source.folder), "device": device})
        _, task = task_for(entry.spec.id, params)
        torch_device = resolve_chat_device(device)
    borrowed = source.template_from is not None and not has_chat_template(source.folder)
    if not borrowed and not has_chat_template(source.folder):
        raise UsageError(f"the tokenizer in {source.folder} has no chat template; chat needs a chat model (train one with text-generation)")
    with plugin_calls(task).call("load_predictor"):
        predictor = task.load_predictor(source.folder, torch_device)
    if not callable(getattr(predictor, "stream", None)) or not callable(getattr(predictor, "prompt", None)):
        raise UsageError(f"the predictor of task {task.spec.id} does not stream answers (plugin API 2.1: stream and prompt)")
    if borrowed:
        assert source.template_from is not None
        if not callable(getattr(predictor, "use_chat_template", None)):
            raise UsageError(f"the tokenizer in {source.folder} has no chat template, and the predictor of task {task.spec.id} cannot take one")
        with plugin_calls(task).call("the predictor's use_chat_template"):
            predictor.use_chat_template(read_chat_template(source.template_from))
    return ChatModel(source, predictor, task)


def read_chat_template(folder: Path) -> str:
    """The chat template a model folder's tokenizer holds ('' for none)."""
    jinja = Path(folder) / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    for name in ("chat_template.json", "tokenizer_config.json"):
        try:
            template = json.loads((Path(folder) / name).read_text(encoding="utf-8")).get("chat_template")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(template, list):  # several named templates: the default one
            template = next((t.get("template") for t in template if isinstance(t, dict) and t.get("name") == "default"), None)
        if isinstance(template, str) and template:
            return template
    return ""


def has_chat_template(folder: Path) -> bool:
    return bool(read_chat_template(folder))
