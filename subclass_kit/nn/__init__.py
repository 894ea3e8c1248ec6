"""``sk.nn`` (PyTorch's ``torch.nn``): ``Parameter``, ``Module`` and its containers, the layers a
transformer or an MLP uses, ``sk.nn.init``, ``sk.nn.utils`` and ``sk.nn.functional``."""

from . import functional as functional
from . import init as init
from . import utils as utils
from .containers import ModuleDict as ModuleDict
from .containers import ModuleList as ModuleList
from .containers import Sequential as Sequential
from .layers import GELU as GELU
from .layers import Dropout as Dropout
from .layers import Embedding as Embedding
from .layers import Identity as Identity
from .layers import LayerNorm as LayerNorm
from .layers import Linear as Linear
from .layers import LogSoftmax as LogSoftmax
from .layers import ReLU as ReLU
from .layers import RMSNorm as RMSNorm
from .layers import Sigmoid as Sigmoid
from .layers import SiLU as SiLU
from .layers import Softmax as Softmax
from .layers import Tanh as Tanh
from .module import Module as Module
from .parameter import Buffer as Buffer
from .parameter import Parameter as Parameter
