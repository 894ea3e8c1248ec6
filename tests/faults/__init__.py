"""Fault injection: deliberately buggy ops, modes and subclasses for DebugAssertMode."""
