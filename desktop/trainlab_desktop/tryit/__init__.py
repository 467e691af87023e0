"""The Try-it page: a trained model on inputs the user gives.
"""
