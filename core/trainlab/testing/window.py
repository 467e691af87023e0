"""The real main window for a plugin's tests: the one part of the kit that imports ``trainlab_desktop``.

Imported only by the ``trainlab_window`` fixture, once a test asks for the
window (the import-linter contracts in pyproject.toml name this module as
the declared exception to "nothing but the window imports trainlab_desktop").
"""

from __future__ import annotations

from typing import Any


def open_window(qtbot: Any) -> Any:
    """A ``MainWindow``, shown, exposed and set up (plugins found, pages built)."""
    from trainlab_desktop.app import make_application
    from trainlab_desktop.main_window import MainWindow

    make_application(language="en", theme="light")
    window = MainWindow(resolved_theme="light")
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.finish_setup()
    return window
