"""The ``trainlab`` command line: its commands, listings, ``doctor`` and reports.

The top layer of the core: it may use every other package, and reaches the
window only through the lazy import inside its ``gui`` command
(``trainlab.cli.commands``).
"""

from trainlab.system.moved import moved_name


def __getattr__(name: str):
    # Names scripts imported when this package was one module (trainlab.system.moved).

    return moved_name(__name__, name)
