"""The rename table of ``subclass-kit port``: PyTorch names and the subclass_kit names they become.

Data only; ``port.py`` applies it and ``docs/porting.md`` explains each row (a test checks that
every PyTorch name here appears there). To add a name, add one entry:

``RENAMES``      a dotted PyTorch name (module, class, function, or a prefix of them) -> the dotted
                 name it becomes, spelled from an importable module (``subclass_kit.x.y``;
                 another package's works too). The longest matching prefix wins, so
                 ``torch.ops.aten`` beats ``torch``; what follows the prefix is kept
                 (``torch.ops.aten.add.Tensor`` -> ``sk.ops.add.Tensor``).
``CANNOT_PORT``  a dotted PyTorch name or prefix -> why it has no counterpart. The tool leaves
                 the name alone and warns with file:line.
``MEMBERS``      attribute names renamed wherever they appear after a dot (``func._schema``,
                 ``def __torch_dispatch__``: the hook names also as plain names).
``METHOD_CALLS`` a one-argument function -> the method of its argument it becomes
                 (``_push_mode(m)`` -> ``m.__enter__()``); its import is dropped.
``RECEIVERLESS`` ``anything.attr`` -> a function that does not take the receiver
                 (``cls._make_wrapper_subclass(cls, ...)`` ->
                 ``sk.make_wrapper_subclass(cls, ...)``).
``KEYWORDS``     per target, keyword arguments renamed inside its call parentheses.
``POSITIONAL``   per target, the positional arguments that mean the same in PyTorch; more
                 are reported.
``CALL_FIXERS``  per target, a rewrite of its call's arguments (a function in port.py).
``LITERALS``     a PyTorch enum namespace whose members become string literals (``torch.Tag.X``
                 -> ``"X"``: our tags are strings in ``func.tags``).
``MEMBER_WARNINGS`` attribute names that are reported (not renamed) wherever they appear.
``TORCH_OP_NAMESPACES`` the op namespaces PyTorch itself registers: ``torch.ops.<ns>.f`` of
                 another namespace is a custom op (defined at run time, by the file or a library
                 it imports), so the tool does not check that ``sk.ops.<ns>.f`` exists.
"""

from __future__ import annotations

__all__ = ["RENAMES", "CANNOT_PORT", "MEMBERS", "RECEIVERLESS", "KEYWORDS", "LITERALS",
           "MEMBER_WARNINGS", "LAZY_MODULES", "CALL_FIXERS",
           "POSITIONAL", "METHOD_CALLS", "TORCH_OP_NAMESPACES"]

_PD = "torch.utils._python_dispatch"

