"""Languages: the shipped Simplified Chinese translation loads, English comes back."""

from __future__ import annotations

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QLocale  # noqa: E402
from PySide6.QtWidgets import QApplication, QDialogButtonBox, QMessageBox  # noqa: E402

from helpers import ROOT


@pytest.fixture
def app(qapp):
    from trainlab_desktop.common.i18n import install_translator

    yield qapp
    install_translator(qapp, "en")  # later tests expect English


def test_chinese_translation_loads_for_our_widgets_and_qts_own(qtbot, app):
    from trainlab_desktop.common.i18n import current_language, install_translator
    from trainlab_desktop.dialogs.plugins import PluginsDialog
    from trainlab_desktop.results.page import ResultsView
    from trainlab.pluginhost.host import PluginRegistry

    assert install_translator(app, "zh_CN") == "zh_CN"
    assert current_language() == "zh_CN"
    assert QApplication.translate("PluginsDialog", "Plugins") == "插件"

    dialog = PluginsDialog(PluginRegistry.discover([]))
    qtbot.addWidget(dialog)
    assert dialog.windowTitle() == "插件"
    assert dialog.block_button.text() == "屏蔽"
    results = ResultsView()
    qtbot.addWidget(results)
    assert results.message.text() == "未选择运行。"

    # Qt's own dialogs: qtbase_zh_CN.qm from PySide6
    box = QMessageBox(QMessageBox.Icon.Question, "t", "t", QMessageBox.StandardButton.Cancel)
    qtbot.addWidget(box)
    assert box.button(QMessageBox.StandardButton.Cancel).text() == "取消"
    # numbers follow the language too
    assert QLocale().language() == QLocale.Language.Chinese

    assert install_translator(app, "en") == "en"
    english = PluginsDialog(PluginRegistry.discover([]))
    qtbot.addWidget(english)
    assert english.windowTitle() == "Plugins"
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    qtbot.addWidget(buttons)
    assert buttons.button(QDialogButtonBox.StandardButton.Cancel).text().replace("&", "") == "Cancel"


def test_every_window_string_has_a_chinese_translation(tmp_path):
    """Re-extracts the strings of the window's modules (desktop/trainlab_desktop): a new string without a translation fails.

    Fix: ``python scripts/update_translations.py``, translate the new entries
    of resources/trainlab_resources/translations/trainlab_zh_CN.ts (Qt Linguist), run it again.
    """
    import shutil
    import subprocess
    import sys
    import xml.etree.ElementTree as ET
    from pathlib import Path

    root = ROOT
    lupdate = Path(sys.executable).parent / "pyside6-lupdate"
    if not lupdate.exists():
        pytest.skip("pyside6-lupdate is not installed next to this Python")
    shipped = root / "resources" / "trainlab_resources" / "translations" / "trainlab_zh_CN.ts"
    ts = tmp_path / "check.ts"
    shutil.copy(shipped, ts)
    sources = sorted(str(p) for p in (root / "desktop" / "trainlab_desktop").rglob("*.py"))
    subprocess.run(
        [str(lupdate), *sources, "-locations", "none", "-no-obsolete", "-ts", str(ts)],
        check=True, capture_output=True, timeout=120,
    )
    untranslated = []
    for context in ET.parse(ts).getroot().iter("context"):
        for message in context.iter("message"):
            if message.find("translation").get("type") == "unfinished":
                untranslated.append(f"{context.findtext('name')}: {message.findtext('source')!r}")
    assert untranslated == [], "untranslated (run scripts/update_translations.py):\n" + "\n".join(untranslated)
    assert shipped.with_suffix(".qm").is_file(), "compile the .qm: scripts/update_translations.py"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("zh_CN", "zh_CN"),
        ("zh-CN", "zh_CN"),
        ("zh_Hans_CN", "zh_CN"),
        ("zh_CN.UTF-8", "zh_CN"),
        ("zh_TW", "zh_CN"),  # closer than English until a Traditional translation exists
        ("en_GB", "en"),
        ("de_DE", None),
        ("", None),
    ],
)
def test_language_names_are_normalised(given, expected):
    from trainlab_desktop.common.i18n import normalize_language

    assert normalize_language(given) == expected


def test_none_follows_the_system_locale():
    from trainlab_desktop.common.i18n import system_language

    assert system_language(QLocale(QLocale.Language.Chinese, QLocale.Country.China)) == "zh_CN"
    assert system_language(QLocale(QLocale.Language.German, QLocale.Country.Germany)) == "en"
    assert system_language(QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)) == "en"


def test_an_unknown_language_falls_back_to_english(app):
    from trainlab_desktop.common.i18n import install_translator

    assert install_translator(app, "xx_YY") == "en"
    assert QApplication.translate("PluginsDialog", "Plugins") == "Plugins"


def test_run_lines_and_gpu_reasons_are_translated_too(app):
    from trainlab_desktop.run.gpu_panel import localized_gpu_status
    from trainlab_desktop.common.i18n import install_translator
    from trainlab_desktop.run.welcome import describe_run

    row = {"name": "topics", "task": "text-classification", "status": "completed", "best_metric": 0.994,
           "monitor": "accuracy"}
    status = "no NVIDIA GPU: the NVIDIA driver is not installed (NVML library not found)"
    assert describe_run(row).endswith("accuracy 99.4%")
    assert install_translator(app, "zh_CN") == "zh_CN"
    assert describe_run(row).endswith("准确率 99.4%")
    assert "已完成" in describe_run(row)
    assert localized_gpu_status(status) == "未检测到 NVIDIA GPU: 未安装 NVIDIA 驱动（找不到 NVML 库）"
    # a reason from the driver itself stays as the driver said it
    assert localized_gpu_status("no NVIDIA GPU: NVML could not start (NVMLError: Unknown)").endswith(
        "NVML could not start (NVMLError: Unknown)")
