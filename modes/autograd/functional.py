"""``sk.autograd.functional`` (PyTorch's ``torch.autograd.functional``): ``vjp``, ``jvp``,
``jacobian``, ``hessian``, ``vhp`` and ``hvp`` of a Python function of tensors.

Each runs the function once on fresh copies of its inputs (``detach().requires_grad_()``; with
``create_graph``, an input that already requires grad enters as ``view_as`` of itself, so the
results stay differentiable with respect to it) and differentiates with reverse-mode passes
(``sk.autograd.grad``), as PyTorch does:

- ``vjp``: one backward pass with ``v`` as the output gradient;
- ``jacobian``: one backward pass per output element, rows stacked to ``out.shape +
  input.shape`` (``vectorize=True`` gives the same tensors: PyTorch batches the passes with
  ``vmap``, which subclass_kit does not have; the blocks are laid out as its, see
  docs/differences.md);
- ``hessian``: the jacobian of the jacobian (``create_graph`` inside);
- ``jvp`` and ``hvp``: the *double-backward trick* (no forward-mode AD): the backward pass is
  linear in its output gradient ``u``, so differentiating ``u -> J^T u`` with respect to
  ``u`` gives ``J v``;
- ``vhp``: the backward of the gradient.

Results are detached unless ``create_graph``. ``strict=True`` raises RuntimeError, with
PyTorch's texts, where an output does not depend on an input (PyTorch would otherwise give
zeros). Non-tensor inputs, outputs or ``v`` raise TypeError; a ``v`` of the wrong count or
sizes, or a missing ``v`` where it cannot be implied, RuntimeError. ``strategy="forward-mode"``
raises NotImplementedError: there is no forward-mode AD here.
"""

from __future__ import annotations

import contextlib

import subclass_kit as sk

from .engine import grad as _grad

__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]


# -- arguments and results -------------------------------------------------------------------
def _tensors(value, arg_name: str, fn_name: str):
    """``(given as a tuple, the tensors as a tuple)``; TypeError for anything not a tensor."""
    packed = isinstance(value, tuple)
    items = value if packed else (value,)
    for i, item in enumerate(items):
        if not isinstance(item, sk.Tensor):
            where = f"value at index {i}" if packed else f"given {arg_name}"
            raise TypeError(f"The {arg_name} given to {fn_name} must be either a Tensor or a "
                            f"tuple of Tensors but the {where} has type {type(item)}.")
    return packed, items