RENAMES: dict[str, str] = {
    # the package; every torch.X not listed below becomes sk.X (the tool warns when sk.X is
    # missing from the installed subclass_kit)
    "torch": "subclass_kit",
    # ops
    "torch.ops.aten": "subclass_kit.ops",
    "torch._ops.ops.aten": "subclass_kit.ops",
    "torch.ops": "subclass_kit.ops",            # custom namespaces: torch.ops.mylib.f
    "torch._ops.ops": "subclass_kit.ops",
    "torch._ops.OpOverload": "subclass_kit.OpOverload",
    "torch._ops.OpOverloadPacket": "subclass_kit.OpOverloadPacket",
    "torch.FunctionSchema": "subclass_kit.OpSchema",
    "torch._C.FunctionSchema": "subclass_kit.OpSchema",
    "torch._C.parse_schema": "subclass_kit.parse_schema",
    # subclasses
    "torch.Tensor._make_subclass": "subclass_kit.make_subclass",
    "torch.Tensor._make_wrapper_subclass": "subclass_kit.make_wrapper_subclass",
    "torch._C._disabled_torch_function_impl": "subclass_kit.disabled_tensor_function",
    "torch._C.DisableTorchFunction": "subclass_kit.DisableTensorFunction",
    "torch._C.DisableTorchFunctionSubclass": "subclass_kit.DisableTensorFunctionSubclass",
    # a guard that acts when made and restores when deleted (or exited), as PyTorch's
    "torch._C._DisableTorchDispatch": "subclass_kit.DisableTensorDispatch",
    "torch.utils._mode_utils.no_dispatch": "subclass_kit.DisableTensorDispatch",
    f"{_PD}.return_and_correct_aliasing": "subclass_kit.return_and_correct_aliasing",
    f"{_PD}.is_traceable_wrapper_subclass": "subclass_kit.is_traceable_wrapper_subclass",
    f"{_PD}.transform_subclass": "subclass_kit.transform_subclass",
    # modes
    f"{_PD}.TorchDispatchMode": "subclass_kit.DispatchMode",
    f"{_PD}.BaseTorchDispatchMode": "subclass_kit.DispatchMode",
    "torch.overrides.TorchFunctionMode": "subclass_kit.FunctionMode",
    "torch.overrides.BaseTorchFunctionMode": "subclass_kit.FunctionMode",
    f"{_PD}._get_current_dispatch_mode_stack": "subclass_kit.get_mode_stack",
    "torch.overrides._get_current_function_mode_stack": "subclass_kit.get_function_mode_stack",
    "torch.overrides.enable_reentrant_dispatch": "subclass_kit.enable_reentrant_dispatch",
    f"{_PD}.enable_reentrant_dispatch": "subclass_kit.enable_reentrant_dispatch",
    "torch._subclasses.fake_tensor.FakeTensorMode": "subclass_kit.modes.MetaMode",
    "torch._subclasses.FakeTensorMode": "subclass_kit.modes.MetaMode",
    "torch.fx.experimental.proxy_tensor.make_fx": "subclass_kit.modes.make_graph",
    "torch.utils.flop_counter.FlopCounterMode": "subclass_kit.modes.FlopCounterMode",
    # utilities
    "torch.utils._pytree": "subclass_kit.pytree",
    "torch.utils.weak": "subclass_kit.utils.weak",
    "torch._prims_common": "subclass_kit.utils.prims_common",   # shape and dim helpers
    "torch.library": "subclass_kit.library",
    "torch.return_types": "subclass_kit.return_types",
    "torch._check": "subclass_kit._check",
    "torch._check_with": "subclass_kit._check_with",
    "torch._check_index": "subclass_kit._check_index",
    "torch._check_value": "subclass_kit._check_value",
    "torch._check_type": "subclass_kit._check_type",
    "torch._check_not_implemented": "subclass_kit._check_not_implemented",
    "torch._check_is_size": "subclass_kit._check_is_size",
}

CANNOT_PORT: dict[str, str] = {
    f"{_PD}._pop_mode": "call mode.__exit__(None, None, None) on the mode you entered "
                        "(modes leave in order here)",
    "torch.overrides._pop_mode": "call mode.__exit__(None, None, None) on the mode you entered",
    f"{_PD}._get_current_dispatch_mode": "use sk.get_mode_stack()[-1] (the stack is a list)",
    f"{_PD}._pop_mode_temporarily": "a handler already runs with its own mode popped "
                                    "(Note [Mode runs below itself])",
    f"{_PD}._disable_current_modes": "no counterpart: sk.no_dispatch() skips modes and "
                                     "subclass handlers alike",
    "torch._C._disabled_torch_dispatch_impl": "delete the assignment: a subclass that does not "
                                              "define __tensor_dispatch__ runs kernels directly",
    "torch.overrides.resolve_name": "use func.__name__ ('add.Tensor') or str(func)",
    "torch._C": "PyTorch's C++ bindings have no counterpart beyond the names in the table",
    "torch.testing._internal": "PyTorch's internal test helpers are not ported",
    "torch.fx": "no torch.fx: subclass_kit.modes.make_graph captures a graph of sk.ops calls",
    "torch.compile": "no compiler: subclass_kit runs eagerly",
    "torch._dynamo": "no compiler: subclass_kit runs eagerly",
    "torch._inductor": "no compiler: subclass_kit runs eagerly",
    "torch.export": "no export: use subclass_kit.modes.make_graph",
    "torch.jit": "no TorchScript",
    "torch.cuda": "no CUDA: the devices are 'cpu' (numpy) and 'meta'",
    "torch.distributed": "no distributed runtime",
    "torch.autocast": "no autocast",
    "torch.complex32": "no complex dtypes", "torch.complex64": "no complex dtypes",
    "torch.complex128": "no complex dtypes", "torch.cfloat": "no complex dtypes",
    "torch.cdouble": "no complex dtypes", "torch.view_as_real": "no complex dtypes",
    "torch.view_as_complex": "no complex dtypes",
    "torch.sparse_coo": "no sparse layouts", "torch.sparse_csr": "no sparse layouts",
    "torch._prims": "no prims: decompositions are registered per op (sk.ops)",
    "torch._refs": "no refs: decompositions are registered per op (sk.ops)",
    "torch._decomp": "decompositions are not a public table here",
    "torch.func": "no functorch transforms (vmap, grad, jvp)",
    "torch.vmap": "no functorch transforms (vmap, grad, jvp)",
}

