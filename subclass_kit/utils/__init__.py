"""``sk.utils``: helpers PyTorch keeps under ``torch.utils`` (``sk.utils.weak``)."""

from . import weak as weak  # noqa: F401