def _fresh(tensors, create_graph: bool, need_graph: bool = True) -> tuple:
    """The tensors the function runs on: new leaves (``need_graph``: requiring grad), or under
    ``create_graph`` a view of an input that already requires grad (still connected to it)."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad
                 else t.detach().requires_grad_(need_graph) for t in tensors)


def _detached(results, create_graph: bool):
    """``results`` (a tuple of tensors, or of tuples of them), detached unless
    ``create_graph``."""
    if create_graph:
        return results
    return tuple(r.detach() if isinstance(r, sk.Tensor) else _detached(r, False)
                 for r in results)


def _unpacked(results, packed):
    """Undo the packing of ``_tensors``: ``packed`` is one flag, or (outputs', inputs') flags
    for the nested tuples of ``jacobian``."""
    if isinstance(packed, tuple):
        outer, inner = packed
        if not inner:
            results = tuple(r[0] for r in results)
        return results if outer else results[0]
    return results if packed else results[0]


def _checked_v(v, refs, refs_packed: bool, create_graph: bool, fn_name: str) -> tuple:
    """``v`` as a tuple matching ``refs`` in count and sizes (RuntimeError otherwise)."""
    _, v = _tensors(v, "v", fn_name)
    v = _fresh(v, create_graph, need_graph=False)
    if len(v) != len(refs):
        if refs_packed:
            raise RuntimeError(f"v is a tuple of invalid length: should be {len(refs)} but got "
                               f"{len(v)}.")
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, refs)):
        if a.size() != b.size():
            where = f"Entry {i} in " if refs_packed else ""
            raise RuntimeError(f"{where}v has invalid size: should be {b.size()} but got "
                               f"{a.size()}.")
    return v


_IMPLIED_V = {
    "outputs": ("The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."),
    "inputs": ("The vector v can only be None if the input to the user-provided function is a "
               "single Tensor with a single element."),
}


def _v_or_implied(v, refs, refs_packed, create_graph, fn_name, refs_are):
    """``v`` checked, or None when ``refs`` (the function's "inputs" or "outputs") is one
    single-element tensor (then the backward pass implies a gradient of one); RuntimeError
    otherwise."""
    if v is not None:
        return _checked_v(v, refs, refs_packed, create_graph, fn_name)
    if len(refs) != 1 or refs[0].nelement() != 1:
        raise RuntimeError(_IMPLIED_V[refs_are])
    return None


# -- strict mode: PyTorch's checks and texts ---------------------------------------------------
_NO_GRAD_TEXT = {
    "hessian": ("The hessian of the user-provided function with respect to input {i} is "
                "independent of the input. This is not allowed in strict mode. You should "
                "ensure that your function is thrice differentiable and that the hessian "
                "depends on the inputs."),
    "jacobian": ("While computing the hessian, found that the jacobian of the user-provided "
                 "function with respect to input {i} is independent of the input. This is not "
                 "allowed in strict mode. You should ensure that your function is twice "
                 "differentiable and that the jacobian depends on the inputs (this would be "
                 "violated by a linear function for example)."),
    "grad_inputs": ("The gradient with respect to input {i} is independent of the inputs of "
                    "the user-provided function. This is not allowed in strict mode."),
    "outputs": ("Output {i} of the user-provided function does not require gradients. The "
                "outputs must be computed in a differentiable manner from the input when "
                "running in strict mode."),
}

_NONE_TEXT = {
    "back": ("The output of the user-provided function is independent of input {i}. This is "
             "not allowed in strict mode."),
    "back_trick": ("The gradient with respect to the input is independent of entry {i} in the "
                   "grad_outputs when using the double backward trick to compute forward mode "
                   "gradients. This is not allowed in strict mode."),
    "double_back": ("The jacobian of the user-provided function is independent of input {i}. "
                    "This is not allowed in strict mode."),
    "double_back_trick": ("The hessian of the user-provided function is independent of entry "
                          "{i} in the grad_jacobian. This is not allowed in strict mode as it "
                          "prevents from using the double backward trick to replace forward "
                          "mode AD."),
}


def _require_grad(tensors, kind: str, strict: bool) -> None:
    """Under ``strict``: every one of ``tensors`` exists and requires grad."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:
            raise RuntimeError(_NONE_TEXT["back"].format(i=i))
        if not t.requires_grad:
            raise RuntimeError(_NO_GRAD_TEXT[kind].format(i=i))


def _zeros_for_unused(grads, refs, strict: bool, create_graph: bool, stage: str) -> tuple:
    """``grads`` with zeros (shaped as ``refs``) for the inputs a pass did not reach; under
    ``strict`` those raise, and so does, with ``create_graph``, a result that does not
    require grad."""
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_NONE_TEXT[stage].format(i=i))
            g = sk.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(f"The {what} of the user-provided function is independent of "
                               f"input {i}. This is not allowed in strict mode when "
                               "create_graph=True.")
        out.append(g)
    return tuple(out)


