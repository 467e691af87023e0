"""Telling the user a long run ended, and keeping the machine awake meanwhile.

Notification: on Linux the freedesktop notification service (GNOME, KDE,
Xfce, dunst...) over the session D-Bus, else the system tray's balloon where
there is a tray (Windows, macOS), and in every case ``QApplication.alert`` so
the taskbar entry asks for attention.

Keep-awake while a run is active, where the platform allows:

* Linux: an inhibitor lock from systemd-logind (``sleep:idle``, held as a
  file descriptor until released), else the session's
  ``org.freedesktop.ScreenSaver.Inhibit``;
* Windows: ``SetThreadExecutionState(ES_CONTINUOUS | ES_SYSTEM_REQUIRED)``;
* macOS: ``caffeinate -i -w PID``.

Every path fails quietly (containers without a bus): staying awake is a
courtesy, never a reason to refuse a run.

D-Bus is spoken with jeepney (pure Python) rather than QtDBus: the
notification call needs a ``uint32`` argument, which PySide's QtDBus cannot
build, and logind hands the lock back as a file descriptor.  The test suite
points both buses at nothing (``tests/conftest.py``), and the notification
and keep-awake tests run a fake desktop on a private bus.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from typing import Any

from PySide6.QtCore import QCoreApplication
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

from trainlab.shortcuts.identity import DESKTOP_ID

log = logging.getLogger("trainlab.desktop")

APP_NAME = "TrainLab"
LONG_RUN_SECONDS = 60.0


DBUS_TIMEOUT = 2.0  # seconds; a desktop service that hangs must not hang the window
NOTIFICATIONS = ("org.freedesktop.Notifications", "/org/freedesktop/Notifications", "org.freedesktop.Notifications")
SCREENSAVER = ("org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver")
LOGIND = ("org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager")


def _has_dbus() -> bool:
    return sys.platform.startswith("linux") or "bsd" in sys.platform


def dbus_call(bus: str, service: tuple[str, str, str], method: str, signature: str = "", body: tuple = (),
              *, fds: bool = False) -> tuple:
    """One method call on the ``SESSION`` or ``SYSTEM`` bus; the reply's body.

    Raises ``OSError`` (no bus), ``TimeoutError`` or jeepney's
    ``DBusErrorResponse`` (the service said no, or is not there).
    """
    from jeepney import DBusAddress, new_method_call
    from jeepney.io.blocking import open_dbus_connection
    from jeepney.wrappers import unwrap_msg

    name, path, interface = service
    with open_dbus_connection(bus=bus, enable_fds=fds) as connection:
        message = new_method_call(DBusAddress(path, name, interface), method, signature, body)
        return unwrap_msg(connection.send_and_get_reply(message, timeout=DBUS_TIMEOUT))


def notify(title: str, body: str, window: QWidget | None = None, icon_path: str = "") -> str:
    """Show a desktop notification; returns how it was shown ('' if it was not)."""
    if window is not None:
        QApplication.alert(window)
    if _has_dbus():
        hints = {"desktop-entry": ("s", DESKTOP_ID)}  # the desktop shows our name and icon
        try:
            dbus_call("SESSION", NOTIFICATIONS, "Notify", "susssasa{sv}i",
                      (APP_NAME, 0, icon_path, title, body, [], hints, -1))
            return "dbus"
        except Exception as exc:  # noqa: BLE001 - no notification service: try the tray
            log.debug("desktop notification failed: %s", exc)
    if QSystemTrayIcon.isSystemTrayAvailable() and QSystemTrayIcon.supportsMessages():
        app = QApplication.instance()
        tray = getattr(app, "_trainlab_tray", None)
        if tray is None:
            tray = QSystemTrayIcon(app.windowIcon(), app)
            app._trainlab_tray = tray  # keep it alive while the app runs
        tray.show()
        tray.showMessage(title, body, QSystemTrayIcon.MessageIcon.Information, 10_000)
        return "tray"
    return ""


class KeepAwake:
    """``acquire()`` when a run starts, ``release()`` when it ends."""

    def __init__(self) -> None:
        self.method = ""
        self._fd: Any = None
        self._cookie: Any = None
        self._process: subprocess.Popen | None = None

    @property
    def active(self) -> bool:
        return bool(self.method)

    def acquire(self, reason: str = "") -> str:
        if self.active:
            return self.method
        reason = reason or QCoreApplication.translate("KeepAwake", "A training run is in progress")
        try:
            if sys.platform == "win32":
                self._windows(True)
            elif sys.platform == "darwin":
                self._caffeinate()
            else:
                self._linux(reason)
        except Exception as exc:  # noqa: BLE001 - a courtesy, never fatal
            log.debug("keep-awake unavailable: %s", exc)
            self.method = ""
        if self.method:
            log.info("keeping the machine awake during the run (%s)", self.method)
        return self.method

    def release(self) -> None:
        try:
            if self.method == "windows":
                self._windows(False)
            elif self.method == "caffeinate" and self._process is not None:
                self._process.terminate()
                self._process.wait(5)
            elif self.method == "logind" and self._fd is not None:
                self._fd.close()  # closing the descriptor releases the lock
            elif self.method == "screensaver" and self._cookie is not None:
                dbus_call("SESSION", SCREENSAVER, "UnInhibit", "u", (self._cookie,))
        except Exception as exc:  # noqa: BLE001
            log.debug("keep-awake release failed: %s", exc)
        self.method = ""
        self._fd = None
        self._cookie = None
        self._process = None

    # -- platforms -----------------------------------------------------------
    def _windows(self, on: bool) -> None:
        import ctypes

        es_continuous, es_system_required = 0x80000000, 0x00000001
        flags = es_continuous | es_system_required if on else es_continuous
        if ctypes.windll.kernel32.SetThreadExecutionState(flags) and on:
            self.method = "windows"

    def _caffeinate(self) -> None:
        binary = shutil.which("caffeinate")
        if binary:
            self._process = subprocess.Popen([binary, "-i", "-w", str(os.getpid())])
            self.method = "caffeinate"

    def _linux(self, reason: str) -> None:
        try:  # systemd-logind: the machine does not suspend while we hold the descriptor
            (fd,) = dbus_call("SYSTEM", LOGIND, "Inhibit", "ssss", ("sleep:idle", APP_NAME, reason, "block"), fds=True)
        except Exception as exc:  # noqa: BLE001 - no logind (containers, non-systemd): the session's inhibitor
            log.debug("logind inhibitor unavailable: %s", exc)
        else:
            self._fd = fd
            self.method = "logind"
            return
        (cookie,) = dbus_call("SESSION", SCREENSAVER, "Inhibit", "ss", (APP_NAME, reason))
        self._cookie = cookie
        self.method = "screensaver"
