"""``python -m trainlab.pluginhost.probe_child``: the child that tries one plugin for ``trainlab.pluginhost.probe``.

It reads the entry point to try as JSON on stdin, loads it through a fresh
``PluginRegistry`` and prints its verdict after ``MARKER``; the parent keeps
what it prints, and its stack if it hangs, as the plugin's failure details.
"""

from __future__ import annotations

import faulthandler
import importlib.metadata as md
import json
import os
import signal
import sys
import time

from trainlab.pluginhost.host import PluginRegistry
from trainlab.pluginhost.probe import DEFAULT_TIMEOUT_S, MARKER
from trainlab.pluginhost.status import PluginStatus


def main() -> None:
    """The child: load one entry point as discovery would, then say so."""
    request = json.loads(sys.stdin.readline())
    sys.path[:] = list(request["sys_path"])
    # Where it hangs, for the plugin's author: the stack goes to stderr, which
    # the parent keeps as the failure's details, just before it gives up.
    deadline = float(request.get("deadline") or time.time() + DEFAULT_TIMEOUT_S)
    faulthandler.dump_traceback_later(max(0.1, (deadline - time.time()) * 0.9 - 0.2))
    if hasattr(signal, "alarm"):
        # Should the parent be gone (the window closed meanwhile), the kernel
        # ends this process a little after the deadline, whatever it is stuck in.
        signal.alarm(max(1, int(deadline - time.time()) + 5))
    ep = md.EntryPoint(request["name"], request["value"], request["group"])
    registry = PluginRegistry()
    record = registry._load_plugin(ep.name, ep.value, request["distribution"], request["version"], ep.load, set())
    if record.status == PluginStatus.OK:
        registry._collect_tasks(record)
    if record.status == PluginStatus.OK:
        registry._collect_presets(record)
    sys.stdout.write("\n" + MARKER + json.dumps({"status": record.status, "message": record.message}) + "\n")
    sys.stdout.flush()
    # Loaded: that is all the parent asks.  Threads or exit handlers the
    # plugin started must not make its verdict wait.
    os._exit(0)


if __name__ == "__main__":
    main()
