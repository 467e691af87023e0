"""Telling the user a long run ended, and keeping the machine awake meanwhile.

Notification: ``notify-send`` (libnotify, the freedesktop notification
service GNOME, KDE and Xfce show) on Linux, else the system tray's balloon
where there is a tray (Windows, macOS), and in every case
``QApplication.alert`` so the taskbar entry asks for attention.

Keep-awake while a run is active, where the platform allows:

* Linux: an inhibitor lock from systemd-logind (``sleep:idle``, held as a
  file descriptor until released), else the session's
  ``org.freedesktop.ScreenSaver.Inhibit``;
* Windows: ``SetThreadExecutionState(ES_CONTINUOUS | ES_SYSTEM_REQUIRED)``;
* macOS: ``caffeinate -i -w PID``.

Every path fails quietly (offscreen tests, containers without a bus): staying
awake is a courtesy, never a reason to refuse a run.
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

log = logging.getLogger("trainlab.desktop")

APP_NAME = "TrainLab"
LONG_RUN_SECONDS = 60.0


def _dbus() -> Any:
    if not sys.platform.startswith("linux") and "bsd" not in sys.platform:
        return None
    try:
        from PySide6 import QtDBus
    except ImportError:
        return None
    return QtDBus


def notify(title: str, body: str, window: QWidget | None = None, icon_path: str = "") -> str:
    """Show a desktop notification; returns how it was shown ('' if it was not)."""
    if window is not None:
        QApplication.alert(window)
    if QApplication.platformName() in ("offscreen", "minimal"):
        return ""
    sender = shutil.which("notify-send") if sys.platform.startswith("linux") else None
    if sender:
        args = [sender, "--app-name", APP_NAME, "--hint", "string:desktop-entry:org.trainlab.TrainLab"]
        if icon_path:
            args += ["--icon", icon_path]
        try:
            subprocess.Popen([*args, title, body], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return "notify-send"
        except OSError as exc:
            log.debug("notify-send failed: %s", exc)
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
            elif self.method == "logind":
                self._fd = None  # dropping the descriptor releases the lock
            elif self.method == "screensaver" and self._cookie is not None:
                QtDBus = _dbus()
                bus = QtDBus.QDBusConnection.sessionBus()
                iface = QtDBus.QDBusInterface(
                    "org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver", bus
                )
                iface.call("UnInhibit", self._cookie)
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
        if QCoreApplication.instance() is None:
            return
        QtDBus = _dbus()
        if QtDBus is None:
            return
        system = QtDBus.QDBusConnection.systemBus()
        if system.isConnected():
            iface = QtDBus.QDBusInterface(
                "org.freedesktop.login1", "/org/freedesktop/login1", "org.freedesktop.login1.Manager", system
            )
            if iface.isValid():
                reply = iface.call("Inhibit", "sleep:idle", APP_NAME, reason, "block")
                if reply.type() == QtDBus.QDBusMessage.MessageType.ReplyMessage and reply.arguments():
                    self._fd = reply.arguments()[0]
                    self.method = "logind"
                    return
        session = QtDBus.QDBusConnection.sessionBus()
        if session.isConnected():
            iface = QtDBus.QDBusInterface(
                "org.freedesktop.ScreenSaver", "/org/freedesktop/ScreenSaver", "org.freedesktop.ScreenSaver", session
            )
            if iface.isValid():
                reply = iface.call("Inhibit", APP_NAME, reason)
                if reply.type() == QtDBus.QDBusMessage.MessageType.ReplyMessage and reply.arguments():
                    self._cookie = reply.arguments()[0]
                    self.method = "screensaver"
