"""Factories' ``layout=`` and ``pin_memory=`` against torch: every factory, ``*_like`` and
``Tensor.new_*`` accepts ``layout=sk.strided`` and ``pin_memory=False`` with the same result as
without; wrong types raise PyTorch's parser TypeError, ``pin_memory=True`` PyTorch 2.13's
RuntimeError of a machine without an accelerator (before or after the other checks as in
PyTorch), meta accepts it; the ops' schemas take both; modes see them when given; wrapper code
passing ``layout=t.layout`` ports."""

from __future__ import annotations

import contextlib
import io
import runpy

import pytest
from oracle import assert_same, assert_same_error, to_torch, torch_op_log

import subclass_kit as sk
from subclass_kit.port import port_source

# (name, call(lib, base, **options)): base is a float32 (2, 3) tensor of the library.
FACTORIES = [
    ("zeros", lambda L, b, **kw: L.zeros(2, 3, **kw)),
    ("ones", lambda L, b, **kw: L.ones((2, 3), **kw)),
    ("empty", lambda L, b, **kw: L.empty(2, 3, **kw)),
    ("full", lambda L, b, **kw: L.full((2,), 1.5, **kw)),
    ("rand", lambda L, b, **kw: L.rand(2, **kw)),
    ("randn", lambda L, b, **kw: L.randn(2, **kw)),
    ("randint", lambda L, b, **kw: L.randint(0, 5, (2,), **kw)),
    ("randperm", lambda L, b, **kw: L.randperm(4, **kw)),
    ("normal", lambda L, b, **kw: L.normal(0.0, 1.0, (2,), **kw)),
    ("arange", lambda L, b, **kw: L.arange(5, **kw)),
    ("arange.start", lambda L, b, **kw: L.arange(1, 5, **kw)),
    ("arange.start_step", lambda L, b, **kw: L.arange(1, 5, 2, **kw)),
    ("linspace", lambda L, b, **kw: L.linspace(0, 1, 3, **kw)),
    ("logspace", lambda L, b, **kw: L.logspace(0, 1, 3, **kw)),
    ("eye", lambda L, b, **kw: L.eye(2, **kw)),
    ("eye.m", lambda L, b, **kw: L.eye(2, 3, **kw)),
    ("empty_strided", lambda L, b, **kw: L.empty_strided((2, 3), (1, 2), **kw)),
    ("scalar_tensor", lambda L, b, **kw: L.scalar_tensor(2, **kw)),
    ("empty_like", lambda L, b, **kw: L.empty_like(b.t(), **kw)),
    ("zeros_like", lambda L, b, **kw: L.zeros_like(b.t(), **kw)),
    ("ones_like", lambda L, b, **kw: L.ones_like(b, **kw)),
    ("full_like", lambda L, b, **kw: L.full_like(b, 7, **kw)),
    ("rand_like", lambda L, b, **kw: L.rand_like(b, **kw)),
    ("randn_like", lambda L, b, **kw: L.randn_like(b, **kw)),
    ("new_zeros", lambda L, b, **kw: b.new_zeros(2, **kw)),
    ("new_ones", lambda L, b, **kw: b.new_ones((2, 2), **kw)),
    ("new_empty", lambda L, b, **kw: b.new_empty(3, **kw)),
    ("new_full", lambda L, b, **kw: b.new_full((2,), 4, **kw)),
    ("new_empty_strided", lambda L, b, **kw: b.new_empty_strided((2, 2), (1, 2), **kw)),
]
_RANDOM = ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like")
_UNINIT = ("empty", "empty_strided", "empty_like", "new_empty", "new_empty_strided")
NAMES = [name for name, _ in FACTORIES]
CALLS = dict(FACTORIES)


def _base(L):
    return L.arange(6.0).reshape(2, 3)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", [{"layout": "strided"}, {"pin_memory": False},
                                     {"layout": "strided", "pin_memory": False},
                                     {"layout": None, "pin_memory": None}])
def test_strided_and_unpinned_change_nothing(name, options, torch):
    call = CALLS[name]

    def kw(L):
        return {k: getattr(L, v) if isinstance(v, str) else v for k, v in options.items()}

    ours, theirs = call(sk, _base(sk), **kw(sk)), call(torch, _base(torch), **kw(torch))
    assert ours.layout is sk.strided
    assert_same(ours, theirs, check_values=name not in _RANDOM + _UNINIT)
    assert_same(ours, to_torch(call(sk, _base(sk))), check_values=name not in _RANDOM + _UNINIT)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", [{"pin_memory": True}, {"layout": "strided"},
                                     {"pin_memory": 1}, {"pin_memory": "no"}, {"layout": 3},
                                     {"layout": "strided", "pin_memory": True}])
def test_errors_match_torch(name, options, torch):
    call = CALLS[name]
    if options.get("layout") == "strided" and "pin_memory" not in options:
        options = {"layout": "sparse"}      # not a layout in sk: a str, as torch's parser sees
    kw = dict(options)
    if kw.get("layout") == "strided":
        kw_sk, kw_torch = {**kw, "layout": sk.strided}, {**kw, "layout": torch.strided}
    else:
        kw_sk = kw_torch = kw
    _same_error(lambda: call(sk, _base(sk), **kw_sk),
                lambda: call(torch, _base(torch), **kw_torch))


def _same_error(ours, theirs):
    """assert_same_error, but where torch's parser lists an overloaded signature ("received an
    invalid combination of arguments") ours names the one argument (docs/differences.md)."""
    with pytest.raises(Exception) as t:
        theirs()
    if "invalid combination of arguments" not in str(t.value):
        assert_same_error(ours, theirs)
        return
    with pytest.raises(TypeError, match=r"^\w+\(\): argument '(layout|pin_memory)' must be "):
        ours()
    assert type(t.value) is TypeError


