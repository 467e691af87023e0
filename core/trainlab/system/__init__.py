"""The machine TrainLab runs on: its folders, atomic file writes, caches, logs.

The lowest layer above the plugin API: nothing here knows of runs, plugins
or the engine.
"""
