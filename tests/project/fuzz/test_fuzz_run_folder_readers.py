"""The run-folder readers fuzzed: run.json, eval.json, metrics.jsonl, the run index (its
SQLite file, its list of --out folders, the run folders it rebuilds from) and checkpoint headers.

The property (fuzzing.py): a one-line ``RunFileError`` / ``DamagedCheckpoint`` /
``IndexUnavailable``, or the record read; metrics.jsonl is read tolerantly
(CONTRACT.md): a line that is not an event is skipped and counted, never raised.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import strategies as st

from fuzzing import DEPTHS, file_bytes, fresh, fuzz, json_scalar, json_value, jsonl, odd_text, one_line_error, write
from trainlab.engine.checkpoint import (
    META_KEY,
    DamagedCheckpoint,
    checkpoint_position,
    checkpoint_step,
    read_checkpoint_header,
    verify_checkpoint,
)
from trainlab.runfolder.index import RunDir, RunStore
from trainlab.runfolder.tail import MetricsTail, read_events
from trainlab.system.fileio import save_safetensors

RUN = {
    "schema_version": 1, "id": "r1", "name": "", "task": "image-classification", "status": "completed", "error": "",
    "plugin": {"name": "image"}, "parameters": {"epochs": 1}, "data": {"path": "/data", "fingerprint": "x"},
    "label_names": ["a", "b"], "timings": {"started": 1.0, "finished": 2.0, "duration": 1.0}, "world_size": 1, "pid": 5,
    "best": {"metric": "accuracy", "value": 0.5, "step": 3}, "metrics": {"accuracy": 0.5}, "segments": [{"start": 0}],
    "samples_per_second": 3.5,
}  # fmt: skip
EVAL = {
    "val": {"family": "classification", "split": "val", "samples": 2, "loss": 0.5, "accuracy": 0.5, "macro_f1": 0.4,
            "label_names": ["a", "b"], "confusion_matrix": [[1, 0], [1, 0]],
            "per_class": [{"label": "a", "precision": 0.5, "recall": 1.0, "f1": 0.6, "support": 1}],
            "misclassified": [{"key": 1, "example": "x.png", "true": "b", "predicted": "a", "scores": [["a", 0.6]]}],
            "scatter": [[1.0, 2.0]], "residual_histogram": {"edges": [0, 1], "counts": [1]}},
}  # fmt: skip


def _mutated_object(base: dict) -> st.SearchStrategy[bytes]:
    """``base`` with values replaced by any JSON value (wrong types, odd numbers, nesting), then as bytes."""
    keys = sorted(base)
    changed = st.dictionaries(st.sampled_from(keys), json_value, max_size=4).map(lambda c: {**base, **c})
    nested = st.tuples(st.sampled_from([k for k in keys if isinstance(base[k], dict)]), st.dictionaries(odd_text, json_value, max_size=3))
    deeper = nested.map(lambda kv: {**base, kv[0]: {**base[kv[0]], **kv[1]}})
    return st.one_of(changed, deeper, st.just(base)).map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("depth", DEPTHS)
def test_run_json_reads_or_names_the_file_in_one_line(tmp_path, depth):
    def check(case):
        run = RunDir(fresh(tmp_path))
        write(run.run_json, case)
        one_line_error(run.read_record)
        assert run.title()

    deep = b'{"id": ' + b"[" * 3000 + b"]" * 3000 + b"}"  # failed once: RecursionError
    huge = b'{"pid": 1' + b"0" * 400 + b"}"  # failed once: OverflowError, an integer past a float
    fuzz(depth, "run.json", file_bytes(_mutated_object(RUN)), check, examples=(deep, huge))


@pytest.mark.parametrize("depth", DEPTHS)
def test_eval_json_reads_or_names_the_file_in_one_line(tmp_path, depth):
    split = st.dictionaries(st.sampled_from(sorted(EVAL["val"])), json_value, max_size=4).map(lambda c: {"val": {**EVAL["val"], **c}})
    as_bytes = split.map(lambda d: json.dumps(d, ensure_ascii=False).encode("utf-8", "surrogatepass"))

    def check(case):
        run = RunDir(fresh(tmp_path))
        write(run.eval_json, case)
        record = one_line_error(run.read_eval)
        if not isinstance(record, Exception) and record.primary is not None:
            one_line_error(lambda: record.primary.view_details())

    deep = b'{"val": ' + b"[" * 3000 + b"]" * 3000 + b"}"  # failed once: RecursionError
    huge = b'{"val": {"samples": 1' + b"0" * 400 + b"}}"  # failed once: OverflowError, an integer past a float
    fuzz(depth, "eval.json", file_bytes(st.one_of(as_bytes, _mutated_object(EVAL))), check, examples=(deep, huge))


EVENTS = [
    {"event": "started", "time": 1.0, "task": "t", "run_dir": "/r"},
    {"event": "train", "time": 2.0, "step": 1, "epoch": 0, "loss": 0.5, "lr": 0.1},
    {"event": "eval", "time": 3.0, "step": 1, "epoch": 0, "metrics": {"accuracy": 0.5}, "split": "val"},
    {"event": "progress", "time": 3.5, "phase": "train", "done": 1, "total": 2},
    {"event": "system", "time": 4.0, "gpus": [{"index": 0}], "cpu_percent": 5.0},
    {"event": "log", "time": 5.0, "message": "hi", "level": "info"},
    {"event": "finished", "time": 6.0, "status": "completed"},
]
event_line = st.one_of(
    st.sampled_from(EVENTS),
    st.tuples(st.sampled_from(EVENTS), st.dictionaries(st.sampled_from(["time", "step", "epoch", "loss", "metrics", "gpus", "event",
                                                                          "status", "message", "phase", "total"]), json_value, max_size=3))
    .map(lambda t: {**t[0], **t[1]}),
    json_value,
)  # fmt: skip


@pytest.mark.parametrize("depth", DEPTHS)
def test_metrics_jsonl_is_read_tolerantly_bad_lines_counted(tmp_path, depth):
    strategy = st.tuples(file_bytes(st.lists(event_line, max_size=8).map(jsonl)), st.integers(1, 64))

    def check(case):
        data, chunk = case
        path = write(fresh(tmp_path) / "metrics.jsonl", data)
        events = one_line_error(lambda: list(read_events(path)), errors=())
        lines = data.count(b"\n") + 1
        assert len(events) <= lines
        tail = MetricsTail(path)
        followed = one_line_error(lambda: [e for _ in range(len(data) // chunk + 2) for e in tail.read_new(limit_bytes=chunk)], errors=())
        # Followed in chunks or read whole, the complete lines give the same events.
        # (A last line without its newline may differ: followed, a whole event
        # is taken before the bytes after it arrive; read whole, the line is one.)
        complete = [e.kind for e in read_events(write(path.with_name("complete.jsonl"), data[: data.rfind(b"\n") + 1]))]
        assert [e.kind for e in followed][: len(complete)] == complete == [e.kind for e in events][: len(complete)]
        assert tail.bad_lines <= lines
        one_line_error(lambda: list(read_events(path, tolerate_truncated=False)), errors=(ValueError,))

    deep = (jsonl(EVENTS[:2]) + b"[" * 3000 + b"]" * 3000 + b"\n", 16)  # failed once: RecursionError
    unended = (b'{"event": "started", "time": 1.0}\x00', 1)  # a whole event, then a byte and no newline
    fuzz(depth, "metrics.jsonl", strategy, check, examples=(deep, unended))


def _index_bytes(rows: list[dict]) -> bytes:
    """An index database made by RunStore, then rows written straight into it (values of any type)."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "index.sqlite3"
        RunStore(db)
        with sqlite3.connect(db) as conn:
            conn.execute("PRAGMA journal_mode=delete")
            for row in rows:
                cols = ", ".join(row)
                conn.execute(f"INSERT OR REPLACE INTO runs ({cols}) VALUES ({', '.join('?' for _ in row)})", list(row.values()))
        conn.close()
        return db.read_bytes()


