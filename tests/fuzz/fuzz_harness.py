"""Run one ONNX model on tmlir's emu backend and on onnxruntime, and classify the outcome.

Outcome kinds:

- ``pass``: same outputs (shape, dtype, values within the dtype's tolerance);
- ``wrong``: tmlir ran but an output differs;
- ``crash``: tmlir raised an exception outside `one_line_errors` (a compiler bug);
- ``refused``: tmlir refused the model with one of its one-line errors (a valid model of
  supported ops: still a finding, unless the message names a documented limitation);
- ``unclear``: a refusal whose message is empty or longer than one line;
- ``ort``: onnxruntime itself refused or failed (the model is not a test of tmlir).
"""

from __future__ import annotations

import traceback
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx

import tmlir
from tmlir.tools.onnx_node_tests import compare_outputs, one_line_errors

#: (rtol, atol) per output dtype; atol is scaled by the output's largest finite magnitude
#: (at least 1). Integers and booleans compare exactly.
TOLERANCES = {np.dtype(np.float32): (1e-3, 1e-4), np.dtype(np.float16): (1e-2, 1e-2),
              np.dtype(np.float64): (1e-6, 1e-8)}


@dataclass(frozen=True)
class Outcome:
    """What happened to one model."""

    kind: str
    detail: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}" if self.detail else self.kind


def run_onnxruntime(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime

    onnxruntime.set_default_logger_severity(4)
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    session = onnxruntime.InferenceSession(model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    return session.run(None, feed)


def compare(got: list[np.ndarray], want: list[np.ndarray], names: list[str]) -> str | None:
    """None when every output matches within its dtype's tolerance, else why not."""
    if len(got) != len(want):
        return f"expected {len(want)} outputs, got {len(got)}"
    for name, g, w in zip(names, got, want):
        w = np.asarray(w)
        rtol, atol = TOLERANCES.get(w.dtype, (0.0, 0.0))
        finite = np.abs(w[np.isfinite(w)]) if w.dtype.kind == "f" else np.zeros(0)
        scale = max(1.0, float(finite.max())) if finite.size else 1.0
        reason = compare_outputs([g], [w], [name], rtol, atol * scale)
        if reason is not None:
            return reason
    return None


def _crash(exc: BaseException) -> str:
    package = Path(tmlir.__file__).resolve().parent
    frames = traceback.extract_tb(exc.__traceback__)
    ours = [f for f in frames if Path(f.filename).resolve().is_relative_to(package)] or frames
    where = f" (at {Path(ours[-1].filename).name}:{ours[-1].lineno})" if ours else ""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}{where}"


def run_case(model: onnx.ModelProto, feed: dict[str, np.ndarray]) -> Outcome:
    """Run `model` on onnxruntime and on tmlir's emu backend; never raises."""
    names = [o.name for o in model.graph.output]
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            want = run_onnxruntime(model, feed)
        except Exception as exc:  # noqa: BLE001
            return Outcome("ort", str(exc).strip().splitlines()[0][:300])
        try:
            session = tmlir.InferenceSession(model.SerializeToString(), device="emu")
            got = session.run(None, feed)
        except one_line_errors() as exc:
            message = str(exc).strip()
            return Outcome("refused" if message and "\n" not in message else "unclear",
                           f"{type(exc).__name__}: {message}")
        except Exception as exc:  # noqa: BLE001 -- any other exception is a crash
            return Outcome("crash", _crash(exc))
    reason = compare(got, want, names)
    return Outcome("pass") if reason is None else Outcome("wrong", reason)
