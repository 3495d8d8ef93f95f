"""`InferenceSession`'s runtime options on emu (memory plan, array interop), and the same
session on a GPU where there is one (CUDA graphs, device arrays, weights uploaded once)."""

from __future__ import annotations

import numpy as np
import pytest
from models import mlp, run_onnxruntime

import tmlir
from tmlir.backends.cuda_runtime import cuda_available

HAVE_GPU = cuda_available()


def gpu_test(fn):
    """Mark `fn` as needing a CUDA GPU and skip it where there is none."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAVE_GPU, reason="no CUDA GPU")(fn))


MODEL = mlp(4, (32, 64, 64, 64, 8))


def feed(seed: int = 0) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((4, 32)).astype(np.float32)}


class HostDLPack:
    """A CPU array seen only through the DLPack protocol (as a torch CPU tensor is)."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class FakeCudaArray:
    """An object claiming CUDA memory through ``__cuda_array_interface__``."""

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"version": 3, "shape": (4, 32), "typestr": "<f4", "data": (0x1000, False),
                "strides": None, "stream": None}


def test_memory_plan_keeps_outputs_and_reports_its_saving():
    planned = tmlir.InferenceSession(MODEL, device="emu")
    unplanned = tmlir.InferenceSession(MODEL, device="emu", memory_plan=False)
    np.testing.assert_array_equal(planned.run(None, feed())[0], unplanned.run(None, feed())[0])
    report, plain = planned.memory_report(), unplanned.memory_report()
    assert report["device"] == "emu" and report["reuse"] and not plain["reuse"]
    assert report["temps"] == plain["temps"] == 3  # three hidden layers' activations
    assert report["peak_bytes"] < report["no_reuse_bytes"] == plain["peak_bytes"]
    assert report["weight_bytes"] == 4 * sum(np.prod(w.dims) for w in MODEL.graph.initializer)


def test_memory_report_of_a_dynamic_model_waits_for_a_run():
    from models import dynamic_mlp

    session = tmlir.InferenceSession(dynamic_mlp(), device="emu")
    with pytest.raises(tmlir.SessionError, match="has not run yet"):
        session.memory_report()


def test_host_dlpack_inputs_run_without_a_copy_on_emu():
    session = tmlir.InferenceSession(MODEL, device="emu")
    x = feed()["x"]
    (got,) = session.run(None, {"x": HostDLPack(x)}, device_outputs=True)
    assert isinstance(got, np.ndarray)  # emu's memory is host memory
    np.testing.assert_allclose(got, run_onnxruntime(MODEL, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_cuda_arrays_are_refused_on_emu_in_one_line():
    session = tmlir.InferenceSession(MODEL, device="emu")
    with pytest.raises(tmlir.SessionError,
                       match=r"^input 'x': a CUDA array, but the session runs on 'emu'"):
        session.run(None, {"x": FakeCudaArray()})


def test_bad_interop_inputs_name_the_input():
    session = tmlir.InferenceSession(MODEL, device="emu")
    strided = dict(FakeCudaArray().__cuda_array_interface__, strides=(4, 16))
    bad = type("Strided", (), {"__cuda_array_interface__": strided})()
    with pytest.raises(tmlir.SessionError, match=r"^input 'x': a non-contiguous array"):
        session.run(None, {"x": bad})


@gpu_test
@pytest.mark.parametrize("graphs", [True, False], ids=["graphs", "launches"])
def test_cuda_matches_emu(graphs):
    emu = tmlir.InferenceSession(MODEL, device="emu")
    cuda = tmlir.InferenceSession(MODEL, device="cuda", cuda_graphs=graphs)
    for seed in range(3):  # replays see each new input
        np.testing.assert_allclose(cuda.run(None, feed(seed))[0], emu.run(None, feed(seed))[0],
                                   rtol=1e-5, atol=1e-6)
    weights = len(cuda._cuda[0].buffers)
    cuda.run(None, feed())
    assert len(cuda._cuda[0].buffers) == weights  # uploaded once, not per run


@gpu_test
def test_torch_and_cupy_arrays_in_and_out():
    torch = pytest.importorskip("torch")
    cupy = pytest.importorskip("cupy")
    cuda = tmlir.InferenceSession(MODEL, device="cuda")
    want = tmlir.InferenceSession(MODEL, device="emu").run(None, feed())[0]
    x = torch.from_numpy(feed()["x"]).cuda() * 1.0  # queued on torch's stream
    (out,) = cuda.run(None, {"x": x}, device_outputs=True)
    as_torch = torch.from_dlpack(out)
    assert as_torch.is_cuda and tuple(as_torch.shape) == (4, 8)
    np.testing.assert_allclose(as_torch.cpu().numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cupy.asnumpy(cupy.asarray(out)), want, rtol=1e-5, atol=1e-6)
    (again,) = cuda.run(None, {"x": cupy.asarray(feed()["x"])})
    np.testing.assert_allclose(again, want, rtol=1e-5, atol=1e-6)


@gpu_test
def test_each_input_shape_gets_its_own_graph():
    from models import dynamic_mlp

    model = dynamic_mlp()
    cuda = tmlir.InferenceSession(model, device="cuda")
    for n in (2, 5, 2):
        x = np.random.default_rng(n).standard_normal((n, 8)).astype(np.float32)
        np.testing.assert_allclose(cuda.run(None, {"x": x})[0],
                                   run_onnxruntime(model, {"x": x})[0], rtol=1e-4, atol=1e-5)
    assert len(cuda._variants) == 2
