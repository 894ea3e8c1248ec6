"""``sk.utils``: helpers PyTorch keeps under ``torch.utils`` (``sk.utils.weak``,
``sk.utils.checkpoint``)."""

from . import checkpoint as checkpoint  # noqa: F401
from . import weak as weak  # noqa: F401
