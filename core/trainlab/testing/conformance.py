"""``PluginConformance``: the suite a plugin author subclasses in the plugin's own tests.

In the manner of scikit-learn's ``parametrize_with_checks`` (an expected
failures mapping with reasons) and LangChain's standard test classes
(capability flags skip what a plugin does not claim)::

    class TestTabular(PluginConformance):
        plugin = "tabular"                       # entry-point name
        supports_export = False                  # no load_trained_model
        expected_failures = {"resume_is_exact[tabular-cls]": "augmentation drawn in workers"}
        run_params = {"hidden": 8}               # makes the tiny runs tinier

        def make_tiny_data(self, task_id, folder):
            ...                                  # a few learnable examples; return the path

Each check is one test (per task for the ones that train); the runs they
need are made once per task and class.  A check named in
``expected_failures`` (``"check"`` or ``"check[task-id]"``) that fails is
an xfail with the reason; one that passes fails the test, so the list
cannot go stale.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

import pytest

from trainlab.testing import checks
from trainlab.testing.checks import RUN_CHECKS, STATIC_CHECKS, CheckStatus, run_check
from trainlab.testing.target import find_targets


class PluginKitWarning(UserWarning):
    """What a plugin should change although it works (shown in pytest's warnings summary)."""


class PluginConformance:
    """Subclass as ``Test...``, set ``plugin``, implement ``make_tiny_data``."""

    _trainlab_conformance: ClassVar[bool] = True
    plugin: ClassVar[str] = ""  # the entry-point name, as `trainlab plugins --block` takes it
    tasks: ClassVar[Sequence[str]] = ()  # the tasks to check; empty: every task the plugin declares
    supports_resume: ClassVar[bool] = True
    supports_export: ClassVar[bool] = True  # save_model writes a model load_trained_model reads back
    supports_predict: ClassVar[bool] = True
    supports_window: ClassVar[bool] = False  # also open the real window (needs pytest-qt)
    expected_failures: ClassVar[Mapping[str, str]] = {}
    run_params: ClassVar[Mapping[str, Any]] = {}  # parameters of every tiny run (e.g. a smaller model)

    # -- what the author implements --------------------------------------------------
    def make_tiny_data(self, task_id: str, folder: Path) -> Path:
        """Write a few learnable examples of ``task_id``'s data under ``folder``; return what ``--data`` takes.

        Small enough for a handful of CPU steps, learnable enough that the
        loss falls within them (the same examples repeated will do).
        """
        raise NotImplementedError(f"{type(self).__name__}.make_tiny_data: write tiny learnable data for {task_id} and return its path")

    def make_bad_data(self, task_id: str, folder: Path) -> Path | None:
        """Data the task must refuse with a ``DataError`` naming it; None: a table of nonsense (a broken image folder for folder tasks)."""
        return None

    def predict_inputs(self, task_id: str, data: Path) -> Sequence[str] | None:
        """Inputs for ``trainlab predict``; None: by the task's input kind, two texts, two images of the data,
        or the first two rows of the data's CSV (its ``InputSpec.columns``, or every column but the target)."""
        return None

    def tiny_params(self, task_id: str) -> dict[str, Any]:
        """Parameters of ``task_id``'s tiny runs (default ``run_params``)."""
        return dict(self.run_params)

    # -- collection --------------------------------------------------------------------
    @classmethod
    def task_ids(cls) -> list[str]:
        """``tasks``, or the ids the entry point's ``trainlab_tasks()`` declares (it is cheap by contract)."""
        if cls.tasks:
            return list(cls.tasks)

        ids = []
        for target in find_targets(cls.plugin):
            target.on_path()
            module = importlib.import_module(target.module)
            declare = getattr(module, "trainlab_tasks", None)
            specs = declare() if callable(declare) else []
            ids.extend(spec.id for spec in ([specs] if hasattr(specs, "id") else specs or []))
        return ids

    # -- the checks ----------------------------------------------------------------------
    def _verdict(self, check: str, task: str, func) -> None:
        result = run_check(check, task, func, dict(self.expected_failures))
        if result.status == CheckStatus.SKIPPED:
            pytest.skip(result.message)
        if result.status == CheckStatus.WARNED:
            import warnings

            warnings.warn(PluginKitWarning(f"{result.label}: {result.message}"), stacklevel=2)
        if result.status == CheckStatus.EXPECTED_FAILURE:
            pytest.xfail(result.message)
        if result.status == CheckStatus.FAILED:
            pytest.fail(f"{result.label}: {result.message}", pytrace=False)

    def _static(self, kit, check: str) -> None:
        self._verdict(check, "", lambda: STATIC_CHECKS[check](kit))

    def _run(self, kit, check: str) -> None:
        flag = RUN_CHECKS[check]
        if flag and not getattr(self, f"supports_{flag}"):
            pytest.skip(f"supports_{flag} = False")
        self._verdict(check, kit.task_id, getattr(kit, check))

    def test_api_version(self, trainlab_static_kit):
        self._static(trainlab_static_kit, "api_version")

    def test_hooks(self, trainlab_static_kit):
        self._static(trainlab_static_kit, "hooks")

    def test_entry_point_imports_no_torch(self, trainlab_static_kit):
        self._static(trainlab_static_kit, "entry_point_imports_no_torch")

    def test_descriptors_and_factories(self, trainlab_static_kit):
        self._static(trainlab_static_kit, "descriptors_and_factories")

    def test_bad_data_raises_data_error(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "bad_data_raises_data_error")

    def test_data_left_unchanged(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "data_left_unchanged")

    def test_loss_finite_and_falls(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "loss_finite_and_falls")

    def test_events_match_schema(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "events_match_schema")

    def test_saved_model_loads(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "saved_model_loads")

    def test_predicts(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "predicts")

    def test_accumulator_merges(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "accumulator_merges")

    def test_resume_is_exact(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "resume_is_exact")

    def test_same_seed_same_result(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "same_seed_same_result")

    def test_stop_within_one_step(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "stop_within_one_step")

    def test_writes_only_its_run_folder(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "writes_only_its_run_folder")

    def test_opens_no_socket(self, trainlab_task_kit):
        self._run(trainlab_task_kit, "opens_no_socket")

    def test_window_offers_the_task(self, trainlab_task, request):
        if not self.supports_window:
            pytest.skip("supports_window = False")

        def check() -> str:
            request.getfixturevalue("trainlab_plugin_host")
            window = request.getfixturevalue("trainlab_window")
            if not window.select_task(trainlab_task) or window.task_id() != trainlab_task:
                raise checks.CheckFailed(f"the window does not offer task {trainlab_task}")
            return f"the window offers {trainlab_task}"

        self._verdict("window_offers_the_task", trainlab_task, check)

