"""The PyTorch originals under ``torch_src/`` import torch and are no test modules: never collect
them (``tests/test_port.py`` runs them, next to their ports, when torch is installed)."""

collect_ignore_glob = ["torch_src/*"]
