"""The kit catches what an author gets wrong: each fault in a faulty copy of a fixture plugin, named in the message.

The forecast fixture (tests/fixtures/kit_plugins/forecast_plugin.py) is a
plugin of a family of its own with one fault chosen by its ``slip``
parameter; each message must name the plugin's method, what it returned
and what was expected.
"""

from __future__ import annotations

import json

import pytest

from helpers import FIXTURE_PLUGINS, KIT_PLUGINS
from trainlab.testing.checks import RUN_CHECKS, StaticKit, run_check
from trainlab.testing.target import find_targets

PATHS = [FIXTURE_PLUGINS, KIT_PLUGINS]


@pytest.fixture
def kit_plugins(monkeypatch):
    for folder in PATHS:
        monkeypatch.syspath_prepend(str(folder))


def forecast_kit(tmp_path, slip):
    from forecast_plugin import make_series

    from trainlab.testing.runs import TaskKit

    (target,) = find_targets("forecast")
    static = StaticKit(target, home=tmp_path / "home")
    (tmp_path / "data").mkdir()
    data = make_series(tmp_path / "data" / "rows.csv", rows=48)
    return TaskKit("forecast-rows", data, tmp_path / "kit", static.registry, params={"slip": slip}, home=static.home)


@pytest.mark.parametrize(
    "slip, check, says",
    [
        # a prediction of H-1 values: the declared output shape names the field, the length and the parameter
        ("short_prediction", "predicts", ["load_predictor's predictor, given '", "returned Forecast.values of length 2",
                                          "TaskSpec.output declares shape (horizon=3,): expected length 3"]),
        # floats where a Prediction belongs: said as such, not "cannot unpack non-iterable float object"
        ("bare_floats", "predicts", ["load_predictor's predictor, given '", "returned a list of 3 float [",
                                     "expected one trainlab Prediction per input (a Prediction subclass of family 'forecast')"]),
        # a merge that drops rows: one pass against two simulated ranks merged
        ("lossy_merge", "accumulator_merges", ["ForecastMetrics.merge(state()) loses what another process evaluated",
                                               "in one pass gives samples 12", "merged it gives samples 10", "expected the same"]),
    ],
)
def test_each_fault_is_named_with_the_method_what_it_returned_and_what_was_expected(kit_plugins, tmp_path, slip, check, says):
    kit = forecast_kit(tmp_path, slip)
    result = run_check(check, kit.task_id, getattr(kit, check))
    assert result.status == "failed", result
    for words in says:
        assert words in result.message, result.message


def test_after_build_model_raises_the_checks_that_need_the_run_are_skipped_with_the_reason(kit_plugins, tmp_path):
    kit = forecast_kit(tmp_path, "build_raises")
    results = [run_check(name, kit.task_id, getattr(kit, name)) for name in RUN_CHECKS]
    failed = [r for r in results if r.status == "failed"]
    assert [r.check for r in failed] == ["loss_finite_and_falls"], failed  # the first check that needs the run
    assert "the tiny run ended failed" in failed[0].message and "build_model: RuntimeError: no model for a window of six" in failed[0].message
    skipped = [r for r in results if r.status == "skipped"]
    assert len(skipped) == len(RUN_CHECKS) - 3  # all but the data checks and the one that reported the failure
    assert all("needs the tiny run, which ended failed" in r.message and "build_model" in r.message for r in skipped), skipped
    assert not any("already holds a run" in r.message for r in results)


def test_full_works_on_a_copy_of_the_sample_names_a_prepare_that_rewrites_it_and_predicts_rows_of_it(kit_plugins, tmp_path, monkeypatch):
    from trainlab.cli.plugin_check import check_plugin

    monkeypatch.setenv("TRAINLAB_HOME", str(tmp_path / "home"))
    sample = KIT_PLUGINS / "forecast_sample.csv"
    bundled = sample.read_bytes()
    (report,) = check_plugin(str(KIT_PLUGINS / "forecast_rewriter_plugin.py"), full=True)
    assert sample.read_bytes() == bundled  # the plugin's own sample is never written
    results = {r.check: r for r in report["checks"]}
    rewrite = results["data_left_unchanged"]
    assert rewrite.status == "failed" and "prepare() changed the data it was given" in rewrite.message, rewrite
    assert "forecast_sample.csv" in rewrite.message and str(KIT_PLUGINS) not in rewrite.message  # the copy, named
    for check in ("resume_is_exact", "same_seed_same_result"):  # no misleading batch-order hint
        assert results[check].status == "skipped" and "the data changed while the kit's runs read it" in results[check].message
    predicts = results["predicts"]  # a row-input task predicts rows of its sample, no predict_inputs needed
    assert predicts.status == "passed" and "inputs from the data" in predicts.message, predicts


