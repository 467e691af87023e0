"""Built-in plugin: object detection (find and box things in images).

Imported at plugin discovery, so it only builds the task's descriptor: no
torch, torchvision or PIL here.  The data readers are in ``.formats``, the
runtime side in ``.task``.
"""

from __future__ import annotations
