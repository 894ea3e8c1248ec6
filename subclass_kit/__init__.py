"""subclass_kit: PyTorch's tensor core, reproduced in pure Python on numpy.

The public API, by explicit re-export (``X as X``); everything else is private. See
``docs/ARCHITECTURE.md`` for the files in processing order.
"""

from __future__ import annotations

import importlib as _importlib

from . import registry as _registry
from ._dtype import bool_ as bool  # noqa: A001  (sk.bool, as torch.bool)
from ._dtype import can_cast as can_cast
from ._dtype import dtype as dtype
from ._dtype import float16 as float16
from ._dtype import bfloat16 as bfloat16
from ._dtype import float32 as float32
from ._dtype import float64 as float64
from ._dtype import get_default_dtype as get_default_dtype
from ._dtype import int8 as int8
from ._dtype import int16 as int16
from ._dtype import int32 as int32
from ._dtype import int64 as int64
from ._dtype import promote_types as promote_types
from ._dtype import set_default_dtype as set_default_dtype
from ._dtype import uint8 as uint8
from .function import DisableTensorFunction as DisableTensorFunction
from .function import DisableTensorFunctionSubclass as DisableTensorFunctionSubclass
from .function import public_api as public_api
from .layout import Layout as Layout
from .mode import DispatchMode as DispatchMode
from .mode import FunctionMode as FunctionMode
from .mode import get_function_mode_stack as get_function_mode_stack
from .mode import get_mode_stack as get_mode_stack
from .mode import ModeState as ModeState
from .mode import mode_state as mode_state
from .mode import set_mode_state as set_mode_state
from .registry import OpOverload as OpOverload
from .registry import OpOverloadPacket as OpOverloadPacket
from .dispatch import DispatchEvent as DispatchEvent
from .dispatch import dispatch_trace as dispatch_trace
from .dispatch import enable_reentrant_dispatch as enable_reentrant_dispatch
from .dispatch import is_below_autograd as is_below_autograd
from .registry import get_kernel as get_kernel
from .registry import ops as ops
from .registry import redispatch_below_autograd as redispatch_below_autograd
from .registry import set_autograd_layer as set_autograd_layer
from .registry import register_kernel as register_kernel
from .schema import AliasInfo as AliasInfo
from .schema import Argument as Argument
from .schema import OpSchema as OpSchema
from .schema import parse_schema as parse_schema
from .storage import Storage as Storage
from .storage import device as device
from .tensor import CreationMeta as CreationMeta
from .inplace_checks import check_inplace_call as check_inplace_call
from .inplace_checks import check_inplace_tensor as check_inplace_tensor
from .layout import Size as Size
from .tensor import Tensor as Tensor
from .tensor import channels_last as channels_last
from .tensor import contiguous_format as contiguous_format
from .tensor import disabled_tensor_function as disabled_tensor_function
from .tensor import preserve_format as preserve_format
from .grad_mode import DecoratorContextManager as DecoratorContextManager
from .grad_mode import GradState as GradState
from .grad_mode import enable_grad as enable_grad
from .grad_mode import grad_state as grad_state
from .grad_mode import inference_mode as inference_mode
from .grad_mode import is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled
from .grad_mode import is_anomaly_enabled as is_anomaly_enabled
from .grad_mode import is_grad_enabled as is_grad_enabled
from .grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from .grad_mode import no_grad as no_grad
from .grad_mode import set_anomaly_enabled as set_anomaly_enabled
from .grad_mode import set_grad_enabled as set_grad_enabled
from .grad_mode import set_grad_state as set_grad_state
from .mode import no_dispatch as no_dispatch
from .mode import DisableTensorDispatch as DisableTensorDispatch
from . import pytree as pytree
from . import library as library
from .subclass import is_traceable_wrapper_subclass as is_traceable_wrapper_subclass
from .subclass import make_subclass as make_subclass
from .subclass import make_wrapper_subclass as make_wrapper_subclass
from .subclass import return_and_correct_aliasing as return_and_correct_aliasing
from .subclass import transform_subclass as transform_subclass

float = float32  # noqa: A001
double = float64
half = float16
long = int64
int = int32  # noqa: A001
short = int16

