"""The engine's ready queue, in PyTorch's order: a ``std::priority_queue`` of nodes ordered by
sequence number (newest first). Which of several equal ones (the leaves' ``AccumulateGrad``,
all numbered UINT64_MAX) comes out first follows from how libstdc++'s ``push_heap`` /
``pop_heap`` move elements, so ``push`` and ``pop`` repeat its steps on a list (a max-heap on
``_seq``): hooks on leaves fire in PyTorch's order."""

from __future__ import annotations

__all__ = ["push", "pop"]


def push(heap: list, node) -> None:
    """libstdc++'s ``push_heap``: append, then move up past strictly smaller parents."""
    heap.append(node)
    _sift_up(heap, len(heap) - 1, node)


def pop(heap: list):
    """libstdc++'s ``pop_heap``: the top out, the last element into the hole that
    ``__adjust_heap`` walks down (the larger child, the right one on ties), then up."""
    top = heap[0]
    value = heap.pop()
    n = len(heap)
    if not n:
        return top
    hole = child = 0
    while child < (n - 1) >> 1:
        child = 2 * (child + 1)
        if heap[child]._seq < heap[child - 1]._seq:
            child -= 1
        heap[hole] = heap[child]
        hole = child
    if not n & 1 and child == (n - 2) >> 1:
        child = 2 * (child + 1)
        heap[hole] = heap[child - 1]
        hole = child - 1
    _sift_up(heap, hole, value)
    return top


def _sift_up(heap: list, hole: int, node) -> None:
    """Put ``node`` at ``hole`` or above it: parents of a strictly smaller sequence number
    move down (libstdc++'s ``__push_heap``)."""
    seq = node._seq
    while hole:
        parent = (hole - 1) >> 1
        above = heap[parent]
        if not above._seq < seq:
            break
        heap[hole] = above
        hole = parent
    heap[hole] = node
