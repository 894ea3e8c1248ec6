"""``AutocastMode``: mixed precision in the style of ``torch.autocast`` (automatic mixed
precision, AMP), as a function mode above autograd, so the casts it inserts are recorded and
gradients reach float32 parameters in float32.

While it is active, public functions and methods (``sk.nn.functional.linear``, ``@``,
``softmax``...) run by PyTorch's CUDA autocast op lists:

- ``LOWER_PRECISION`` (matmuls, linear, convolutions, attention): floating tensor arguments are
  cast to ``dtype`` (bfloat16 by default). The cast of a leaf tensor that requires grad (a
  parameter) is cached for the mode's lifetime, as autocast's weight cache is, so a weight
  used twice is cast once;
- ``FLOAT32`` (softmax, norms, losses, ``exp``/``log``/``pow``, ``sum``...): 16-bit floating
  arguments are cast to float32;
- every other function runs on its arguments as given (type promotion decides: a bfloat16
  matmul output added to a float32 residual is float32).

Differences from ``torch.autocast``: it sees what the function-mode protocol sees (public
functions and methods; an ``sk.ops`` call inside a function is not re-examined); the lists are
those of PyTorch's documentation for CUDA ("Autocast Op Reference"), not the CPU ones; the
"promote" list (``addcmul``, ``cat``...) is left to type promotion.
"""

from __future__ import annotations

import subclass_kit as sk

__all__ = ["AutocastMode", "LOWER_PRECISION", "FLOAT32"]

LOWER_PRECISION = frozenset({
    "linear", "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "addmm", "addbmm",
    "baddbmm", "addmv", "addr", "mv", "chain_matmul", "einsum", "prelu", "conv1d", "conv2d",
    "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
    "scaled_dot_product_attention",
})

FLOAT32 = frozenset({
    "softmax", "log_softmax", "softmin", "layer_norm", "group_norm", "rms_norm", "norm",
    "normalize", "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
    "kl_div", "binary_cross_entropy_with_logits", "poisson_nll_loss", "cosine_similarity",
    "cdist", "pdist", "dist", "exp", "expm1", "log", "log10", "log1p", "log2", "pow",
    "__pow__", "__rpow__", "__rtruediv__", "__rdiv__", "rsqrt", "reciprocal", "sum", "prod",
    "cumsum", "cumprod", "softplus", "acos", "asin", "cosh", "sinh", "tan", "erfinv",
    "renorm",
})

_HALF = None


class AutocastMode(sk.FunctionMode):
    """Run the model's functions by autocast's op lists (module docstring).

    ``dtype``: the lower precision, ``sk.bfloat16`` (default, when available) or
    ``sk.float16``. ``cache``: the cached casts of parameters (id -> tensor);
    ``clear_cache()`` drops them (``torch.autocast`` does on exit). Raises ValueError for
    another ``dtype``.
    """

    def __init__(self, dtype=None):
        dtype = dtype or getattr(sk, "bfloat16", sk.float16)
        if dtype not in _half_dtypes():
            raise ValueError(f"AutocastMode: dtype must be a 16-bit floating dtype "
                             f"(bfloat16 or float16), got {dtype}")
        self.dtype = dtype
        self.cache: dict = {}

    def clear_cache(self) -> None:
        self.cache.clear()

    def __tensor_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name in LOWER_PRECISION:
            args = tuple(self._cast(a, self.dtype) for a in args)
            kwargs = {k: self._cast(v, self.dtype) for k, v in kwargs.items()}
        elif name in FLOAT32:
            args = tuple(self._up(a) for a in args)
            kwargs = {k: self._up(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)

    def _cast(self, x, dtype):
        if isinstance(x, (list, tuple)):
            return type(x)(self._cast(v, dtype) for v in x)
        if not isinstance(x, sk.Tensor) or not x.dtype.is_floating_point or x.dtype == dtype:
            return x
        if x.is_leaf and x.requires_grad:
            copy = self.cache.get(id(x))
            if copy is None:
                copy = self.cache[id(x)] = x.to(dtype)
            return copy
        return x.to(dtype)

    def _up(self, x):
        if isinstance(x, (list, tuple)):
            return type(x)(self._up(v) for v in x)
        if isinstance(x, sk.Tensor) and x.dtype in _half_dtypes():
            return x.to(sk.float32)
        return x


def _half_dtypes():
    global _HALF
    if _HALF is None:
        _HALF = frozenset(d for d in (getattr(sk, "bfloat16", None), sk.float16) if d)
    return _HALF
