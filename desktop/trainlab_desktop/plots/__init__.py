"""The live plots (pyqtgraph): loss and metric curves, their axes.
"""
