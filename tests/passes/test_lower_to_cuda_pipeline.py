"""lower-to-cuda as a pipeline pass: its options reach its inner passes, and tm-opt runs
the inner passes as its own (so --print-between-passes and --time-passes see them)."""

from __future__ import annotations

from xdsl.passes import PassPipeline

from tmlir.ir.pipeline import expand_pipeline
from tmlir.passes.convert_graph_to_tm import ConvertGraphToTm
from tmlir.passes.graph_partition import GraphPartition
from tmlir.passes.lower_to_cuda import PIPELINE, LowerToCuda
from tmlir.registry import project_passes
from tmlir.tools.tm_opt import TmOptMain


def _names(passes) -> list[str]:
    return [p.name for p in passes]


def test_default_passes_are_the_default_pipeline():
    assert LowerToCuda().passes() == PIPELINE


def test_fusion_false_drops_graph_partition():
    """And graph-merge-matmuls, whose slices pay only when fused, and graph-fuse-attention
    (the unfused baseline keeps attention's three kernels)."""
    names = _names(LowerToCuda(fusion=False).passes())
    fused_only = ("graph-partition", "graph-merge-matmuls", "graph-fuse-attention")
    assert not set(fused_only) & set(names)
    assert names == [n for n in _names(PIPELINE) if n not in fused_only]
    fused = _names(PIPELINE)
    assert fused.index("graph-merge-matmuls") < fused.index("graph-fuse-attention") < fused.index("graph-partition")
    assert any(isinstance(p, GraphPartition) for p in LowerToCuda(fusion=True).passes())


def test_target_options_reach_convert_graph_to_tm():
    lower = LowerToCuda(target_device="h100", target_arch="sm_80", tuning_records="/tmp/r.jsonl")
    [convert] = [p for p in lower.passes() if isinstance(p, ConvertGraphToTm)]
    assert convert == ConvertGraphToTm("h100", "sm_80", "/tmp/r.jsonl")


def test_expand_pipeline_flattens_pipeline_passes_in_place():
    first, last = GraphPartition(), ConvertGraphToTm()
    flat = expand_pipeline([first, LowerToCuda(fusion=False), last])
    assert flat == (first, *LowerToCuda(fusion=False).passes(), last)


def test_tm_opt_expands_the_spec_with_its_options(tmp_path):
    source = tmp_path / "empty.mlir"
    source.write_text("builtin.module {}\n")
    spec = "lower-to-cuda{fusion=false target_device=h100 target_arch=sm_80},cse"
    driver = TmOptMain(args=[str(source), "-p", spec])
    passes = driver.pipeline.passes
    assert _names(passes) == [*_names(LowerToCuda(fusion=False).passes()), "cse"]
    [convert] = [p for p in passes if isinstance(p, ConvertGraphToTm)]
    assert (convert.target_device, convert.target_arch) == ("h100", "sm_80")
    assert isinstance(driver.pipeline, PassPipeline) and driver.pipeline.callback is not None


def test_lower_to_cuda_is_registered():
    assert project_passes()["lower-to-cuda"]() is LowerToCuda
