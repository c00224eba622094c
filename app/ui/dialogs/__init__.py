"""Dialogs: price override."""
