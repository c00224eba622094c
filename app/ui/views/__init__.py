"""Whole views the main window puts into tabs: run history, comparison."""
