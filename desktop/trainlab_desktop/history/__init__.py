"""The Runs page: every run on this machine, and their curves side by side.
"""
