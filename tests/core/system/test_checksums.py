"""Checksums of checkpoints and exported weights: written with the file, verified on load, once per version."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file, save_file

from helpers import FIXTURE_PLUGINS, one_json_line, run_trainlab
from trainlab import DataError, UsageError
from trainlab.system import fileio
from trainlab.engine.checkpoint import (
    FORMAT,
    DamagedCheckpoint,
    read_checkpoint,
    save_checkpoint,
    verify_checkpoint,
)
from trainlab.system.fileio import DamagedFileError, add_checksum, save_safetensors, verify_safetensors


def data_offset(path: Path) -> int:
    """Where the tensor bytes of a safetensors file begin."""
    with open(path, "rb") as handle:
        return 8 + int.from_bytes(handle.read(8), "little")


def flip_byte(path: Path, offset: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        value = handle.read(1)[0]
        handle.seek(offset)
        handle.write(bytes([value ^ 0x01]))


def flip_a_data_byte(path: Path) -> None:
    start = data_offset(path)
    flip_byte(path, start + (path.stat().st_size - start) // 2)


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


@pytest.fixture
def weights(tmp_path):
    path = tmp_path / "w.safetensors"
    tensors = {"conv.weight": torch.randn(8, 3, 3, 3), "fc.bias": torch.arange(10, dtype=torch.float32)}
    save_safetensors(path, tensors, {"format": "pt"})
    return path, tensors


def test_written_weights_carry_their_checksum_and_load_anywhere(weights):
    path, tensors = weights
    assert verify_safetensors(path) == "verified"
    loaded = load_file(str(path))  # plain safetensors ignores the extra metadata
    assert all(torch.equal(loaded[k], v) for k, v in tensors.items())
    assert path.stat().st_mode & 0o777 == 0o666 & ~current_umask()  # not safetensors' 0600
    assert not list(path.parent.glob(".*.tmp"))


@pytest.mark.parametrize("where", ["tensor data", "header metadata", "checksum itself"])
def test_any_flipped_byte_is_a_one_line_error_naming_the_file(weights, where):
    path, _ = weights
    header = path.read_bytes()[8 : data_offset(path)]
    if where == "tensor data":
        flip_a_data_byte(path)
    elif where == "header metadata":  # still valid JSON: "pt" becomes "pu"
        flip_byte(path, 8 + header.index(b'"pt"') + 2)
    else:
        flip_byte(path, 8 + header.index(b'"trainlab.sha256":"') + len('"trainlab.sha256":"') + 5)
    with pytest.raises(DamagedFileError) as err:
        verify_safetensors(path)
    message = str(err.value)
    assert str(path) in message and "damaged" in message and "\n" not in message
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2


@pytest.mark.parametrize(
    "damage, reason",
    [
        (lambda raw: raw[:-7], "truncated"),
        (lambda raw: raw + b"\0" * 16, "longer than its header says"),
        (lambda raw: raw[:8] + b"#" + raw[9:], "not valid JSON"),
        (lambda raw: (10**12).to_bytes(8, "little") + raw[8:], "not a safetensors file at all: it starts with"),
        (lambda raw: (len(raw) - 4).to_bytes(8, "little") + raw[8:], "header is longer than the file"),
        (lambda raw: raw[:5], "too short"),
    ],
)
def test_truncated_or_garbled_files_are_damaged_too(weights, damage, reason):
    path, _ = weights
    path.write_bytes(damage(path.read_bytes()))
    with pytest.raises(DamagedFileError, match=reason) as err:
        verify_safetensors(path)
    assert str(path) in str(err.value)


def test_files_without_a_checksum_still_load_unverified(tmp_path):
    path = tmp_path / "old.safetensors"
    save_file({"x": torch.ones(3)}, str(path), metadata={"format": "pt"})
    assert verify_safetensors(path) == "unverified"


def test_a_checksum_can_be_added_to_a_file_another_library_wrote(tmp_path):
    path = tmp_path / "model.safetensors"
    tensors = {"a": torch.randn(5, 7), "b": torch.arange(3), "c": torch.randn(2, dtype=torch.float16)}
    save_file(tensors, str(path), metadata={"format": "pt"})
    add_checksum(path)
    assert verify_safetensors(path) == "verified"
    from safetensors import safe_open

    with safe_open(str(path), framework="pt") as handle:
        assert handle.metadata()["format"] == "pt"  # what transformers checks is kept
    assert all(torch.equal(load_file(str(path))[k], v) for k, v in tensors.items())
    flip_a_data_byte(path)
    with pytest.raises(DamagedFileError):
        verify_safetensors(path)


def test_a_verified_file_version_is_hashed_once(weights, monkeypatch):
    path, _ = weights
    monkeypatch.setattr(fileio, "RACY_SECONDS", 0.0)  # the file was written just now
    hashed = []
    real = fileio._digest
    monkeypatch.setattr(fileio, "_digest", lambda *a: hashed.append(1) or real(*a))
    assert verify_safetensors(path) == "verified" and len(hashed) == 1
    assert verify_safetensors(path) == "verified" and len(hashed) == 1  # the cached verdict
    # Changed behind the cache's back, even with the old mtime put back: ctime
    # moves, so the file is hashed again and the damage found.
    stat = path.stat()
    flip_a_data_byte(path)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(DamagedFileError):
        verify_safetensors(path)
    assert len(hashed) == 2


def test_a_file_just_written_is_not_cached(weights, monkeypatch):
    # Timestamps are coarse: a second write within the same tick would keep the
    # identity, so a fresh file's verdict is not kept.
    path, _ = weights
    hashed = []
    real = fileio._digest
    monkeypatch.setattr(fileio, "_digest", lambda *a: hashed.append(1) or real(*a))
    verify_safetensors(path)
    verify_safetensors(path)
    assert len(hashed) == 2


# -- checkpoints ---------------------------------------------------------------


def small_checkpoint(tmp_path: Path, name="last.safetensors") -> tuple[Path, torch.nn.Module]:
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    model(torch.randn(2, 16)).sum().backward()
    optimizer.step()
    path = tmp_path / "checkpoints" / name
    save_checkpoint(path, model, {"position": {"step": 1}}, optimizer=optimizer)
    return path, model


def test_a_damaged_checkpoint_is_refused_not_loaded(tmp_path):
    path, _ = small_checkpoint(tmp_path)
    assert verify_checkpoint(path) == "verified"
    flip_a_data_byte(path)
    for check in (verify_checkpoint, read_checkpoint):
        with pytest.raises(DamagedCheckpoint) as err:
            check(path)
        assert str(err.value).startswith(f"checkpoint {path} is damaged") and "\n" not in str(err.value)
        assert isinstance(err.value, DataError) and err.value.exit_code == 2


def test_a_checkpoint_with_a_damaged_header_is_the_same_one_line_error(tmp_path):
    path, _ = small_checkpoint(tmp_path)
    raw = bytearray(path.read_bytes())
    raw[raw.index(b"trainlab-checkpoint/1") + 20] = ord("2")  # valid JSON still; the checksum catches it
    path.write_bytes(bytes(raw))
    with pytest.raises(DamagedCheckpoint, match="is damaged") as err:
        read_checkpoint(path)
    assert str(path) in str(err.value)
    path.write_bytes(b"\x10\0\0\0\0\0\0\0{not json at all" + bytes(raw[24:]))
    with pytest.raises(DamagedCheckpoint, match=f"checkpoint {path} is damaged: its header"):
        verify_checkpoint(path)


def test_checkpoints_from_before_checksums_still_load(tmp_path):
    model = torch.nn.Linear(4, 2)
    path = tmp_path / "old.safetensors"
    plain = {"format": FORMAT, "aliases": {}, "meta": {"position": {"step": 3}}}
    save_file({f"model.{k}": v for k, v in model.state_dict().items()}, str(path), metadata={"trainlab": json.dumps(plain)})
    assert verify_checkpoint(path) == "unverified"
    tensors, loaded = read_checkpoint(path)
    assert loaded["meta"]["position"]["step"] == 3 and torch.equal(tensors["model.weight"], model.weight.detach())


# -- through the CLI -------------------------------------------------------------


def run_cli(*args, umask=None):
    return run_trainlab(*args, extra_path=[FIXTURE_PLUGINS], preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)


@pytest.mark.skipif(os.name == "nt", reason="POSIX file modes")
def test_checkpoints_are_readable_by_colleagues_and_damage_is_exit_2(toy_csv, tmp_path):
    run = tmp_path / "run"
    result = run_cli("train", "toy-classification", "--data", toy_csv, "--out", run, "--json", umask=0o022)
    assert result.returncode == 0, result.stderr
    # (the toy plugin writes its model folder itself; the built-in tasks' folders are checked in test_hostile_inputs)
    for file in [*(run / "checkpoints").iterdir(), run / "run.json", run / "eval.json"]:
        assert file.stat().st_mode & 0o777 == 0o644, file
    good = run_cli("eval", run, "--json")
    assert good.returncode == 0 and one_json_line(good)["accuracy"] > 0.5

    best = run / "checkpoints" / "best.safetensors"
    flip_a_data_byte(best)
    bad = run_cli("eval", run, "--json")
    assert bad.returncode == 2
    assert f"checkpoint {best} is damaged" in one_json_line(bad)["error"] and "Traceback" not in bad.stderr

    last = run / "checkpoints" / "last.safetensors"
    flip_a_data_byte(last)
    resumed = run_cli("train", "--resume", run, "--more-epochs", "1", "--json")
    assert resumed.returncode == 2, resumed.stderr
    assert f"checkpoint {last} is damaged" in one_json_line(resumed)["error"]
