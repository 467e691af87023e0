"""trainlab sweep in the foreground: six seeded trials of the toy task with pruning, a crash resumed, bad spaces."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.waiting import wait_until
from helpers import FIXTURE_PLUGINS, one_json_line, subprocess_env
from trainlab.api.assignments import format_value
from trainlab.api.errors import UsageError

SPACE = ["--space", "lr=1e-4:0.5:log", "--space", "hidden=4,16"]


def run_json(folder: str) -> dict:
    return json.loads(Path(folder, "run.json").read_text(encoding="utf-8"))


def assert_compact(text: str, exact: float) -> None:
    """``text`` shows the sampled float ``exact`` to at most 4 significant digits, and the JSON's ``exact`` has more."""
    digits = re.sub(r"e.*$", "", text).replace(".", "").lstrip("0")
    assert len(digits) <= 4 and float(text) == pytest.approx(exact, rel=1e-3), (text, exact)
    assert len(format_value(exact)) > len(text), (text, exact)


def test_six_seeded_trials_prune_the_weak_ones_and_report_the_best(cli, toy_csv, tmp_home):
    result = cli(
        "sweep", "toy-classification", "--data", toy_csv, *SPACE, "--trials", "6", "--sampler", "random",
        "--study", "lr-hidden", "--epochs", "3", "--json", extra_path=[FIXTURE_PLUGINS],
    )
    assert result.returncode == 0, result.stderr
    summary = one_json_line(result)
    trials = summary["trials"]
    assert [t["number"] for t in trials] == list(range(6))
    assert {t["state"] for t in trials} <= {"completed", "pruned"}
    pruned = [t for t in trials if t["state"] == "pruned"]
    assert pruned, f"the seeded sweep pruned nothing: {trials}"
    assert "pruned after epoch 1" in result.stderr
    for trial in pruned:  # a pruned trial is a cancelled run, reason pruned, stopped early with its checkpoint
        record = run_json(trial["run_dir"])
        assert (record["status"], record["error"]) == ("cancelled", "pruned")
        assert record["progress"]["epochs_completed"] < 3
        assert Path(trial["run_dir"], "checkpoints", "last.safetensors").is_file()
    completed = [t for t in trials if t["state"] == "completed"]
    best = summary["best"]
    assert best["value"] == max(t["value"] for t in completed) and summary["direction"] == "maximize"
    record = run_json(best["run_dir"])
    assert record["status"] == "completed" and record["study"] == {"name": "lr-hidden", "trial": best["number"]}
    assert record["best"]["value"] == best["value"]
    assert float(record["parameters"]["lr"]) == best["params"]["lr"]  # the run's files keep the sampled value exactly
    # the terminal's lines: sampled floats to 4 significant digits (the JSON keeps them whole), the metric as
    # `train` prints it, one numbering of trials
    first = next(line for line in result.stderr.splitlines() if line.startswith("trial 0 "))
    shown = re.match(rf"trial 0 \(1 of 6\) lr=([^,]+), hidden={trials[0]['params']['hidden']}: ", first)
    assert shown, first
    assert_compact(shown.group(1), trials[0]["params"]["lr"])
    accuracy = re.escape(f"accuracy {best['value']:.1%}")
    best_line = re.search(rf"best trial: {best['number']}, {accuracy} with lr=([^,]+), hidden=(\d+);", result.stderr)
    assert best_line and int(best_line.group(2)) == best["params"]["hidden"], result.stderr
    assert_compact(best_line.group(1), best["params"]["lr"])
    assert f"best so far: trial {best['number']}, accuracy {best['value']:.1%}" in result.stderr
    assert "{'" not in result.stderr
    start = next(line for line in result.stderr.splitlines() if line.startswith("sweep: study lr-hidden "))
    assert "6 trials on auto" not in start and ("6 trials on the CPU (no GPU on this machine);" in start or "GPU-" in start), start
    # each trial is an ordinary run in the history
    history = one_json_line(cli("runs", "--json", extra_path=[FIXTURE_PLUGINS]))["runs"]
    assert sorted(r["run_dir"] for r in history) == sorted(str(Path(t["run_dir"]).resolve()) for t in trials)
    assert Path(summary["storage"]) == tmp_home / "studies" / "lr-hidden.journal"


