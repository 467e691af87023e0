"""Results of a run: its header, the split chooser, and the page of its task family.

The state is a plain ``RunResults`` (``results_model.load_results``): the
run's record and its evaluations, read through ``RunDir``; the pages only
show it.  Which page shows a report is its family (``RunResults.family_of``:
the report's own, else the one run.json recorded, else its task's, else
classification), never its task id:

- classification: per-class table, confusion matrix, the examples behind a
  cell (``results_classification``);
- regression: predicted against true, the residuals, the worst examples
  (``results_regression``);
- multi-label: per-label table, the examples whose label set is wrong
  (``results_multilabel``);
- any other family: every declared metric per split and its curve during
  training, then its typed details (``results_metrics``, ``results.details``).

A built-in family's report may carry details beyond what its page draws (a
task that declares more in ``TaskSpec.details``): they are drawn generically
under the page.

Pages are built when first needed: the regression and metrics pages draw
with pyqtgraph, which the window does not import before it shows a plot.
"""

from __future__ import annotations

from typing import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QStackedWidget, QVBoxLayout, QWidget

from trainlab.api.details import FAMILY_DETAILS
from trainlab.viewmodel.results import ReportSource, RunResults, SplitReport, load_results
from trainlab_desktop.common.formatting import status_title
from trainlab_desktop.results.classification import ClassificationPage
from trainlab_desktop.results.details import DetailsPanel
from trainlab_desktop.results.export_button import GGUFExportButton
from trainlab_desktop.results.widgets import MetricsTable, ReportPage


def _classification() -> type[ReportPage]:
    return ClassificationPage


def _regression() -> type[ReportPage]:
    from trainlab_desktop.results.regression import RegressionPage

    return RegressionPage


def _multilabel() -> type[ReportPage]:
    from trainlab_desktop.results.multilabel import MultiLabelPage

    return MultiLabelPage


def _metrics() -> type[ReportPage]:
    from trainlab_desktop.results.metrics import MetricsPage

    return MetricsPage


# family -> its page; a family not named here gets the metrics page
FAMILY_PAGES: dict[str, Callable[[], type[ReportPage]]] = {
    "classification": _classification,
    "regression": _regression,
    "multilabel": _multilabel,
}
OTHER_FAMILIES = "*"


