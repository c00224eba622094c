"""Dialogs: host editor, SSH questions (host keys, passphrases, timm), price override."""
