"""Shared pytest setup: hypothesis profiles, the ``torch`` oracle fixture, and a check that test
ids are the same in every process (pytest-xdist needs it).

Profiles: ``ci`` (the default: derandomized, so every run draws the same examples; no deadline,
since the first call of an op pays for imports; failing examples print a reproduction blob) and
``dev`` (random, more examples). Select one with ``HYPOTHESIS_PROFILE=dev``.
"""

from __future__ import annotations

import os
import re
import sys

# The oracle's kernels depend on the CPU: on an AVX-512 machine torch's contiguous float32
# gelu (oneDNN's AVX-512 erf) differs from its AVX2 result by up to 1e-4 relative, NaN for
# some special values included. The tests hold our kernels to the AVX2 kernels (the machines
# the oracle's values were read on), so torch is pinned to them before anything imports it;
# a value already in the environment wins.
os.environ.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
os.environ.setdefault("ATEN_CPU_CAPABILITY", "avx2")

import pytest  # noqa: E402

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


_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def pytest_collection_modifyitems(config, items):
    """Test ids must be the same in every process: pytest-xdist workers each collect the suite
    and stop when their lists differ. A parameter without an id (a lambda, an object) shows its
    repr, address included: give it ``ids=`` or ``pytest.param(..., id=...)``."""
    bad = [item.nodeid for item in items if _ADDRESS.search(item.nodeid)]
    if bad:
        raise pytest.UsageError("test ids with object addresses (not the same in every "
                                "process; give these parameters ids): " + ", ".join(bad[:5]))


@pytest.fixture(autouse=True)
def _torch_python_dispatch_left_on():
    """Fail a test that leaves torch's Python dispatch keys excluded in this thread (a
    ``torch._C._DisableTorchDispatch`` guard outliving it): every later test of the process
    would see torch's modes and subclass handlers silently skipped. The keys are turned back
    on first, so only the test that left them off fails."""
    yield
    torch = sys.modules.get("torch")
    if torch is None:
        return
    keys = torch._C.DispatchKey
    left = [k for k in (keys.Python, keys.PythonTLSSnapshot)
            if torch._C._dispatch_tls_is_dispatch_key_excluded(k)]
    for k in left:
        torch._C._dispatch_tls_set_dispatch_key_excluded(k, False)
    if left:
        pytest.fail(f"the test left torch's dispatch keys {left} excluded", pytrace=False)
    modes = torch._C._len_torch_dispatch_stack()
    if modes:
        pytest.fail(f"the test left {modes} torch dispatch mode(s) on the stack", pytrace=False)
