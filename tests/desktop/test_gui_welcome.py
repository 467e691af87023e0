"""The start view offers a sample card for every installed task whose sample data is here."""

from __future__ import annotations

import sys
import types

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import Qt  # noqa: E402


@pytest.fixture
def registry_with_a_plugin_sample(tmp_path, monkeypatch):
    """The built-ins plus a plugin shipping its own sample in its package, and one whose sample is missing."""
    import trainlab
    from trainlab import TaskSpec
    from trainlab.pluginhost.host import PluginRegistry

    package = tmp_path / "trainlab_demo_rows"
    (package / "sample").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "sample" / "rows.csv").write_text("x0,y\n1,2\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))

    plugin = types.SimpleNamespace()
    plugin.trainlab_api_version = trainlab.hookimpl(lambda: "2.0")
    plugin.trainlab_tasks = trainlab.hookimpl(lambda: [
        TaskSpec(id="demo-rows", title="Demo rows", factory="trainlab_demo_rows:Task", family="regression",
                 description="Rows of numbers to a number.", sample_data="trainlab_demo_rows:sample/rows.csv"),
        TaskSpec(id="demo-missing", title="Demo missing", factory="trainlab_demo_rows:Task",
                 sample_data="trainlab_demo_rows:sample/not-there"),
    ])
    registry = PluginRegistry.discover()
    assert registry.add_plugin(plugin, "demo-rows").status == "ok"
    assert "trainlab_demo_rows" not in sys.modules  # its sample was found without importing it
    return registry, package / "sample" / "rows.csv"


@pytest.fixture
def welcome(qtbot):
    from trainlab_desktop.app import make_application
    from trainlab_desktop.run.welcome import WelcomeView

    make_application(language="en", theme="light")
    view = WelcomeView()
    qtbot.addWidget(view)
    view.resize(1280, 700)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_every_task_with_its_sample_here_gets_a_card_a_plugins_own_included(qtbot, welcome, registry_with_a_plugin_sample):
    from trainlab_desktop.run.welcome import sample_data_path, sample_offers

    registry, sample = registry_with_a_plugin_sample
    offers = sample_offers(registry)
    with_samples = [t for t, e in registry.tasks.items() if e.spec.sample_path() is not None]
    assert [o.task_id for o in offers] == with_samples
    assert "demo-rows" in with_samples and "demo-missing" not in with_samples
    assert sample_data_path(registry, "demo-rows") == str(sample)
    assert sample_data_path(registry, "demo-missing") == "" and sample_data_path(registry, "no-such-task") == ""

    welcome.set_samples(offers)
    button = welcome.sample_button("demo-rows")
    assert button is not None and button.text() == "Try demo rows" and button.isVisible()
    card = welcome.sample_cards["demo-rows"]
    assert card.heading.text() == "Demo rows" and card.body.text() == "Rows of numbers to a number."
    assert str(sample) in button.toolTip()
    assert welcome.sample_button("demo-missing") is None
    with qtbot.waitSignal(welcome.sampleRequested) as asked:
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    assert asked.args == ["demo-rows"]
    # the cards and "Your own data" share rows of at most MAX_COLUMNS, equally wide
    from trainlab_desktop.run.welcome import MAX_COLUMNS

    cards = [*welcome.sample_cards.values(), welcome.new_card]
    qtbot.waitUntil(lambda: max(c.width() for c in cards) - min(c.width() for c in cards) <= 2, timeout=3000)
    rows = sorted({c.y() for c in cards})
    assert len(rows) == -(-len(cards) // MAX_COLUMNS) if len(cards) > MAX_COLUMNS else len(rows) == 1
    assert all(sum(c.y() == y for c in cards) <= MAX_COLUMNS for y in rows)


def test_no_sample_button_is_cut_a_long_title_gives_way_to_a_short_label(qtbot, welcome):
    from trainlab.pluginhost.host import PluginRegistry
    from trainlab_desktop.run.welcome import sample_offers

    welcome.set_samples(sample_offers(PluginRegistry.discover()))
    buttons = {task: welcome.sample_button(task) for task in welcome.sample_cards}
    assert "text-generation" in buttons  # its title is the long one
    for task, button in buttons.items():
        assert "\u2026" not in button.text() and "..." not in button.text(), (task, button.text())
        assert button.fontMetrics().horizontalAdvance(button.text()) <= button.width(), task
    assert buttons["image-classification"].text() == "Try image classification"
    long_one = buttons["text-generation"]
    assert long_one.text() == "Try the sample"
    assert "language model" in welcome.sample_cards["text-generation"].heading.text()
    assert "samples/text-generation" in long_one.toolTip().replace("\\", "/")


def test_without_samples_only_your_own_data_is_offered(qtbot, welcome):
    welcome.set_samples([])
    assert welcome.sample_cards == {} and welcome.new_card.isVisible()


def test_the_start_page_says_it_is_reading_the_runs_until_it_has_them(qtbot, tmp_home):
    """Runs exist: no frame of "No runs yet" while the index is read in the background."""
    import shutil
    from pathlib import Path

    from helpers import train_toy
    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    trained = Path(train_toy(tmp_home.parent / f"{tmp_home.name}-trained", "toy-classification"))
    run_dir = shutil.copytree(trained, tmp_home / "runs" / trained.name)  # found by the index's first listing
    make_application(language="en", theme="light")
    window = MainWindow(resolved_theme="light")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    welcome = window.welcome
    assert not welcome.recent_loaded
    assert welcome.recent_empty.isVisible() and "Reading" in welcome.recent_empty.text()
    assert "No runs yet" not in welcome.recent_empty.text() and welcome.recent.isHidden()
    window.finish_setup()
    qtbot.waitUntil(lambda: welcome.recent_loaded, timeout=30_000)
    assert welcome.recent.count() == 1 and welcome.recent.item(0).toolTip() == str(run_dir)
    assert welcome.recent_empty.isHidden()
    window._shutdown()
