"""Modes built only on subclass_kit's public extension API."""
