"""Shared pytest setup: hypothesis profiles and the ``torch`` oracle fixture.

Profiles: ``ci`` (the default: derandomized, so every run draws the same examples; no deadline,
since the first call of an op pays for imports; failing examples print a reproduction blob) and
``dev`` (random, more examples). Select one with ``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))  # tests import their helpers as plain modules

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test extra; tests that need it skip on their own
    settings = None

if settings is not None:
    settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True, database=None,
                              max_examples=50,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("dev", deadline=None, print_blob=True, max_examples=200)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def torch():
    """The oracle: ``torch`` itself, or a skip naming why it is missing."""
    return pytest.importorskip(
        "torch", reason="torch (the test oracle, `pip install subclass-kit[oracle]`) is not "
                        "installed")
