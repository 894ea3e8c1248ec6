"""``sk.nn.functional`` (PyTorch's ``torch.nn.functional``): re-exports of ``api/nn.py`` and
``api/losses.py``."""

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
from ..api.losses import binary_cross_entropy as binary_cross_entropy
from ..api.losses import binary_cross_entropy_with_logits as binary_cross_entropy_with_logits
from ..api.losses import cross_entropy as cross_entropy
from ..api.losses import l1_loss as l1_loss
from ..api.losses import mse_loss as mse_loss
from ..api.losses import nll_loss as nll_loss
from ..api.losses import normalize as normalize
from ..api.losses import one_hot as one_hot
from ..api.losses import pad as pad
from ..api.losses import softplus as softplus
