"""Hostile and odd inputs: pickles that would run code, model folders that point outside
themselves, class folders that cannot be labels, symlink loops, huge CSV fields, file modes."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from fixtures.images.imagedata import cpu_ctx, make_task, shapes
from helpers import one_json_line, run_trainlab, subprocess_env
from trainlab import DataError, StopRequested, UsageError
from trainlab.models import catalog as modelstore
from trainlab.system import paths
from trainlab.system.fileio import DamagedFileError
from trainlab_plugins.image.folder import SEEN_BEFORE, TO_DATA_ROOT, read_dataset, scan_class_folders
from trainlab_plugins.image.models import build_architecture, read_weights_file
from trainlab_resources import resource_path

SYSTEM = f"{os.system.__module__}.system"  # posix.system here, nt.system on Windows


class RunsACommand:
    """Unpickling this calls os.system: what a hostile weights file does."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def hostile_pickle(path: Path, marker: Path, legacy: bool = False, tensors=None) -> Path:
    payload = dict(tensors or {"fc.weight": torch.zeros(2, 2)})
    payload["extra"] = RunsACommand(f"echo pwned > {marker}")
    torch.save(payload, path, _use_new_zipfile_serialization=not legacy)
    return path


def assert_refused_pickle(message: str, file: Path) -> None:
    assert f"cannot read weights file {file}" in message and SYSTEM in message
    assert "\n" not in message and "safetensors" in message and "trusted machine" in message
    # none of torch's advice: no "file an issue", no "re-run with weights_only=False"
    assert "file an issue" not in message and "Re-running" not in message and "Weights only load failed" not in message


# -- pickled weights ----------------------------------------------------------------


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy-pickle"])
def test_a_weights_pickle_that_would_run_code_is_refused_in_one_line(tmp_path, legacy):
    marker = tmp_path / "pwned.txt"
    evil = hostile_pickle(tmp_path / "evil.pth", marker, legacy=legacy)
    with pytest.raises(UsageError) as err:
        read_weights_file(evil)
    assert_refused_pickle(str(err.value), evil)
    with pytest.raises(modelstore.UnsafeWeightsError) as err:
        modelstore.check_pickle_weights(evil)
    assert_refused_pickle(str(err.value), evil)
    assert not marker.exists()


def test_image_training_with_hostile_weights_is_exit_2_and_leaves_no_run_folder(tmp_path):
    marker = tmp_path / "pwned.txt"
    evil = hostile_pickle(tmp_path / "evil.pth", marker, tensors=build_architecture("small-cnn", 3).state_dict())
    data = shapes(tmp_path / "data", classes=3, per_class=6)
    out = tmp_path / "run"
    result = run_trainlab("train", "image-classification", "--data", data, "--set", f"weights={evil}", "--out", out, "--json")
    assert result.returncode == 2, result.stderr
    assert_refused_pickle(one_json_line(result)["error"], evil)
    assert "Traceback" not in result.stderr and "pwned" not in result.stdout + result.stderr
    assert not marker.exists() and not out.exists()
    assert not paths.runs_dir().exists() or not any(paths.runs_dir().iterdir())


def tiny_text_model_folder(folder: Path) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from trainlab_plugins.text.models import tiny_bert_vocab_dir

    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bert_vocab_dir()), local_files_only=True)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    BertForSequenceClassification(config).save_pretrained(str(folder))
    tokenizer.save_pretrained(str(folder))
    return folder


@pytest.fixture
def hostile_text_model(tmp_path):
    """A model folder whose only weights are a pytorch_model.bin that would run a command."""
    folder = tiny_text_model_folder(tmp_path / "hostile-bert")
    from safetensors.torch import load_file

    tensors = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    marker = tmp_path / "pwned.txt"
    hostile_pickle(folder / "pytorch_model.bin", marker, tensors=tensors)
    return folder, marker


def test_models_import_refuses_a_folder_with_hostile_pickled_weights(hostile_text_model):
    folder, marker = hostile_text_model
    result = run_trainlab("models", "import", folder, "--json")
    assert result.returncode == 2, result.stderr
    message = one_json_line(result)["error"]
    assert_refused_pickle(message, folder / "pytorch_model.bin")
    assert "AutoModel.from_pretrained" in message  # the conversion for a model folder
    assert not marker.exists()
    assert not modelstore.store_dir().exists() or not any(modelstore.store_dir().iterdir())


def test_text_training_with_hostile_pickled_weights_is_exit_2_before_the_run_folder(hostile_text_model, tmp_path):
    folder, marker = hostile_text_model
    out = tmp_path / "run"
    sample = resource_path("samples", "text")
    result = run_trainlab("train", "text-classification", "--data", sample, "--model", folder, "--out", out, "--json")
    assert result.returncode == 2, result.stderr
    assert_refused_pickle(one_json_line(result)["error"], folder / "pytorch_model.bin")
    assert not marker.exists() and not out.exists() and "Traceback" not in result.stderr


