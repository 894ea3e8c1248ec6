"""Per-op memory timeline of a model's forward and backward, labelled with the module that ran it.

CUDA's allocator statistics are replaced by a storage-liveness count (weakref finalizers), so the
program runs on CPU; plotting is replaced by printing.
"""
import warnings
import weakref
from collections import defaultdict
from contextlib import contextmanager

import torch
import torch.nn as nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

warnings.filterwarnings("ignore", "Using a non-full backward")

KB = 1024.0


class Allocated:
    """A stand-in for torch.cuda.memory_allocated(): bytes held by storages we have seen."""

    def __init__(self):
        self.seen = set()
        self.bytes = 0

    def _gone(self, key, n):
        self.seen.discard(key)
        self.bytes -= n

    def add(self, t):
        st = t.untyped_storage()
        key = st.data_ptr()
        if key in self.seen or st.nbytes() == 0:
            return
        self.seen.add(key)
        self.bytes += st.nbytes()
        weakref.finalize(st, self._gone, key, st.nbytes())


class State:
    def __init__(self):
        self.alloc = Allocated()
        self.cur_module = ""
        self.counts = defaultdict(int)
        self.timeline = []   # (label, KB)
        self.markers = {}

    def record(self, label):
        self.timeline.append((label, self.alloc.bytes / KB))

    def mark(self, name):
        self.markers[name] = len(self.timeline)


S = State()


class MemoryProfileMode(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is torch.ops.aten.detach.default:
            return out
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                S.alloc.add(t)
        name = func.overloadpacket.__name__
        S.record(f"{S.cur_module}.{name}_{S.counts[name]}")
        S.counts[name] += 1
        return out


@contextmanager
def labelled(model):
    handles = []
    for name, mod in model.named_modules():
        name = name or "model"

        def pre(m, inp, name=name):
            S.cur_module = f"{name}.forward"

        def bwd(m, gin, gout, name=name):
            S.cur_module = f"{name}.backward"

        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_backward_hook(bwd))
    try:
        yield model
    finally:
        for h in handles:
            h.remove()
    print("hooks removed", len(handles), "left", len(model[0]._forward_pre_hooks))


def profile(model, x):
    for p in model.parameters():
        S.alloc.add(p)
    S.alloc.add(x)
    with labelled(model), MemoryProfileMode():
        S.record("start")
        out = model(x)
        S.mark("fw_bw_boundary")
        out.sum().backward()
        S.mark("bw_zero_boundary")
        model.zero_grad(set_to_none=True)
        S.record("finished")


def top_ops(n):
    deltas = {}
    prev = S.timeline[0][1]
    for label, kb in S.timeline[1:]:
        deltas[label] = kb - prev
        prev = kb
    print(f"top {n} ops by memory growth:")
    for label, d in sorted(deltas.items(), key=lambda kv: kv[1], reverse=True)[:n]:
        print(f"  {label}: {d:+.2f}KB")


def main():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 8))
    x = torch.randn(16, 32)
    profile(model, x)
    for i, (label, kb) in enumerate(S.timeline):
        print(f"{i:3d} {label:<34}{kb:9.2f}")
    print("markers", S.markers)
    top_ops(6)
    print("grads cleared", all(p.grad is None for p in model.parameters()))


if __name__ == "__main__":
    main()
