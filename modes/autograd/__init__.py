"""The autograd mode: reverse-mode differentiation on a tape (Paszke et al., "Automatic
differentiation in PyTorch"), built on subclass_kit's public extension API.

``formulas`` is the derivative table (PyTorch's ``derivatives.yaml``)."""
