"""The one training loop, its callbacks, checkpoints and run execution."""