class ResultsView(QWidget):
    """The evaluations of one run, each shown by the page of its family."""

    # emitted after a run's eval.json was shown (its folder)
    loaded = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ResultsView")
        self.run_dir: str | None = None
        self.results: RunResults | None = None
        self.reports: dict[str, SplitReport] = {}
        self.report: SplitReport | None = None
        self.family = ""  # of the shown report
        self.pages: dict[str, ReportPage] = {}

        self.title = QLabel()
        self.title.setObjectName("resultsTitle")
        title_font = self.title.font()
        title_font.setPointSizeF(title_font.pointSizeF() * 1.3)
        title_font.setBold(True)
        self.title.setFont(title_font)
        self.subtitle = QLabel()
        self.subtitle.setObjectName("resultsSubtitle")
        self.split_box = QComboBox()
        self.split_box.setToolTip(self.tr("Which evaluation to show"))
        self.split_box.currentIndexChanged.connect(self._split_chosen)
        self.message = QLabel()
        self.message.setWordWrap(True)
        self.message.setAlignment(Qt.AlignmentFlag.AlignCenter)
        # A file of the run that could not be read, named, above what could be.
        self.notice = QLabel()
        self.notice.setObjectName("resultsNotice")
        self.notice.setWordWrap(True)
        self.notice.setProperty("role", "warning")
        self.notice.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notice.setVisible(False)
        self.body = QStackedWidget()
        self.body.setObjectName("resultsBody")
        # The common case, and what the tests of earlier versions reach into.
        self.classification = self._page("classification")
        # details a built-in family's page does not draw itself
        self.extra_details = DetailsPanel()
        self.extra_details.setObjectName("extraDetails")
        self.extra_details.setVisible(False)

        head = QHBoxLayout()
        titles = QVBoxLayout()
        titles.setSpacing(0)
        titles.addWidget(self.title)
        titles.addWidget(self.subtitle)
        head.addLayout(titles, 1)
        self.split_label = QLabel(self.tr("Split:"))
        head.addWidget(self.split_label)
        head.addWidget(self.split_box)
        self.export_gguf = GGUFExportButton(self)
        self.export_gguf.reported.connect(self._export_reported)
        head.addWidget(self.export_gguf)
        # what the last export said (the files it wrote, or why it failed)
        self.export_note = QLabel()
        self.export_note.setObjectName("exportNote")
        self.export_note.setWordWrap(True)
        self.export_note.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.export_note.setVisible(False)

        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.notice)
        layout.addWidget(self.export_note)
        layout.addWidget(self.message)
        layout.addWidget(self.body, 1)
        layout.addWidget(self.extra_details)
        self._show_message(self.tr("No run selected."))

    # -- pages --------------------------------------------------------------------
    def _page(self, family: str) -> ReportPage:
        key = family if family in FAMILY_PAGES else OTHER_FAMILIES
        page = self.pages.get(key)
        if page is None:
            page = FAMILY_PAGES.get(key, _metrics)()(self.body)
            self.pages[key] = page
            self.body.addWidget(page)
        return page

    @property
    def page(self) -> ReportPage:
        """The page showing the current report (classification before any)."""
        current = self.body.currentWidget()
        return current if isinstance(current, ReportPage) else self.classification

    @property
    def metrics_table(self) -> MetricsTable:
        return self.page.metrics_table

    def thumbnails_pending(self) -> int:
        """How many listed example images are still waiting for their thumbnail."""
        return self.page.thumbnails_pending() + self.extra_details.thumbnails_pending()

    # The classification page's parts, where this view had them before families.
    @property
    def class_table(self):
        return self.classification.class_table

    @property
    def confusion(self):
        return self.classification.confusion

    @property
    def examples_title(self) -> QLabel:
        return self.classification.examples_title

    @property
    def examples_stack(self) -> QStackedWidget:
        return self.classification.examples_stack

    @property
    def image_list(self):
        return self.classification.image_list

    @property
    def text_table(self):
        return self.classification.text_table

    @property
    def listed(self) -> list:
        return self.classification.listed

    # -- loading ------------------------------------------------------------------
    def load_run(self, run_dir: str) -> bool:
        """Show a run's evaluations; False (with a message in the view) if it has none.

        A damaged run.json or eval.json never raises: the view says which file
        is unreadable and why, and shows whatever else could be read.
        """
        self.run_dir = str(run_dir)
        results = load_results(run_dir)
        self.results = results
        self.title.setText(results.title)
        family = results.recorded_family or (results.spec.family if results.spec is not None else "")
        self.export_gguf.offer(self.run_dir, family)
        self.export_note.setVisible(False)
        details = [results.task]
        if results.status and (results.task or not results.problems):
            details.append(status_title(results.status, results.error))
        self.subtitle.setText(" \u00b7 ".join(d for d in details if d))
        problems = "\n".join(self.tr("Cannot read {problem}").format(problem=p) for p in results.problems)
        self.notice.setText(problems)
        self.notice.setVisible(bool(problems))
        self.reports = dict(results.reports)
        if not self.reports:
            if problems and results.has_eval_files:
                self._show_message(problems)
            elif results.running:
                self._show_message(self.tr("This run is still training; results appear when its first evaluation is written."))
            elif results.has_eval_files:
                self._show_message(self.tr("This run's eval.json holds no evaluation of a split."))
            else:
                self._show_message(self.tr("This run has no evaluation (no eval.json)."))
            return False
        self.split_box.blockSignals(True)
        self.split_box.clear()
        for key, source in results.sources.items():
            self.split_box.addItem(self._source_title(source), key)
            if source.data:
                self.split_box.setItemData(self.split_box.count() - 1, source.data, Qt.ItemDataRole.ToolTipRole)
        self.split_box.blockSignals(False)
        several = len(self.reports) > 1
        self.split_box.setVisible(several)
        self.split_label.setVisible(several)
        self.show_split(next(iter(self.reports)))
        self.loaded.emit(self.run_dir)
        return True

    def _export_reported(self, text: str, failed: bool) -> None:
        self.export_note.setText(text)
        self.export_note.setProperty("role", "warning" if failed else "")
        self.export_note.setVisible(True)

    def _split_title(self, split: str) -> str:
        return {"val": self.tr("Validation"), "test": self.tr("Test"), "train": self.tr("Training")}.get(split, split)

    def _source_title(self, source: ReportSource) -> str:
        if source.own:
            return self._split_title(source.split)
        when = source.evaluated_at
        stamp = when.strftime("%Y-%m-%d %H:%M") if when else source.file
        return self.tr("{split}, evaluated {when}").format(split=self._split_title(source.split), when=stamp)

    def _show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(True)
        self.body.setVisible(False)
        self.extra_details.setVisible(False)
        self.split_box.setVisible(False)
        self.split_label.setVisible(False)
        self.report = None

    def _split_chosen(self, index: int) -> None:
        split = self.split_box.itemData(index)
        if split:
            self.show_split(split)

    def show_split(self, split: str) -> None:
        report = self.reports[split]
        self.report = report
        self.message.setVisible(False)
        self.body.setVisible(True)
        index = self.split_box.findData(split)
        if index >= 0 and index != self.split_box.currentIndex():
            self.split_box.setCurrentIndex(index)
        assert self.results is not None
        self.family = self.results.family_of(report)
        page = self._page(self.family)
        titles = {key: self._source_title(source) for key, source in self.results.sources.items()}
        page.show_report(report, self.results, titles)
        self.body.setCurrentWidget(page)
        extra = []
        if self.family in FAMILY_PAGES:
            drawn = {d.name for d in FAMILY_DETAILS.get(self.family, ())} | {"other_numbers"}
            declared = self.results.spec.detail_specs() if self.results.spec is not None else ()
            extra = [d for d in report.view_details(declared) if d.name not in drawn]
        self.extra_details.show_details(extra, self.results.run_dir)
        self.extra_details.setVisible(bool(self.extra_details.blocks))

