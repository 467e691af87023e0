"""What every part of the window shares: style, translations, number formats,
layouts, notifications, background work.
"""
