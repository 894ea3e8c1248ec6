"""``sk.nn.functional`` (PyTorch's ``torch.nn.functional``): re-exports of ``api/nn.py``."""

from ..api.nn import dropout as dropout
from ..api.nn import embedding as embedding
from ..api.nn import gelu as gelu
from ..api.nn import layer_norm as layer_norm
from ..api.nn import linear as linear
from ..api.nn import log_softmax as log_softmax
from ..api.nn import relu as relu
from ..api.nn import rms_norm as rms_norm
from ..api.nn import scaled_dot_product_attention as scaled_dot_product_attention
from ..api.nn import silu as silu
from ..api.nn import softmax as softmax