sql_value = st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1), st.floats(allow_nan=False), st.text(max_size=20), st.binary(max_size=8))
index_row = st.fixed_dictionaries(
    {"id": st.one_of(st.text(max_size=8), st.integers(-(2**63), 2**63 - 1)),
     "run_dir": st.one_of(st.sampled_from(["runs/a", "/nonexistent/x", "\x01" * 300]), sql_value.filter(lambda v: v is not None))},
    optional={c: sql_value for c in ("status", "started", "pid", "proc_start", "host", "run_json", "error", "best_metric")},
)


@pytest.mark.parametrize("depth", DEPTHS)
def test_the_run_index_lists_or_names_the_file_in_one_line(tmp_path, depth):
    strategy = st.tuples(
        file_bytes(st.lists(index_row, max_size=3).map(_index_bytes)),
        file_bytes(st.lists(st.sampled_from(["runs/a", "/nonexistent", "a\x00b", "\udcff", ""]), max_size=3)
                   .map(lambda ls: "\n".join(ls).encode("utf-8", "surrogateescape"))),
        file_bytes(_mutated_object(RUN)),
    )  # fmt: skip

    def check(case):
        index, others, run_json = case
        home = fresh(tmp_path)
        write(home / "runs" / "a" / "run.json", run_json)
        write(home / "index.sqlite3", index)
        write(home / RunStore.OTHER_FOLDERS, others.replace(b"runs/a", str(home / "runs" / "a").encode()))
        store = one_line_error(lambda: RunStore(home / "index.sqlite3"))
        if not isinstance(store, Exception):
            listed = one_line_error(store.list)
            assert isinstance(listed, (list, Exception))

    run = json.dumps(RUN).encode()
    # Cases that failed once, kept: a run folder listed, or indexed, with a NUL (ValueError) or
    # under an unknown ~user (RuntimeError), rows whose folder is bytes (TypeError)
    # or a name too long (OSError), a run.json nested past the recursion limit.
    examples = (
        (_index_bytes([]), b"a\x00b\n", run),
        (_index_bytes([]), b"~no-such-user-here/run\n", run),
        (_index_bytes([{"id": "x", "run_dir": b"\x00"}]), b"", run),
        (_index_bytes([{"id": "", "run_dir": "\x00"}]), b"", run),  # a text folder with a NUL: its run.json looked at again
        (_index_bytes([{"id": "x", "run_dir": "\x01" * 300}]), b"", run),
        (_index_bytes([]), b"", b'{"id": ' + b"[" * 3000 + b"]" * 3000 + b"}"),
    )
    fuzz(depth, "run index", strategy, check, examples=examples)


