"""The real CLI in a subprocess: exit codes, --json, train/eval/predict/runs."""

import csv
import json
import os
import signal
import subprocess
import sys

from helpers import BROKEN_PLUGINS, FIXTURE_PLUGINS, one_json_line, subprocess_env


def test_version(cli):
    import trainlab

    result = cli("--version")
    assert result.returncode == 0 and trainlab.__version__ in result.stdout


def test_help_lists_every_command(cli):
    result = cli("--help")
    for command in ("gui", "plugins", "tasks", "train", "eval", "predict", "runs", "models", "doctor", "install-launcher", "uninstall-launcher"):
        assert command in result.stdout


def test_train_eval_predict_runs_end_to_end(cli, toy_csv, tmp_path):
    out = tmp_path / "run"
    result = cli("train", "toy-classification", "--data", toy_csv, "--epochs", "2", "--out", out, "--json", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    data = one_json_line(result)
    for key in ("run_dir", "status", "task", "epochs", "steps", "metrics", "samples_per_second"):
        assert key in data
    assert data["status"] == "completed" and data["epochs"] == 2 and data["steps"] == 24
    assert set(data["metrics"]) >= {"accuracy", "macro_f1", "loss"}
    assert "val loss" in result.stderr  # human progress goes to stderr

    runs = one_json_line(cli("runs", "--json"))
    assert [r["run_dir"] for r in runs["runs"]] == [str(out)]
    assert runs["runs"][0]["status"] == "completed"

    ev = cli("eval", out, "--json", extra_path=[FIXTURE_PLUGINS])
    assert ev.returncode == 0, ev.stderr
    report = one_json_line(ev)
    assert report["accuracy"] == data["metrics"]["accuracy"]
    written = report["written"]
    assert os.path.dirname(written) == str(out) and written != str(out / "eval.json")

    csv_out = tmp_path / "pred.csv"
    pred = cli("predict", out, "0.1,0.2,0.3,0.4", "1,1,1,1", "--top-k", "2", "--out", csv_out, "--json", extra_path=[FIXTURE_PLUGINS])
    assert pred.returncode == 0, pred.stderr
    preds = one_json_line(pred)["predictions"]
    assert len(preds) == 2 and len(preds[0]["predictions"]) == 2
    rows = list(csv.reader(csv_out.open(encoding="utf-8")))
    assert rows[0] == ["input", "label_1", "probability_1", "label_2", "probability_2", "error"] and len(rows) == 3
    assert rows[1][-1] == "" and rows[2][-1] == ""


def test_bad_usage_is_exit_2_with_a_reason(cli, toy_csv, tmp_path):
    cases = [
        (["train", "toy-classification", "--data", toy_csv, "--set", "nope=1"], "unknown parameter 'nope'"),
        (["train", "toy-classification", "--data", toy_csv, "--epochs", "zero"], "epochs: expected an integer"),
        (["train", "toy-classification", "--data", tmp_path / "none.csv"], "none.csv: no such file"),
        (["train", "no-such-task", "--data", toy_csv], "unknown task 'no-such-task' (available: "),
        (["train", "toy-clasification", "--data", toy_csv], "unknown task 'toy-clasification'; did you mean toy-classification "),
        (["train", "toy-classification", "--data", toy_csv, "--device", "cuda"], "CUDA is not available"),
        (["train", "toy-classification", "--data", toy_csv, "--set", "oops"], "expected key=value"),
        (["eval", tmp_path], "not a TrainLab run folder"),
        (["frobnicate"], "invalid choice"),
    ]
    for args, reason in cases:
        result = cli(*args, "--json", extra_path=[FIXTURE_PLUGINS])
        assert result.returncode == 2, (args, result.stderr)
        assert reason in one_json_line(result)["error"], (args, result.stdout)
        assert reason in result.stderr


def test_a_failed_run_is_exit_1(cli, toy_csv, tmp_path):
    result = cli("train", "toy-classification", "--data", toy_csv, "--set", "fail_at_step=2", "--json", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 1
    data = one_json_line(result)
    assert data["status"] == "failed" and "toy failure" in data["error"]


def test_isolated_training_in_a_child_process(cli, toy_csv, tmp_path):
    result = cli("train", "toy-classification", "--data", toy_csv, "--isolated", "--json", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 0, result.stderr
    data = one_json_line(result)
    assert data["status"] == "completed" and data["steps"] == 24
    assert os.path.isfile(os.path.join(data["run_dir"], "model", "model.safetensors"))


def test_sigterm_cancels_keeps_the_checkpoint_and_exits_130(toy_csv, tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(toy_csv), "--out", str(out),
         "--epochs", "50", "--set", "step_delay=0.01", "--json"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )
    for line in proc.stderr:  # wait until training is under way
        if "epoch 1: val loss" in line:
            break
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    data = json.loads(stdout)
    assert data["status"] == "cancelled"
    assert (out / "checkpoints" / "last.safetensors").exists()
    assert json.loads((out / "run.json").read_text())["status"] == "cancelled"


def test_a_reader_that_goes_away_stops_the_run_as_ctrl_c_does_not_as_a_failure(toy_csv, tmp_path):
    # `trainlab train ... | head`: the progress lines meet a closed pipe
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "trainlab", "train", "toy-classification", "--data", str(toy_csv), "--out", str(out),
         "--epochs", "50", "--set", "step_delay=0.01"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=subprocess_env([FIXTURE_PLUGINS]),
    )
    for line in proc.stderr:  # until training is under way
        if "epoch 1: val loss" in line:
            break
    proc.stderr.close()
    assert proc.wait(timeout=60) == 130
    record = json.loads((out / "run.json").read_text())
    assert record["status"] == "cancelled" and "BrokenPipe" not in str(record["error"]), record["error"]
    assert record["progress"]["epochs_completed"] < 50


def test_tasks_json_shows_defaults_and_presets(cli):
    data = one_json_line(cli("tasks", "--json", extra_path=[FIXTURE_PLUGINS]))
    toy = next(t for t in data["tasks"] if t["id"] == "toy-classification")
    params = {p["name"]: p for p in toy["parameters"]}
    assert toy["defaults"]["lr"] == 0.01  # task default over the engine's
    assert params["lr"]["default"] == 0.001  # the engine default, for reference
    assert {p["name"] for p in toy["presets"]} == {"mlp", "wide-mlp"}
    assert next(p for p in toy["presets"] if p["name"] == "wide-mlp")["overrides"] == {"hidden": 64, "lr": 0.005}


def test_json_mode_keeps_stray_prints_off_stdout(cli, toy_csv, tmp_path, monkeypatch):
    # a plugin that prints to stdout at discovery must not corrupt --json
    (tmp_path / "noisy_plugin.py").write_text(
        "import trainlab\nprint('hello from a noisy plugin')\n"
        "@trainlab.hookimpl\ndef trainlab_api_version():\n    return '2.0'\n"
    )
    info = tmp_path / "noisy-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: noisy\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nnoisy = noisy_plugin\n")
    result = cli("plugins", "--json", extra_path=[tmp_path])
    assert result.returncode == 0
    assert any(p["name"] == "noisy" for p in one_json_line(result)["plugins"])
    assert "hello from a noisy plugin" in result.stderr


LATE_BAD_PLUGIN = '''
import trainlab
from trainlab import Param, TaskSpec, UsageError
from toy_task import ToyTask


class LateBad(ToyTask):
    def build_model(self, ctx):
        raise UsageError("weights file /nowhere/w.safetensors is missing")


@trainlab.hookimpl
def trainlab_api_version():
    return "1.0"


@trainlab.hookimpl
def trainlab_tasks():
    return [TaskSpec(id="late-bad", title="Late bad input", factory="late_bad_plugin:LateBad", data_kind="file",
                     params=(Param("val_fraction", "float", 0.25, "Validation share."),))]
'''


def test_bad_input_found_once_the_run_began_is_exit_2_in_process_and_isolated(cli, toy_csv, tmp_path):
    (tmp_path / "late_bad_plugin.py").write_text(LATE_BAD_PLUGIN)
    info = tmp_path / "late_bad-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: late-bad\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nlate_bad = late_bad_plugin\n")
    outcomes = []
    for mode in ([], ["--isolated"]):
        out = tmp_path / f"run{len(outcomes)}"
        result = cli("train", "late-bad", "--data", toy_csv, "--out", out, *mode, "--json", extra_path=[tmp_path, FIXTURE_PLUGINS])
        assert result.returncode == 2, (mode, result.stderr)
        data = one_json_line(result)
        assert data["status"] == "failed" and data["usage_error"] is True and "w.safetensors is missing" in data["error"]
        assert json.loads((out / "run.json").read_text())["status"] == "failed"
        outcomes.append({k: v for k, v in data.items() if k not in ("run_dir", "traceback")})
    assert outcomes[0] == outcomes[1]  # the same outcome whether the run executed here or in a child


