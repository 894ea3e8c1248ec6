"""A tiny module system for the zoo: ``Module``, ``ModuleList`` and the layers the models use.

PyTorch's ``nn.Module`` reduced to what a shape-and-size report needs: a tree of parameter
tensors and sub-modules, ``named_parameters()`` walking it in definition order, and forward
hooks. A parameter is any ``Tensor`` attribute of a module (no ``Parameter`` class: there is no
autograd state to carry). A tensor reachable twice (tied weights) is reported once, under its
first name, as ``nn.Module.named_parameters`` does.

Layers compute with the public tensor API only (``F.linear``, ``F.embedding``,
``F.layer_norm``, ``pow``/``mean``/``rsqrt`` for RMSNorm), so on the meta device they run as
shape inference and on cpu they compute values.

    >>> import subclass_kit as sk
    >>> from subclass_kit.zoo import nn
    >>> lin = nn.Linear(4, 3)                    # parameters on the meta device by default
    >>> [(n, tuple(p.shape)) for n, p in lin.named_parameters()]
    [('weight', (3, 4)), ('bias', (3,))]
    >>> tuple(lin(sk.empty(2, 4, device="meta")).shape)
    (2, 3)
"""

from __future__ import annotations

import subclass_kit as sk

__all__ = ["Module", "ModuleList", "Linear", "Conv1D", "Embedding", "LayerNorm", "RMSNorm",
           "parameter", "blocks", "split_heads", "merge_heads", "attention", "causal_mask",
           "token_ids", "DEFAULT_SEQ"]


def parameter(*shape, dtype=None, device="meta", init="normal", std=0.02):
    """A new parameter tensor of ``shape``.

    On ``meta`` nothing is allocated (``sk.empty``). On ``cpu`` the values follow ``init``:
    "normal" (N(0, std), GPT-2/BERT's initializer), "ones" or "zeros", so small models can
    run on real data.
    """
    dtype = dtype or sk.get_default_dtype()
    if sk.device(device).type == "meta":
        return sk.empty(shape, dtype=dtype, device=device)
    if init == "ones":
        return sk.ones(shape, dtype=dtype, device=device)
    if init == "zeros":
        return sk.zeros(shape, dtype=dtype, device=device)
    return sk.randn(shape, dtype=dtype, device=device) * std


class _HookHandle:
    """Returned by ``register_forward_*hook``; ``remove()`` unregisters the hook."""

    def __init__(self, hooks: list, fn):
        self._hooks, self._fn = hooks, fn

    def remove(self):
        if self._fn in self._hooks:
            self._hooks.remove(self._fn)


class Module:
    """Base class: set parameters (Tensors) and sub-modules as attributes, define ``forward``.

    Attributes whose name starts with ``_`` and non-tensor values (ints, configs) are neither
    parameters nor children.
    """

    _pre_hooks = ()      # replaced by a per-instance list on the first registration
    _post_hooks = ()

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} does not define forward()")

    def __call__(self, *args, **kwargs):
        if not (self._pre_hooks or self._post_hooks):
            return self.forward(*args, **kwargs)
        for hook in list(self._pre_hooks):
            hook(self, args)
        out = self.forward(*args, **kwargs)
        for hook in list(self._post_hooks):
            hook(self, args, out)
        return out

    # -- hooks (PyTorch's register_forward_pre_hook / register_forward_hook) -------------------
    def register_forward_pre_hook(self, hook) -> _HookHandle:
        """``hook(module, args)`` runs before ``forward``."""
        if "_pre_hooks" not in self.__dict__:
            self._pre_hooks = []
        self._pre_hooks.append(hook)
        return _HookHandle(self._pre_hooks, hook)

    def register_forward_hook(self, hook) -> _HookHandle:
        """``hook(module, args, output)`` runs after ``forward``."""
        if "_post_hooks" not in self.__dict__:
            self._post_hooks = []
        self._post_hooks.append(hook)
        return _HookHandle(self._post_hooks, hook)

    # -- the tree ------------------------------------------------------------------------------
    def _own_items(self):
        for name, value in vars(self).items():
            if not name.startswith("_"):
                yield name, value

    def named_children(self):
        """``(name, module)`` for each direct sub-module, in definition order."""
        for name, value in self._own_items():
            if isinstance(value, Module):
                yield name, value

    def named_parameters(self, prefix: str = "", _seen=None):
        """``(qualified name, tensor)`` for every parameter, each tensor once."""
        seen = set() if _seen is None else _seen
        for name, value in self._own_items():
            if isinstance(value, sk.Tensor):
                if id(value) not in seen:
                    seen.add(id(value))
                    yield prefix + name, value
            elif isinstance(value, Module):
                yield from value.named_parameters(prefix + name + ".", seen)

    def parameters(self):
        for _, p in self.named_parameters():
            yield p

    def num_parameters(self) -> int:
        """Sum of ``numel()`` over the parameters (tied tensors once)."""
        return sum(p.numel() for p in self.parameters())

    def __repr__(self):
        lines = [f"{type(self).__name__}("]
        for name, child in self.named_children():
            body = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        for name, value in self._own_items():
            if isinstance(value, sk.Tensor):
                lines.append(f"  {name}: {tuple(value.shape)} {value.dtype}")
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"