MEMBERS: dict[str, str] = {
    "__torch_dispatch__": "__tensor_dispatch__",
    "__torch_function__": "__tensor_function__",
    "_schema": "schema",
    "alias_info": "alias",
}

# a function of one argument -> the method of that argument it becomes (the import goes away):
# _push_mode(m) -> m.__enter__()  (``m.push()`` only warns and returns a new mode, as PyTorch's)
METHOD_CALLS: dict[str, str] = {
    f"{_PD}._push_mode": "__enter__",
    "torch.overrides._push_mode": "__enter__",
}

RECEIVERLESS: dict[str, str] = {
    "_make_subclass": "subclass_kit.make_subclass",
    "_make_wrapper_subclass": "subclass_kit.make_wrapper_subclass",
}

KEYWORDS: dict[str, dict[str, str]] = {
    "subclass_kit.make_subclass": {"require_grad": "requires_grad"},
}

# per target, (how many positional arguments its PyTorch counterpart takes in the same order,
# what to do instead): a call with more is reported, since the later positions differ
POSITIONAL: dict[str, tuple[int, str]] = {
    # torch: (cls, size, strides, storage_offset, memory_format, dtype, ...); ours: (cls, size,
    # strides, storage_offset, dtype, device, requires_grad)
    "subclass_kit.make_wrapper_subclass": (4, "pass the arguments after storage_offset by "
                                              "keyword (the positional orders differ)"),
}

# per target, a fix of the call's arguments (functions in port.py)
CALL_FIXERS: dict[str, str] = {
    # torch.library.define("ns::f", "(Tensor x) -> Tensor")
    #   -> sk.library.define("ns::f(Tensor x) -> Tensor")
    "subclass_kit.library.define": "join_name_and_schema",
}

LITERALS: tuple[str, ...] = ("torch.Tag",)

MEMBER_WARNINGS: dict[str, str] = {
    "cuda": "no CUDA: the devices are 'cpu' (numpy) and 'meta'",
}

# Submodules `import subclass_kit` does not import (the core never imports the modes): a port
# that spells one through `sk.` also gets `import subclass_kit.modes`.
LAZY_MODULES: tuple[str, ...] = ("subclass_kit.modes", "subclass_kit.utils.weak")

# torch.ops namespaces of PyTorch 2.13's own ops (torch._C._dispatch_get_all_op_names() and the
# Python-level ones): ported names in these are checked against the installed subclass_kit.
TORCH_OP_NAMESPACES: frozenset = frozenset({
    "aten", "prim", "prims", "higher_order", "_c10d_functional", "_c10d_functional_autograd",
    "_dtensor", "_native", "_quantized", "_test", "c10d", "debug_mode_ops", "debugprims",
    "export", "inductor", "inductor_prims", "mkl", "mkldnn", "mkldnn_prepacked", "onednn",
    "profiler", "quantization", "quantized", "rngprims", "sparse", "static_runtime", "symm_mem",
})
