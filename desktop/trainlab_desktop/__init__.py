"""The PySide6 desktop window (the only part of TrainLab that imports Qt)."""
