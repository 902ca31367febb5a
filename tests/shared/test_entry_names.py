"""entry_kind, the one-match classifier compare runs over every entry of a rank, says what parse_entry says."""
from hypothesis import given, settings
from hypothesis import strategies as st

from msprobe.schema.names import entry_kind, try_parse_entry

_TOKENS = st.sampled_from(["Module", "Cell", "Functional", "Tensor", "Torch", "Debug", "layers", "0", "12", "mlp",
                           "Linear", "forward", "backward", "parameters_grad", "__add__", "x", "", "forward\n", "_a"])


def _expected(name: str):
    parsed = try_parse_entry(name)
    return ("other", None) if parsed is None else (parsed.kind, parsed.direction)


@settings(max_examples=3000, deadline=None)
@given(st.lists(_TOKENS, min_size=1, max_size=7))
def test_entry_kind_agrees_with_parse_entry(parts):
    name = ".".join(parts)
    assert entry_kind(name) == _expected(name)


def test_entry_kind_of_each_shape():
    assert entry_kind("Functional.linear.5.backward") == ("api", "backward")
    assert entry_kind("Module.layers.0.mlp.Linear.forward.3") == ("module", "forward")
    assert entry_kind("Cell.net.Dense.parameters_grad") == ("parameters_grad", None)
    assert entry_kind("Module.fc.Linear.parameters_grad.2") == ("parameters_grad", None)
    assert entry_kind("Functional.linear.5.forward\n") == ("other", None)
    assert entry_kind("nonsense") == ("other", None)
