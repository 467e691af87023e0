"""What more than one test file needs that is not a fixture: paths, data writers, runners.

Test files import it by name (``from helpers import ...``): pytest puts
``tests/`` on ``sys.path`` because ``tests/conftest.py`` sits there, and the
test folders below it are not packages.  ``conftest.py`` keeps the fixtures
and hooks and imports what it needs from here; nothing imports ``conftest``.

Importing this module has no side effects and loads no torch, Qt or TrainLab:
each helper imports what it uses, so a child process (a plugin author's test
session written by a test, the screenshot script) can import it too.
"""

from __future__ import annotations

import os
from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

FIXTURE_PLUGINS = TESTS / "fixtures" / "plugins"
BROKEN_PLUGINS = TESTS / "fixtures" / "broken_plugins"
FAULTY_PLUGIN = BROKEN_PLUGINS / "faulty"  # raises in the method its fail_in parameter names
CARELESS_PLUGINS = BROKEN_PLUGINS / "careless"  # unmarked or misspelt hooks, a factory that is not there
AT_IMPORT_PLUGINS = BROKEN_PLUGINS / "at_import"  # hang, exit or crash when imported
# toy-forecast: a family of its own (forecasting) with typed details and a trainlab.views widget
FORECAST_PLUGIN = TESTS / "fixtures" / "forecast"
KIT_PLUGINS = TESTS / "fixtures" / "kit_plugins"  # one slip each for the plugin kit's checks
PROBE_PLUGIN = TESTS / "fixtures" / "ddp_probe"  # writes what each rank saw; torch's own OOM on request


# For a child process's environment (``env=ONE_THREAD``): on the shared
# two-core test machine a two-thread OpenMP team stalls whenever another
# process holds a core (several times slower).
ONE_THREAD = {"OMP_NUM_THREADS": "1"}


class NetworkBlocked(RuntimeError):
    """A test tried to connect beyond this machine (conftest's ``_block_network``)."""


def subprocess_env(extra_path: list[Path] | None = None, **overrides) -> dict[str, str]:
    """Environment for a CLI subprocess: same TRAINLAB_HOME, fixtures on the path."""
    env = dict(os.environ)
    paths = [str(p) for p in (extra_path or [])]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env.update({k: str(v) for k, v in overrides.items()})
    return env


# -- the command line ------------------------------------------------------------------


def run_trainlab(*args, extra_path: list[Path] | None = None, env: dict[str, str] | None = None, timeout: float = 240, **kwargs):
    """``python -m trainlab ARGS`` in a subprocess, its output as text (a CompletedProcess).

    ``extra_path`` goes first on its PYTHONPATH (fixture plugins), ``env``
    over this process's environment; the rest goes to ``subprocess.run``.
    """
    import subprocess
    import sys

    full_env = subprocess_env(extra_path)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "trainlab", *map(str, args)], capture_output=True, text=True, timeout=timeout, env=full_env, **kwargs
    )


