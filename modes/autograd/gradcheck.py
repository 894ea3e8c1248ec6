"""``sk.autograd.gradcheck`` / ``gradgradcheck``: analytical gradients against central finite
differences in float64, with PyTorch's defaults (``eps=1e-6, atol=1e-5, rtol=1e-3``) and its
failure report ("Jacobian mismatch for output i with respect to input j")."""

from __future__ import annotations

import warnings

import numpy as np

import subclass_kit as sk

from .engine import grad as _grad

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """A gradient check failed (PyTorch's ``torch.autograd.GradcheckError``)."""


def _outputs(fn, inputs):
    out = fn(*inputs)
    return (out,) if isinstance(out, sk.Tensor) else tuple(out)


def _numerical(fn, inputs, i, out_index, eps):
    x = inputs[i]
    arr = x.detach().numpy()            # shares memory: perturb in place, as PyTorch does
    n_out = _outputs(fn, inputs)[out_index].numel()
    jac = np.zeros((arr.size, n_out))
    for k, idx in enumerate(np.ndindex(arr.shape)):
        orig = arr[idx]
        arr[idx] = orig - eps
        lo = _outputs(fn, inputs)[out_index]
        lo_values = lo.detach().numpy().astype(np.float64).ravel()     # a copy: may alias x
        arr[idx] = orig + eps
        hi = _outputs(fn, inputs)[out_index]
        hi_values = hi.detach().numpy().astype(np.float64).ravel()
        arr[idx] = orig
        _same_shape_and_dtype(lo, hi, idx, eps)
        jac[k] = (hi_values - lo_values) / (2 * eps)
    return jac


def _same_shape_and_dtype(lo, hi, idx, eps):
    """PyTorch's check that perturbing an input changes neither the outputs' shape nor their
    dtype (AssertionError, raised whatever ``raise_exception``)."""
    for what, a, b in (("shape", lo.shape, hi.shape), ("dtype", lo.dtype, hi.dtype)):
        if a != b:
            raise AssertionError(
                f"Expected `func` to return outputs with the same {what} when inputs are "
                f"perturbed on index {idx} by {eps}, but got: {what}s {a} and {b}.")


def _analytical(fn, inputs, diff, out_index):
    out = _outputs(fn, inputs)[out_index]
    n = out.numel()
    jacs = [np.zeros((inputs[i].numel(), n)) for i in diff]
    if not out.requires_grad:
        return jacs
    for j in range(n):
        g = np.zeros(n)
        g[j] = 1.0
        go = sk.tensor(g.reshape(tuple(out.shape)), dtype=out.dtype)
        grads = _grad((out,), tuple(inputs[i] for i in diff), (go,), retain_graph=True,
                      allow_unused=True)
        for col, gi in zip(jacs, grads):
            if gi is not None:
                col[:, j] = gi.detach().numpy().astype(np.float64).ravel()
    return jacs


def _check_inputs(inputs) -> list:
    """The positions of the inputs requiring grad. Warns for one that is not float64; raises
    RuntimeError for one with a stride-0 dimension and ValueError when none requires grad
    (PyTorch's ``_check_inputs``; raised whatever ``raise_exception``)."""
    diff = [i for i, x in enumerate(inputs) if isinstance(x, sk.Tensor) and x.requires_grad]
    for i in diff:
        if inputs[i].dtype != sk.float64:
            warnings.warn(f"Input #{i} requires gradient and is not a double precision floating "
                          "point or complex. This check will likely fail if all the inputs are "
                          "not of double precision floating point or complex. ", stacklevel=3)
        if any(st == 0 and n > 1 for n, st in zip(inputs[i].shape, inputs[i].stride())):
            raise RuntimeError(
                f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                "that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck.")
    if not diff:
        raise ValueError("gradcheck expects at least one input tensor to require gradient, but "
                         "none of them have requires_grad=True.")
    return diff


def _check(fn, inputs, diff, eps, atol, rtol, nondet_tol):
    """Raise GradcheckError where PyTorch's slow-mode ``gradcheck`` does: no differentiable
    output but a nonzero numerical gradient; an analytical Jacobian differing between two runs
    by more than ``nondet_tol`` (backward not reentrant) or from the numerical one; a backward
    that gives a nonzero gradient for zero ``grad_outputs``."""
    outs = _outputs(fn, inputs)
    differentiable = [k for k, o in enumerate(outs) if o.requires_grad]
    if not differentiable:
        for o_i in range(len(outs)):
            for i in diff:
                if np.any(_numerical(fn, inputs, i, o_i, eps) != 0):
                    raise GradcheckError("Numerical gradient for function expected to be zero")
        return
    for o_i in differentiable:
        numerical = [_numerical(fn, inputs, i, o_i, eps) for i in diff]
        first = _analytical(fn, inputs, diff, o_i)
        second = _analytical(fn, inputs, diff, o_i)
        if any(np.max(np.abs(a - b), initial=0.0) > nondet_tol for a, b in zip(first, second)):
            raise GradcheckError(
                "Backward is not reentrant, i.e., running backward with same input and "
                "grad_output multiple times gives different values, although analytical "
                f"gradient matches numerical gradient.The tolerance for nondeterminism was "
                f"{nondet_tol}.")
        for col, num, i in zip(first, numerical, diff):
            if not np.allclose(col, num, rtol=rtol, atol=atol):
                raise GradcheckError(
                    f"Jacobian mismatch for output {o_i} with respect to input {i},\n"
                    f"numerical:{num}\nanalytical:{col}\n")
    outs = [outs[k] for k in differentiable]
    grads = _grad(tuple(outs), tuple(inputs[i] for i in diff),
                  tuple(sk.zeros_like(o) for o in outs), allow_unused=True)
    for g in grads:
        if g is not None and not bool((g == 0).all()):
            raise GradcheckError("backward not multiplied by grad_output")


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True,
              nondet_tol=0.0, **_ignored):
    """Check ``fn``'s gradients at ``inputs`` (a tensor or tuple; those requiring grad are
    checked) against finite differences, as PyTorch's slow mode does (``_check``). Returns
    True, or raises ``GradcheckError`` (False when ``raise_exception=False``) with the
    numerical and analytical Jacobians. Bad inputs, and outputs changing shape or dtype when
    an input is perturbed, raise (ValueError, RuntimeError, AssertionError) in both cases."""
    inputs = (inputs,) if isinstance(inputs, sk.Tensor) else tuple(inputs)
    diff = _check_inputs(inputs)
    try:
        _check(fn, inputs, diff, eps, atol, rtol, nondet_tol)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, nondet_tol=0.0, **_ignored):
    """Check the second derivatives: ``gradcheck`` of the function mapping the inputs to
    their gradients for fixed random ``grad_outputs`` (PyTorch's ``gradgradcheck``)."""
    inputs = (inputs,) if isinstance(inputs, sk.Tensor) else tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, sk.Tensor) and x.requires_grad]
    outs = _outputs(fn, inputs)
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        grad_outputs = tuple(sk.tensor(rng.standard_normal(tuple(o.shape)), dtype=o.dtype)
                             for o in outs)

    def first(*xs):
        o = _outputs(fn, xs)
        gs = _grad(o, tuple(xs[i] for i in diff), grad_outputs, create_graph=True,
                   allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first, inputs, eps=eps, atol=atol, rtol=rtol,
                     raise_exception=raise_exception, nondet_tol=nondet_tol)
