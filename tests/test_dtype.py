"""dtypes: attributes, aliases, ``promote_types`` / ``can_cast`` / ``result_type`` against
torch, and the default dtype."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st
from oracle import DTYPE_NAMES, dtype_name

import subclass_kit as sk
from subclass_kit import _dtype

DTYPES = [getattr(sk, n) for n in DTYPE_NAMES]


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_attributes_match_torch(name, torch):
    ours, theirs = getattr(sk, name), getattr(torch, name)
    assert ours.itemsize == theirs.itemsize
    assert ours.is_floating_point == theirs.is_floating_point
    assert ours.is_signed == theirs.is_signed
    assert repr(ours) == repr(theirs).replace("torch.", "sk.")
    assert sk.empty(2, dtype=ours).element_size() == theirs.itemsize


@pytest.mark.parametrize("name", DTYPE_NAMES)
def test_dtypes_are_singletons(name):
    d = getattr(sk, name)
    assert d is getattr(sk, name)
    assert sk.zeros(1, dtype=d).dtype is d


@pytest.mark.parametrize("name", ["float32", "bool"])
def test_dtypes_pickle_to_themselves(name):
    import pickle
    d = getattr(sk, name)
    assert pickle.loads(pickle.dumps(d)) is d


@pytest.mark.parametrize("alias", ["float", "double", "half", "long", "int", "short"])
def test_aliases_match_torch(alias, torch):
    assert dtype_name(getattr(sk, alias)) == dtype_name(getattr(torch, alias))


def test_numpy_dtypes():
    import numpy as np
    for d in DTYPES:
        if d is sk.bfloat16:    # numpy has none: 2-byte words, computed in float32
            assert (d.storage_numpy, d.numpy) == (np.dtype(np.uint16), np.dtype(np.float32))
            continue
        assert d.numpy == d.storage_numpy == np.dtype(d.name if d.name != "bool" else np.bool_)


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPE_NAMES, DTYPE_NAMES)))
def test_promote_types_table(a, b, torch):
    ours = sk.promote_types(getattr(sk, a), getattr(sk, b))
    theirs = torch.promote_types(getattr(torch, a), getattr(torch, b))
    assert dtype_name(ours) == dtype_name(theirs)


def test_promote_types_is_symmetric():
    for a, b in itertools.product(DTYPES, DTYPES):
        assert sk.promote_types(a, b) is sk.promote_types(b, a)


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPE_NAMES, DTYPE_NAMES)))
def test_can_cast_table(a, b, torch):
    assert sk.can_cast(getattr(sk, a), getattr(sk, b)) == torch.can_cast(getattr(torch, a),
                                                                          getattr(torch, b))


_KIND = st.sampled_from(["dim", "zero_dim", "scalar"])
_SCALARS = {"bool": True, "int": 3, "float": 1.5}


@st.composite
def _operand(draw):
    kind = draw(_KIND)
    if kind == "scalar":
        return kind, draw(st.sampled_from(sorted(_SCALARS)))
    return kind, draw(st.sampled_from(DTYPE_NAMES))


def _torch_operand(torch, kind, value):
    if kind == "scalar":
        return _SCALARS[value]
    shape = (2,) if kind == "dim" else ()
    return torch.zeros(shape, dtype=getattr(torch, value))


@given(_operand(), _operand())
def test_result_type_matches_torch(a, b):
    torch = pytest.importorskip("torch", reason="torch is the oracle")
    if a[0] == "scalar" and b[0] == "scalar":
        return
    groups = {"dim": [], "zero_dim": [], "scalar": []}
    for kind, value in (a, b):
        groups[kind].append(_SCALARS[value] if kind == "scalar" else getattr(sk, value))
    ours = _dtype.result_type(groups["dim"], groups["zero_dim"], groups["scalar"])
    theirs = torch.result_type(_torch_operand(torch, *a), _torch_operand(torch, *b))
    assert dtype_name(ours) == dtype_name(theirs)


@given(_operand(), _operand())
def test_binary_op_dtype_matches_result_type(a, b):
    """``sk.add`` on the same operands gives ``result_type`` (bool+bool aside: add stays bool)."""
    if a[0] == "scalar" and b[0] == "scalar":
        return

    def make(kind, value):
        if kind == "scalar":
            return _SCALARS[value]
        return sk.zeros((2,) if kind == "dim" else (), dtype=getattr(sk, value))

    groups = {"dim": [], "zero_dim": [], "scalar": []}
    for kind, value in (a, b):
        groups[kind].append(_SCALARS[value] if kind == "scalar" else getattr(sk, value))
    expected = _dtype.result_type(groups["dim"], groups["zero_dim"], groups["scalar"])
    x, y = make(*a), make(*b)
    if not isinstance(x, sk.Tensor):
        x, y = y, x
    assert sk.mul(x, y).dtype is expected


# -- default dtype ---------------------------------------------------------------------------------
@pytest.fixture
def restore_default_dtype():
    yield
    sk.set_default_dtype(sk.float32)


def test_default_dtype_is_float32():
    assert sk.get_default_dtype() is sk.float32
    assert sk.tensor([1.5]).dtype is sk.float32
    assert sk.zeros(2).dtype is sk.float32
    assert (sk.tensor([1, 2]) * 1.5).dtype is sk.float32


def test_set_default_dtype_float64(restore_default_dtype):
    sk.set_default_dtype(sk.float64)
    assert sk.get_default_dtype() is sk.float64
    assert sk.tensor([1.5]).dtype is sk.float64
    assert sk.zeros(2).dtype is sk.float64
    assert (sk.tensor([1, 2]) * 1.5).dtype is sk.float64
    assert (sk.tensor([1.0], dtype=sk.float32) * 1.5).dtype is sk.float32
    assert sk.arange(0.0, 1.0, 0.5).dtype is sk.float64


def test_set_default_dtype_rejects_non_float(restore_default_dtype, torch):
    with pytest.raises(TypeError) as ours:
        sk.set_default_dtype(sk.int64)
    with pytest.raises(TypeError) as theirs:
        torch.set_default_dtype(torch.int64)
    assert str(ours.value) == str(theirs.value).replace("torch.", "sk.")
    assert sk.get_default_dtype() is sk.float32


@pytest.mark.parametrize("data,name", [
    ([1, 2], "int64"), ([1.0, 2], "float32"), ([True, False], "bool"), ([[1], [2]], "int64"),
    (1.5, "float32"), (3, "int64"), (True, "bool"), ([True, 2], "int64"),
    ([], "float32")])
def test_tensor_dtype_inference_matches_torch(data, name, torch):
    assert dtype_name(torch.tensor(data).dtype) == name
    assert dtype_name(sk.tensor(data).dtype) == name


@pytest.mark.parametrize("target", ["float16", "bfloat16", "int32", "int64", "uint8"])
@pytest.mark.parametrize("how", ["to", "copy_"])
def test_out_of_range_casts_are_torchs_and_silent(target, how, torch):
    """A float beyond the target's range (or NaN) converts as PyTorch's C++ cast does, with no
    numpy RuntimeWarning reaching the user."""
    import warnings
    values = [1e30, -1e30, float("nan"), float("inf"), 3.5]
    ours, theirs = sk.tensor(values), torch.tensor(values)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if how == "to":
            got = ours.to(getattr(sk, target))
        else:
            got = sk.empty(5, dtype=getattr(sk, target)).copy_(ours)
    want = theirs.to(getattr(torch, target))
    assert got.dtype is getattr(sk, target)
    if target.startswith(("float", "bfloat")):
        assert got.float().tolist()[:2] + got.float().tolist()[3:] == \
            want.float().tolist()[:2] + want.float().tolist()[3:]
        assert str(got.float().tolist()[2]) == "nan"
    else:       # only the in-range value is a fact (C++ leaves the others unspecified)
        assert got.tolist()[4] == want.tolist()[4]
