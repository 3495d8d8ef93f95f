"""Attention alone: tmlir's fused kernel against torch's ``scaled_dot_product_attention``.

    python benchmarks/attention.py --dry-run                    # no GPU: bytes, estimates, emu check
    python benchmarks/attention.py --out /tmp/attention.json    # on a GPU

The layer is ``softmax(Q Kᵀ / sqrt(d)) V`` at batch 1, 12 heads of 64 (BERT-base's), for
each sequence length in --seqs (default 128 512 2048), written as exporters write it: an
ONNX graph of MatMul, Mul, Softmax, MatMul with K given transposed (``[1, 12, 64, S]``),
which ``graph-fuse-attention`` turns into one ``graph.attention`` and the ``attention``
template into one kernel. --precision fp32 (f32 tensors; torch with TF32 off) or fp16
(f16 tensors on both sides; torch's flash/efficient kernels).

Without a GPU (--dry-run) it compiles each length fused and unfused (``fusion=False``: the
QKᵀ matmul, the softmax and the PV matmul, the score matrix in global memory) for sm_90
and records, from the cost report on --gpu (default H200), the launches, the global bytes
read and written and the latency model's estimate of each, and the fused/unfused byte
ratio; then runs the fused kernel on emu at a small size (2 heads, seq 96, d 64) against
float64 numpy. On a GPU it also times both sides on CUDA tensors with CUDA graphs (tmlir's
session replays one; torch's SDPA call is captured in a ``torch.cuda.CUDAGraph``), the
median of --runs, checks tmlir's output against torch's, and prints the ratio. Every result
records the machine, the date and the versions; writes --out (default
benchmarks/results/attention_<precision>[_dry_run].json).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks" / "gpu"))
HEADS, HEAD_DIM = 12, 64
ELEMENTS = {"fp32": (TensorProto.FLOAT, np.float32), "fp16": (TensorProto.FLOAT16, np.float16)}


def attention_model(seq: int, precision: str, heads: int = HEADS, head_dim: int = HEAD_DIM) -> onnx.ModelProto:
    """``softmax(q @ kt * (1 / sqrt(d))) @ v`` with q, v ``[1, H, S, d]`` and kt ``[1, H, d, S]``."""
    element, numpy_type = ELEMENTS[precision]
    q, kt, v = ([1, heads, seq, head_dim], [1, heads, head_dim, seq], [1, heads, seq, head_dim])
    scale = helper.make_tensor("scale", element, [], np.array(1 / math.sqrt(head_dim), numpy_type).tobytes(),
                               raw=True)
    nodes = [helper.make_node("MatMul", ["q", "kt"], ["scores"]),
             helper.make_node("Mul", ["scores", "scale"], ["scaled"]),
             helper.make_node("Softmax", ["scaled"], ["p"], axis=-1),
             helper.make_node("MatMul", ["p", "v"], ["out"])]
    graph = helper.make_graph(nodes, f"attention_{seq}",
                              [helper.make_tensor_value_info(n, element, s) for n, s in (("q", q), ("kt", kt), ("v", v))],
                              [helper.make_tensor_value_info("out", element, [1, heads, seq, head_dim])], [scale])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def inputs(seq: int, precision: str, heads: int = HEADS, head_dim: int = HEAD_DIM, seed: int = 0
           ) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    numpy_type = ELEMENTS[precision][1]
    return {"q": rng.standard_normal((1, heads, seq, head_dim)).astype(numpy_type),
            "kt": rng.standard_normal((1, heads, head_dim, seq)).astype(numpy_type),
            "v": rng.standard_normal((1, heads, seq, head_dim)).astype(numpy_type)}


def reference(feed: dict[str, np.ndarray]) -> np.ndarray:
    q, kt, v = (feed[n].astype(np.float64) for n in ("q", "kt", "v"))
    scores = q @ kt / math.sqrt(q.shape[-1])
    p = np.exp(scores - scores.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def costs(seq: int, precision: str, gpu: str) -> dict[str, Any]:
    """Launches, global bytes and the latency model's estimate, fused and unfused."""
    from kernel_costs import model_cost

    from tmlir.frontends.onnx import import_onnx
    from tmlir.passes.lower_to_cuda import LowerToCuda
    from tmlir.registry import make_context

    result: dict[str, Any] = {}
    for fused in (True, False):
        imported = import_onnx(attention_model(seq, precision), source=f"attention_{seq}")
        LowerToCuda(fusion=fused, target_arch="sm_90", target_device=gpu).apply(
            make_context(weights=imported.weights), imported.module)
        report, registers = model_cost(imported.module, gpu)
        result["fused" if fused else "unfused"] = {
            "launches": len(report.launches), "templates": [k.template for k in report.launches],
            "bytes_read": sum(k.bytes_read for k in report.launches),
            "bytes_written": sum(k.bytes_written for k in report.launches),
            "roofline_us": round(report.seconds * 1e6, 2), "estimate_us": round(report.estimate_seconds * 1e6, 2),
            "registers": registers}
    moved = {k: v["bytes_read"] + v["bytes_written"] for k, v in result.items()}
    result["bytes_ratio"] = round(moved["unfused"] / moved["fused"], 2)
    return result


