"""Widgets (SPEC §7, docs/widgets.md): config checks, paths into run outputs, and the data each type shows.

Pure: nothing here reads the database or the clock. ``api/services/widgets.py`` feeds it runs.
"""
