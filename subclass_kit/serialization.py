"""``sk.save`` / ``sk.load``: state dicts in a file format that never executes code on load.

The file is a zip archive (PyTorch's files are zip archives too, but hold a pickle):

- ``format.json``: ``{"format": "subclass_kit.save", "version": 1}``;
- ``data.json``: the object tree in JSON: ``None``, bools, ints, floats (``NaN``/``Infinity``
  allowed), strings as themselves; ``{"dict": [[key, value], ...]}`` for dicts (any JSON-able
  keys, order kept; ``OrderedDict`` comes back as ``OrderedDict``), ``{"list": [...]}``,
  ``{"tuple": [...]}``, and ``{"tensor": i, "dtype": "float32", "shape": [...],
  "device": "cpu" | "meta", "requires_grad": bool, "parameter": bool}`` for tensors;
- ``tensors/<i>.npy``: each cpu tensor's values, contiguous, in numpy's ``.npy`` format
  (``allow_pickle=False``); bfloat16 ones as their 2-byte words (``uint16``: numpy has no
  bfloat16); meta tensors have no data entry.

Loading parses JSON and ``.npy`` only: there is no way for a file to run code (PyTorch's
``weights_only=True`` restricts an unpickler; here there is no unpickler). Differences from
PyTorch (docs/differences.md): views are saved as independent copies (storage sharing between
saved tensors is not kept), and only the types above can be saved (TypeError otherwise).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from collections import OrderedDict

import numpy as np

from . import _dtype as dt
from .tensor import Tensor

__all__ = ["save", "load"]

_FORMAT = {"format": "subclass_kit.save", "version": 1}


def save(obj, f) -> None:
    """Write ``obj`` (a state dict, or any tree of dicts, lists, tuples, numbers, strings,
    None and tensors) to ``f``, a path or a binary file object. Raises TypeError naming the
    first value of another type (nothing is written then)."""
    arrays: list = []
    tree = _encode(obj, arrays, "obj")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr("format.json", json.dumps(_FORMAT))
        z.writestr("data.json", json.dumps(tree))
        for i, arr in enumerate(arrays):
            if arr is not None:
                entry = io.BytesIO()
                np.save(entry, arr, allow_pickle=False)
                z.writestr(f"tensors/{i}.npy", entry.getvalue())
    data = buf.getvalue()
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(data)
    else:
        f.write(data)


def load(f, map_location=None, weights_only: bool = True):
    """Read what ``save`` wrote from a path or binary file object. ``map_location``: None,
    "cpu" or "meta" (a device for every tensor). Raises ValueError for a file that is not in
    this format, NotImplementedError for ``weights_only=False`` (arbitrary objects are never
    loaded)."""
    if not weights_only:
        raise NotImplementedError("sk.load never unpickles: weights_only=False is not "
                                  "supported (the format holds only data)")
    try:
        z = zipfile.ZipFile(f)
    except zipfile.BadZipFile:
        raise ValueError("sk.load: not a subclass_kit save file (not a zip archive)") from None
    with z:
        names = set(z.namelist())
        if "format.json" not in names or json.loads(z.read("format.json")) != _FORMAT:
            raise ValueError("sk.load: not a subclass_kit save file (no or unknown "
                             "format.json)")
        tree = json.loads(z.read("data.json"))

        def array(i):
            return np.load(io.BytesIO(z.read(f"tensors/{i}.npy")), allow_pickle=False)
        return _decode(tree, array, map_location)


def _encode(obj, arrays: list, where: str):
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, Tensor):
        meta = obj.device.type == "meta"
        arrays.append(None if meta else _values(obj.detach()))
        from .nn.parameter import Parameter
        return {"tensor": len(arrays) - 1, "dtype": obj.dtype.name, "shape": list(obj.shape),
                "device": obj.device.type, "requires_grad": bool(obj.requires_grad),
                "parameter": isinstance(obj, Parameter)}
    if isinstance(obj, dict):
        return {"dict": [[_encode(k, arrays, f"{where} key"), _encode(v, arrays, f"{where}[{k!r}]")]
                         for k, v in obj.items()],
                "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        kind = "list" if isinstance(obj, list) else "tuple"
        return {kind: [_encode(v, arrays, f"{where}[{i}]") for i, v in enumerate(obj)]}
    raise TypeError(f"sk.save: cannot save {where} of type {type(obj).__name__} (only dicts, "
                    "lists, tuples, numbers, strings, None and tensors)")


def _values(t: Tensor) -> np.ndarray:
    """A contiguous numpy copy of ``t``'s elements as stored (bfloat16: the ``uint16`` words)."""
    if t.dtype.numpy is not t.dtype.storage_numpy:
        words = t.contiguous().view(dt.int16)
        return np.array(words.numpy(), order="C").view(t.dtype.storage_numpy)
    return np.array(t.numpy(), order="C")


def _decode(node, array, map_location):
    if not isinstance(node, dict):
        return node
    if "tensor" in node:
        return _tensor(node, array, map_location)
    if "dict" in node:
        items = [(_hashable(_decode(k, array, map_location)), _decode(v, array, map_location))
                 for k, v in node["dict"]]
        return OrderedDict(items) if node.get("ordered") else dict(items)
    if "list" in node:
        return [_decode(v, array, map_location) for v in node["list"]]
    if "tuple" in node:
        return tuple(_decode(v, array, map_location) for v in node["tuple"])
    raise ValueError(f"sk.load: unknown entry {sorted(node)} in data.json")


def _hashable(key):
    return tuple(key) if isinstance(key, list) else key


def _tensor(node, array, map_location):
    from .api.creation import empty, from_numpy
    from .nn.parameter import Parameter
    dtype = getattr(dt, node["dtype"], None)
    if not isinstance(dtype, dt.dtype):
        raise ValueError(f"sk.load: unknown dtype {node['dtype']!r}")
    device = map_location or node["device"]
    if node["device"] == "meta" or device == "meta":
        t = empty(tuple(node["shape"]), dtype=dtype, device="meta")
    else:
        arr = array(node["tensor"])
        if list(arr.shape) != node["shape"]:
            raise ValueError(f"sk.load: tensor {node['tensor']} has shape {list(arr.shape)}, "
                             f"data.json says {node['shape']}")
        if arr.dtype != dtype.storage_numpy:
            raise ValueError(f"sk.load: tensor {node['tensor']} holds {arr.dtype} data, "
                             f"data.json says {node['dtype']}")
        if dtype.numpy is not dtype.storage_numpy:     # bfloat16 words
            t = from_numpy(arr.view(np.int16)).view(dtype)
        else:
            t = from_numpy(arr)
    if node.get("parameter"):
        return Parameter(t, requires_grad=node["requires_grad"])
    if node["requires_grad"]:
        t.requires_grad_(True)
    return t
