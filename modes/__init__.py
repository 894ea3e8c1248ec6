"""Modes built only on subclass_kit's public extension API."""
from .debug_assert import DebugAssertError as DebugAssertError
from .debug_assert import DebugAssertMode as DebugAssertMode
from .explain import explain as explain
from .graph import Graph as Graph
from .graph import make_graph as make_graph
from .inference import InferenceMode as InferenceMode
from .logging_mode import LoggingMode as LoggingMode
from .meta_mode import DynamicOutputShapeError as DynamicOutputShapeError
from .meta_mode import MetaMode as MetaMode
from .meta_mode import infer_shapes as infer_shapes
from .op_usage import OpUsageMode as OpUsageMode
from .functionalization import FunctionalizeMode as FunctionalizeMode
from .functionalization import FunctionalTensorWrapper as FunctionalTensorWrapper
from .functionalization import from_functional as from_functional
from .functionalization import functionalize as functionalize
from .functionalization import to_functional as to_functional
from .memory_tracker import MemTracker as MemTracker
