"""The plugin host: discovery with per-plugin isolation, and trying a new plugin
in a child process first.
"""

from trainlab.system.moved import moved_name


def __getattr__(name: str):
    # Names scripts imported when this package was one module (trainlab.system.moved).

    return moved_name(__name__, name)
