"""The nodes of views and in-place ops on views (SEMANTICS.md §3.5-3.6): ``CopySlices``, the
root base's node after an in-place op on one of its views, and ``AsStridedBackward0``, the
``grad_fn`` a view gets regenerated lazily once its base changed history."""

from __future__ import annotations

import subclass_kit as sk

from .graph import FREED, AccumulateGrad, Node, gradient_edge

__all__ = ["CopySlices", "AsStridedBackward0"]


def _geometry(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


def _strided_zeros(shape, stride, like):
    return sk.empty_strided(shape, stride, dtype=like.dtype, device=like.device).zero_()


class CopySlices(Node):
    """The root base's node after an in-place op ``fn`` on one of its views: the base's gradient
    passes through, except the view's region, which gets ``fn``'s gradient for its input
    computed from that region (SEMANTICS.md §3.5). Edges: the base's previous edge, then
    ``fn``'s other inputs. ``index``: which of ``fn``'s edges is the view's (0 for an op's
    ``self``; a custom function may modify any of its inputs; None: the view had none)."""

    _name = "CopySlices"

    def __init__(self, base, view, fn, index=0):
        edges = list(fn._next)
        if index is not None:
            del edges[index]
        super().__init__([gradient_edge(base)] + edges)
        self._index = index
        self._base_geom = _geometry(base)
        size, stride, offset = _geometry(view)
        self._view_geom = (size, stride, offset - base.storage_offset())
        self.fn = fn

    _freed = False

    def apply(self, grads):
        if self._freed:         # PyTorch drops ``fn`` when the graph is freed
            raise RuntimeError(FREED)
        g = grads[0]
        shape, stride, _ = self._base_geom
        if (not sk.is_grad_enabled() and not AccumulateGrad.shared(g)
                and g._base is None and g.storage_offset() == 0
                and tuple(g.shape) == shape and g.stride() == stride):
            # a gradient no one else holds, laid out like the base: write the view's region in
            # place, so a chain of N CopySlices costs O(N) rather than N copies of the base
            # (with the version of PyTorch's new tensor after its copy: no one else sees ``g``)
            result = g
            result._vc = [1]
        else:
            result = sk.empty_strided(shape, stride, dtype=g.dtype, device=g.device)
            result.copy_(g)
        size, vstride, offset = self._view_geom
        grad_slice = result.as_strided(size, vstride, offset)
        res = list(self.fn.apply([grad_slice.clone()]))
        index = self._index
        g_view = None if index is None or not res else res.pop(index)
        if g_view is not None:
            grad_slice.copy_(g_view)
        else:
            grad_slice.zero_()
        return [result] + res

    def release(self):
        self.fn.release()
        self._freed = True


class AsStridedBackward0(Node):
    """The regenerated ``grad_fn`` of a view whose base changed history (SEMANTICS.md §3.6):
    the view's gradient scattered into zeros shaped like its root base. ``view_op`` is the
    recorded view op ``(name, output index)`` (kept so that view replay can be switched on)."""

    _name = "AsStridedBackward0"

    def __init__(self, base, view):
        super().__init__([gradient_edge(base)])
        self._base_geom = _geometry(base)
        size, stride, offset = _geometry(view)
        self._view_geom = (size, stride, offset - base.storage_offset())
        self.view_op = view._view_op

    def apply(self, grads):
        g = grads[0]
        shape, stride, _ = self._base_geom
        out = _strided_zeros(shape, stride, g)
        size, vstride, offset = self._view_geom
        # dims the view broadcasts (stride 0) write one element: sum the gradient over them
        bcast = [d for d, (n, s) in enumerate(zip(size, vstride)) if s == 0 and n > 1]
        if bcast:
            g = g.sum(bcast, keepdim=True)
            size = tuple(1 if d in bcast else n for d, n in enumerate(size))
        out.as_strided(size, vstride, offset).copy_(g)
        return [out]
