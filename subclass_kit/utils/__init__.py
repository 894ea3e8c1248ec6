"""``sk.utils``: helpers PyTorch keeps under ``torch.utils`` (``sk.utils.weak``,
``sk.utils.checkpoint``) and the shape helpers subclasses borrow from ``torch._prims_common``
(``sk.utils.prims_common``)."""

from . import checkpoint as checkpoint  # noqa: F401
from . import prims_common as prims_common  # noqa: F401
from . import weak as weak  # noqa: F401
