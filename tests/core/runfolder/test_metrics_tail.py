"""The one metrics.jsonl reader: a file written in pieces, damaged, replaced, not there yet."""

from __future__ import annotations

import os

import pytest

from trainlab.api.events import EvalResult, Finished, Log, TrainStep
from trainlab.runfolder.tail import read_events
from trainlab.runfolder.index import RunDir
from trainlab.runfolder.tail import MetricsTail

EVENTS = [
    TrainStep(time=1.0, step=1, epoch=1, loss=1.5, lr=0.01),
    Log(time=2.0, step=1, epoch=1, message="épocha 1 · 训练"),  # multi-byte characters to cut through
    EvalResult(time=3.0, step=2, epoch=1, accuracy=0.5, loss=float("nan")),
    Finished(time=4.0, step=2, epoch=1, status="completed", metrics={"accuracy": 0.5}),
]
STREAM = b"".join(e.to_json().encode("utf-8") + b"\n" for e in EVENTS)


def summary(events):
    return [(type(e).__name__, e.step, getattr(e, "message", None)) for e in events]


def write_in_pieces(path, pieces):
    """Append each piece, read after each: what a follower sees of a run that writes slowly."""
    tail = MetricsTail(path)
    seen = []
    for piece in pieces:
        with open(path, "ab") as handle:
            handle.write(piece)
        seen.extend(tail.read_new())
    return tail, seen


def test_every_cut_of_the_stream_reads_each_event_once_in_order(tmp_path):
    path = tmp_path / "metrics.jsonl"
    for cut in range(1, len(STREAM)):
        path.unlink(missing_ok=True)
        tail, seen = write_in_pieces(path, [STREAM[:cut], STREAM[cut:]])
        assert summary(seen) == summary(EVENTS), f"cut at byte {cut}"
        assert tail.bad_lines == 0 and tail.pending == b""


def test_a_half_written_line_waits_for_the_rest(tmp_path):
    path = tmp_path / "metrics.jsonl"
    first, second = (e.to_json().encode() for e in EVENTS[:2])
    tail, seen = write_in_pieces(path, [first + b"\n" + second[:10]])
    assert summary(seen) == summary(EVENTS[:1])
    assert tail.pending == second[:10]
    assert tail.read_new() == []  # nothing new: still waiting
    with open(path, "ab") as handle:
        handle.write(second[10:] + b"\n")
    assert summary(tail.read_new()) == summary(EVENTS[1:2])


def test_a_whole_last_event_without_its_newline_is_read_once(tmp_path):
    path = tmp_path / "metrics.jsonl"
    line = EVENTS[0].to_json().encode()
    tail, seen = write_in_pieces(path, [line])
    assert summary(seen) == summary(EVENTS[:1])  # the writer may never add the newline
    with open(path, "ab") as handle:
        handle.write(b"\n" + EVENTS[2].to_json().encode() + b"\n")
    assert summary(tail.read_new()) == summary(EVENTS[2:3])


def test_damaged_and_unknown_lines_are_skipped_and_counted(tmp_path):
    path = tmp_path / "metrics.jsonl"
    pieces = [
        EVENTS[0].to_json().encode() + b"\n",
        b'{"event": "train", "step": \n',  # damaged
        b'{"event": "from-a-newer-trainlab", "step": 3}\n',
        b"[1, 2, 3]\n",
        b"\xff\xfe not utf-8\n",
        b"\n",
        EVENTS[3].to_json().encode() + b"\n",
    ]
    tail, seen = write_in_pieces(path, pieces)
    assert summary(seen) == summary([EVENTS[0], EVENTS[3]])
    assert tail.bad_lines == 4


def test_a_file_that_shrank_or_was_replaced_is_read_again(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(STREAM)
    tail = MetricsTail(path)
    assert len(tail.read_new()) == 4 and not tail.restarted

    path.write_bytes(EVENTS[0].to_json().encode() + b"\n")  # truncated and rewritten
    assert summary(tail.read_new()) == summary(EVENTS[:1]) and tail.restarted

    replacement = tmp_path / "new.jsonl"  # another file, as long as the old one or longer
    replacement.write_bytes(STREAM + EVENTS[0].to_json().encode() + b"\n")
    os.replace(replacement, path)
    assert summary(tail.read_new()) == summary(EVENTS + EVENTS[:1]) and tail.restarted
    assert tail.read_new() == [] and not tail.restarted


def test_a_file_that_does_not_exist_yet(tmp_path):
    path = tmp_path / "later" / "metrics.jsonl"
    tail = MetricsTail(path)
    assert tail.read_new() == [] and not tail.restarted
    path.parent.mkdir()
    path.write_bytes(STREAM[:-1])
    assert summary(tail.read_new()) == summary(EVENTS)
    path.unlink()  # the run folder was deleted
    assert tail.read_new() == [] and tail.restarted
    path.write_bytes(STREAM)
    assert len(tail.read_new()) == 4


def test_a_big_file_is_read_in_bounded_chunks(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(STREAM * 50)
    tail = MetricsTail(path)
    first = tail.read_new(limit_bytes=100)
    assert len(first) < 4 and tail.offset <= 100
    assert len(first) + len(tail.read_all()) == 200


def test_whole_file_readers_share_the_parsing(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    path = run / "metrics.jsonl"
    path.write_bytes(STREAM[:40] + b"\n" + STREAM + b'{"event": "train", "ste')  # damaged line, truncated tail
    assert summary(read_events(path)) == summary(EVENTS)
    assert summary(RunDir(run).events()) == summary(EVENTS)
    with pytest.raises(ValueError, match="metrics.jsonl"):
        list(read_events(path, tolerate_truncated=False))
    assert list(RunDir(tmp_path / "empty").events()) == []


@pytest.mark.parametrize(
    "line",
    [
        '{"event": "train", "step": "x", "loss": "NaN?"}',
        '{"event": "train", "step": 3, "loss": true}',
        '{"event": "eval", "step": 2, "split": "val", "loss": [1]}',
        '{"event": "started", "total_steps": "many"}',
        '{"event": "system", "gpus": [1, 2]}',
        '{"event": "finished", "metrics": "accuracy"}',
    ],
)
def test_an_event_with_a_field_of_the_wrong_type_is_skipped_and_counted(tmp_path, line):
    path = tmp_path / "metrics.jsonl"
    path.write_bytes(STREAM[: STREAM.index(b"\n") + 1] + line.encode() + b"\n" + STREAM[STREAM.index(b"\n") + 1 :])
    kinds = [(e.kind, e.step) for e in EVENTS]
    tail = MetricsTail(path)
    assert [(e.kind, e.step) for e in tail.read_all()] == kinds and tail.bad_lines == 1
    assert [(e.kind, e.step) for e in read_events(path)] == kinds
    with pytest.raises(ValueError, match="1 line"):
        read_events(path, tolerate_truncated=False)
