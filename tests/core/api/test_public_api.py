"""The public ``trainlab`` API: every name a plugin may use, and what using it costs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import trainlab

HEAVY = ("torch", "torchvision", "transformers", "numpy", "PIL", "PySide6", "pyqtgraph")


def test_every_public_name_resolves_without_loading_torch_numpy_or_qt():
    """The window and `trainlab plugins` come up before torch loads: the API must not drag it in."""
    code = (
        "import json, sys, trainlab\n"
        "values = {name: getattr(trainlab, name) for name in trainlab.__all__}\n"
        f"print(json.dumps({{'count': len(values), 'heavy': [m for m in {HEAVY!r} if m in sys.modules]}}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    report = json.loads(out.stdout)
    assert report["heavy"] == []
    assert report["count"] == len(trainlab.__all__)


@pytest.mark.parametrize(
    "name",
    [
        "Callback", "RunState", "RunControl", "Log",
        "atomic_write", "atomic_write_folder", "atomic_write_json", "atomic_write_text", "read_json",
        "model_store_dir", "resolve_model", "check_text_model_folder", "FolderCheck",
        "resource_path",
    ],
)  # fmt: skip
def test_what_plugins_need_is_public(name):
    assert name in trainlab.__all__ and name in dir(trainlab)
    assert getattr(trainlab, name) is not None


def test_scripts_keep_the_engine_path_of_the_callback_classes():
    from trainlab.api import callbacks

    assert (trainlab.Callback, trainlab.RunState, trainlab.RunControl) == (callbacks.Callback, callbacks.RunState, callbacks.RunControl)


def test_a_json_file_written_through_the_api_reads_back(tmp_path):
    path = tmp_path / "model" / "meta.json"
    trainlab.atomic_write_json(path, {"architecture": "small-cnn", "classes": ["cat", "dog"]})
    assert trainlab.read_json(path) == {"architecture": "small-cnn", "classes": ["cat", "dog"]}
    assert [p.name for p in path.parent.iterdir()] == ["meta.json"]  # no temporary file left behind


def test_a_folder_written_through_the_api_replaces_the_old_one_only_once_complete(tmp_path):
    folder = tmp_path / "model"

    def first(out):
        (out / "config.json").write_text('{"version": 1}')

    def fails_half_way(out):
        (out / "weights.bin").write_bytes(b"\0" * 16)
        raise RuntimeError("the writer failed")

    trainlab.atomic_write_folder(folder, first)
    with pytest.raises(RuntimeError, match="the writer failed"):
        trainlab.atomic_write_folder(folder, fails_half_way)
    assert [p.name for p in folder.iterdir()] == ["config.json"]  # the complete one stays
    trainlab.atomic_write_folder(folder, lambda out: (out / "config.json").write_text('{"version": 2}'))
    assert trainlab.read_json(folder / "config.json") == {"version": 2}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]  # no temporary folder left behind


def test_the_model_store_lookup_finds_an_imported_model_offline(tmp_path):
    folder = trainlab.model_store_dir() / "tiny-local"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "bert"}), encoding="utf-8")
    (folder / "vocab.txt").write_text("[PAD]\n[UNK]\n", encoding="utf-8")
    (folder / "model.safetensors").write_bytes(b"")
    assert trainlab.resolve_model("tiny-local") == folder
    with pytest.raises(trainlab.UsageError, match="not available offline"):
        trainlab.resolve_model("no-such-model")


def test_resource_path_finds_what_the_built_in_plugins_ship():
    assert (trainlab.resource_path("vocab", "tiny-bert") / "vocab.txt").is_file()


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'fileio_helpers'"):
        trainlab.fileio_helpers  # noqa: B018
