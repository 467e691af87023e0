"""What the results view shows of one run, read through ``RunDir`` (no Qt).

``load_results(run_dir)`` gathers the run's title and state from its
``RunRecord`` and every evaluation it has: the splits of ``eval.json``, then
each ``eval-<time>.json`` that ``trainlab eval`` wrote beside it (an
evaluation on other data).  A file that cannot be read does not stop the
others: its error, naming the file, lands in ``problems``, and the view shows
it.  The per-split reports are ``trainlab.records.SplitReport``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from trainlab.api import UsageError
from trainlab.records import EvalExample, RunRecord, SplitReport, run_title

__all__ = ["EvalExample", "ReportSource", "RunResults", "SplitReport", "is_image_example", "load_results"]
from trainlab.runs import RunDir
from trainlab.status import RUNNING, UNKNOWN

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm"}


@dataclass(frozen=True)
class ReportSource:
    """Where one shown report comes from."""

    key: str  # the split for eval.json ("val", "test"); else the file's stem (and ":split")
    file: str  # the file's name in the run folder
    split: str
    own: bool  # from eval.json: the run's own evaluation
    data: str = ""  # the data evaluated, for an evaluation on other data

    @property
    def evaluated_at(self) -> datetime | None:
        """When ``trainlab eval`` wrote it, from its name (``eval-YYYYmmdd-HHMMSS``)."""
        stamp = self.file[len("eval-"):len("eval-") + 15]
        try:
            return datetime.strptime(stamp, "%Y%m%d-%H%M%S")
        except ValueError:
            return None


@dataclass
class RunResults:
    run_dir: str
    title: str
    task: str = ""
    status: str = UNKNOWN  # as stored (trainlab.status); the view translates it
    error: str = ""
    reports: dict[str, SplitReport] = field(default_factory=dict)
    sources: dict[str, ReportSource] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # one line per unreadable file, naming it
    has_eval_files: bool = False

    @property
    def running(self) -> bool:
        return self.status == RUNNING


def load_results(run_dir: str | os.PathLike[str]) -> RunResults:
    folder = RunDir(run_dir)
    record: RunRecord | None
    try:
        record = folder.read_record()
    except UsageError as exc:
        record = None
        problem = str(exc)
    results = RunResults(
        run_dir=str(run_dir),
        title=record.title if record else run_title(None, None, folder.path),
        task=record.task if record else "",
        status=record.status if record else UNKNOWN,
        error=record.error if record else "",
    )
    if record is None:
        results.problems.append(problem)
    files = folder.eval_files()
    results.has_eval_files = bool(files)
    for path in files:
        try:
            evaluation = folder.read_eval(path.name)
        except UsageError as exc:
            results.problems.append(str(exc))
            continue
        if evaluation is None:  # removed meanwhile
            continue
        own = path == folder.eval_json
        for split, report in evaluation.splits.items():
            if own:
                key = split
            else:
                key = path.stem if len(evaluation.splits) == 1 else f"{path.stem}:{split}"
            results.reports[key] = report
            results.sources[key] = ReportSource(key, path.name, split, own, evaluation.data)
    return results


def is_image_example(text: str) -> bool:
    return Path(text).suffix.lower() in IMAGE_SUFFIXES and os.path.isfile(text)
