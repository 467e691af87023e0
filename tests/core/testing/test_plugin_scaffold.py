"""`trainlab plugins new NAME --family ID|new [--dist DIST]`: the template rendered for every family TrainLab registers, and a new one.

The fast checks: the rendering, the names asked for, the descriptors the
plugin declares (found and validated as TrainLab discovers plugins), and the
one-line error without copier.  Installing each rendered package and running
its own tests is test_plugin_kit_template.py, behind --runslow.
"""

from __future__ import annotations

import importlib.metadata as md
import json
import py_compile
import sys
import tomllib

import pytest

from trainlab.api.errors import UsageError
from trainlab.cli.plugin_new import family_choices, registered_families, render, template_families
from trainlab.testing.checks import STATIC_CHECKS, StaticKit, run_check
from trainlab.testing.target import PluginTarget

INPUT_KINDS = {"object-detection": "image", "text-generation": "text"}  # what a prediction takes, where it is not a row of numbers


def test_the_families_offered_are_the_registered_ones_and_new():
    from trainlab.api.families import ACCUMULATORS

    assert set(registered_families()) >= {"classification", "regression", "multilabel", "text-generation"} | set(ACCUMULATORS)
    assert set(template_families()) >= {"classification", "regression", "multilabel", "object-detection", "text-generation", "new"}
    assert family_choices() == [*registered_families(), "new"]


def test_a_registered_family_without_a_starting_point_is_refused_naming_new(tmp_path, monkeypatch):
    import trainlab.cli.plugin_new as plugin_new

    monkeypatch.setattr(plugin_new, "registered_families", lambda: ["classification", "boxes-of-things"])
    with pytest.raises(UsageError, match=r"--family boxes-of-things: the template has no starting point for this family yet; use --family new"):
        render("rows-kit", "boxes-of-things", out=tmp_path / "out")


@pytest.mark.parametrize("family", [f for f in family_choices() if f in template_families()])
def test_each_family_renders_a_plugin_that_declares_a_valid_task(tmp_path, monkeypatch, family):
    pytest.importorskip("copier", reason="the template needs copier (pip install 'trainlab[kit]')")
    name, dist = f"rows-{family}", f"acme-{family}-rows"
    made = render(name, family, distribution=dist, out=tmp_path / "out")
    folder, package = tmp_path / "out", made["package"]
    project = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == dist  # the distribution and the entry point, named apart
    assert project["entry-points"]["trainlab.plugins"] == {name: package}
    for path in folder.rglob("*.py"):
        py_compile.compile(str(path), doraise=True)
    monkeypatch.syspath_prepend(str(folder))
    target = PluginTarget(name, package, dist, "0.1.0", extra_path=(str(folder),), entry_point=md.EntryPoint(name, package, "trainlab.plugins"))
    kit = StaticKit(target, home=tmp_path / "home")
    for check in ("api_version", "hooks"):  # the factory's module imports torch: the slow test trains it
        result = run_check(check, "", lambda check=check: STATIC_CHECKS[check](kit))
        assert result.status == "passed", result
    assert kit.record.warnings == []
    (task_id,) = kit.task_ids()
    spec = kit.registry.tasks[task_id].spec
    assert task_id == made["task"] and spec.input.kind == INPUT_KINDS.get(family, "row")
    if family == "new":  # a family of its own: its metrics, its prediction's declared shape
        assert spec.family == name and [m.name for m in spec.metrics] == ["mae", "worst_output_mae", "baseline_mae"]
        assert spec.output.field == "values" and spec.output.shape == ("outputs",)
        assert [(d.kind, d.name) for d in spec.details] == [("series", "error_by_output"), ("examples", "worst_rows")]
        assert spec.metric("baseline_mae").monitorable is False
        assert "class ValuesMetrics(MetricAccumulator)" in (folder / package / "task.py").read_text(encoding="utf-8")
    elif family == "object-detection":  # the family's evaluation (COCO mAP) computes more than a task reports
        assert spec.family == family and [m.name for m in spec.metrics] == ["map", "map50"] and spec.monitor == "map"
        assert "DetectionMetrics(self, split)" in (folder / package / "task.py").read_text(encoding="utf-8")
    elif family == "text-generation":  # TrainLab does not evaluate it itself: the task brings its accumulator and prediction
        assert spec.family == family and [m.name for m in spec.metrics] == ["perplexity", "token_accuracy"]
        assert spec.output.kind == "generated-text" and spec.output.field == "text"
        assert "class GenerationMetrics(MetricAccumulator)" in (folder / package / "task.py").read_text(encoding="utf-8")
    else:
        assert spec.family == family and not spec.metrics  # the family's own metrics
    sys.modules.pop(package, None)


def test_without_copier_one_line_names_the_kit_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "copier", None)  # import copier raises ImportError
    with pytest.raises(UsageError) as caught:
        render("rows-kit", "regression", out=tmp_path / "out")
    assert str(caught.value) == "trainlab plugins new needs copier, from the kit extra: pip install 'trainlab[kit]'"
    assert not (tmp_path / "out").exists()


def test_a_family_without_a_starting_point_or_unknown_is_refused_with_the_choices(tmp_path):
    with pytest.raises(UsageError, match=r"--family detection: not a family TrainLab knows; one of classification, regression, multilabel.*, new"):
        render("rows-kit", "detection", out=tmp_path / "out")


def test_the_command_line_renders_and_says_what_it_made(cli, tmp_path):
    pytest.importorskip("copier", reason="the template needs copier (pip install 'trainlab[kit]')")
    proc = cli("plugins", "new", "rows-kit", "--family", "multilabel", "--dist", "acme-rows", "--out", str(tmp_path / "made"), "--json")
    assert proc.returncode == 0, proc.stderr
    made = json.loads(proc.stdout)
    assert made == {
        "folder": str((tmp_path / "made").resolve()),
        "entry_point": "rows-kit",
        "distribution": "acme-rows",
        "package": "trainlab_rows_kit",
        "family": "multilabel",
        "task": "rows-kit-multilabel",
    }
    assert "trainlab plugins check rows-kit" in proc.stderr
    again = cli("plugins", "new", "rows-kit", "--family", "multilabel", "--out", str(tmp_path / "made"))
    assert again.returncode == 2 and "already exists and is not empty" in again.stderr