def emu_check(precision: str) -> dict[str, Any]:
    """The fused kernel on emu at 2 heads, seq 96, d 64 against float64 numpy."""
    import tmlir

    feed = inputs(96, precision, heads=2)
    session = tmlir.InferenceSession(attention_model(96, precision, heads=2), device="emu")
    templates = [k.template for k in session.program.kernels]
    (out,) = session.run(None, feed)
    want = reference(feed)
    error = float(np.abs(out.astype(np.float64) - want).max() / np.abs(want).max())
    return {"shape": "1x2x96x64", "templates": templates, "max_rel": error,
            "agree": error < (2e-3 if precision == "fp16" else 1e-5)}


def gpu_times(seq: int, precision: str, runs: int) -> dict[str, Any]:
    """tmlir's session (CUDA graphs) and torch's SDPA (captured in a CUDA graph)."""
    import torch
    import torch.nn.functional as F
    from common import latency, relative_error

    import tmlir

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    feed = {k: torch.from_numpy(v).cuda() for k, v in inputs(seq, precision).items()}
    start = time.perf_counter()
    session = tmlir.InferenceSession(attention_model(seq, precision), device="cuda", cuda_graphs=True)
    compile_seconds = time.perf_counter() - start
    (out,) = session.run(None, feed, device_outputs=True)
    torch.cuda.synchronize()
    ours = torch.from_dlpack(out).clone()
    q, k, v = feed["q"], feed["kt"].transpose(-1, -2).contiguous(), feed["v"]
    static_out = F.scaled_dot_product_attention(q, k, v)
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(3):  # warm-up outside the capture, as torch's docs ask
            F.scaled_dot_product_attention(q, k, v)
    torch.cuda.current_stream().wait_stream(stream)
    with torch.cuda.graph(graph):
        static_out = F.scaled_dot_product_attention(q, k, v)
    graph.replay()
    torch.cuda.synchronize()
    tmlir_ms = latency(lambda: session.run(None, feed, device_outputs=True), torch.cuda.synchronize, runs)
    torch_ms = latency(graph.replay, torch.cuda.synchronize, runs)
    return {"compile_seconds": round(compile_seconds, 2), "vs_torch": relative_error(ours.float(), static_out.float()),
            "tmlir": tmlir_ms, "torch_sdpa": torch_ms,
            "ratio": round(tmlir_ms["median_ms"] / torch_ms["median_ms"], 3)}


def versions() -> dict[str, str]:
    out = {}
    for name in ("xdsl", "onnx", "numpy", "nvidia-cuda-nvrtc", "torch"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            out[name] = "not installed"
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seqs", type=int, nargs="*", default=[128, 512, 2048])
    parser.add_argument("--precision", choices=tuple(ELEMENTS), default="fp16")
    parser.add_argument("--gpu", default="H200", help="the latency model's GPU for the estimates")
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--dry-run", action="store_true", help="no GPU: costs and the emu check only")
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    suffix = "_dry_run" if args.dry_run else ""
    out = args.out or ROOT / "benchmarks" / "results" / f"attention_{args.precision}{suffix}.json"
    result: dict[str, Any] = {
        "benchmark": "attention", "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "versions": versions(), "precision": args.precision, "heads": HEADS, "head_dim": HEAD_DIM,
        "estimates_for": args.gpu, "dry_run": args.dry_run, "seqs": {}}
    result["emu_check"] = emu_check(args.precision)
    print(f"emu {result['emu_check']}")
    for seq in args.seqs:
        entry: dict[str, Any] = {"costs": costs(seq, args.precision, args.gpu)}
        c = entry["costs"]
        print(f"seq {seq}: fused {c['fused']['launches']} launch(es), {c['fused']['estimate_us']} µs est.; "
              f"unfused {c['unfused']['launches']}, {c['unfused']['estimate_us']} µs est.; "
              f"{c['bytes_ratio']}x fewer bytes fused")
        if not args.dry_run:
            entry["gpu"] = gpu_times(seq, args.precision, args.runs)
            g = entry["gpu"]
            print(f"    tmlir {g['tmlir']['median_ms']:.4f} ms, torch SDPA {g['torch_sdpa']['median_ms']:.4f} ms "
                  f"({g['ratio']}x), max rel vs torch {g['vs_torch']['max_rel']:.2e}")
        result["seqs"][str(seq)] = entry
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")


if __name__ == "__main__":
    main()
