"""The tensors inside nested inputs and outputs (tuples, lists, dicts), in a stable order, and the
JSON form in which such a tree crosses to the solution process (each tensor a shared buffer)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the storages of `a` and `b` overlap (a view of either, or the same buffer); meta
    tensors and tensors on different devices share nothing."""
    if a.device != b.device or a.device.type == "meta":
        return False
    sa, sb = a.untyped_storage(), b.untyped_storage()
    lo_a, lo_b = sa.data_ptr(), sb.data_ptr()
    return lo_a < lo_b + sb.nbytes() and lo_b < lo_a + sa.nbytes()


def leaves(obj: Any) -> list[torch.Tensor]:
    """Every tensor in `obj`, depth first; leaf i is the same slot across clones of `obj`."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (tuple, list)):
        return [t for o in obj for t in leaves(o)]
    if isinstance(obj, dict):
        return [t for o in obj.values() for t in leaves(o)]
    return []


def tensor_list(value: Any) -> list[torch.Tensor] | None:
    """A call's or a reference's result as a list of tensors: a tensor, or a non-empty tuple or
    list of them; None for anything else."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return list(value)
    return None


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


def encode(obj: Any, place: Callable[[torch.Tensor], int]) -> Any:
    """`obj` as JSON for the solution process: each tensor replaced by {"buffer": place(tensor)},
    containers kept, plain values as they are (TypeError for anything else)."""
    if isinstance(obj, torch.Tensor):
        return {"buffer": place(obj)}
    if isinstance(obj, (tuple, list)):
        return {type(obj).__name__: [encode(o, place) for o in obj]}
    if isinstance(obj, dict):
        return {"dict": [[k, encode(v, place)] for k, v in obj.items()]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"value": obj}
    raise TypeError(f"an input of type {type(obj).__name__} cannot cross to the solution process")


def decode(tree: Any, lookup: Callable[[int], torch.Tensor]) -> Any:
    """The inverse of `encode`, with each buffer id turned into a tensor by `lookup`."""
    ((kind, body),) = tree.items()
    if kind == "buffer":
        return lookup(int(body))
    if kind == "tuple":
        return tuple(decode(b, lookup) for b in body)
    if kind == "list":
        return [decode(b, lookup) for b in body]
    if kind == "dict":
        return {k: decode(v, lookup) for k, v in body}
    if kind == "value":
        return body
    raise ValueError(f"unknown tree node {kind!r}")
