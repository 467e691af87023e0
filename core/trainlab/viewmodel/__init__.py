"""What the window shows, as plain objects with no Qt: a run's session and curves,
parameter values, results, the memory estimate, the devices, the settings.

The window's widgets are views over these; tests drive them headless.
"""
