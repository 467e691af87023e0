"""TrainLab's text-classification task against the Hugging Face Trainer, side by side.

Both sides fine-tune the same model folder on the same data with the same
recipe, each in its own process, the processes alternating in ABBA pairs
(``bench/pairs.py``):

* the model: a BERT of all-MiniLM-L6-v2's shape (6 layers, hidden 384, 12
  heads, intermediate 1536, 512 positions), built here from a config with
  random weights (no hub) over TrainLab's shipped tiny-bert vocabulary
  (15,249 word pieces) and saved as a model folder both sides load;
* or, with ``--model DIR``, a pretrained encoder's folder (all-MiniLM-L6-v2,
  say) with a new classification head, seeded;
* the data: generated "package descriptions" of 10-120 tokens (lognormal,
  median about 40), a topic per text (six topics, each with its own words
  among common filler words), 1,280 train / 320 val by default; or, with
  ``--data debian``, this machine's real Debian package descriptions (the
  short line and the long text) labelled by section, the same six sections,
  as many per section (``apt-get -o Acquire::Languages=en update`` once for
  the long texts); or ``--data FOLDER`` with train.csv and val.csv;
* the recipe: TrainLab's text-classification defaults as resolved for this
  model (batch 32, 3 epochs, linear schedule with 10 % warmup, weight decay
  0.01, clipping at 1.0, max_length 128) with lr 2e-4 (the usual 5e-5
  suits pretrained weights; from random ones it leaves both sides at chance
  after 3 epochs here), given
  to the Trainer as ``TrainingArguments`` with ``group_by_length=True``
  (``train_sampling_strategy="group_by_length"`` in transformers 5),
  ``dataloader_num_workers=0``, evaluation each epoch (TrainLab evaluates
  each epoch), no saving, ``report_to="none"``; TrainLab runs through
  ``run_training`` with its default callbacks (metrics file, telemetry).

Samples/s are those of the training passes (epoch start to the epoch's end,
evaluation excluded on both sides), per wall second and per CPU second of
the side's process (every thread counted).  Accuracy: validation accuracy
after the last epoch on both sides.  One torch thread by default
(``--threads``): the development machine has two cores shared with other
jobs.

    .venv/bin/python bench/text_vs_trainer.py [--pairs 4] [--train 1280] [--epochs 3] [--quick] [--json]
    .venv/bin/python bench/text_vs_trainer.py --model DIR --data debian   # a pretrained encoder on real package descriptions
    .venv/bin/python bench/text_vs_trainer.py --quick --json        # tiny model, seconds (the smoke test)
    .venv/bin/python bench/text_vs_trainer.py --profile torch ...   # a profile of each side on stderr

Where the time goes (``--profile torch``, fp32, one thread): matmuls 70-75 %
on both sides, dropout's random masks 5-7 %, attention in training on the
math path on both (dropout rules out the CPU flash kernel; evaluation uses
it), both sdpa; the optimizer step was 3 % on TrainLab's side (a per-tensor
loop; now fused, as the Trainer's); collation and the engine's per-step work
(callbacks, the on-device loss sum) are not among the 30 costliest operators.  What still differs is
padding: the Trainer's ``LengthGroupedSampler`` sorts mega-batches of
``min(n / (4 x batch), 50)`` batches, TrainLab's of 50 (1,280 texts: 8 % more
token slots on the Trainer's side).

``end_to_end_s`` is not like for like: TrainLab's is the whole
``run_training`` call (reading and tokenising, building the model, the
passes, evaluation, checkpoints each epoch, the export), the Trainer's
``trainer.train()`` alone (evaluation included, nothing saved).

Last line: one JSON object; ``ratio`` (TrainLab / Trainer samples per wall
second, per pair) and ``cpu_ratio`` (per CPU second) with their spread;
``precision`` is what each side computed in (TrainLab's ``auto`` resolved).
Goal: ratio >= 1.3 at equal accuracy.  ``--trainlab-precision
auto`` compares the two as a user gets them (TrainLab's default against the
Trainer's fp32 default); ``--precision bf16`` or ``fp32`` like for like.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
SEED = 1234
MINILM = {"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 1536}
QUICK_MODEL = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 128}
TOPICS = ("libs", "net", "devel", "games", "science", "sound")
TOPIC_WORDS = 24  # per topic
TOPIC_SHARE = 0.3  # of a text's words; the rest is filler shared by every topic
MAX_LENGTH = 128


# -- the workspace: data and a model folder ---------------------------------------
def vocabulary() -> list[str]:
    from trainlab import resource_path

    return resource_path("vocab", "tiny-bert", "vocab.txt").read_text(encoding="utf-8").splitlines()


def make_workspace(root: Path, n_train: int, n_val: int, model_shape: dict[str, int], *, base_model: str | None = None, data: str | None = None) -> dict[str, str]:
    """train.csv/val.csv and a model folder both sides load.

    ``data``: None for generated texts (each word a whole token of the
    vocabulary), ``debian`` for real package descriptions (``debian_texts``),
    or a folder with train.csv and val.csv (text,label).  ``base_model``: a
    pretrained transformers folder whose body is used, with a new seeded
    classification head; else a random BERT of ``model_shape``.
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig, BertForSequenceClassification
    from transformers.utils import logging as hf_logging

    from trainlab import resource_path

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()  # "some weights were newly initialised": the head, on purpose
    folder = root / "data"
    folder.mkdir(parents=True)
    if data is None:
        labels = sorted(TOPICS)
        write_generated(folder, n_train, n_val)
    else:
        splits = debian_texts(n_train, n_val) if data == "debian" else read_folder(Path(data), n_train, n_val)
        labels = sorted({label for rows in splits.values() for _, label in rows})
        for split, rows in splits.items():
            with open(folder / f"{split}.csv", "w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["text", "label"])
                writer.writerows(rows)
    model_dir = root / "model"
    torch.manual_seed(SEED)
    label_maps = {"num_labels": len(labels), "id2label": dict(enumerate(labels)), "label2id": {n: i for i, n in enumerate(labels)}}
    if base_model:
        tokenizer = AutoTokenizer.from_pretrained(base_model, local_files_only=True)
        model = AutoModelForSequenceClassification.from_pretrained(base_model, local_files_only=True, **label_maps)
    else:
        vocab = vocabulary()
        # the shipped tokenizer folder itself: BertTokenizerFast(vocab_file=...) builds an empty vocabulary in transformers 5
        tokenizer = AutoTokenizer.from_pretrained(str(resource_path("vocab", "tiny-bert")), local_files_only=True)
        assert len(tokenizer) == len(vocab), (len(tokenizer), len(vocab))
        model = BertForSequenceClassification(BertConfig(vocab_size=len(vocab), max_position_embeddings=512, **label_maps, **model_shape))
    model.save_pretrained(str(model_dir))
    tokenizer.save_pretrained(str(model_dir))
    return {"data": str(folder), "model": str(model_dir)}


def write_generated(folder: Path, n_train: int, n_val: int) -> None:
    vocab = vocabulary()
    words = sorted({w for w in vocab if w.isascii() and w.isalpha() and w.islower() and len(w) >= 3})
    rng = np.random.default_rng(SEED)
    rng.shuffle(words)
    topic_words = {t: words[i * TOPIC_WORDS : (i + 1) * TOPIC_WORDS] for i, t in enumerate(TOPICS)}
    filler = words[len(TOPICS) * TOPIC_WORDS :]
    for split, n in (("train", n_train), ("val", n_val)):
        # token lengths like package descriptions: 10-120, most of them short
        lengths = np.clip(np.rint(rng.lognormal(np.log(40), 0.6, n)), 10, 120).astype(int)
        with open(folder / f"{split}.csv", "w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["text", "label"])
            for i, length in enumerate(lengths):
                topic = TOPICS[i % len(TOPICS)]
                n_words = int(length) - 2  # [CLS] and [SEP]
                topical = rng.random(n_words) < TOPIC_SHARE
                text = [rng.choice(topic_words[topic]) if t else rng.choice(filler) for t in topical]
                writer.writerow([" ".join(text), topic])


def read_folder(folder: Path, n_train: int, n_val: int) -> dict[str, list[tuple[str, str]]]:
    splits = {}
    for split, n in (("train", n_train), ("val", n_val)):
        path = folder / f"{split}.csv"
        if not path.is_file():
            raise SystemExit(f"--data {folder}: no {split}.csv there (expected train.csv and val.csv with text,label columns)")
        texts, labels = read_split(path)
        splits[split] = list(zip(texts, labels))[:n]
    return splits


APT_LISTS = Path("/var/lib/apt/lists")


def debian_texts(n_train: int, n_val: int) -> dict[str, list[tuple[str, str]]]:
    """Real text: this machine's Debian package descriptions (short and long), labelled by section.

    The sections are ``TOPICS``; one package per distinct description (a
    source's binary packages often share one), an equal number per section,
    shuffled with the bench's seed and split into train and val.  Needs the
    English translations of the package lists (``apt-get -o
    Acquire::Languages=en update`` once: the lists hold only the short line).
    """
    translations = sorted(APT_LISTS.glob("*_i18n_Translation-en*"))
    helper = shutil.which("apt-helper") or "/usr/lib/apt/apt-helper"
    if not translations or not Path(helper).exists() or shutil.which("apt-cache") is None:
        raise SystemExit(
            "--data debian needs apt's package lists with their English descriptions (Debian or Ubuntu): "
            "run `apt-get -o Acquire::Languages=en update` once (as root), or give --data FOLDER"
        )
    section: dict[str, str] = {}
    record: dict[str, str] = {}
    dump = subprocess.run(["apt-cache", "dumpavail"], capture_output=True, text=True, check=True).stdout
    for line in dump.splitlines() + [""]:
        if not line:
            if record.get("Section") in TOPICS and "Description-md5" in record:
                section.setdefault(record["Description-md5"], record["Section"])
            record = {}
        elif not line.startswith(" ") and ":" in line:
            key, _, value = line.partition(":")
            record[key] = value.strip()
    by_section: dict[str, dict[str, str]] = {t: {} for t in TOPICS}
    for path in translations:
        text = subprocess.run([helper, "cat-file", str(path)], capture_output=True, text=True, check=True).stdout
        for block in text.split("\n\n"):
            fields = dict.fromkeys(("md5", "description"), "")
            lines = block.splitlines()
            for i, line in enumerate(lines):
                if line.startswith("Description-md5:"):
                    fields["md5"] = line.split(":", 1)[1].strip()
                elif line.startswith("Description-en:"):
                    body = [line.split(":", 1)[1].strip()] + [part.strip() for part in lines[i + 1 :] if part.startswith(" ")]
                    fields["description"] = " ".join(part for part in body if part != ".")
            topic = section.get(fields["md5"])
            if topic and fields["description"]:
                by_section[topic].setdefault(fields["md5"], fields["description"])
    per_section = -(-(n_train + n_val) // len(TOPICS))
    rng = np.random.default_rng(SEED)
    rows: list[tuple[str, str]] = []
    for topic in TOPICS:
        texts = sorted(by_section[topic].values())
        if len(texts) < per_section:
            raise SystemExit(f"--data debian: section {topic} has {len(texts)} descriptions, {per_section} needed; ask for fewer texts")
        rows += [(texts[i], topic) for i in rng.choice(len(texts), per_section, replace=False)]
    rng.shuffle(rows)
    return {"train": rows[:n_train], "val": rows[n_train : n_train + n_val]}


def recipe(workspace: dict[str, str], overrides: dict[str, Any]) -> dict[str, Any]:
    """TrainLab's parameters for this run, as the task resolves them (what the Trainer is given too)."""
    from trainlab.api.params import ENGINE_PARAMS, resolve
    from trainlab_plugins.text import TEXT_CLASSIFICATION

    params = resolve(TEXT_CLASSIFICATION, ENGINE_PARAMS, {}, {"model": workspace["model"], "seed": SEED, "max_length": MAX_LENGTH, **overrides})
    keys = ("epochs", "batch_size", "lr", "weight_decay", "warmup_ratio", "schedule", "clip_grad_norm", "seed", "max_length", "grad_accum", "precision")
    return {k: params[k] for k in keys}


def read_split(path: Path) -> tuple[list[str], list[str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    return [r["text"] for r in rows], [r["label"] for r in rows]


# -- one side, in its own process ---------------------------------------------------
def side_trainlab(workspace: dict[str, str], rec: dict[str, Any], out: Path) -> dict[str, Any]:
    import torch

    from trainlab.api.callbacks import Callback
    from trainlab.engine.device import resolve_precision
    from trainlab.engine.scripting import RunRequest, run_training

    class PassClock(Callback):
        """Training passes only: from each epoch's start to its evaluation."""

        def __init__(self):
            self.wall = self.cpu = 0.0
            self.samples = 0
            self.accuracy: list[float] = []

        def on_epoch_start(self, state):
            self._start = (time.perf_counter(), time.process_time(), state.samples_seen)

        def on_eval_start(self, state):
            wall, cpu, seen = self._start
            self.wall += time.perf_counter() - wall
            self.cpu += time.process_time() - cpu
            self.samples += state.samples_seen - seen
            self.steps = state.step

        def on_eval_end(self, state, result):
            self.accuracy.append(float(result.metrics["accuracy"]))

    clock = PassClock()
    params = {k: str(v) for k, v in rec.items()} | {"model": workspace["model"], "device": "cpu"}
    start = time.perf_counter()
    result = run_training(RunRequest(task="text-classification", data=workspace["data"], params=params, out=str(out / "run")), callbacks=[clock])
    end_to_end = time.perf_counter() - start
    if result.status != "completed":
        raise SystemExit(f"TrainLab run {result.status}: {result.error}")
    from trainlab_plugins.text.models import load_trained

    attention = getattr(load_trained(out / "run" / "model").config, "_attn_implementation", None)
    return {
        "samples": clock.samples, "steps": clock.steps, "wall": clock.wall, "cpu": clock.cpu, "accuracy": clock.accuracy,
        "end_to_end_s": end_to_end, "threads": torch.get_num_threads(), "attention": attention,
        "precision": resolve_precision(torch.device("cpu"), str(rec["precision"])),  # what auto chose, not "auto"
    }  # fmt: skip


def side_trainer(workspace: dict[str, str], rec: dict[str, Any], out: Path) -> dict[str, Any]:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainerCallback, TrainingArguments
    from transformers import DataCollatorWithPadding
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    data = Path(workspace["data"])
    tokenizer = AutoTokenizer.from_pretrained(workspace["model"], local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(workspace["model"], local_files_only=True)
    label2id = model.config.label2id

    def encode(split: str) -> list[dict[str, Any]]:
        texts, labels = read_split(data / f"{split}.csv")
        enc = tokenizer(texts, truncation=True, max_length=int(rec["max_length"]))
        return [{"input_ids": ids, "attention_mask": m, "token_type_ids": t, "labels": label2id[y]}
                for ids, m, t, y in zip(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"], labels)]  # fmt: skip

    train, val = encode("train"), encode("val")

    class PassClock(TrainerCallback):
        def __init__(self):
            self.wall = self.cpu = 0.0
            self.samples = 0
            self.accuracy: list[float] = []

        def on_epoch_begin(self, args, state, control, **kwargs):
            self._start = (time.perf_counter(), time.process_time())

        def on_epoch_end(self, args, state, control, **kwargs):
            self.wall += time.perf_counter() - self._start[0]
            self.cpu += time.process_time() - self._start[1]
            self.samples += len(train)

        def on_evaluate(self, args, state, control, metrics=None, **kwargs):
            self.accuracy.append(float(metrics["eval_accuracy"]))

    def accuracy(prediction) -> dict[str, float]:
        return {"accuracy": float((np.argmax(prediction.predictions, axis=-1) == prediction.label_ids).mean())}

    steps = -(-len(train) // int(rec["batch_size"])) * int(rec["epochs"])
    args = TrainingArguments(
        output_dir=str(out / "trainer"),
        per_device_train_batch_size=int(rec["batch_size"]),
        per_device_eval_batch_size=int(rec["batch_size"]),
        num_train_epochs=int(rec["epochs"]),
        learning_rate=float(rec["lr"]),
        weight_decay=float(rec["weight_decay"]),
        warmup_steps=int(round(steps * float(rec["warmup_ratio"]))),  # TrainLab's rounding of the ratio
        lr_scheduler_type=str(rec["schedule"]),
        max_grad_norm=float(rec["clip_grad_norm"]),
        gradient_accumulation_steps=int(rec["grad_accum"]),
        seed=int(rec["seed"]),
        train_sampling_strategy="group_by_length",  # transformers 5's name for group_by_length=True
        dataloader_num_workers=0,
        eval_strategy="epoch",
        save_strategy="no",
        report_to="none",
        push_to_hub=False,
        use_cpu=True,
        bf16=rec["precision"] == "bf16",  # CPU autocast, as TrainLab's precision=bf16
        disable_tqdm=True,
    )  # fmt: skip
    clock = PassClock()
    trainer = Trainer(
        model=model, args=args, train_dataset=train, eval_dataset=val, processing_class=tokenizer,
        data_collator=DataCollatorWithPadding(tokenizer), compute_metrics=accuracy, callbacks=[clock],
    )  # fmt: skip
    start = time.perf_counter()
    trainer.train()
    end_to_end = time.perf_counter() - start
    optimizer = type(trainer.optimizer.optimizer if hasattr(trainer.optimizer, "optimizer") else trainer.optimizer).__name__
    fused = bool((trainer.optimizer.optimizer if hasattr(trainer.optimizer, "optimizer") else trainer.optimizer).defaults.get("fused"))
    return {
        "samples": clock.samples, "steps": trainer.state.global_step, "wall": clock.wall, "cpu": clock.cpu, "accuracy": clock.accuracy,
        "end_to_end_s": end_to_end, "threads": torch.get_num_threads(), "attention": model.config._attn_implementation, "precision": rec["precision"],
        "optimizer": f"{optimizer}{' fused' if fused else ''}",
    }  # fmt: skip


SIDES = {"trainlab": side_trainlab, "trainer": side_trainer}


def run_side(args: argparse.Namespace) -> int:
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    workspace = json.loads(Path(args.workspace, "workspace.json").read_text(encoding="utf-8"))
    rec = dict(workspace["recipe"])
    if args.side == "trainlab" and workspace.get("trainlab_precision"):
        rec["precision"] = workspace["trainlab_precision"]
    out = Path(tempfile.mkdtemp(prefix=f"{args.side}-", dir=args.workspace))
    side = SIDES[args.side]
    if args.profile == "cprofile":
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        figures = profiler.runcall(side, workspace, rec, out)
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(30)
    elif args.profile == "torch":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CPU]) as prof:
            figures = side(workspace, rec, out)
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30), file=sys.stderr)
    else:
        figures = side(workspace, rec, out)
    shutil.rmtree(out, ignore_errors=True)  # a run's checkpoints take hundreds of MB
    print(json.dumps(figures))
    return 0


# -- the pairs ------------------------------------------------------------------------
def side_process(name: str, root: Path, threads: int, profile: str | None) -> dict[str, Any]:
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false", "OMP_NUM_THREADS": str(threads or os.cpu_count())}
    env["TRAINLAB_HOME"] = str(root / "home")  # bench runs stay out of the user's history
    command = [sys.executable, str(Path(__file__).resolve()), "--side", name, "--workspace", str(root), "--threads", str(threads)]
    if profile:
        command += ["--profile", profile]
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    if profile:
        sys.stderr.write(f"--- profile of {name} ---\n{done.stderr}\n")
    if done.returncode != 0:
        raise SystemExit(f"{name} side failed (exit {done.returncode}): {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    from pairs import bench_parser, speaker

    parser = bench_parser(__doc__, "a tiny model on 96 texts, one epoch (the smoke test)")
    parser.add_argument("--pairs", type=int, default=4, help="runs of each side, alternating ABBA")
    parser.add_argument("--train", type=int, default=1280, help="training texts")
    parser.add_argument("--val", type=int, default=320, help="validation texts")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, help="peak learning rate (default 2e-4 from random weights, 5e-5 with --model)")
    parser.add_argument("--model", help="a pretrained transformers folder (a BERT-family encoder, e.g. all-MiniLM-L6-v2) to fine-tune instead of random weights")
    parser.add_argument("--data", help="'debian' (this machine's package descriptions by section) or a folder with train.csv and val.csv (text,label); default: generated texts")
    parser.add_argument("--precision", choices=("fp32", "bf16"), default="fp32", help="both sides: TrainLab's precision, the Trainer's bf16=True")
    parser.add_argument("--trainlab-precision", choices=("auto", "fp32", "bf16"), help="TrainLab's precision alone (default: as --precision)")
    parser.add_argument("--keep", action="store_true", help="keep the workspace (data, model, runs) in the temporary folder")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads in each side (0: torch's default)")
    parser.add_argument("--profile", choices=("cprofile", "torch"), help="profile each side once (stderr) instead of pairs")
    parser.add_argument("--side", choices=tuple(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--workspace", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side:
        return run_side(args)
    say = speaker(args)

    shape = QUICK_MODEL if args.quick else MINILM
    n_train, n_val, epochs = (96, 32, 1) if args.quick else (args.train, args.val, args.epochs)
    if args.model and not Path(args.model, "config.json").is_file():
        parser.error(f"--model {args.model}: not a transformers model folder (no config.json there)")
    root = Path(tempfile.mkdtemp(prefix="trainlab-text-vs-trainer-"))
    os.environ["TRAINLAB_HOME"] = str(root / "home")
    lr = args.lr if args.lr is not None else (5e-5 if args.model else 2e-4)
    workspace = make_workspace(root, n_train, n_val, shape, base_model=args.model, data=args.data)
    workspace["recipe"] = recipe(workspace, {"epochs": epochs, "lr": lr, "precision": args.precision})
    workspace["trainlab_precision"] = args.trainlab_precision
    Path(root, "workspace.json").write_text(json.dumps(workspace), encoding="utf-8")
    say(f"workspace {root}; recipe {workspace['recipe']}")
    try:
        return measure(args, root, workspace, shape, n_train, n_val, say)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def model_summary(folder: str, base: str | None) -> dict[str, Any]:
    config = json.loads(Path(folder, "config.json").read_text(encoding="utf-8"))
    keys = ("hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "vocab_size")
    return {**{k: config.get(k) for k in keys}, "pretrained": base}


def measure(args: argparse.Namespace, root: Path, workspace: dict[str, Any], shape: dict[str, int], n_train: int, n_val: int, say) -> int:
    from pairs import emit, load_average, ratio_summary, run_pairs, spread

    load_start = os.getloadavg() if hasattr(os, "getloadavg") else None
    if args.profile:
        for name in SIDES:
            say(f"{name}: {side_process(name, root, args.threads, args.profile)}")
        return 0

    def said(pair: int, name: str, figures: dict[str, Any]) -> None:
        say(f"pair {pair + 1} {name}: {figures['samples'] / figures['wall']:.1f} samples/s, "
            f"{figures['samples'] / figures['cpu']:.1f} per CPU s, accuracy {figures['accuracy'][-1]:.3f}")  # fmt: skip

    runs = run_pairs({name: (lambda name=name: side_process(name, root, args.threads, None)) for name in SIDES}, args.pairs, after=said)

    def rates(name: str, clock: str) -> list[float]:
        return [r["samples"] / r[clock] for r in runs[name]]

    def last_accuracy(name: str) -> list[float]:
        return [r["accuracy"][-1] for r in runs[name]]

    ratio = ratio_summary(rates("trainlab", "wall"), rates("trainer", "wall"))
    cpu_ratio = ratio_summary(rates("trainlab", "cpu"), rates("trainer", "cpu"))
    accuracy = {name: spread(last_accuracy(name)) for name in SIDES}
    figures = {
        "bench": "text_vs_trainer",
        "quick": args.quick,
        "model": model_summary(workspace["model"], args.model),
        "data": args.data or "generated",
        "train": n_train,
        "val": n_val,
        "recipe": workspace["recipe"],
        "pairs": args.pairs,
        "samples_per_second": {name: spread(rates(name, "wall")) for name in SIDES},
        "samples_per_cpu_second": {name: spread(rates(name, "cpu")) for name in SIDES},
        "ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "accuracy": accuracy,
        "accuracy_diff": round(accuracy["trainlab"]["median"] - accuracy["trainer"]["median"], 4),
        "end_to_end_s": {name: spread([r["end_to_end_s"] for r in runs[name]]) for name in SIDES},
        "samples_trained": {name: runs[name][0]["samples"] for name in SIDES},
        "steps": {name: runs[name][0]["steps"] for name in SIDES},
        "threads": {name: runs[name][0]["threads"] for name in SIDES},
        "precision": {name: runs[name][0]["precision"] for name in SIDES},
        "attention": {name: runs[name][0]["attention"] for name in SIDES},
        "trainer_optimizer": runs["trainer"][0].get("optimizer"),
        "load_average_start": [round(v, 2) for v in load_start] if load_start else None,
        "load_average_end": load_average(),
    }
    figures["goal_met"] = ratio["median"] >= 1.3 and abs(figures["accuracy_diff"]) <= 0.02
    return emit("text_vs_trainer", args, figures)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
