"""The window's dialogs: about, caches, plugins, run choices.
"""
