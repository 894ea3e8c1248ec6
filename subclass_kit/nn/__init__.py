"""``sk.nn``: the functional namespace ``sk.nn.functional`` (PyTorch's ``torch.nn.functional``)."""

from . import functional as functional
