"""A plugin ships its demo data in its own package (``sample_data="package:path"``)."""

from __future__ import annotations

import json

from helpers import FIXTURE_PLUGINS, write_toy_regression_csv

PLUGIN = '''
import trainlab
from trainlab import InputSpec, TaskSpec


@trainlab.hookimpl
def trainlab_api_version():
    return "2.0"


@trainlab.hookimpl
def trainlab_tasks():
    return [
        TaskSpec(id="sampled-regression", title="Sampled regression", factory="toy_families:ToyRegression",
                 family="regression", data_kind="file", input=InputSpec("row"),
                 sample_data="trainlab_sampled:samples/rows.csv"),
        # the data may sit in a package of its own, found without importing it
        TaskSpec(id="sampled-elsewhere", title="Sample in another package", factory="toy_families:ToyRegression",
                 family="regression", data_kind="file", sample_data="trainlab_sampled_data:rows.csv"),
        TaskSpec(id="sample-missing", title="A sample that is not there", factory="toy_families:ToyRegression",
                 family="regression", data_kind="file", sample_data="trainlab_sampled:samples/gone.csv"),
    ]
'''


def install(tmp_path):
    package = tmp_path / "trainlab_sampled"
    (package / "samples").mkdir(parents=True)
    (package / "__init__.py").write_text(PLUGIN)
    write_toy_regression_csv(package / "samples" / "rows.csv")
    data_package = tmp_path / "trainlab_sampled_data"
    data_package.mkdir()
    (data_package / "__init__.py").write_text("raise RuntimeError('the sample package must not be imported')\n")
    write_toy_regression_csv(data_package / "rows.csv", rows=80)
    info = tmp_path / "trainlab_sampled-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: trainlab-sampled\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[trainlab.plugins]\nsampled = trainlab_sampled\n")
    return package


def test_tasks_shows_a_plugins_own_sample_and_it_trains(cli, tmp_path):
    package = install(tmp_path)
    listing = cli("tasks", "--json", extra_path=[tmp_path, FIXTURE_PLUGINS])
    assert listing.returncode == 0, listing.stderr
    tasks = {t["id"]: t for t in json.loads(listing.stdout)["tasks"]}
    sample = package / "samples" / "rows.csv"
    assert tasks["sampled-regression"]["sample_data"] == str(sample)
    assert tasks["sampled-elsewhere"]["sample_data"] == str(tmp_path / "trainlab_sampled_data" / "rows.csv")
    assert tasks["sample-missing"]["sample_data"] is None  # declared but not shipped: none offered
    text = cli("tasks", "-v", extra_path=[tmp_path, FIXTURE_PLUGINS]).stdout
    assert f"  sample data: {sample}\n" in text

    run = cli("train", "sampled-regression", "--data", sample, "--epochs", "2", "--json", extra_path=[tmp_path, FIXTURE_PLUGINS])
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["status"] == "completed"


def test_sample_path_resolves_inside_the_package_without_importing_it(tmp_path, monkeypatch):
    import sys

    from trainlab import TaskSpec

    install(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = TaskSpec(id="x-task", title="x", factory="a:b", sample_data="trainlab_sampled_data:rows.csv")
    assert spec.sample_path() == tmp_path / "trainlab_sampled_data" / "rows.csv"
    assert "trainlab_sampled_data" not in sys.modules
    built_in = TaskSpec(id="y-task", title="y", factory="a:b", sample_data="samples/text")
    assert built_in.sample_path() is not None and built_in.sample_path().is_dir()  # TrainLab's own resources
