"""Logs go to the user log dir; native crashes are written there by faulthandler."""

import subprocess
import sys

from helpers import BROKEN_PLUGINS, subprocess_env


def test_native_crash_is_written_to_the_crash_log(tmp_home):
    code = "from trainlab.system.logs import setup_logging; setup_logging(); import faulthandler; faulthandler._sigsegv()"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(), timeout=60)
    assert result.returncode != 0
    crash = (tmp_home / "logs" / "crash.log").read_text()
    assert "Segmentation fault" in crash or "Fatal Python error" in crash


def test_cli_logs_to_the_log_file(cli, tmp_home):
    result = cli("plugins", "--block", "nothing-real")
    assert result.returncode == 0
    assert (tmp_home / "logs" / "trainlab.log").exists()


def test_plugins_verbose_prints_tracebacks(cli):
    result = cli("plugins", "-v", extra_path=[BROKEN_PLUGINS])
    assert result.returncode == 0
    assert "Traceback" in result.stdout and "ModuleNotFoundError" in result.stdout