def test_a_killed_sweep_resumes_its_trial_from_the_checkpoint_and_extends(cli, toy_csv, tmp_home):
    command = [
        "sweep", "toy-classification", "--data", str(toy_csv), "--space", "lr=1e-3:0.3:log", "--sampler", "random",
        "--study", "again", "--epochs", "1", "--set", "step_delay=0.03", "--set", "checkpoint_every_steps=2",
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlab", *command, "--trials", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=subprocess_env([FIXTURE_PLUGINS]),
    )
    try:
        checkpoint = wait_until(lambda: next((tmp_home / "runs").glob("*/checkpoints/last.safetensors"), None), "a checkpoint of trial 0")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    killed_run = checkpoint.parent.parent

    result = cli(*command, "--trials", "3", "--json", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    assert "study again: 1 trial(s) so far; going on to 3" in result.stderr and "trial 0: resuming" in result.stderr
    summary = one_json_line(result)
    assert [(t["number"], t["state"] in ("completed", "pruned")) for t in summary["trials"]] == [(0, True), (1, True), (2, True)]
    assert Path(summary["trials"][0]["run_dir"]).resolve() == killed_run.resolve()
    starts = [json.loads(line) for line in (killed_run / "metrics.jsonl").read_text().splitlines() if '"started"' in line]
    assert [s["resumed"] for s in starts] == [False, True]  # continued, not started over
    assert len(list((tmp_home / "runs").iterdir())) == 3  # one run per trial: nothing repeated


def test_a_space_the_task_would_refuse_is_exit_2_naming_it(cli, toy_csv):
    for item, message in (
        ("lr=1e-4:20", "--space lr=1e-4:20: lr: 20.0 is above the maximum 10"),
        ("model=mlp,huge", "--space model=mlp,huge: model: 'huge' is not one of mlp, wide-mlp"),
    ):
        result = cli("sweep", "toy-classification", "--data", toy_csv, "--space", item, "--trials", "2", "--json", extra_path=[FIXTURE_PLUGINS])
        assert result.returncode == 2
        assert one_json_line(result)["error"] == message


@pytest.mark.parametrize(
    "item, message",
    [
        ("hidden=0:3", "hidden: 0 is below the minimum 1"),
        ("lr=a:b", "lr: expected a number, got 'a'"),
        ("model=a:b", "model is a choice (mlp, wide-mlp), not a number: list its values with commas"),
        ("lr=0:1e-2:log", "a log range needs a low end above 0"),
        ("lr=1e-2:1e-3", "the low end must be below the high end"),
        ("lr=1e-4:1e-2:log:1", "a range of points needs at least 2"),
        ("lr=1e-4:1e-2:cubic", "'cubic' is neither 'log' nor a point count"),
        ("bogus=1,2", "unknown parameter 'bogus'"),
        ("device=cpu,cuda", "device is chosen by the sweep and the queue, not swept"),
    ],
)
def test_space_items_are_checked_against_the_schema(toy_plugin, item, message):
    from trainlab.api.params import full_schema
    from trainlab.pluginhost.host import registry
    from trainlab.scheduling.sweep_space import parse_space

    with pytest.raises(UsageError) as caught:
        parse_space([item], full_schema(registry().task("toy-classification").spec))
    assert str(caught.value).startswith(f"--space {item}: ") and message in str(caught.value)


def test_a_grid_takes_point_counts_and_lists_integer_ranges(toy_plugin, toy_csv):
    from trainlab.api.params import full_schema
    from trainlab.pluginhost.host import registry
    from trainlab.scheduling.sweep_space import grid_size, parse_space

    schema = full_schema(registry().task("toy-classification").spec)
    lr, hidden, model = parse_space(["lr=1e-5:1e-3:log:3", "hidden=4:6", "model=mlp,wide-mlp"], schema)
    assert lr.grid_values() == [1e-5, 1e-4, 1e-3] and hidden.grid_values() == [4, 5, 6]
    assert grid_size([lr, hidden, model]) == 18
    with pytest.raises(UsageError, match=r"a grid over a range needs a point count, e\.g\. lr=1e-05:0\.001:4"):
        parse_space(["lr=1e-5:1e-3"], schema)[0].grid_values()
