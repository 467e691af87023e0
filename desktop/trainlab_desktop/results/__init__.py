"""The Results page: one view per task family over ``trainlab.viewmodel.results``.
"""
