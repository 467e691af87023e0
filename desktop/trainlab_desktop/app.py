"""Starting the desktop app: ``trainlab``, ``trainlab gui`` and ``trainlab-gui``.

``run_app`` shows the window as early as it can (Qt, the window shell and the
start view only), then finishes setting up from the event loop: plugins,
pages, plots.  torch and pyqtgraph are not imported before the window is on
screen (``tests/desktop/test_gui_window_startup.py`` checks it in a fresh process).

Identity on the desktop: the X11 WM_CLASS is ``trainlab`` (the application
name, and the instance name through argv[0]) and the desktop file name is the
launcher's entry id, so docks and Wayland compositors match the window to the
menu entry ``trainlab install-launcher`` wrote.
"""

from __future__ import annotations

import logging
import sys
from typing import Any, Callable

from PySide6.QtCore import QCoreApplication, QEvent, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from trainlab import __version__
from trainlab.viewmodel.settings import DesktopSettings
from trainlab_desktop.common.i18n import install_translator
from trainlab_desktop.common.style import apply_theme
from trainlab_desktop.main_window import MainWindow

log = logging.getLogger("trainlab.desktop")

# The same values as trainlab.shortcuts.DESKTOP_ID and WM_CLASS (a test checks
# it); not imported from there because that module costs start-up time.
DESKTOP_ID = "org.trainlab.TrainLab"
WM_CLASS = "trainlab"

#: Called with the window once it is shown (before plugins load and before
#: the event loop runs).  For tests and ``bench/gui_latency.py``; the window's
#: ``ready`` signal follows once its setup is done (``start_setup``).
after_show: list[Callable[[Any], None]] = []


def app_icon(sizes: tuple[int, ...] = (16, 24, 32, 48, 64, 128, 256, 512)):
    """The app icon in every size (set once the window is up: loading the
    files costs start-up time, and the window manager picks the change up)."""
    from PySide6.QtGui import QIcon  # not at the top: its enums cost start-up time

    from trainlab_resources import resource_path

    icons = resource_path("icons")
    icon = QIcon()
    for size in sizes:
        path = icons / f"trainlab-{size}.png"
        if path.is_file():
            icon.addFile(str(path))
    svg = icons / "trainlab.svg"
    if icon.isNull() and svg.is_file():
        icon.addFile(str(svg))
    return icon


def make_application(language: str | None = None, theme: str | None = None) -> tuple[QApplication, str, str]:
    """The QApplication, set up: identity, icon, translations, palette.

    Returns ``(app, language used, resolved theme)``.  Reuses an existing
    QApplication (tests).
    """
    desktop_id, wm_class = DESKTOP_ID, WM_CLASS
    QCoreApplication.setApplicationName(wm_class)
    QCoreApplication.setOrganizationName("TrainLab")
    QCoreApplication.setApplicationVersion(__version__)
    QGuiApplication.setApplicationDisplayName("TrainLab")
    QGuiApplication.setDesktopFileName(desktop_id)
    if sys.platform == "win32":
        from trainlab.shortcuts import set_windows_app_id

        set_windows_app_id()
    app = QApplication.instance()
    if app is None:
        # argv[0] is the X11 instance name (WM_CLASS's first string); the
        # command line is TrainLab's, not Qt's: only the style is passed, so
        # Qt makes Fusion straight away instead of the platform's default
        # first, and no QStyle object reaches Python before the window shows
        # (creating its enums is a noticeable part of start-up).
        app = QApplication([wm_class, "-style", "fusion"])
    elif app.style().name().lower() != "fusion":
        app.setStyle("Fusion")

    settings = DesktopSettings()
    used = install_translator(app, language or settings.language)
    resolved = apply_theme(app, theme or settings.theme, quick=True)  # checked again once shown
    return app, used, resolved


def _log_uncaught(exc_type, exc, tb) -> None:
    # An exception escaping a slot must not pass silently in a GUI launched
    # from a menu (no terminal): it goes to the log file and the log panel.
    if issubclass(exc_type, KeyboardInterrupt):
        sys.__excepthook__(exc_type, exc, tb)
        return
    log.error("unexpected error", exc_info=(exc_type, exc, tb))


def run_app(
    task: str | None = None,
    data: str | None = None,
    params: dict[str, str] | None = None,
    autostart: bool = False,
    language: str | None = None,
) -> int:
    """Open the main window (optionally pre-filled and started); returns the exit code."""
    app, used_language, resolved_theme = make_application(language)

    window = MainWindow(resolved_theme=resolved_theme)
    window.show()
    app.processEvents()  # expose and paint now: the window is on screen before anything heavy
    for hook in list(after_show):
        hook(window)
    from trainlab.system.logs import setup_logging

    setup_logging(console=False)  # the log file (a no-op when the CLI did it already)
    app.setWindowIcon(app_icon())
    log.info("TrainLab %s window shown (language %s, theme %s)", __version__, used_language, resolved_theme)
    window.prefill(task=task, data=data, params=dict(params or {}), autostart=autostart)
    QTimer.singleShot(0, window.start_setup)

    previous_hook = sys.excepthook
    sys.excepthook = _log_uncaught

    # Ctrl+C in the terminal, or SIGTERM (kill, a service manager): Python
    # only sees the signal when the interpreter runs, so a timer wakes it; a
    # run is stopped cleanly (cancelled, checkpoint kept) before the window closes.
    def interrupted(*_args) -> None:
        if window.running:
            window.stop_for_close()
        else:
            window.close()

    import signal  # here, not at the top: the window is already up

    previous_handlers = {}
    for signum in (signal.SIGINT, getattr(signal, "SIGTERM", None)):
        if signum is None:
            continue
        try:
            previous_handlers[signum] = signal.signal(signum, interrupted)
        except (ValueError, OSError):  # not the main thread
            pass
    waker = QTimer()
    waker.start(250)
    waker.timeout.connect(lambda: None)
    try:
        code = app.exec()
    finally:
        waker.stop()
        sys.excepthook = previous_hook
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)
    if window.running:  # closed some other way than closeEvent (session end)
        window.worker.request_stop()
        window.worker.wait()
    window._shutdown()
    # Delete the window while the QApplication still exists.  Left to the
    # interpreter's exit, PySide6 destroys the application first and then
    # pyqtgraph's graphics items, whose scene is gone: a segfault at exit.
    window.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    return int(code)


def main() -> int:
    return run_app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
