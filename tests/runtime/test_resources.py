"""Resource guards: a run needing more memory than is available is refused, one line, first."""

from __future__ import annotations

import numpy as np
import pytest
from models import make_model
from onnx import TensorProto, helper

import tmlir
from tmlir.runtime import resources
from tmlir.runtime.resources import ResourceError


def _big_output_model(rows: int, cols: int):
    """y = x broadcast to rows x cols (an output of rows*cols floats)."""
    shape = helper.make_tensor("s", TensorProto.INT64, [2], [rows, cols])
    nodes = [helper.make_node("Constant", [], ["s"], value=shape),
             helper.make_node("Expand", ["x", "s"], ["y"])]
    return make_model(nodes, {"x": [cols]}, {"y": [rows, cols]})


def test_a_variant_larger_than_available_memory_is_refused_before_allocating(monkeypatch) -> None:
    monkeypatch.setattr(resources, "host_available_bytes", lambda: 256 << 20)
    with pytest.raises(ResourceError) as info:
        tmlir.InferenceSession(_big_output_model(1 << 14, 1 << 14))  # a 1 GiB output
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("running this model needs 1.00 GiB of memory (outputs 1.00 GiB) "
                              "but only 0.25 GiB is available on this machine")


def test_the_guard_can_be_turned_off_and_small_models_pass(monkeypatch) -> None:
    monkeypatch.setattr(resources, "host_available_bytes", lambda: 1 << 20)
    monkeypatch.setenv(resources.GUARD_ENV, "0")
    session = tmlir.InferenceSession(_big_output_model(512, 1024))  # 2 MiB
    (y,) = session.run(None, {"x": np.arange(1024, dtype=np.float32)})
    assert y.shape == (512, 1024) and y[511, 1023] == 1023
    monkeypatch.delenv(resources.GUARD_ENV)
    monkeypatch.setattr(resources, "host_available_bytes", lambda: 1 << 30)
    tmlir.InferenceSession(_big_output_model(512, 1024))


def test_needed_bytes_counts_inputs_on_cuda_only() -> None:
    from tmlir.runtime.memory_plan import plan_memory
    from tmlir.runtime.session import compile_model

    program, _ = compile_model(_big_output_model(4, 8))
    plan = plan_memory(program)
    assert resources.needed_bytes(program, plan, "emu") == {"intermediate buffers": 0, "outputs": 128}
    assert resources.needed_bytes(program, plan, "cuda")["inputs"] == 32
    with pytest.raises(ResourceError, match="on the GPU"):
        resources.check_memory(program, plan, "cuda", available=100)
    assert resources.host_available_bytes() > 0
