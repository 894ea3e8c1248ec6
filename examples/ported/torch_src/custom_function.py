"""Custom autograd Functions, written for PyTorch and ported by renaming.

Three ``torch.autograd.Function``s in the styles PyTorch supports: ``forward(ctx, ...)`` with
``ctx.save_for_backward``; ``forward`` without ``ctx`` and a ``setup_context``; and a
``backward`` marked ``@once_differentiable``. The program runs them through ``backward``,
``torch.autograd.grad`` (first and second order), ``saved_tensors_hooks`` and ``gradcheck``,
and prints what it sees, errors included.

The PyTorch original is ``examples/ported/torch_src/custom_function.py``;
``examples/ported/custom_function.py`` is what ``subclass-kit port`` makes of it, unedited, and
``tests/test_port.py`` checks that both print the same lines.
"""

import torch
from torch.autograd import Function, gradcheck
from torch.autograd.function import once_differentiable
from torch.autograd.graph import saved_tensors_hooks


class Softplus(Function):
    """``log(1 + exp(beta * x)) / beta``; its derivative is ``sigmoid(beta * x)``."""

    @staticmethod
    def forward(ctx, x, beta=1.0):
        ctx.save_for_backward(x)
        ctx.beta = beta
        return torch.log1p(torch.exp(beta * x)) / beta

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * torch.sigmoid(ctx.beta * x), None


class Cube(Function):
    """``x ** 3``, in the ``setup_context`` style (``forward`` takes no ``ctx``)."""

    @staticmethod
    def forward(x):
        return x ** 3

    @staticmethod
    def setup_context(ctx, inputs, output):
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x ** 2 * grad


class ClipGrad(Function):
    """The identity forward; the gradient clipped to [-1, 1] on its way back."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, grad):
        return grad.clamp(-1.0, 1.0)


def show(t):
    """The values to 4 decimals, and the node that made them (dtypes print as torch.X / sk.X)."""
    values = [round(v, 4) for v in t.tolist()]
    return f"{values} {t.grad_fn.name() if t.grad_fn is not None else 'leaf'}"


def main():
    x = torch.linspace(-2.0, 2.0, 5, dtype=torch.float64, requires_grad=True)

    y = Softplus.apply(x, 2.0)
    print("softplus:", show(y), type(y.grad_fn).__name__)

    packed = []
    with saved_tensors_hooks(lambda t: packed.append(tuple(t.shape)) or t, lambda t: t):
        z = Cube.apply(y).sum()
    print("packed:", packed)
    z.backward()
    print("x.grad:", show(x.grad))

    (g,) = torch.autograd.grad(Cube.apply(x).sum(), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    print("d/dx x^3:", show(g))
    print("d2/dx2 x^3:", show(gg))

    (c,) = torch.autograd.grad((ClipGrad.apply(x) ** 2).sum(), x, create_graph=True)
    print("clipped:", show(c), c.requires_grad)
    try:
        c.sum().backward()
    except RuntimeError as e:
        print("RuntimeError:", e)

    w = torch.randn(4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    w.requires_grad_()
    print("gradcheck softplus:", gradcheck(lambda t: Softplus.apply(t, 0.5), (w,)))
    print("gradcheck cube:", gradcheck(Cube.apply, (w,)))
    print("gradgradcheck cube:", torch.autograd.gradgradcheck(Cube.apply, (w,)))

    try:
        Softplus.apply(x, 1.0).backward()
    except RuntimeError as e:
        print("RuntimeError:", e)
    with torch.no_grad():
        print("under no_grad:", Softplus.apply(x, 1.0).requires_grad)


if __name__ == "__main__":
    main()
