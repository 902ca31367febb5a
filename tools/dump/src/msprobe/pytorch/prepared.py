"""What ``hooks.Hooks`` keeps between windows: each module's hooks, made once, and each model's hooks as
installing them needs them (``PreparedModel``), so that a window installs them in one loop."""
from __future__ import annotations

import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from msprobe.dump.calls import Call

OpenCalls = List[Tuple[Optional[Call], Any]]
"""A module's calls that began and have not ended (the call, and the ``gates.Before`` its backward entry
needs, or None), innermost last: a module may run inside itself"""


@dataclass
class ModuleHooks:
    """The hooks of one module at one path; registered again in every window (making the closures and their
    wrappers was much of what installing cost)."""

    path: str
    """The module's full entry path (prefix and ``named_modules`` path): hooks made for another are remade"""
    module: "weakref.ref"
    """The module, weakly: the hooks are kept in a weak dictionary keyed by it"""
    calls: OpenCalls
    """Shared with ``pre`` and ``post``; a window that ended inside a forward call leaves its call behind"""
    pre: Callable
    """``pre(module, args, kwargs)``, the forward pre-hook"""
    post: Callable
    """``post(module, args, kwargs, output)``, the forward hook"""
    owner: Tuple[str, str, str]
    """(prefix, path, class name) of ``{prefix}.{path}.{class}.parameters_grad``"""
    param_hooks: Dict[str, Callable] = field(default_factory=dict)
    """The gradient hook of each of its own parameters, by name, made at first need"""


@dataclass(frozen=True)
class ParameterHook:
    """One parameter's gradient hook, as a window registers it."""

    key: Tuple[int, str]
    """(id of its module, its name): a parameter is hooked once however often start() runs in a step"""
    parameter: "weakref.ref"
    """The plan's weak reference: a parameter dropped from the model is not kept alive"""
    hook: Callable
    """``hook(grad)``, returning None"""


@dataclass(frozen=True)
class PreparedModel:
    """Everything a window of one model (under one name prefix) installs, gathered once per ``ModelPlan``."""

    prefix: str
    """``"{i}."`` when start() got a list of models, else empty"""
    modules: List[ModuleHooks]
    """Its modules but the root, in ``named_modules`` order"""
    parameters: List[ParameterHook]
    """Their own parameters, in the same order"""