def test_runs_shows_the_time_trained_not_the_time_between_sessions(cli, toy_csv, tmp_path):
    from trainlab.runfolder.display import format_duration

    out = tmp_path / "run"
    first = cli("train", "toy-classification", "--data", toy_csv, "--epochs", "1", "--out", out, "--json", extra_path=[FIXTURE_PLUGINS])
    assert first.returncode == 0, first.stderr
    more = cli("train", "--resume", out, "--more-epochs", "1", "--json", extra_path=[FIXTURE_PLUGINS])
    assert more.returncode == 0, more.stderr
    timings = json.loads((out / "run.json").read_text())["timings"]
    # the second session's start-up (a new process, its imports) lies between the two trainings
    assert timings["train_seconds"] < timings["duration"]
    (row,) = one_json_line(cli("runs", "--json"))["runs"]
    assert row["duration"] == timings["train_seconds"] and row["wall_seconds"] == timings["duration"]
    (line,) = [l for l in cli("runs").stdout.splitlines() if str(out) in l]
    assert f" {format_duration(timings['train_seconds'])}  " in line


def test_an_unknown_parameter_suggests_the_close_one_not_every_key(cli, toy_csv):
    result = cli("train", "toy-classification", "--data", toy_csv, "--set", "epoch=2", extra_path=[FIXTURE_PLUGINS])
    assert result.returncode == 2
    line = result.stderr.strip().splitlines()[-1]
    assert line == "trainlab: error: unknown parameter 'epoch' for task toy-classification; did you mean epochs?", line
    far = cli("train", "toy-classification", "--data", toy_csv, "--set", "zzzz=2", extra_path=[FIXTURE_PLUGINS])
    line = far.stderr.strip().splitlines()[-1]
    assert far.returncode == 2 and "`trainlab tasks toy-classification` lists its parameters" in line
    assert "batch_size" not in line and "weight_decay" not in line


