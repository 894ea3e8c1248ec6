"""``sk.optim.Optimizer``: PyTorch's optimizer base class (param groups, per-parameter state,
``zero_grad``, ``state_dict`` / ``load_state_dict`` in PyTorch's format: ``{"state": {index:
{...}}, "param_groups": [{..., "params": [indices]}]}``)."""

from __future__ import annotations

import copy
from collections import defaultdict

from ..grad_mode import enable_grad
from ..nn.module import _typename, zero_grads
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _Required:
    def __repr__(self):
        return "<required parameter>"


required = _Required()


class Optimizer:
    """Base class: ``Optimizer(params, defaults)``; ``params`` is an iterable of tensors or of
    dicts (param groups with per-group options). Raises TypeError for a bare tensor or a
    non-tensor parameter, ValueError for an empty list, a non-leaf parameter, a parameter in two
    groups, or a missing required option (PyTorch's checks and texts)."""

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {_typename(params)}")
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {_typename(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            param_group["params"] = list(params)
        for p in param_group["params"]:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in param_group["params"]):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the ``.grad`` of every parameter: to None (default) or zeros in place."""
        zero_grads((p for group in self.param_groups for p in group["params"]), set_to_none)

    def step(self, closure=None):
        raise NotImplementedError

    def _closure_loss(self, closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def state_dict(self) -> dict:
        """``{"state": {index: state}, "param_groups": [group with "params": [indices]]}``,
        indices numbering the parameters across groups in order (tensors not copied)."""
        index = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            packed["params"] = ids
            groups.append(packed)
        params = {id(p): p for g in self.param_groups for p in g["params"]}
        state = {index[k]: v for k, v in ((id(p), s) for p, s in self.state.items())
                 if k in index and k in params}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore state and group options from ``state_dict`` (the parameters stay this
        optimizer's). Floating state tensors other than ``step`` are cast to their parameter's
        dtype and device. Raises ValueError when the groups do not match in number or size."""
        state_dict = copy.deepcopy(state_dict)
        saved_groups = state_dict["param_groups"]
        if len(saved_groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        for group, saved in zip(self.param_groups, saved_groups):
            if len(group["params"]) != len(saved["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 "match the size of optimizer's group")
        id_map = {}
        for group, saved in zip(self.param_groups, saved_groups):
            id_map.update(zip(saved["params"], group["params"]))
        self.state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                p = id_map[k]
                self.state[p] = {key: _cast(p, key, value) for key, value in v.items()}
        for group, saved in zip(self.param_groups, saved_groups):
            params = group["params"]
            group.clear()
            group.update(saved)
            group["params"] = params

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k != "params")
        return "\n".join(lines) + "\n)"


def _cast(param, key, value):
    if key != "step" and isinstance(value, Tensor):
        if param.is_floating_point() and value.is_floating_point():
            return value.to(dtype=param.dtype, device=param.device)
        return value.to(device=param.device)
    return value