def one_json_line(result) -> dict:
    """The one JSON object a ``--json`` command prints: stdout must hold exactly one line besides blank ones."""
    import json

    lines = [line for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one JSON line on stdout, got: {result.stdout!r}\n{result.stderr}"
    return json.loads(lines[0])


def last_json_line(result) -> dict:
    """The JSON object on the last line of stdout, for commands whose stdout may hold more before it."""
    import json

    assert result.stdout.strip(), result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def one_line_error(result, code: int = 2) -> str:
    """The error of a command that failed with ``code`` as the one JSON line it should: no traceback, one line."""
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr
    error = one_json_line(result)["error"]
    assert "\n" not in error
    return error


# -- toy data and runs -------------------------------------------------------------------


def write_toy_csv(path: Path, rows: int = 240, classes: int = 3, features: int = 4, seed: int = 0) -> Path:
    """Separable Gaussian blobs as a CSV for the toy task."""
    import random

    rng = random.Random(seed)
    centres = [[rng.uniform(-3, 3) for _ in range(features)] for _ in range(classes)]
    lines = [",".join([f"x{i}" for i in range(features)] + ["label"])]
    for r in range(rows):
        c = r % classes
        values = [centres[c][i] + rng.gauss(0, 0.6) for i in range(features)]
        lines.append(",".join(f"{v:.4f}" for v in values) + f",class_{c}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_toy_regression_csv(path: Path, rows: int = 240, features: int = 3, seed: int = 0) -> Path:
    """y = a linear function of the features plus a little noise, on the scale of hundreds."""
    import random

    rng = random.Random(seed)
    weights = [rng.uniform(-3, 3) for _ in range(features)]
    lines = [",".join([f"x{i}" for i in range(features)] + ["y"])]
    for _ in range(rows):
        xs = [rng.gauss(0, 1) for _ in range(features)]
        y = 500 + 100 * sum(w * x for w, x in zip(weights, xs)) + rng.gauss(0, 10)
        lines.append(",".join(f"{v:.4f}" for v in xs) + f",{y:.3f}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def write_toy_multilabel_csv(path: Path, rows: int = 240, seed: int = 0) -> Path:
    """Labels a, b, c each switched on by one feature being positive; some rows have none."""
    import random

    rng = random.Random(seed)
    lines = ["x0,x1,x2,labels"]
    for _ in range(rows):
        xs = [rng.gauss(0, 1) for _ in range(3)]
        labels = [name for name, x in zip("abc", xs) if x > 0.3]
        lines.append(",".join(f"{v:.4f}" for v in xs) + "," + ";".join(labels))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def train_toy(root: Path, task: str, **params: str) -> str:
    """Train the toy fixture task ``task`` under ``root`` (a home of its own) and return its run folder.

    For module-scoped fixtures: a real run of each task family, a few seconds each.
    """
    import pytest

    import trainlab.pluginhost.host as host

    root.mkdir(parents=True, exist_ok=True)
    if task == "toy-regression":
        data = write_toy_regression_csv(root / "reg.csv")
    elif task == "toy-classification":
        data = write_toy_csv(root / "toy.csv")
    else:
        data = write_toy_multilabel_csv(root / "ml.csv", rows=400)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(FIXTURE_PLUGINS))
        mp.setattr(host, "_registry", None)
        from trainlab.engine.scripting import RunRequest, run_training

        result = run_training(RunRequest(task=task, data=str(data), params=dict(params), out=str(root / "run")))
    assert result.status == "completed", result.error
    return result.run_dir


def write_series_csv(path: Path, names: tuple[str, ...] = ("north", "south"), length: int = 40) -> Path:
    """Series for toy-forecast: a sine on a slow trend each, one a little higher than the other."""
    import math

    lines = ["series,value"]
    for k, name in enumerate(names):
        lines += [f"{name},{10 + 3 * k + 2 * math.sin(t / 2 + k) + 0.05 * t:.4f}" for t in range(length)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def train_toy_forecast(root: Path, name: str = "run", **params: str) -> str:
    """A real run of toy-forecast under ``root`` (a home of its own: runs of several ``name``s
    share its index); returns its run folder ``root/name``."""
    import pytest

    import trainlab.pluginhost.host as host

    root.mkdir(parents=True, exist_ok=True)
    data = root / "series.csv" if (root / "series.csv").is_file() else write_series_csv(root / "series.csv")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLAB_HOME", str(root / "home"))
        mp.syspath_prepend(str(FORECAST_PLUGIN))
        mp.setattr(host, "_registry", None)
        from trainlab.engine.scripting import RunRequest, run_training

        result = run_training(RunRequest(task="toy-forecast", data=str(data), params=dict(params), out=str(root / name)))
    assert result.status == "completed", result.error
    return result.run_dir


def sample_head(tmp_path: Path, rows: int = 48, sample: str = "text") -> Path:
    """The first ``rows`` rows of each split of a bundled text sample, in ``tmp_path/small`` (a faster epoch)."""
    from trainlab_resources import resource_path

    source = resource_path("samples", sample)
    out = tmp_path / "small"
    out.mkdir(exist_ok=True)
    for split in ("train", "val"):
        lines = (source / f"{split}.csv").read_text(encoding="utf-8").splitlines(keepends=True)
        (out / f"{split}.csv").write_text("".join(lines[: rows + 1]), encoding="utf-8")
    return out


def stop_after_first_epoch():
    """A callback that asks the run to stop at the end of its first epoch (a run to resume)."""
    from trainlab.api.callbacks import Callback

    class StopAfterFirstEpoch(Callback):
        def on_epoch_end(self, state):
            if state.epoch == 1:
                state.control.request_stop("test")

    return StopAfterFirstEpoch()


# -- tiny text models -------------------------------------------------------------------


def make_bert_folder(folder, seed=0):
    """A 'pretrained' BERT (masked-LM head, no classifier), like a staged bert-base-chinese."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()))
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    torch.manual_seed(seed)
    BertForMaskedLM(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def make_decoder_folder(folder, arch="qwen2", seed=0, hidden=32, layers=2):
    """A Qwen2 or Llama causal LM from a config, with a byte-level BPE tokenizer trained on the sample texts.

    transformers reads a qwen2 folder's tokenizer as Qwen2Tokenizer, whose
    pad token is its end-of-text token (pad == eos); a llama folder's has no
    pad token at all, as Llama's has none.
    """
    import csv

    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    from trainlab_resources import resource_path

    with (resource_path("samples", "text") / "train.csv").open(encoding="utf-8") as handle:
        texts = [row["text"] for row in csv.DictReader(handle)]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=600, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|endoftext|>", model_input_names=["input_ids", "attention_mask"])
    config_class, model_class = (Qwen2Config, Qwen2ForCausalLM) if arch == "qwen2" else (LlamaConfig, LlamaForCausalLM)
    config = config_class(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256, eos_token_id=tokenizer.eos_token_id,
    )
    torch.manual_seed(seed)
    model_class(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


def lora_params(model, **extra):
    """A short LoRA fine-tune of ``model`` on the CPU."""
    return {"model": str(model), "finetune": "lora", "epochs": "1", "batch_size": "8", "lr": "5e-3", "max_length": "32", "device": "cpu", **extra}


def built_task(params, data):
    """The text task prepared on ``data`` and its model, as a run builds them."""
    import torch

    from trainlab.api.params import ENGINE_PARAMS, resolve
    from trainlab.api.taskbase import RunContext
    from trainlab_plugins.text import TEXT_CLASSIFICATION
    from trainlab_plugins.text.task import TextClassificationTask

    resolved = resolve(TEXT_CLASSIFICATION, ENGINE_PARAMS, {}, params)
    logs: list[str] = []
    ctx = RunContext(device=torch.device("cpu"), precision="fp32", seed=0, run_dir=None, params=resolved, log=logs.append)
    task = TextClassificationTask(TEXT_CLASSIFICATION, resolved)
    task.prepare(str(data), ctx)
    return task, ctx, task.build_model(ctx), logs


# -- processes --------------------------------------------------------------------------


def run_two_ranks(target, *args) -> dict[int, object]:
    """Spawn ``target(rank, port, *args, queue)`` for ranks 0 and 1 (two gloo processes); return what each put on the queue.

    For tests that drive the engine's rank group directly.  Each rank puts
    one ``(rank, result)`` pair; a rank that exits non-zero fails the test.
    """
    import multiprocessing

    from trainlab.engine.torchrun import free_port

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    port = free_port()
    procs = [context.Process(target=target, args=(rank, port, *args, queue)) for rank in (0, 1)]
    for proc in procs:
        proc.start()
    try:
        got = dict(queue.get(timeout=120) for _ in procs)
    finally:
        for proc in procs:
            proc.join(timeout=60)
            if proc.is_alive():
                proc.kill()
    for proc in procs:
        assert proc.exitcode == 0, f"rank {procs.index(proc)} exited with {proc.exitcode}"
    return got


# -- toy runs through the headless engine ----------------------------------------------


def run_toy_classification(toy_csv, tmp_path, name="run", callbacks=(), control=None, **params):
    """One run of the toy task in this process (``run_training``), into ``tmp_path / name``."""
    from trainlab.engine.scripting import RunRequest, run_training

    params = {k: str(v) for k, v in params.items()}
    request = RunRequest(task="toy-classification", data=str(toy_csv), params=params, out=str(tmp_path / name))
    return run_training(request, callbacks=list(callbacks), control=control)


def checkpoint_weights(run_dir, which="last") -> dict:
    """The model's tensors in a run's ``last`` (or ``best``) checkpoint."""
    from safetensors.torch import load_file

    from trainlab.runfolder.index import RunDir

    tensors = load_file(str(RunDir(run_dir).checkpoints / f"{which}.safetensors"))
    return {k: v for k, v in tensors.items() if k.startswith("model.")}


def assert_same_weights(a: dict, b: dict) -> None:
    """Two sets of tensors, equal bit for bit."""
    import torch

    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key
