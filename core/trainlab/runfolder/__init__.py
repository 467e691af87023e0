"""The run folder (CONTRACT.md "Run directory"): its records, evaluation
reports, metrics stream, states, and the index of every run on this machine.
"""