def test_plugins_verbose_adds_entry_points_paths_load_times_and_full_errors(cli):
    plain = cli("plugins", extra_path=[BROKEN_PLUGINS, FIXTURE_PLUGINS])
    verbose = cli("plugins", "-v", extra_path=[BROKEN_PLUGINS, FIXTURE_PLUGINS])
    assert plain.returncode == 0 and verbose.returncode == 0, verbose.stderr
    assert len(verbose.stdout.splitlines()) > len(plain.stdout.splitlines()) + 8
    assert "trainlab plugins -v" in plain.stdout.splitlines()[-1]
    assert plain.stdout.splitlines()[0].split() == ["PLUGIN", "STATUS", "VERSION", "DISTRIBUTION", "TASKS"]
    assert "    entry point: image-classification = trainlab_plugins.image (built in)" in verbose.stdout
    assert "    path: " + str(FIXTURE_PLUGINS / "toy_plugin.py") + "\n" in verbose.stdout
    assert "import took " in verbose.stdout and "import took " not in plain.stdout
    assert "Traceback (most recent call last)" in verbose.stdout and "Traceback" not in plain.stdout
    assert "ModuleNotFoundError: No module named 'trainlab_this_module_does_not_exist'" in plain.stdout
    listed = {p["name"]: p for p in one_json_line(cli("plugins", "--json", extra_path=[BROKEN_PLUGINS, FIXTURE_PLUGINS]))["plugins"]}
    assert listed["image-classification"]["load_seconds"] >= 0 and listed["image-classification"]["path"].endswith("__init__.py")
    assert listed["broken-import"]["path"] == ""


def test_another_tasks_preset_is_named_as_such_with_this_tasks_presets(cli, tmp_path):
    data = tmp_path / "texts.csv"
    data.write_text("text,label\n" + "".join(f"words {i},{'ab'[i % 2]}\n" for i in range(20)))
    result = cli("train", "text-classification", "--data", data, "--model", "resnet18", "--json")
    assert result.returncode == 2
    error = one_json_line(result)["error"]
    assert "resnet18 is an image preset (of image-classification" in error and "not a model for text-classification" in error
    assert "text-classification's presets: tiny-bert" in error and "hf download" not in error
