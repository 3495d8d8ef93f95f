"""Progress bars: on a terminal (or when asked) after a delay, never in pipes and logs."""

from __future__ import annotations

import io

import pytest

from tmlir import progress as progress_module
from tmlir.progress import enabled, progress


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_bars_follow_the_terminal_and_the_environment(monkeypatch) -> None:
    monkeypatch.delenv(progress_module.PROGRESS_ENV, raising=False)
    monkeypatch.setattr("sys.stderr", io.StringIO())
    assert not enabled()
    items = [1, 2, 3]
    assert progress(items, "x") is items  # untouched: no bar, no cost
    monkeypatch.setattr("sys.stderr", _Terminal())
    assert enabled()
    monkeypatch.setenv(progress_module.PROGRESS_ENV, "0")
    assert not enabled()
    monkeypatch.setattr("sys.stderr", io.StringIO())
    monkeypatch.setenv(progress_module.PROGRESS_ENV, "1")
    assert enabled()


@pytest.mark.parametrize("delay, shown", [(0.0, True), (60.0, False)])
def test_a_bar_appears_only_after_the_delay(monkeypatch, delay: float, shown: bool) -> None:
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(progress_module, "DELAY", delay)
    assert list(progress(range(5), "importing ONNX nodes", 5, "node")) == list(range(5))
    assert ("importing ONNX nodes" in err.getvalue()) is shown


def test_a_compile_and_run_show_their_stages(monkeypatch) -> None:
    from models import mlp

    import tmlir

    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(progress_module, "DELAY", 0.0)
    monkeypatch.setenv("TMLIR_COMPILE_CACHE", "0")
    import numpy as np

    session = tmlir.InferenceSession(mlp(2, [4, 3]))
    session.run(None, {"x": np.ones((2, 4), np.float32)})
    text = err.getvalue()
    for stage in ("importing ONNX nodes", "lower-to-cuda", "running on emu"):
        assert stage in text


SPIN = """
extern "C" __global__ void spin(float* out, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += 1e-7f * float(i % 7);
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


def test_a_long_launch_shows_its_blocks(monkeypatch) -> None:
    import numpy as np

    from tmlir.backends.emu import compile_emu, emu
    from tmlir.backends.kernel_abi import KernelParam, KernelSignature

    module = compile_emu(SPIN, [KernelSignature("spin", (KernelParam("out", "float*"),
                                                         KernelParam("n", "int")))])
    err = _Terminal()
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr(progress_module, "DELAY", 0.0)
    monkeypatch.setattr(emu._LaunchProgress, "POLL", 0.01)
    out = np.zeros(64 * 32, np.float32)
    module.launch("spin", 64, 32, [out, 20000])
    assert "kernel spin" in err.getvalue() and "block" in err.getvalue()
    assert out[0] > 0
    monkeypatch.setenv(progress_module.PROGRESS_ENV, "0")  # off: no thread, no output
    err.seek(0), err.truncate()
    module.launch("spin", 64, 32, [out, 10])
    assert err.getvalue() == ""
