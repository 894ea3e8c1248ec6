"""``sk.optim`` (PyTorch's ``torch.optim``): ``Optimizer``, ``SGD``, ``Adam``, ``AdamW`` and
``lr_scheduler``. Updates run in place under ``no_grad``, so version counters and the
debug-assert mode see real optimizer steps."""

from . import lr_scheduler as lr_scheduler
from .adam import Adam as Adam
from .adam import AdamW as AdamW
from .optimizer import Optimizer as Optimizer
from .sgd import SGD as SGD
