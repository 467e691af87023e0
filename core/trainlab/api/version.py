"""The plugin API's version, and the older majors still loaded (through the adapter).

Compatibility follows ``PLUGIN_API_VERSION`` = (major, minor): a minor bump
only adds, a major bump removes or changes (docs/plugins.md "Versions").
"""

from __future__ import annotations

PLUGIN_API_VERSION: tuple[int, int] = (2, 1)
# Majors whose plugins still load (through the adapter), besides the current one.
SUPPORTED_OLDER_MAJORS: tuple[int, ...] = (1,)
