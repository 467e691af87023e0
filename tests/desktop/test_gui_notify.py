"""The end-of-run notification and the keep-awake lock, against a fake desktop on a private D-Bus.

The fake (tests/fixtures/fake_desktop.py) stands in for the notification
daemon, the screensaver and systemd-logind: a hardware-like boundary this
machine lacks.  TrainLab's side is the real code, over a real bus.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("pytestqt")
pytest.importorskip("jeepney")

from helpers import TESTS
from test_gui_window import prepare, start_and_finish

from trainlab_desktop.common import notify as notify_module
from trainlab_desktop.common.notify import KeepAwake, notify
from trainlab.runfolder.display import format_metric

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="D-Bus desktops are Linux's")


class FakeDesktop:
    def __init__(self, log: Path):
        self.log = log

    def calls(self, member: str | None = None) -> list[dict]:
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line]
        return [e for e in entries if member is None or e["member"] == member]

    def wait_for(self, qtbot, member: str, timeout_ms: int = 10_000) -> list[dict]:
        qtbot.waitUntil(lambda: bool(self.calls(member)), timeout=timeout_ms)
        return self.calls(member)


def _start_desktop(tmp_path, monkeypatch, *args: str):
    daemon_binary = shutil.which("dbus-daemon")
    if daemon_binary is None:
        pytest.skip("dbus-daemon is not installed (scripts/setup.sh --system installs it)")
    daemon = subprocess.Popen([daemon_binary, "--session", "--print-address", "--nofork", "--nopidfile"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    address = daemon.stdout.readline().strip()
    assert address.startswith("unix:"), address
    log = tmp_path / "desktop.jsonl"
    service = subprocess.Popen([sys.executable, str(TESTS / "fixtures" / "fake_desktop.py"), address, str(log), *args],
                               stdout=subprocess.PIPE, text=True)
    assert service.stdout.readline().strip() == "READY"
    # one private bus stands in for both the session bus and the system bus
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
    monkeypatch.setenv("DBUS_SYSTEM_BUS_ADDRESS", address)
    return daemon, service, FakeDesktop(log)


@pytest.fixture
def fake_desktop(tmp_path, monkeypatch):
    daemon, service, desktop = _start_desktop(tmp_path, monkeypatch)
    yield desktop
    service.kill()
    daemon.terminate()
    service.wait(10)
    daemon.wait(10)


@pytest.fixture
def desktop_without_logind(tmp_path, monkeypatch):
    daemon, service, desktop = _start_desktop(tmp_path, monkeypatch, "--no-logind")
    yield desktop
    service.kill()
    daemon.terminate()
    service.wait(10)
    daemon.wait(10)


def test_notification_reaches_the_desktop_with_our_name_and_icon(qtbot, fake_desktop):
    assert notify("Training finished", "toy-run: accuracy 0.97", None, "/icons/trainlab-128.png") == "dbus"
    (call,) = fake_desktop.wait_for(qtbot, "Notify")
    assert call["interface"] == "org.freedesktop.Notifications"
    assert call["signature"] == "susssasa{sv}i"
    app_name, replaces, icon, summary, body, actions, hints, timeout = call["body"]
    assert (app_name, replaces, icon, summary, body, actions, timeout) == (
        "TrainLab", 0, "/icons/trainlab-128.png", "Training finished", "toy-run: accuracy 0.97", [], -1)
    assert hints == {"desktop-entry": ["s", "org.trainlab.TrainLab"]}


def test_keep_awake_holds_a_logind_lock_until_released(qtbot, fake_desktop):
    keep = KeepAwake()
    assert keep.acquire("A training run is in progress") == "logind"
    (call,) = fake_desktop.calls("Inhibit")
    assert call["interface"] == "org.freedesktop.login1.Manager"
    assert call["body"] == ["sleep:idle", "TrainLab", "A training run is in progress", "block"]
    os.fstat(keep._fd.fileno())  # held (still open on our side) while the run goes on
    assert not fake_desktop.calls("LockReleased")
    keep.release()
    fake_desktop.wait_for(qtbot, "LockReleased")  # the descriptor was closed: logind lets the machine sleep
    assert not keep.active


def test_keep_awake_falls_back_to_the_session_screensaver(qtbot, desktop_without_logind):
    keep = KeepAwake()
    assert keep.acquire("A training run is in progress") == "screensaver"
    inhibit = [c for c in desktop_without_logind.calls("Inhibit") if c["interface"] == "org.freedesktop.ScreenSaver"]
    assert inhibit and inhibit[0]["body"] == ["TrainLab", "A training run is in progress"]
    keep.release()
    (release,) = desktop_without_logind.wait_for(qtbot, "UnInhibit")
    assert release["body"] == [42]  # the cookie the screensaver gave


def test_without_a_desktop_bus_nothing_fails(qapp):
    # tests/conftest.py points both buses at nothing, like a container
    assert notify("Training finished", "text") == ""
    keep = KeepAwake()
    assert keep.acquire() == ""
    keep.release()


def test_a_run_in_the_window_keeps_the_machine_awake_and_notifies_at_the_end(qtbot, window, toy_csv, fake_desktop,
                                                                            monkeypatch):
    monkeypatch.setattr(notify_module, "LONG_RUN_SECONDS", 0.0)  # every run counts as long here
    prepare(qtbot, window, toy_csv, epochs=1)
    result = start_and_finish(qtbot, window)
    assert result.status == "completed", result
    inhibit = fake_desktop.calls("Inhibit")
    assert inhibit and inhibit[0]["interface"] == "org.freedesktop.login1.Manager"
    fake_desktop.wait_for(qtbot, "LockReleased")
    (note,) = fake_desktop.wait_for(qtbot, "Notify")
    assert note["body"][3] == "Training finished"
    # the results page's form of the number (it read "accuracy 0.9250" beside a page saying "92.50%")
    assert note["body"][4] == "Finished: accuracy %s" % format_metric("accuracy", result.metrics["accuracy"], detail=True)
