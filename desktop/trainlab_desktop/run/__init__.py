"""The Train page and the run in flight: data, parameters, devices, the
training thread and the views of its session.
"""
