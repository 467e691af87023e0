"""Finding pretrained models offline: the model store, the Hugging Face cache, torch hub files."""

import json
import subprocess
import sys

import pytest

from trainlab import UsageError
from trainlab.models import catalog as modelstore


def model_folder(path, *, weights="model.safetensors", tokenizer="vocab.txt", model_type="bert", extra=()):
    path.mkdir(parents=True, exist_ok=True)
    if model_type is not None:
        (path / "config.json").write_text(json.dumps({"model_type": model_type, "architectures": ["BertForMaskedLM"]}))
    if tokenizer:
        (path / tokenizer).write_text("[PAD]\n[UNK]\n")
    if weights:
        # a valid safetensors file holding no tensors (an 8-byte header "{}" and padding): import checks headers
        empty_safetensors = (8).to_bytes(8, "little") + b"{}      "
        (path / weights).write_bytes(empty_safetensors if weights.endswith(".safetensors") else b"\0" * 64)
    for name in extra:
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(b"\0" * 32)
    return path


def hf_cache_entry(cache, repo_id, commit="0123abcd", **kwargs):
    """A model laid out as huggingface_hub caches it: blobs, snapshot symlinks, refs/main."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    staging = model_folder(cache / ".staging" / repo_id.replace("/", "_"), **kwargs)
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for i, file in enumerate(sorted(staging.iterdir())):
        blob = repo / "blobs" / f"blob{i}"
        blob.write_bytes(file.read_bytes())
        (snapshot / file.name).symlink_to(blob)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hf" / "hub"
    cache.mkdir(parents=True)
    monkeypatch.delenv("HF_HOME", raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    return cache


def test_short_and_org_qualified_names_find_each_other(hf_cache):
    org = hf_cache_entry(hf_cache, "google-bert/bert-base-chinese")
    legacy = hf_cache_entry(hf_cache, "bert-base-uncased")
    assert modelstore.resolve("bert-base-chinese") == org
    assert modelstore.resolve("google-bert/bert-base-chinese") == org
    assert modelstore.resolve("bert-base-uncased") == legacy
    assert modelstore.resolve("google-bert/bert-base-uncased") == legacy


def test_hf_home_is_honoured_and_hf_hub_cache_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.delenv("HUGGINGFACE_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    snapshot = hf_cache_entry(tmp_path / "home" / "hub", "org/model-a")
    assert modelstore.hf_hub_cache_dir() == tmp_path / "home" / "hub"
    assert modelstore.resolve("model-a") == snapshot
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "elsewhere"))
    with pytest.raises(UsageError, match="not available offline"):
        modelstore.resolve("model-a")


def test_an_incomplete_download_names_what_is_missing(hf_cache):
    hf_cache_entry(hf_cache, "org/half-model", weights=None)
    with pytest.raises(UsageError) as err:
        modelstore.resolve("org/half-model")
    assert "incomplete" in str(err.value) and "weights (model.safetensors or pytorch_model.bin)" in str(err.value)
    assert "hf download org/half-model --local-dir half-model" in str(err.value)


def test_a_short_name_in_two_organisations_is_ambiguous(hf_cache):
    hf_cache_entry(hf_cache, "alice/tiny")
    hf_cache_entry(hf_cache, "bob/tiny")
    with pytest.raises(UsageError, match="ambiguous.*alice/tiny.*bob/tiny"):
        modelstore.resolve("tiny")
    assert modelstore.resolve("bob/tiny").parts[-3] == "models--bob--tiny"


def test_unknown_names_list_what_is_here_and_how_to_stage(hf_cache):
    hf_cache_entry(hf_cache, "google-bert/bert-base-chinese")
    with pytest.raises(UsageError) as err:
        modelstore.resolve("hfl/chinese-roberta-wwm-ext")
    message = str(err.value)
    assert "google-bert/bert-base-chinese" in message  # what is available
    assert "hf download hfl/chinese-roberta-wwm-ext --local-dir chinese-roberta-wwm-ext" in message
    assert "trainlab models import chinese-roberta-wwm-ext" in message


def test_import_copies_what_a_run_needs_and_the_store_comes_first(hf_cache, tmp_path):
    src = model_folder(
        tmp_path / "staged" / "bert-base-chinese",
        extra=("pytorch_model.bin", "tf_model.h5", "flax_model.msgpack", ".cache/huggingface/download.lock", "tokenizer_config.json"),
    )
    hf_cache_entry(hf_cache, "google-bert/bert-base-chinese")
    entry = modelstore.import_model(src)
    stored = modelstore.store_dir() / "bert-base-chinese"
    assert entry["name"] == "bert-base-chinese" and entry["source"] == "store" and entry["usable"] and not entry["replaced"]
    assert entry["path"] == str(stored)
    names = sorted(p.name for p in stored.iterdir())
    assert names == ["config.json", "model.safetensors", "tokenizer_config.json", "trainlab-model.json", "vocab.txt"]
    assert modelstore.resolve("bert-base-chinese") == stored
    assert modelstore.resolve("google-bert/bert-base-chinese") == stored  # the store wins over the cache
    again = modelstore.import_model(src, name="google-bert/bert-base-chinese")
    assert again["name"] == "google-bert/bert-base-chinese" and not again["replaced"]
    assert modelstore.import_model(src)["replaced"]
    modelstore.import_model(src, name="alice/tiny")
    with pytest.raises(UsageError, match="not available offline"):
        modelstore.resolve("bob/tiny")  # another organisation's model of the same short name
    assert not [p for p in modelstore.store_dir().iterdir() if p.name.startswith(".")]  # no leftovers


@pytest.mark.parametrize(
    "kwargs, missing",
    [
        ({"weights": None}, "weights"),
        ({"tokenizer": None}, "a tokenizer"),
        ({"model_type": None}, "config.json"),
        ({"weights": "tf_model.h5"}, "only TensorFlow/Flax weights"),
        ({"model_type": "vit"}, "sequence-classification head"),
    ],
)
def test_import_rejects_folders_that_hold_no_usable_model(tmp_path, kwargs, missing):
    src = model_folder(tmp_path / "m", **kwargs)
    with pytest.raises(UsageError) as err:
        modelstore.import_model(src)
    assert "missing" in str(err.value) and missing in str(err.value) and str(src) in str(err.value)
    assert not modelstore.store_dir().exists() or not any(modelstore.store_dir().iterdir())


def test_import_of_a_path_that_is_not_a_folder(tmp_path):
    with pytest.raises(UsageError, match="no such folder"):
        modelstore.import_model(tmp_path / "nothing")
    (tmp_path / "file.bin").write_bytes(b"x")
    with pytest.raises(UsageError, match="not a folder"):
        modelstore.import_model(tmp_path / "file.bin")


def test_sharded_weights_need_every_shard(tmp_path):
    src = model_folder(tmp_path / "sharded", weights=None, extra=("model-00001-of-00002.safetensors",))
    index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (src / "model.safetensors.index.json").write_text(json.dumps(index))
    assert not modelstore.check_folder(src).usable
    (src / "model-00002-of-00002.safetensors").write_bytes(b"\0")
    assert modelstore.check_folder(src).usable


def test_available_models_lists_store_cache_and_torch_checkpoints(hf_cache, tmp_path):
    modelstore.import_model(model_folder(tmp_path / "mine"))
    hf_cache_entry(hf_cache, "google-bert/bert-base-chinese")
    hf_cache_entry(hf_cache, "org/broken", weights=None)
    checkpoints = tmp_path / "torch" / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / "resnet18-f37072fd.pth").write_bytes(b"\0" * 10)
    (checkpoints / "efficientnet-lite0-57934424.pth").write_bytes(b"\0" * 10)
    models = {m["name"]: m for m in modelstore.available_models()}
    assert models["mine"]["source"] == "store" and models["mine"]["usable"]
    assert models["google-bert/bert-base-chinese"]["source"] == "hf-cache"
    assert models["org/broken"]["usable"] is False and models["org/broken"]["missing"]
    resnet = models["resnet18-f37072fd.pth"]
    assert resnet["source"] == "torch-hub" and resnet["task"] == "image-classification" and resnet["arch"] == "resnet18"
    assert models["efficientnet-lite0-57934424.pth"]["arch"] == "efficientnet_lite0"  # the image preset's name


def test_listing_models_does_not_import_torch(hf_cache):
    hf_cache_entry(hf_cache, "google-bert/bert-base-chinese")
    code = "import sys, trainlab.models.catalog as m; names = [x['name'] for x in m.available_models()]; print(names, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['google-bert/bert-base-chinese'] False"


def test_the_conversion_a_refused_pickle_names_writes_safetensors_of_transposed_and_tied_tensors(tmp_path):
    """The command the refusal prints, run as written: save_file takes neither a transposed tensor
    (as some published checkpoints hold) nor two names for one tensor (tied weights)."""
    import collections
    import re

    import torch
    from safetensors.torch import load_file

    weights = torch.arange(6.0).reshape(2, 3)
    # a defaultdict: harmless, but not among what torch.load(weights_only=True) accepts
    state = collections.defaultdict(list, {"fc.weight": weights.t(), "embed.weight": weights, "head.weight": weights})
    assert not state["fc.weight"].is_contiguous()
    path = tmp_path / "trusted.pth"
    torch.save(state, path)
    with pytest.raises(modelstore.UnsafeWeightsError) as err:
        modelstore.check_pickle_weights(path)
    message = str(err.value)
    assert "\n" not in message and "collections.defaultdict" in message
    command = re.search(r'on a trusted machine: (python -c ".*") and use trusted\.safetensors$', message)
    assert command, message
    # as a user pastes it into a shell, with this test's Python for "python"
    line = sys.executable + command.group(1).removeprefix("python")
    proc = subprocess.run(["/bin/sh", "-c", line], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    converted = load_file(str(tmp_path / "trusted.safetensors"))
    assert sorted(converted) == ["embed.weight", "fc.weight", "head.weight"]
    assert torch.equal(converted["fc.weight"], weights.t()) and torch.equal(converted["head.weight"], weights)
    modelstore.verify_safetensors(tmp_path / "trusted.safetensors")  # what TrainLab checks before it reads one
