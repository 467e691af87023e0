"""Models on this machine: the pretrained folders TrainLab can find without the
network, and what format a model folder or file holds.
"""
