"""What ``import subclass_kit`` must not do (issue 16: ``subclass-kit shapes`` is a short
process, so its import is most of its time), and that the lazy pieces behave like eager ones.

- modules made lazy stay unimported: ``numpy.random`` (and the ``secrets``/``hashlib`` it pulls
  in) until a random op runs, the optional layers (``modes``, ``optim``, serialization), the
  CLI's and zoo's modules;
- built-in schemas are parsed on first use (Note [Lazy schemas]): after the import most ops
  are still unparsed, and each one, once used, has exactly the attributes of an op built
  eagerly from the same schema text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import subclass_kit as sk
from subclass_kit import op_table, registry
from subclass_kit.op_table_derived import derived_schemas
from subclass_kit.schema import parse_schema

ROOT = Path(__file__).resolve().parents[1]

LAZY_MODULES = ["numpy.random", "secrets", "hashlib", "subclass_kit.modes",
                "subclass_kit.optim", "subclass_kit.serialization", "subclass_kit.zoo",
                "subclass_kit.cli", "subclass_kit.port", "argparse",
                # installed when inference mode is first entered (grad_mode.set_grad_state)
                "subclass_kit.kernels.inference_versions"]

_CHILD = """
import json, sys
import subclass_kit as sk
from subclass_kit import _builtin_ops
ops = list(sk.ops)
print(json.dumps({"modules": sorted(sys.modules),
                  "ops": len(ops),
                  "unparsed": sum(type(op) is _builtin_ops._LazyOpOverload for op in ops)}))
"""


@pytest.fixture(scope="module")
def fresh_import():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    proc = subprocess.run([sys.executable, "-c", _CHILD], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", LAZY_MODULES)
def test_import_does_not_import(fresh_import, name):
    assert name not in fresh_import["modules"], (
        f"import subclass_kit imported {name}: import it where it is used")


def test_import_leaves_most_schemas_unparsed(fresh_import):
    # Kernel registration reads some schemas (pointwise ops and their out= overloads); a
    # change that makes the import parse them all puts ~15 ms back on every process.
    assert fresh_import["unparsed"] > fresh_import["ops"] // 2, fresh_import


def test_random_stream_starts_where_an_eager_generator_would():
    import numpy as np
    g = sk.Generator().manual_seed(1234)
    expected = np.random.default_rng(1234).random(5, dtype=np.float64)
    got = sk.rand(5, dtype=sk.float64, generator=g)
    assert got.tolist() == expected.tolist()


def _schema_texts() -> list:
    return op_table.ALL + derived_schemas()


# What a lazy op has before its schema is parsed, or what kernel modules and define() add:
# not derived from the schema.
_NOT_DERIVED = {"name", "overload", "namespace", "_kernels", "decomposition", "tags", "bump_if",
                "_custom", "_overloads", "rule", "fill", "info"}


@pytest.mark.parametrize("text", _schema_texts(), ids=lambda t: t.partition("(")[0])
def test_lazy_op_has_the_attributes_of_an_eager_one(text):
    qualified = text.partition("(")[0].strip()
    name, _, overload = qualified.partition(".")
    op = getattr(getattr(sk.ops, name), overload or "default")
    eager = registry.OpOverload(parse_schema(text))
    derived = set(vars(eager)) - _NOT_DERIVED - set(op._overloads)
    assert op.schema == eager.schema
    assert type(op) is sk.OpOverload
    for attr in sorted(derived):
        assert getattr(op, attr) == getattr(eager, attr), attr
    assert (op.name, op.overload) == (eager.name, eager.overload)


def test_unknown_attribute_of_a_lazy_op_raises_attribute_error():
    from subclass_kit._builtin_ops import _LazyOpOverload
    text = "nonesuch.Tensor(Tensor self) -> Tensor"
    op = _LazyOpOverload(text, "nonesuch.Tensor")
    with pytest.raises(AttributeError, match="no attribute 'no_such_field'"):
        op.no_such_field  # noqa: B018
    assert type(op) is sk.OpOverload and str(op.schema) == text