@pytest.mark.parametrize("name", NAMES)
def test_pin_memory_on_meta(name, torch):
    """Accepted on meta (nothing to pin), except where PyTorch's meta version is a PrimTorch
    reference (arange, randn): NotImplementedError."""
    kw = {"pin_memory": True}
    if not name.startswith("new_") and not name.endswith("_like"):
        kw["device"] = "meta"

    def run(L):
        return CALLS[name](L, _base(L).to("meta"), **kw)

    try:
        theirs = run(torch)
    except Exception:
        assert_same_error(lambda: run(sk), lambda: run(torch))
        return
    ours = run(sk)
    assert ours.device.type == theirs.device.type == "meta"
    assert tuple(ours.shape) == tuple(theirs.shape)


@pytest.mark.parametrize("call, expected", [
    (lambda: sk.zeros(-1, pin_memory=True), "zeros: Dimension size must be non-negative."),
    (lambda: sk.linspace(0, 1, -1, pin_memory=True), "number of steps must be non-negative"),
    (lambda: sk.empty(-1, pin_memory=True), "pin_memory=True requires"),
    (lambda: sk.arange(0, 5, 0, pin_memory=True), "pin_memory=True requires"),
    (lambda: sk.eye(-1, pin_memory=True), "pin_memory=True requires"),
    (lambda: sk.randint(5, 2, (2,), pin_memory=True), "pin_memory=True requires"),
    (lambda: sk.zeros(-1, layout="x"), "argument 'layout' must be sk.layout"),
])
def test_which_check_comes_first(call, expected, torch):
    """PyTorch allocates (and refuses pinned memory) before most of a factory's checks, after
    ``zeros``'s size check and ``linspace``'s steps check; its parser checks types first."""
    with pytest.raises(Exception, match=expected.replace(".", r"\.")):
        call()


@pytest.mark.parametrize("op, args", [
    ("ones.default", ((2,),)), ("zeros.default", ((2,),)), ("empty.memory_format", ((2,),)),
    ("full.default", ((2,), 1.0)), ("arange.default", (3,)), ("eye.default", (2,)),
    ("rand.default", ((2,),)), ("empty_strided.default", ((2,), (1,))),
    ("scalar_tensor.default", (1.0,)), ("linspace.default", (0, 1, 3)),
])
def test_op_schemas_take_layout_and_pin_memory(op, args, torch):
    name, overload = op.split(".")
    ours_op = getattr(getattr(sk.ops, name), overload)
    theirs_op = getattr(getattr(torch.ops.aten, name), overload)
    for text in ("Layout? layout=None", "bool? pin_memory=None"):
        assert text in str(ours_op.schema) and text in str(theirs_op._schema)
    assert {a.name for a in ours_op.schema.arguments if a.kwarg_only} >= {"layout", "pin_memory"}
    out = ours_op(*args, layout=sk.strided, pin_memory=False)
    assert tuple(out.shape) == tuple(theirs_op(*args, layout=torch.strided,
                                               pin_memory=False).shape)
    assert_same_error(lambda: ours_op(*args, pin_memory=True),
                      lambda: theirs_op(*args, pin_memory=True))


def test_modes_see_the_options_when_given(torch):
    t = sk.ones(2)
    seen = []

    class Kwargs(sk.DispatchMode):
        def __tensor_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((func.__name__, dict(kwargs or {})))
            return func(*args, **(kwargs or {}))

    with Kwargs():
        sk.zeros(2, layout=sk.strided, pin_memory=False)
        t.new_ones(2, layout=sk.strided)
        sk.zeros(2)
    assert seen == [("zeros.default", {"layout": sk.strided, "pin_memory": False}),
                    ("new_ones.default", {"layout": sk.strided}),
                    ("zeros.default", {})]
    with torch_op_log() as theirs:          # torch's also carry its binding's fill-ins
        torch.zeros(2, layout=torch.strided, pin_memory=False)
    assert theirs.ops == ["zeros"]


_WRAPPER = '''
import torch
from torch.utils._pytree import tree_map


class Wrapper(torch.Tensor):
    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), dtype=elem.dtype, layout=elem.layout, device=elem.device,
            requires_grad=elem.requires_grad)

    def __init__(self, elem):
        self.elem = elem

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        unwrap = lambda x: x.elem if isinstance(x, Wrapper) else x
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(lambda x: Wrapper(x) if isinstance(x, torch.Tensor) else x, out)


t = torch.arange(4.0)
buf = torch.empty(t.shape, dtype=t.dtype, layout=t.layout, device=t.device)
w = Wrapper(t)
z = torch.zeros_like(w, layout=torch.strided, pin_memory=False)
print(type(z).__name__, z.elem.tolist(), z.layout, buf.shape)
'''


def test_wrapper_code_passing_layout_ports(tmp_path, torch):
    out, warnings = port_source(_WRAPPER)
    assert warnings == []
    ours, theirs = tmp_path / "ours.py", tmp_path / "theirs.py"
    ours.write_text(out)
    theirs.write_text(_WRAPPER)
    printed = []
    for path in (ours, theirs):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            runpy.run_path(str(path))
        printed.append(buf.getvalue())
    assert printed[0] == printed[1].replace("torch.", "sk.")
    assert printed[0].startswith("Wrapper [0.0, 0.0, 0.0, 0.0] sk.strided")
