"""The tensors inside nested inputs and outputs (tuples, lists, dicts), in a stable order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def leaves(obj: Any) -> list[torch.Tensor]:
    """Every tensor in `obj`, depth first; leaf i is the same slot across clones of `obj`."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in leaves(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in leaves(o)]
    return []


def map_tensors(obj: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """`obj` with every tensor replaced by fn(tensor), the structure kept."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, tuple):
        return tuple(map_tensors(o, fn) for o in obj)
    if isinstance(obj, list):
        return [map_tensors(o, fn) for o in obj]
    if isinstance(obj, dict):
        return {k: map_tensors(v, fn) for k, v in obj.items()}
    return obj


def clone_tree(obj: Any) -> Any:
    return map_tensors(obj, lambda t: t.clone())
