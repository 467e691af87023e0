"""The live curves' data and plots when a loss goes NaN or infinite (a diverging run)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from trainlab.viewmodel.curves import RunCurves, Smoother
from trainlab.api.events import EvalResult, TrainStep

T0 = 1_800_000_000.0
LOSSES = [2.0, 1.8, math.nan, 1.5, math.inf, -math.inf, 1.2, 1.1]


def steps(losses):
    return [TrainStep(time=T0 + i, step=i + 1, loss=loss, lr=1e-3) for i, loss in enumerate(losses)]


@pytest.fixture
def live_plots(qtbot):
    """The window's live plots, shown at 900 x 600, drawing live."""
    from trainlab_desktop.plots.live_plots import LivePlots

    plots = LivePlots()
    qtbot.addWidget(plots)
    plots.resize(900, 600)
    plots.show()
    qtbot.waitExposed(plots)
    plots.start_live()
    return plots


def test_inf_becomes_a_gap_and_the_average_skips_it():
    curves = RunCurves(smoothing=0.5)
    curves.add_train(steps(LOSSES))
    loss = curves.train.column("loss")
    assert curves.train.nonfinite
    assert np.isnan(loss[[2, 4, 5]]).all() and np.isfinite(loss[[0, 1, 3, 6, 7]]).all()
    smooth = curves.train.column("smooth")
    assert np.isfinite(smooth).all()  # carried over the gaps
    # debiased EMA of the finite values only: 2.0, 1.8, 1.5, 1.2, 1.1
    reference = Smoother(0.5)(v for v in LOSSES if math.isfinite(v))
    assert smooth[[0, 1, 3, 6, 7]] == pytest.approx(reference)
    assert smooth[2] == smooth[1] and smooth[5] == smooth[3]


def test_plots_keep_finite_ranges_and_draw_around_the_gaps(live_plots):
    plots = live_plots
    plots.curves.add_train(steps(LOSSES))
    plots.refresh()
    plots.view.viewport().repaint()  # drawing NaN and inf raises nothing
    x, y = plots.loss_raw.getOriginalDataset()
    assert len(x) == len(LOSSES) and np.isnan(y[[2, 4, 5]]).all()
    for plot in (plots.loss_plot, plots.lr_plot):
        plot.getViewBox().updateAutoRange()
        (x0, x1), (y0, y1) = plot.getViewBox().viewRange()
        assert all(map(math.isfinite, (x0, x1, y0, y1)))
    (_, _), (y0, y1) = plots.loss_plot.getViewBox().viewRange()
    assert y0 <= 1.1 and y1 >= 2.0 and y1 - y0 < 10  # the finite losses, not a range blown up by inf
    plots.stop_live()
    plots.view.viewport().repaint()


def test_an_evaluation_without_a_loss_draws_its_metrics_and_no_validation_loss_point(live_plots):
    plots = live_plots
    plots.curves.add_train(steps([2.0, 1.5]))
    # object detection's evaluation measures no loss (null in metrics.jsonl): mAP only
    plots.curves.add_evals([EvalResult(time=T0 + 2, step=2, epoch=e, loss=None, metrics={"map": 0.1 * e}) for e in (1, 2)])
    plots.refresh()
    plots.view.viewport().repaint()
    assert np.isnan(plots.curves.eval_values("loss")).all()
    assert plots.curves.eval_values("map") == pytest.approx([0.1, 0.2])
    assert plots.point_counts()["eval"] == 0 and plots.point_counts()["loss"] == 2
    assert plots.eval_loss_plot.titleLabel.text == "Validation loss: not measured"  # not an empty plot left unsaid
    from trainlab.pluginhost.host import registry

    spec = registry().tasks["object-detection"].spec  # four bounded metrics in one plot: two a line, so it fits the pane
    plots.show_metrics(spec.metric_specs(), spec.default_monitor())
    lines = plots.metrics.plots[0].titleLabel.text.split("<br>")
    assert len(spec.metric_specs()) == 4 and len(lines) == 3 and "\u2605" in lines[2], lines
    plots.stop_live()
    plots.reset()
    plots.curves.add_evals([EvalResult(time=T0 + 2, step=2, epoch=1, loss=0.7, metrics={"map": 0.1})])
    plots.refresh()
    assert plots.eval_loss_plot.titleLabel.text == "Validation loss" and plots.point_counts()["eval"] == 1
