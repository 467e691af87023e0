"""The write-point harness (bench/write_points.py): its tracing and tampering, on the run index.

A short version: ``trainlab runs`` rebuilding a lost index (SQLite, native
writes) is traced, its first write points are failed with ENOSPC and
SIGKILLed there, and each time the listing answers in one line or not at
all and the next listing is whole; the harness's forked runs make the
calls of a fresh ``python -m trainlab``.  The harness's --quick (the
training's first points, ENOSPC and SIGKILL) runs behind --runslow.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest
from helpers import ROOT, subprocess_env

pytestmark = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (apt-get install strace)")


@pytest.fixture()
def write_points(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    import write_points

    return write_points


def _listed_run(home):
    run = home / "runs" / "r1"
    run.mkdir(parents=True)
    record = {"schema_version": 1, "id": "r1", "task": "toy-classification", "status": "completed",
              "timings": {"started": 1700000000, "finished": 1700000010, "duration": 10}}  # fmt: skip
    (run / "run.json").write_text(json.dumps(record), encoding="utf-8")
    return run


def test_the_generic_names_hide_temporaries_and_folders(write_points):
    places = {"RUN": "/w/run", "HOME": "/w/home"}
    assert write_points.generic("/w/run/.run.json.ab_3x9zq.tmp", places) == "RUN/.run.json.*.tmp"
    assert write_points.generic("/w/run/checkpoints/.tmpXvNzQ4", places) == "RUN/checkpoints/.tmp*"
    assert write_points.generic("/w/run/..model.86y3n21k.tmp.ab_cdefg.tmp/config.json", places) == "RUN/..model.*.tmp.*.tmp/config.json"
    assert write_points.generic("/w/home/index.sqlite3-wal", places) == "HOME/index.sqlite3-wal"
    assert write_points.generic("/w/data.csv", places) is None


def test_every_open_is_counted_but_only_a_file_created_is_a_point(write_points):
    lines = [
        'openat(AT_FDCWD</w>, "/w/run/run.json", O_RDONLY|O_CLOEXEC) = 3</w/run/run.json>',
        'openat(AT_FDCWD</w>, "/w/run/.run.json.ab_3x9zq.tmp", O_RDWR|O_CREAT|O_EXCL|O_CLOEXEC, 0600) = 3</w/run/.run.json.ab_3x9zq.tmp>',
        'openat(5</w/run/checkpoints>, "last.safetensors", O_WRONLY|O_CREAT|O_TRUNC, 0666) = -1 ENOSPC (No space left on device) (INJECTED)',
        'openat(AT_FDCWD</w>, "/usr/lib/x.so", O_RDONLY|O_CREAT, 0644) = 4</usr/lib/x.so>',
        'unlinkat(5</w/run>, ".trainlab-reserved-space", 0) = 0',
        'unlink("/w/home/index.sqlite3-wal") = ?',
    ]  # fmt: skip
    calls = write_points.parse_trace("\n".join(lines), {"RUN": "/w/run", "HOME": "/w/home"})
    assert [(c.name, c.index, c.kind, c.injected, c.killed) for c in calls] == [
        ("openat", 2, "RUN/.run.json.*.tmp", False, False),
        ("openat", 3, "RUN/checkpoints/last.safetensors", True, False),
        ("unlinkat", 1, "RUN/.trainlab-reserved-space", False, False),
        ("unlink", 1, "HOME/index.sqlite3-wal", False, True),
    ]
    point = write_points.Point("train", calls[0], "first")
    assert write_points.errors_of(point, list(write_points.ERRORS)) == ["ENOSPC", "EIO", "EDQUOT", "KILL"]


def test_failing_and_killing_the_index_rebuild_at_its_first_write_points(write_points, tmp_path):
    home = tmp_path / "home"
    _listed_run(home)
    places = {"HOME": str(home)}
    command = [sys.executable, "-m", "trainlab", "runs", "--json"]

    def traced(log, traced_calls, inject=None):
        shutil.rmtree(home / "logs", ignore_errors=True)
        for leftover in home.glob("index.sqlite3*"):
            leftover.unlink()
        strace = write_points.Harness.strace(log, traced_calls, inject)
        return subprocess.run([*strace, *command], check=False, capture_output=True, text=True, timeout=60, env=_env(home))

    log = tmp_path / "trace.txt"
    assert traced(log, ",".join(write_points.SYSCALLS)).returncode == 0
    points = write_points.points_of("index", write_points.parse_trace(log.read_text(), places))
    native = [p for p in points if p.call.kind.startswith("HOME/index.sqlite3")]
    assert len(native) >= 3, [p.label for p in points]  # SQLite's own writes are seen, below Python
    for point in native[:3]:
        for how in ("error=ENOSPC", "signal=KILL"):
            done = traced(log, point.call.name, f"{point.call.name}:{how}:when={point.call.index}")
            hit = [c for c in write_points.parse_trace(log.read_text(), places) if c.injected or c.killed]
            assert hit and hit[0].kind == point.call.kind, (point.label, hit)  # the call aimed at, and no other
            if how == "signal=KILL":
                assert done.returncode in (-9, 137)
            else:
                assert done.returncode in (0, 2), done.stderr
                assert "Traceback" not in done.stderr
                if done.returncode == 2:
                    assert len(done.stderr.strip().splitlines()) == 1 and "index" in done.stderr, done.stderr
            again = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60, env=_env(home))
            assert again.returncode == 0, (point.label, how, again.stderr)
            rows = json.loads(again.stdout.strip().splitlines()[-1])["runs"]
            assert [(r["id"], r["status"]) for r in rows] == [("r1", "completed")], (point.label, how)
            with sqlite3.connect(home / "index.sqlite3") as db:
                assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_forked_run_makes_the_calls_of_a_fresh_one(write_points, tmp_path):
    # The trials run as forks of a warm process (strace attached to the fork): the calls on the home's files,
    # in order, and what the command answers, must be those of a fresh `python -m trainlab`.
    home = tmp_path / "home"
    _listed_run(home)
    places = {"HOME": str(home)}
    harness = write_points.Harness(tmp_path / "work")
    seen = {}
    try:
        for how in ("fresh", "learning", "warm"):  # the first fork teaches the zygote what to import; the next is warm
            shutil.rmtree(home / "logs", ignore_errors=True)
            shutil.rmtree(home / "cache", ignore_errors=True)  # the plugin probes' verdicts: written by each
            for leftover in home.glob("index.sqlite3*"):
                leftover.unlink()
            log = tmp_path / f"{how}.txt"
            strace = write_points.Harness.strace(log, ",".join(write_points.SYSCALLS))
            if how == "fresh":
                command = [*strace, sys.executable, "-m", "trainlab", "runs", "--json"]
                done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=60, env=harness.env(home))
            else:
                done = harness.zygote.run(["runs", "--json"], harness.env(home), strace)
            assert done.returncode == 0, (how, done.stderr)
            rows = json.loads(done.stdout.strip().splitlines()[-1])["runs"]
            calls = [(c.name, c.kind) for c in write_points.parse_trace(log.read_text(), places)]
            seen[how] = ([(r["id"], r["status"]) for r in rows], calls)
        assert ("openat", "HOME/index.sqlite3") in seen["fresh"][1] and ("rename", "HOME/cache/plugin-probes.json") in seen["fresh"][1]
        assert seen["warm"] == seen["learning"] == seen["fresh"]
    finally:
        harness.zygote.close()


def _env(home):
    return subprocess_env(TRAINLAB_HOME=str(home))


@pytest.mark.slow
def test_the_quick_harness_survives_every_trial():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "write_points.py"), "--quick", "--json"],
                            check=False, capture_output=True, text=True, timeout=1800)  # fmt: skip
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["trials"] == 6 and summary["missed"] == 0, summary
    assert summary["survived"] == summary["trials"], summary["failures"]
    assert result.returncode == 0