# Kernels and decompositions register themselves on import.
from .kernels import factories as _factories  # noqa: E402
from .kernels import ranges as _ranges  # noqa: E402
from .kernels import pointwise as _pointwise  # noqa: E402
from .kernels import pointwise_more as _pointwise_more  # noqa: E402
from .kernels import arith_more as _arith_more  # noqa: E402
from .kernels import pointwise_backward as _pointwise_backward  # noqa: E402
from .kernels import reductions as _reductions  # noqa: E402
from .kernels import views as _views  # noqa: E402
from . import decompositions as _decompositions  # noqa: E402
from .api import views as _api_views  # noqa: E402
from .api import autograd as _api_autograd  # noqa: E402
from .kernels import indexing as _indexing  # noqa: E402
from .kernels import scatter as _scatter  # noqa: E402
from .api import indexing as _api_indexing  # noqa: E402
from .api.indexing import index_put as index_put  # noqa: E402
from .api.views import as_strided_scatter as as_strided_scatter  # noqa: E402
from .api.views import diagonal_scatter as diagonal_scatter  # noqa: E402
from .api.views import select_scatter as select_scatter  # noqa: E402
from .api.views import slice_scatter as slice_scatter  # noqa: E402
from .api.creation import arange as arange  # noqa: E402
from .api.creation import as_tensor as as_tensor  # noqa: E402
from .api.creation import empty as empty  # noqa: E402
from .api.creation import empty_like as empty_like  # noqa: E402
from .api.creation import empty_strided as empty_strided  # noqa: E402
from .api.creation import eye as eye  # noqa: E402
from .api.creation import from_numpy as from_numpy  # noqa: E402
from .api.creation import full as full  # noqa: E402
from .api.creation import linspace as linspace  # noqa: E402
from .api.creation import logspace as logspace  # noqa: E402
from .api.creation import full_like as full_like  # noqa: E402
from .api.creation import manual_seed as manual_seed  # noqa: E402
from .api.creation import ones as ones  # noqa: E402
from .api.creation import ones_like as ones_like  # noqa: E402
from .api.creation import rand as rand  # noqa: E402
from .api.creation import rand_like as rand_like  # noqa: E402
from .api.creation import randint as randint  # noqa: E402
from .api.creation import randn as randn  # noqa: E402
from .api.creation import randn_like as randn_like  # noqa: E402
from .api.creation import scalar_tensor as scalar_tensor  # noqa: E402
from .api.creation import tensor as tensor  # noqa: E402
from .api.creation import zeros as zeros  # noqa: E402
from .api.creation import zeros_like as zeros_like  # noqa: E402
from .api.math import *  # noqa: E402,F401,F403  (names listed in api.math.__all__)
from .api.operators import *  # noqa: E402,F401,F403  (Tensor's operators; sk.rsub)
from .api.math_more import *  # noqa: E402,F401,F403  (names listed in api.math_more.__all__)
# Linear algebra, nn and shape-combining ops (kernels, composites, API).
from .kernels import linalg as _linalg  # noqa: E402
from .kernels import nn as _nn_kernels  # noqa: E402
from .kernels import attention as _attention_kernels  # noqa: E402
from .kernels import losses as _loss_kernels  # noqa: E402
from .kernels import shape as _shape  # noqa: E402
from .kernels import index_ops as _index_ops  # noqa: E402
from .kernels import pointwise_ternary as _pointwise_ternary  # noqa: E402
from .kernels import sorting as _sorting  # noqa: E402
from .kernels import shape_copies as _shape_copies  # noqa: E402
from .kernels import shape_more as _shape_more  # noqa: E402
from . import decompositions_nn as _decompositions_nn  # noqa: E402
from . import decompositions_reductions as _decompositions_reductions  # noqa: E402
from .api.linalg import addmm as addmm  # noqa: E402
from .api.linalg import bmm as bmm  # noqa: E402
from .api.linalg import cat as cat  # noqa: E402
from .api.linalg import concat as concat  # noqa: E402
from .api.linalg import concatenate as concatenate  # noqa: E402
from .api.linalg import dot as dot  # noqa: E402
from .api.linalg import einsum as einsum  # noqa: E402
from .api.linalg import gather as gather  # noqa: E402
from .api.linalg import index_select as index_select  # noqa: E402
from .api.linalg import log_softmax as log_softmax  # noqa: E402
from .api.linalg import matmul as matmul  # noqa: E402
from .api.linalg import mm as mm  # noqa: E402
from .api.linalg import mv as mv  # noqa: E402
from .api.linalg import nonzero as nonzero  # noqa: E402
from .api.linalg import scatter as scatter  # noqa: E402
from .api.linalg import softmax as softmax  # noqa: E402
from .api.linalg import stack as stack  # noqa: E402
from .api.linalg import tril as tril  # noqa: E402
from .api.linalg import triu as triu  # noqa: E402
from .api.scatter_sort import addcdiv as addcdiv  # noqa: E402
from .api.scatter_sort import addcmul as addcmul  # noqa: E402
from .api.scatter_sort import argsort as argsort  # noqa: E402
from .api.scatter_sort import baddbmm as baddbmm  # noqa: E402
from .api.scatter_sort import index_add as index_add  # noqa: E402
from .api.scatter_sort import index_copy as index_copy  # noqa: E402
from .api.scatter_sort import lerp as lerp  # noqa: E402
from .api.scatter_sort import masked_scatter as masked_scatter  # noqa: E402
from .api.scatter_sort import scatter_add as scatter_add  # noqa: E402
from .api.scatter_sort import sort as sort  # noqa: E402
from .api.scatter_sort import topk as topk  # noqa: E402
from .api.shape import diag as diag  # noqa: E402
from .api.shape import diag_embed as diag_embed  # noqa: E402
from .api.shape import flip as flip  # noqa: E402
from .api.shape import ger as ger  # noqa: E402
from .api.shape import kron as kron  # noqa: E402
from .api.shape import meshgrid as meshgrid  # noqa: E402
from .api.shape import outer as outer  # noqa: E402
from .api.shape import roll as roll  # noqa: E402
from .api.shape import tile as tile  # noqa: E402
from .api.shape_more import atleast_1d as atleast_1d  # noqa: E402
from .api.shape_more import atleast_2d as atleast_2d  # noqa: E402
from .api.shape_more import atleast_3d as atleast_3d  # noqa: E402
from .api.shape_more import broadcast_to as broadcast_to  # noqa: E402
from .api.shape_more import diff as diff  # noqa: E402
from .api.shape_more import dsplit as dsplit  # noqa: E402
from .api.shape_more import dstack as dstack  # noqa: E402
from .api.shape_more import fliplr as fliplr  # noqa: E402
from .api.shape_more import flipud as flipud  # noqa: E402
from .api.shape_more import hsplit as hsplit  # noqa: E402
from .api.shape_more import hstack as hstack  # noqa: E402
from .api.shape_more import ravel as ravel  # noqa: E402
from .api.shape_more import rot90 as rot90  # noqa: E402
from .api.shape_more import row_stack as row_stack  # noqa: E402
from .api.shape_more import take as take  # noqa: E402
from .api.shape_more import tensor_split as tensor_split  # noqa: E402
from .api.shape_more import trace as trace  # noqa: E402
from .api.shape_more import vdot as vdot  # noqa: E402
from .api.shape_more import vsplit as vsplit  # noqa: E402
from .api.shape_more import vstack as vstack  # noqa: E402
from . import nn as nn  # noqa: E402
from . import return_types as return_types  # noqa: E402
from ._repr import set_printoptions as set_printoptions  # noqa: E402
from .api.reductions import all as all  # noqa: E402,A001
from .api.reductions import amax as amax  # noqa: E402
from .api.reductions import amin as amin  # noqa: E402
from .api.reductions import any as any  # noqa: E402,A001
from .api.reductions import argmax as argmax  # noqa: E402
from .api.reductions import argmin as argmin  # noqa: E402
from .api.reductions import cumprod as cumprod  # noqa: E402
from .api.reductions import cumsum as cumsum  # noqa: E402
from .api.reductions import logsumexp as logsumexp  # noqa: E402
from .api.reductions import max as max  # noqa: E402,A001
from .api.reductions import mean as mean  # noqa: E402
from .api.reductions import min as min  # noqa: E402,A001
from .api.reductions import norm as norm  # noqa: E402
from .api.reductions import prod as prod  # noqa: E402
from .api.reductions import std as std  # noqa: E402
from .api.reductions import sum as sum  # noqa: E402,A001
from .api.reductions import var as var  # noqa: E402
from .api.reductions_more import allclose as allclose  # noqa: E402
from .api.reductions_more import aminmax as aminmax  # noqa: E402
from .api.reductions_more import count_nonzero as count_nonzero  # noqa: E402
from .api.reductions_more import cummax as cummax  # noqa: E402
from .api.reductions_more import cummin as cummin  # noqa: E402
from .api.reductions_more import equal as equal  # noqa: E402
from .api.reductions_more import isclose as isclose  # noqa: E402
from .api.reductions_more import kthvalue as kthvalue  # noqa: E402
from .api.reductions_more import logcumsumexp as logcumsumexp  # noqa: E402
from .api.reductions_more import median as median  # noqa: E402
from .api.reductions_more import nanmean as nanmean  # noqa: E402
from .api.reductions_more import nanmedian as nanmedian  # noqa: E402
from .api.reductions_more import nansum as nansum  # noqa: E402
# Names ports reach for (issue 12, point 4): api/names.py, utils/.
from .api.names import chunk as chunk  # noqa: E402
from .api.names import finfo as finfo  # noqa: E402
from .api.names import flatten as flatten  # noqa: E402
from .api.names import iinfo as iinfo  # noqa: E402
from .api.names import is_tensor as is_tensor  # noqa: E402
from .api.names import layout as layout  # noqa: E402
from .api.names import narrow as narrow  # noqa: E402
from .api.names import numel as numel  # noqa: E402
from .api.names import permute as permute  # noqa: E402
from .api.names import reshape as reshape  # noqa: E402
from .api.names import select as select  # noqa: E402
from .api.names import split as split  # noqa: E402
from .api.names import squeeze as squeeze  # noqa: E402
from .api.names import strided as strided  # noqa: E402
from .api.names import transpose as transpose  # noqa: E402
from .api.names import unsqueeze as unsqueeze  # noqa: E402
from .api.predicates import is_complex as is_complex  # noqa: E402
from .api.predicates import is_floating_point as is_floating_point  # noqa: E402
from .api.predicates import is_nonzero as is_nonzero  # noqa: E402
from .api.predicates import is_signed as is_signed  # noqa: E402
from . import utils as utils  # noqa: E402
from .kernels import bitwise as _bitwise  # noqa: E402
from .api.bitwise import bitwise_left_shift as bitwise_left_shift  # noqa: E402
from .api.bitwise import bitwise_right_shift as bitwise_right_shift  # noqa: E402
from .kernels import random as _random_kernels  # noqa: E402
from .api.random import Generator as Generator  # noqa: E402
from .api.random import bernoulli as bernoulli  # noqa: E402
from .api.random import default_generator as default_generator  # noqa: E402
from .api.random import get_rng_state as get_rng_state  # noqa: E402
from .api.random import initial_seed as initial_seed  # noqa: E402
from .api.random import multinomial as multinomial  # noqa: E402
from .api.random import normal as normal  # noqa: E402
from .api.random import randperm as randperm  # noqa: E402
from .api.random import seed as seed  # noqa: E402
from .api.random import set_rng_state as set_rng_state  # noqa: E402
from .kernels import selection as _selection  # noqa: E402
from . import decompositions_selection as _decompositions_selection  # noqa: E402
from .api.selection import masked_select as masked_select  # noqa: E402
from .api.selection import repeat_interleave as repeat_interleave  # noqa: E402
from .api.selection import unique as unique  # noqa: E402
from . import sizes_policy as _sizes_policy  # noqa: E402
from .checks import _check as _check, _check_with as _check_with  # noqa: E402
from .checks import _check_index as _check_index, _check_value as _check_value  # noqa: E402
from .checks import _check_type as _check_type, _check_is_size as _check_is_size  # noqa: E402
from .checks import _check_not_implemented as _check_not_implemented  # noqa: E402


def __getattr__(name):
    """Names imported on first access, so that ``import subclass_kit`` stays as fast as the
    core: ``sk.autograd`` (the autograd mode, installed then; the core never imports ``modes``
    to build itself, Note [Autograd layer]), ``sk.optim``, ``sk.testing``, ``sk.save`` /
    ``sk.load``."""
    if name == "autograd":      # imported by _module_aliases' finder, which installs it
        return _importlib.import_module(".autograd", __name__)
    if name in ("optim", "testing"):
        return _importlib.import_module("." + name, __name__)
    if name in ("save", "load"):
        return getattr(_importlib.import_module(".serialization", __name__), name)
    raise AttributeError(f"module 'subclass_kit' has no attribute '{name}'")
from .api import protocol as _api_protocol  # noqa: E402  (Tensor.__format__, __contains__)
from . import fast_path as fast_path  # noqa: E402
from . import _module_aliases  # noqa: E402

_module_aliases.install()
from ._state import flags as _flags  # noqa: E402

_flags.core_ready = True     # a kernel registered from here on replaces a built-in one