@functools.lru_cache(maxsize=4096)
def _checkpoint(meta: str) -> bytes:
    """A checkpoint file as TrainLab writes it (checksum and all) whose JSON header is ``meta``.

    Made once per header: safetensors orders a header's keys differently from
    one write to the next, and hypothesis needs a strategy to draw the same
    bytes for the same choices."""
    import torch

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "last.safetensors"
        save_safetensors(path, {"model.w": torch.zeros(2)}, {META_KEY: meta})
        return path.read_bytes()


plain = st.one_of(
    st.just({"format": "trainlab-checkpoint/1", "aliases": {}, "meta": {"position": {"step": 3, "epoch": 1}}}),
    st.fixed_dictionaries({"format": st.one_of(st.just("trainlab-checkpoint/1"), json_scalar), "meta": json_value}),
    json_value,
)


@pytest.mark.parametrize("depth", DEPTHS)
def test_checkpoint_headers_read_or_name_the_file_in_one_line(tmp_path, depth):
    metas = plain.map(lambda p: json.dumps(p, ensure_ascii=False)) | st.sampled_from(["[" * 3000, "{", "", "1e999"])

    def check(case):
        path = write(fresh(tmp_path) / "last.safetensors", case)
        assert checkpoint_step(path) is None or isinstance(checkpoint_step(path), int)
        one_line_error(lambda: read_checkpoint_header(path), errors=(DamagedCheckpoint,))
        one_line_error(lambda: verify_checkpoint(path), errors=(DamagedCheckpoint,))
        one_line_error(lambda: checkpoint_position(path), errors=(DamagedCheckpoint,))

    checkpoints = metas.map(lambda m: _checkpoint(m.encode("utf-8", "surrogatepass").decode("utf-8", "replace")))
    fuzz(depth, "checkpoint header", file_bytes(checkpoints), check)
