"""The GPT of ``examples/train_char_gpt.py`` (``make_gpt``) as the training-memory and
checkpoint oracle tests build it in both libraries: eager attention (explicit scores, so both
libraries run and save the same ops), a 50-token vocabulary, width 32, 16 positions."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "examples"))
from train_char_gpt import make_gpt  # noqa: E402


def make_twin(nn, F, vocab=50, width=32, heads=4, layers=2, block=16, dropout=0.0):
    return make_gpt(nn, F, vocab, width, heads, layers, block, eager=True, dropout=dropout)
