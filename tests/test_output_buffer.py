"""output_buffer: which inputs a destination-passing reference treats as its outputs."""

from __future__ import annotations

import torch

from rung.judge.formats.output_buffer import designated_outputs


def _vectors() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(64, generator=g), torch.randn(64, generator=g), torch.empty(64)


def test_a_buffer_the_reference_writes_and_returns_is_an_output():
    def ref(data):
        a, b, out = data
        out.copy_(a + b)
        return out

    assert designated_outputs(ref, _vectors()) == {2}


def test_a_buffer_the_reference_ignores_while_returning_its_shape_is_an_output():
    def ref(data):  # GPU MODE's matmul and conv2d: a new tensor, the buffer untouched
        a, b, _ = data
        return a + b

    assert designated_outputs(ref, _vectors()) == {2}


def test_a_buffer_of_another_dtype_the_reference_ignores_is_an_output():
    def ref(data):  # GPU MODE's prefixsum: a float64 answer for a float32 buffer
        x, _ = data
        return x.double().cumsum(0)

    x = torch.randn(16)
    assert designated_outputs(ref, (x, torch.empty(16))) == {1}


def test_inputs_the_answer_depends_on_are_never_outputs_whatever_their_shape():
    def ref(data):
        a, b, c = data
        return a + b * c  # every leaf read: none is a buffer

    assert designated_outputs(ref, _vectors()) == set()


def test_an_input_the_reference_itself_scales_in_place_and_returns_is_an_output():
    def ref(data):
        x, s = data
        x.mul_(s)  # in place, by the problem's own contract
        return x[:]

    assert designated_outputs(ref, (torch.randn(8), torch.tensor([2.0]))) == {0}


def test_the_judges_inputs_are_left_as_drawn():
    a, b, out = _vectors()
    out.fill_(7.0)

    def ref(data):
        x, y, o = data
        o.copy_(x + y)
        return o

    designated_outputs(ref, (a, b, out))
    assert bool((out == 7.0).all())
