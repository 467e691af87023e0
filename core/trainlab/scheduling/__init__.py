"""Runs that wait their turn: the persistent queue across the machine's GPUs, and
hyperparameter sweeps whose trials are runs (docs/queue-and-sweeps.md).
"""
