"""``sk.autograd.gradcheck`` / ``gradgradcheck``: analytical gradients against central finite
differences in float64, with PyTorch's defaults (``eps=1e-6, atol=1e-5, rtol=1e-3``) and its
failure report ("Jacobian mismatch for output i with respect to input j")."""

from __future__ import annotations

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
        lo = _outputs(fn, inputs)[out_index].detach().numpy().astype(np.float64).ravel()
        arr[idx] = orig + eps
        hi = _outputs(fn, inputs)[out_index].detach().numpy().astype(np.float64).ravel()
        arr[idx] = orig
        jac[k] = (hi - lo) / (2 * eps)
    return jac


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


def gradcheck(fn, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, **_ignored):
    """Check ``fn``'s gradients at ``inputs`` (a tensor or tuple; those requiring grad are
    checked) against finite differences. Returns True, or raises ``GradcheckError`` (False when
    ``raise_exception=False``) with the numerical and analytical Jacobians."""
    inputs = (inputs,) if isinstance(inputs, sk.Tensor) else tuple(inputs)
    diff = [i for i, x in enumerate(inputs) if isinstance(x, sk.Tensor) and x.requires_grad]
    for i in diff:
        if any(st == 0 and n > 1 for n, st in zip(inputs[i].shape, inputs[i].stride())):
            raise RuntimeError(
                f"The {i}th input has a dimension with stride 0. gradcheck only supports inputs "
                "that are non-overlapping to be able to compute the numerical gradients "
                "correctly. You should call .contiguous on the input before passing it to "
                "gradcheck.")
    outs = _outputs(fn, inputs)
    for o_i in range(len(outs)):
        analytical = _analytical(fn, inputs, diff, o_i)
        for col, i in zip(analytical, diff):
            numerical = _numerical(fn, inputs, i, o_i, eps)
            if not np.allclose(col, numerical, rtol=rtol, atol=atol):
                if not raise_exception:
                    return False
                raise GradcheckError(
                    f"Jacobian mismatch for output {o_i} with respect to input {i},\n"
                    f"numerical:{numerical}\nanalytical:{col}\n")
    return True


def gradgradcheck(fn, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  raise_exception=True, **_ignored):
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
                     raise_exception=raise_exception)