def test_a_plugin_api_1_plugin_is_warned_what_to_change_not_failed(cli):
    proc = cli("plugins", "check", "legacy", "--json", extra_path=PATHS)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout)
    (report,) = out["plugins"]
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert statuses == {"api_version": "warned", "hooks": "passed", "entry_point_imports_no_torch": "passed", "descriptors_and_factories": "passed"}
    (api,) = [c for c in report["checks"] if c["check"] == "api_version"]
    assert "trainlab_api_version() returns '1.0'" in api["message"] and "loads through the plugin API 1 adapter" in api["message"]
    assert 'return "2.' in api["message"] and "declare input=trainlab.InputSpec(...) on task(s) legacy-classification" in api["message"]
    assert out["failed"] == [] and out["warned"] == ["legacy: api_version"]
    assert "passed with a warning" in proc.stderr


def _family_batches(family, task_cls, n_labels=3):
    """A task of a built-in family and six evaluation batches of made-up outputs."""
    import torch

    from trainlab import EvalBatch, TaskSpec

    spec = TaskSpec(id=f"fake-{family}", title="Fake", factory="x:y", family=family)
    task = task_cls(spec, {"threshold": "0.5", "class_weighting": False})
    task.label_names = [f"l{i}" for i in range(n_labels)]
    gen = torch.Generator().manual_seed(0)
    batches = []
    for b in range(6):
        n = 3 + b % 2
        if family == "classification":
            outputs, targets = torch.randn(n, n_labels, generator=gen), torch.randint(0, n_labels, (n,), generator=gen)
        elif family == "multilabel":
            outputs, targets = torch.randn(n, n_labels, generator=gen), (torch.rand(n, n_labels, generator=gen) > 0.5).float()
        else:
            outputs, targets = torch.randn(n, generator=gen), torch.randn(n, generator=gen)
        keys = list(range(10 * b, 10 * b + n))
        batches.append([EvalBatch(loss_sum=torch.rand((), generator=gen) * n, outputs=outputs, targets=targets, keys=keys)])
    return task, batches


@pytest.mark.parametrize("family", ["classification", "regression", "multilabel"])
def test_a_built_in_familys_accumulator_merges_what_two_ranks_evaluated(family):
    """Made-up batches of the row families; a family whose outputs are boxes or texts is checked on
    real batches by its plugin's conformance run (accumulator_merges), as every plugin's is."""
    from trainlab.api.families import ACCUMULATORS, ClassificationTask, MultiLabelTask, RegressionTask
    from trainlab.testing.runs import merge_problem

    accumulator = ACCUMULATORS[family]
    task_class = {"classification": ClassificationTask, "regression": RegressionTask, "multilabel": MultiLabelTask}[family]
    task, batches = _family_batches(family, task_class)
    assert merge_problem(lambda: accumulator(task, "val"), batches) == ""

    class Lossy(accumulator):  # the same family, with the fault: merge keeps only half the other state's rows
        def merge(self, state):
            half = max(1, state["samples"] // 2)
            keys = state.get("keys")
            super().merge({**state, "outputs": state["outputs"][:half], "targets": state["targets"][:half], "samples": half,
                           "keys": keys[:half] if keys is not None else None})

    assert "Lossy.merge(state()) loses what another process evaluated" in merge_problem(lambda: Lossy(task, "val"), batches)


def test_in_a_plugins_own_tests_a_warned_check_passes_with_a_pytest_warning():
    from trainlab.testing.checks import CheckWarned
    from trainlab.testing.conformance import PluginConformance, PluginKitWarning

    def check():
        raise CheckWarned("trainlab_api_version() returns '1.0': ...")

    with pytest.warns(PluginKitWarning, match=r"api_version: trainlab_api_version\(\) returns '1.0'"):
        PluginConformance()._verdict("api_version", "", check)  # passes: no skip, no xfail, no failure
