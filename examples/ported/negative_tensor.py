"""A negative view: a tensor that reads as ``-x`` and shares ``x``'s memory.

After the subclass_zoo's ``negative_tensor.py`` (PyTorch's "negative bit", ``torch._neg_view``):
``NegativeTensor(x)`` is a *direct* subclass made by ``_make_subclass``, so it has ``x``'s
storage, sizes and strides; what it stores is ``x``, what it means is ``-x``.
``__torch_dispatch__`` sorts ops by their schema (``func._schema``):

- view ops stay lazy: they run on the stored values and the result is negative again;
- ops that write an argument read ``-stored``, run, and store the negation of the result, so
  the write reaches ``x``;
- every other op reads ``-stored`` (``resolve()``) and returns plain tensors.

``no_dispatch()`` runs the ops on the stored values without coming back here, and
``__torch_function__`` is disabled so results are built by the dispatch handler alone.

The PyTorch original is ``examples/ported/torch_src/negative_tensor.py``;
``examples/ported/negative_tensor.py`` is what ``subclass-kit port`` makes of it, unedited, and
``tests/test_port.py`` checks that both print the same lines.
"""

import subclass_kit as sk
from subclass_kit import DisableTensorDispatch
from subclass_kit.pytree import tree_map


def _is_view(func):
    out = func.schema.returns
    return len(out) == 1 and out[0].alias is not None and not out[0].alias.is_write


class NegativeTensor(sk.Tensor):
    """Reads as ``-elem``; shares ``elem``'s storage."""

    @staticmethod
    def __new__(cls, elem):
        return sk.make_subclass(cls, elem, requires_grad=False)

    __tensor_function__ = sk.disabled_tensor_function

    def resolve(self):
        """The values, as a plain tensor (PyTorch's ``resolve_neg``)."""
        with DisableTensorDispatch():
            return sk.neg(self)

    @classmethod
    def __tensor_dispatch__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _is_view(func) and isinstance(args[0], cls):
            with DisableTensorDispatch():
                out = func(*args, **kwargs)
            return tree_map(lambda t: cls(t) if isinstance(t, sk.Tensor) else t, out)

        def read(t):
            return t.resolve() if isinstance(t, cls) else t

        out = func(*tree_map(read, args), **tree_map(read, kwargs))
        written = [a.name for a in func.schema.arguments
                   if a.alias is not None and a.alias.is_write]
        if written == ["self"] and isinstance(args[0], cls):
            with DisableTensorDispatch():
                args[0].copy_(sk.neg(out))      # store the negation: the write reaches x
            return args[0]
        return out


def show(name, t):
    values = t.resolve() if isinstance(t, NegativeTensor) else t
    print(name, type(t).__name__, values.tolist(), tuple(t.shape), t.stride(),
          t.storage_offset(), t._version)


def main():
    x = sk.arange(6.0).view(2, 3)
    n = NegativeTensor(x)
    show("n", n)
    print("shares x's memory:", n.data_ptr() == x.data_ptr())
    row = n[1]                                  # a view: still negative, still lazy
    col = n.t()[2]
    show("row", row)
    show("col", col)
    show("n + 1", n + 1)                        # computed: plain
    show("n * x", n * x)
    show("sum", n.sum())
    row.add_(10)                                # -x[1] + 10, stored as x[1] - 10
    show("x after row.add_(10)", x)
    show("n", n)
    print("row data_ptr offset:", (row.data_ptr() - x.data_ptr()) // x.element_size())


if __name__ == "__main__":
    main()
