"""The Queue page and its sweep views.
"""