def test_a_tensors_only_pytorch_model_bin_is_still_accepted(tmp_path):
    folder = tiny_text_model_folder(tmp_path / "plain-bert")
    from safetensors.torch import load_file

    tensors = load_file(str(folder / "model.safetensors"))
    (folder / "model.safetensors").unlink()
    torch.save(tensors, folder / "pytorch_model.bin")
    modelstore.check_weights(folder)
    from trainlab_plugins.text.models import load_trained

    assert load_trained(folder).config.num_labels == 2


# -- exported text models ---------------------------------------------------------------


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_an_exported_text_model_carries_a_checksum_and_is_readable_by_colleagues(tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from trainlab.system.fileio import verify_safetensors
    from trainlab_plugins.text import models

    source = tiny_text_model_folder(tmp_path / "src")
    tokenizer = AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(source), local_files_only=True)
    out = tmp_path / "run" / "model"
    models.save_model_folder(model, tokenizer, out, {"max_length": 32})
    weights = out / "model.safetensors"
    assert verify_safetensors(weights) == "verified"
    for file in out.iterdir():
        assert file.stat().st_mode & 0o777 == 0o666 & ~_umask(), file  # transformers' safetensors writes 0600
    AutoModelForSequenceClassification.from_pretrained(str(out), local_files_only=True)  # plain transformers
    with open(weights, "r+b") as handle:
        handle.seek(weights.stat().st_size - 100)
        byte = handle.read(1)[0]
        handle.seek(-1, 1)
        handle.write(bytes([byte ^ 1]))
    with pytest.raises(DamagedFileError, match=f"{weights} is damaged"):
        models.load_trained(out)


# -- image model folders --------------------------------------------------------------


@pytest.fixture
def image_model_folder(tmp_path):
    from trainlab_plugins.image.export import save_model_folder

    model = build_architecture("small-cnn", 2, 32)
    pre = {"image_size": 32, "crop_fraction": 1.0, "resize": 32, "interpolation": "bilinear", "mean": [0.5] * 3, "std": [0.5] * 3}
    folder = tmp_path / "model"
    save_model_folder(model, folder, arch="small-cnn", label_names=["a", "b"], preprocessing=pre, log=lambda m: None, onnx=False)
    return folder


@pytest.mark.parametrize("where", ["parent", "absolute", "symlink"])
def test_a_model_json_naming_weights_outside_its_folder_is_refused(image_model_folder, tmp_path, where):
    from trainlab_plugins.image.export import load_model_folder
    from trainlab_plugins.image.predictor import make_predictor

    outside = tmp_path / "elsewhere" / "evil.safetensors"
    outside.parent.mkdir()
    (image_model_folder / "model.safetensors").rename(outside)
    meta_path = image_model_folder / "model.json"
    meta = json.loads(meta_path.read_text())
    if where == "parent":
        meta["files"]["weights"] = "../elsewhere/evil.safetensors"
    elif where == "absolute":
        meta["files"]["weights"] = str(outside)
    else:
        (image_model_folder / "model.safetensors").symlink_to(outside)
    meta_path.write_text(json.dumps(meta))
    for load in (load_model_folder, lambda folder: make_predictor(folder, "cpu")):
        with pytest.raises(DataError) as err:
            load(image_model_folder)
        assert str(meta_path) in str(err.value) and "outside the model folder" in str(err.value)
    # the same folder given as a model to fine-tune
    task, params = make_task(model=str(image_model_folder))
    with pytest.raises(DataError, match="outside the model folder"):
        task.prepare(str(shapes(tmp_path / "data", classes=2, per_class=4)), cpu_ctx(params))