def _pass(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None) -> tuple:
    """One backward pass from the ``outputs`` that require grad (with their ``grad_outputs``)
    to ``inputs``: a gradient or None per input (all None when no output requires grad)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gouts = zip(*pairs)
    return _grad(outs, inputs, gouts, retain_graph=retain_graph, create_graph=create_graph,
                 allow_unused=True)


def _last_pass(ys, xs, v, refs, create_graph, strict, stage) -> tuple:
    """The pass that gives a product: the gradients of ``ys`` with respect to ``xs`` for
    output gradients ``v``, grad mode on under ``create_graph`` (the caller's otherwise),
    zeros shaped as ``refs`` for what the pass does not reach (``_zeros_for_unused``)."""
    with sk.enable_grad() if create_graph else contextlib.nullcontext():
        grads = _pass(ys, xs, v, create_graph=create_graph)
        return _zeros_for_unused(grads, refs, strict, create_graph, stage)


def _run(func, inputs, fn_name: str, strict: bool):
    """``func(*inputs)`` as a tuple, its packing flag; strict checks that the outputs require
    grad."""
    packed, outputs = _tensors(func(*inputs), "outputs of the user-provided function", fn_name)
    _require_grad(outputs, "outputs", strict)
    return packed, outputs


def _scalar_output(func, inputs, fn_name: str, strict: bool):
    """The single one-element output ``func`` must return for ``hessian`` / ``vhp`` /
    ``hvp``; RuntimeError otherwise."""
    packed, outputs = _run(func, inputs, fn_name, strict)
    if packed:
        raise RuntimeError(f"The function given to {fn_name} should return a single Tensor")
    if outputs[0].nelement() != 1:
        raise RuntimeError(f"The Tensor returned by the function given to {fn_name} should "
                           "contain a single element")
    return outputs


# -- the products ------------------------------------------------------------------------------
def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T J)``: the vector-Jacobian product, shaped as ``inputs`` (zeros for
    an input the outputs do not depend on). ``v`` is shaped as the outputs; it may be omitted
    for a single one-element output. PyTorch's ``torch.autograd.functional.vjp``."""
    with sk.enable_grad():
        inputs_packed, inputs = _tensors(inputs, "inputs", "vjp")
        inputs = _fresh(inputs, create_graph)
        outputs_packed, outputs = _run(func, inputs, "vjp", strict)
        v = _v_or_implied(v, outputs, outputs_packed, create_graph, "vjp", "outputs")
        result = _last_pass(outputs, inputs, v, inputs, create_graph, strict, "back")
    return (_unpacked(_detached(outputs, create_graph), outputs_packed),
            _unpacked(_detached(result, create_graph), inputs_packed))


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), J v)``: the Jacobian-vector product, shaped as the outputs, by the
    double-backward trick. ``v`` is shaped as ``inputs``; it may be omitted for a single
    one-element input. PyTorch's ``torch.autograd.functional.jvp``."""
    with sk.enable_grad():
        inputs_packed, inputs = _tensors(inputs, "inputs", "jvp")
        inputs = _fresh(inputs, create_graph)
        v = _v_or_implied(v, inputs, inputs_packed, create_graph, "jvp", "inputs")
        outputs_packed, outputs = _run(func, inputs, "jvp", strict)
        # J^T u is linear in u: its value at u = 0 does not matter, only its graph
        u = tuple(sk.zeros_like(o, requires_grad=True) for o in outputs)
        grad_inputs = _pass(outputs, inputs, u, create_graph=True)
        _require_grad(grad_inputs, "grad_inputs", strict)
    result = _last_pass(grad_inputs, u, v, outputs, create_graph, strict, "back_trick")
    return (_unpacked(_detached(outputs, create_graph), outputs_packed),
            _unpacked(_detached(result, create_graph), outputs_packed))


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of ``func`` at ``inputs``: for one output and one input a tensor of shape
    ``out.shape + input.shape``; a tuple per input when ``inputs`` is a tuple, a tuple per
    output (of those) when ``func`` returns a tuple. One backward pass per output element
    (``vectorize=True``: the same passes, see the module docstring). PyTorch's
    ``torch.autograd.functional.jacobian``; ``strategy="forward-mode"`` raises
    NotImplementedError."""
    if strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode". '
                             'Hint: If your function has more outputs than inputs, '
                             '"forward-mode" tends to be more performant. Otherwise, prefer to '
                             'use "reverse-mode".')
    if strategy == "forward-mode":
        raise NotImplementedError('jacobian(strategy="forward-mode") needs forward-mode AD, '
                                  'which subclass_kit does not have: use strategy='
                                  '"reverse-mode"')
    with sk.enable_grad():
        inputs_packed, inputs = _tensors(inputs, "inputs", "jacobian")
        inputs = _fresh(inputs, create_graph)
        outputs_packed, outputs = _run(func, inputs, "jacobian", strict)
        if vectorize and strict:
            raise RuntimeError("torch.autograd.functional.jacobian: `strict=True` and "
                               "`vectorized=True` are not supported together. Please either "
                               "set `strict=False` or `vectorize=False`.")
        result = tuple(_jacobian_of(i, out, inputs, create_graph, strict)
                       for i, out in enumerate(outputs))
        if vectorize and len(outputs) > 1:
            result = _as_one_per_input(result, outputs, inputs)
    return _unpacked(_detached(result, create_graph), (outputs_packed, inputs_packed))


def _as_one_per_input(result, outputs, inputs) -> tuple:
    """PyTorch's vectorised layout: per input, the blocks of all outputs are views of one
    tensor (its batched pass splits one result), so under ``create_graph`` all of them
    require grad when one does. The same values, rebuilt that way."""
    numels = [out.numel() for out in outputs]
    per_input = []
    for k, inp in enumerate(inputs):
        whole = sk.cat([block[k].reshape((n,) + tuple(inp.shape))
                        for block, n in zip(result, numels)], dim=0)
        per_input.append([part.view(out.size() + inp.size())
                          for part, out in zip(whole.split(numels, dim=0), outputs)])
    return tuple(tuple(per_input[k][i] for k in range(len(inputs)))
                 for i in range(len(outputs)))


def _jacobian_of(i, out, inputs, create_graph, strict) -> tuple:
    """Output ``i``'s Jacobian with respect to each input: its rows are the gradients of its
    elements, one backward pass each."""
    rows = [[] for _ in inputs]
    flat = out.reshape(-1)
    for j in range(out.nelement()):
        grads = _pass((flat[j],), inputs, retain_graph=True, create_graph=create_graph)
        for k, g in enumerate(grads):
            if g is None:
                if strict:
                    raise RuntimeError(f"Output {i} of the user-provided function is "
                                       f"independent of input {k}. This is not allowed in "
                                       "strict mode.")
                g = sk.zeros_like(inputs[k])
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(f"The jacobian of the user-provided function is "
                                   f"independent of input {i}. This is not allowed in strict "
                                   "mode when create_graph=True.")
            rows[k].append(g)
    return tuple(sk.stack(r, dim=0).view(out.size() + inp.size())
                 for r, inp in zip(rows, inputs))


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of a function returning one single-element tensor: ``input.shape +
    input.shape`` for one input, a tuple of tuples (one per pair of inputs) for a tuple. The
    Jacobian of the Jacobian. PyTorch's ``torch.autograd.functional.hessian``."""
    inputs_packed, inputs = _tensors(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def gradient(*xs):
        jac = jacobian(lambda *ys: _scalar_output(func, ys, "hessian", strict)[0].squeeze(),
                       xs, create_graph=True)
        _require_grad(jac, "jacobian", strict)
        return jac

    result = jacobian(gradient, inputs, create_graph=create_graph, strict=strict,
                      vectorize=vectorize, strategy=outer_jacobian_strategy)
    return _unpacked(result, (inputs_packed, inputs_packed))


def _scalar_gradient(func, inputs, v, create_graph, strict, fn_name):
    """What ``vhp`` and ``hvp`` share: the inputs (packing flag and fresh tensors), ``v``
    checked, the single-element output and its gradient (with its graph)."""
    inputs_packed, inputs = _tensors(inputs, "inputs", fn_name)
    inputs = _fresh(inputs, create_graph)
    v = _v_or_implied(v, inputs, inputs_packed, create_graph, fn_name, "inputs")
    outputs = _scalar_output(func, inputs, fn_name, strict)
    jac = _pass(outputs, inputs, create_graph=True)
    _require_grad(jac, "jacobian", strict)
    return inputs_packed, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), v^T H)`` for a function returning one single-element tensor: the
    backward pass of its gradient, shaped as ``inputs``. PyTorch's
    ``torch.autograd.functional.vhp``."""
    with sk.enable_grad():
        inputs_packed, inputs, v, outputs, jac = _scalar_gradient(func, inputs, v, create_graph,
                                                                  strict, "vhp")
    result = _last_pass(jac, inputs, v, inputs, create_graph, strict, "double_back")
    return (_detached(outputs, create_graph)[0],
            _unpacked(_detached(result, create_graph), inputs_packed))


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """``(func(inputs), H v)`` for a function returning one single-element tensor, by the
    double-backward trick on its gradient. PyTorch's ``torch.autograd.functional.hvp``."""
    with sk.enable_grad():
        inputs_packed, inputs, v, outputs, jac = _scalar_gradient(func, inputs, v, create_graph,
                                                                  strict, "hvp")
        u = tuple(sk.zeros_like(x, requires_grad=True) for x in inputs)
        double_back = _pass(jac, inputs, u, create_graph=True)
        _require_grad(jac, "hessian", strict)
    result = _last_pass(double_back, u, v, inputs, create_graph, strict, "double_back_trick")
    return (_detached(outputs, create_graph)[0],
            _unpacked(_detached(result, create_graph), inputs_packed))