class ModuleList(Module):
    """A list of sub-modules named ``0``, ``1``, ...; iterate it in ``forward``."""

    def __init__(self, modules=()):
        self._items = list(modules)

    def __iter__(self):
        return iter(self._items)

    def __len__(self):
        return len(self._items)

    def __getitem__(self, i):
        return self._items[i]

    def _own_items(self):
        for i, m in enumerate(self._items):
            yield str(i), m


def blocks(model: Module):
    """The rows of a per-block report: ``(name, module)`` for each direct child of ``model``,
    with a ``ModuleList`` child expanded into its items (``layers.0``, ``layers.1``, ...)."""
    for name, child in model.named_children():
        if isinstance(child, ModuleList):
            for i, item in child.named_children():
                yield f"{name}.{i}", item
        else:
            yield name, child


# -- layers ------------------------------------------------------------------------------------
class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` of shape (out_features, in_features)."""

    def __init__(self, in_features, out_features, bias=True, *, dtype=None, device="meta"):
        self.weight = parameter(out_features, in_features, dtype=dtype, device=device)
        self.bias = (parameter(out_features, dtype=dtype, device=device, init="zeros")
                     if bias else None)

    def forward(self, x):
        return sk.nn.functional.linear(x, self.weight, self.bias)


class Conv1D(Module):
    """GPT-2's projection: ``y = x @ weight + bias`` with ``weight`` of shape (in, out)."""

    def __init__(self, in_features, out_features, *, dtype=None, device="meta"):
        self.weight = parameter(in_features, out_features, dtype=dtype, device=device)
        self.bias = parameter(out_features, dtype=dtype, device=device, init="zeros")

    def forward(self, x):
        return x @ self.weight + self.bias


class Embedding(Module):
    """A lookup table of shape (num_embeddings, embedding_dim) indexed by int64 ids."""

    def __init__(self, num_embeddings, embedding_dim, *, dtype=None, device="meta"):
        self.weight = parameter(num_embeddings, embedding_dim, dtype=dtype, device=device)

    def forward(self, ids):
        return sk.nn.functional.embedding(ids, self.weight)


class LayerNorm(Module):
    """Normalise the last dimension to zero mean and unit variance, then scale and shift."""

    def __init__(self, dim, eps=1e-5, *, dtype=None, device="meta"):
        self.weight = parameter(dim, dtype=dtype, device=device, init="ones")
        self.bias = parameter(dim, dtype=dtype, device=device, init="zeros")
        self.eps = eps

    def forward(self, x):
        return sk.nn.functional.layer_norm(x, (self.weight.shape[0],), self.weight, self.bias,
                                           self.eps)


class RMSNorm(Module):
    """LLaMA's norm: ``x * rsqrt(mean(x**2, -1) + eps) * weight`` (no mean subtraction, no
    bias), written with pointwise ops and a mean."""

    def __init__(self, dim, eps=1e-6, *, dtype=None, device="meta"):
        self.weight = parameter(dim, dtype=dtype, device=device, init="ones")
        self.eps = eps

    def forward(self, x):
        scale = (x.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()
        return x * scale * self.weight


# -- attention helpers ---------------------------------------------------------------------------
def split_heads(x, n_heads):
    """(batch, seq, n_heads * head_dim) -> (batch, n_heads, seq, head_dim), a view."""
    b, s, d = x.shape
    return x.view(b, s, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x):
    """(batch, n_heads, seq, head_dim) -> (batch, seq, n_heads * head_dim) (copies)."""
    b, h, s, d = x.shape
    return x.transpose(1, 2).reshape(b, s, h * d)


def attention(q, k, v, mask=None):
    """Scaled dot-product attention: ``softmax(q @ k^T / sqrt(head_dim) + mask) @ v``.

    q: (..., seq_q, head_dim), k and v: (..., seq_k, head_dim); ``mask`` is additive
    (0 where allowed, -inf where not) and broadcasts to (..., seq_q, seq_k).
    """
    scores = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
    if mask is not None:
        scores = scores + mask
    return scores.softmax(-1) @ v


def causal_mask(seq, *, dtype, device, window=None):
    """Additive (seq, seq) mask: -inf above the diagonal (future tokens) and, with
    ``window``, -inf for keys ``window`` or more tokens back (Mistral's sliding window)."""
    mask = sk.full((seq, seq), float("-inf"), dtype=dtype, device=device).triu(1)
    if window is not None and seq > window:
        far = sk.full((seq, seq), float("-inf"), dtype=dtype, device=device).tril(-window)
        mask = mask + far
    return mask


# -- example inputs ------------------------------------------------------------------------------
DEFAULT_SEQ = 128  # tokens per sequence when the caller gives none


def token_ids(vocab_size, batch, seq, device, max_positions=None):
    """Token ids (batch, seq) int64: uninitialised on meta, uniform random on cpu."""
    seq = DEFAULT_SEQ if seq is None else seq
    if max_positions is not None and seq > max_positions:
        raise ValueError(f"sequence length {seq} exceeds the model's {max_positions} learned "
                         "positions")
    if sk.device(device).type == "meta":
        return sk.empty((batch, seq), dtype=sk.int64, device=device)
    return sk.randint(0, vocab_size, (batch, seq), device=device)