@pytest.mark.long
@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_an_image_run_is_readable_by_colleagues_and_a_damaged_model_is_refused(tmp_path):
    data = shapes(tmp_path / "data", classes=2, per_class=6)
    run = tmp_path / "run"
    result = subprocess.run(
        [sys.executable, "-m", "trainlab", "train", "image-classification", "--data", str(data), "--epochs", "1",
         "--set", "image_size=32", "--out", str(run), "--json"],
        capture_output=True, text=True, timeout=240, env=subprocess_env(), preexec_fn=lambda: os.umask(0o022),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    files = [p for p in run.rglob("*") if p.is_file()]
    assert {"model.safetensors", "model.pt2", "last.safetensors", "best.safetensors"} <= {p.name for p in files}
    assert {p.name: oct(p.stat().st_mode & 0o777) for p in files} == {p.name: "0o644" for p in files}
    image = next(data.rglob("*.png"), None) or next(data.rglob("*.jpg"))
    assert run_trainlab("predict", run, image, "--json").returncode == 0
    weights = run / "model" / "model.safetensors"
    raw = bytearray(weights.read_bytes())
    raw[-12] ^= 0x40
    weights.write_bytes(bytes(raw))
    predicted = run_trainlab("predict", run, image, "--json")
    assert predicted.returncode == 2 and f"{weights} is damaged" in one_json_line(predicted)["error"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- the image folder scan --------------------------------------------------------------


def test_class_folders_that_cannot_be_labels_are_reported_not_dropped(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=5)
    shapes(tmp_path / "extra", classes=2, per_class=4)
    (tmp_path / "extra" / "circle").rename(root / "..sneaky")
    (tmp_path / "extra" / "square").rename(root / "back\\slash")
    found = read_dataset(str(root), val_fraction=0.2, seed=0)
    assert found.label_names == ["circle", "square"]
    assert found.skipped == {"in a class folder whose name starts with '..'": 4, "in a class folder whose name contains a path separator": 4}
    assert {Path(p).parent.name for p, _ in found.skipped_examples} == {"..sneaky", "back\\slash"}
    note = next(w for w in found.warnings if "cannot be labels" in w)
    assert "'..sneaky'" in note and "'back\\\\slash'" in note


def test_a_symlink_to_its_own_folder_counts_each_image_once(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=5)
    (root / "circle" / "self").symlink_to(".")
    (root / "square" / "up").symlink_to("..")  # back to the data root
    (root / "a_second_name").symlink_to("square")  # sorts first, but the real folder keeps its images
    found = read_dataset(str(root), val_fraction=0.2, seed=0)
    paths_seen = [p for items in found.items.values() for p, _ in items]
    assert len(paths_seen) == 10 == len(set(paths_seen))
    assert found.label_names == ["circle", "square"]
    assert found.skipped == {SEEN_BEFORE: 2, TO_DATA_ROOT: 1}
    assert sorted(Path(p).name for p, _ in found.skipped_examples) == ["a_second_name", "self", "up"]


SCAN_TWO_LOOPS = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))  # a regression must fail, not swamp the machine
from trainlab_plugins.image.folder import scan_class_folders
result = scan_class_folders(sys.argv[1])
print(len(result.records), dict(result.skipped))
"""


@pytest.mark.skipif(os.name == "nt", reason="symlinks need privileges on Windows")
def test_two_symlink_loops_finish_fast_with_each_image_counted_once(tmp_path):
    root = shapes(tmp_path / "d", classes=2, per_class=5)
    (root / "circle" / "a").symlink_to(".")
    (root / "circle" / "b").symlink_to(".")
    # before: paths a/b/a/b/... grew as 2^depth until the kernel's 40-link limit
    result = subprocess.run([sys.executable, "-c", SCAN_TWO_LOOPS, str(root)], capture_output=True, text=True, timeout=60, env=subprocess_env())
    assert result.returncode == 0, result.stderr
    assert result.stdout.split(" ", 1)[0] == "10" and SEEN_BEFORE in result.stdout


def test_a_stop_request_ends_the_scan(tmp_path):
    root = shapes(tmp_path / "d", classes=3, per_class=20)
    for name in ("circle", "square", "triangle"):
        (root / name / "nested").mkdir()
    asked = []

    def stop_after_a_few() -> bool:
        asked.append(1)
        return len(asked) > 3

    with pytest.raises(StopRequested, match="stopped on request"):
        scan_class_folders(root, should_stop=stop_after_a_few)
    assert len(asked) == 4  # asked while walking, and it ended at the first yes
    # through the task, as the engine would ask it: a threading.Event set by the user
    stop = threading.Event()
    stop.set()
    task, params = make_task()
    ctx = cpu_ctx(params)
    ctx.should_stop = stop.is_set
    with pytest.raises(StopRequested) as err:
        task.prepare(str(root), ctx)
    assert isinstance(err.value, KeyboardInterrupt)  # handled wherever Ctrl-C is: exit 130


def test_a_stop_request_during_header_reads_does_not_wait_for_every_header(tmp_path, monkeypatch):
    from trainlab_plugins.image import folder

    root = shapes(tmp_path / "d", classes=2, per_class=40)
    read = []
    stopped = threading.Event()
    real = folder.read_header

    def gated_read(path):
        read.append(path)
        if len(read) > 5:
            stopped.wait(timeout=30)  # the rest would come only after the stop
        return real(path)

    def should_stop() -> bool:
        if len(read) >= 5:
            stopped.set()
        return stopped.is_set()

    monkeypatch.setattr(folder, "read_header", gated_read)
    with pytest.raises(StopRequested):
        scan_class_folders(root, threads=1, should_stop=should_stop)
    assert len(read) < 20  # the 60-odd pending reads were cancelled


# -- CSV ----------------------------------------------------------------------------------


def test_a_field_over_the_csv_limit_names_the_limit_the_file_and_the_row(tmp_path):
    import csv

    from trainlab_plugins.text.data import Columns, read_data, read_texts

    limit = csv.field_size_limit()
    rows = ["text,label", "fine,a", "also fine,b", f"{'x' * (limit + 10)},a", "after,b"]
    path = tmp_path / "big.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for read in (lambda: read_data(path, Columns(), 0.2, 0), lambda: read_texts(path, Columns())):
        with pytest.raises(DataError) as err:
            read()
        message = str(err.value)
        assert str(path) in message and f"{limit:,}" in message and "line 4 (row 3)" in message
        assert "malformed" not in message
    unclosed = tmp_path / "quote.csv"
    unclosed.write_text('text,label\nfine,a\n"never closed,b\n' + "more text,a\n" * (limit // 10), encoding="utf-8")
    with pytest.raises(DataError, match=r"line 3 \(row 2\): a field longer than .* quote"):
        read_data(unclosed, Columns(), 0.2, 0)
