"""Example model functions for ``subclass-kit shapes``.

    subclass-kit shapes examples/custom_model.py:build --batch 32
    subclass-kit shapes examples/custom_model.py:tiny_gpt --seq 64 --json

The contract (see ``subclass-kit shapes --help``): the function receives the keyword arguments
among ``batch``, ``seq``, ``dtype`` that were given on the command line, plus
``device="meta"`` when it has a ``device`` parameter, and returns ``(model, example_inputs)``.
``model(*example_inputs)`` must run; build tensors on ``device`` so nothing is allocated.
An ``sk.nn.Module`` model gets a parameter count and one table row per block.
"""

import subclass_kit as sk
from subclass_kit import zoo


class MLP(sk.nn.Module):
    """An MNIST-sized classifier: Linear + ReLU layers, one table row per layer."""

    def __init__(self, sizes, *, dtype, device):
        super().__init__()
        self.layers = sk.nn.ModuleList(sk.nn.Linear(a, b, dtype=dtype, device=device)
                                       for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = sk.relu(x)
        return x


def build(batch=8, dtype=sk.float32, device="meta"):
    """A 784-512-256-10 MLP on a (batch, 784) input. Takes no ``seq``: ``--seq`` is an error."""
    model = MLP([784, 512, 256, 10], dtype=dtype, device=device)
    return model, (sk.empty(batch, 784, dtype=dtype, device=device),)


def tiny_gpt(batch=1, seq=32, dtype=sk.float32, device="meta"):
    """A 2-layer, 128-wide GPT-2 from the zoo with a config override."""
    model = zoo.get_model("gpt2", n_layer=2, n_head=4, n_embd=128, dtype=dtype, device=device)
    return model, model.example_inputs(batch=batch, seq=seq, device=device)
