"""The ptx, cubin and report targets: what they compile, their options, their errors, and
how tm-opt writes binary output."""

from __future__ import annotations

import json
import shutil
import sys

import pytest
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

from tmlir.backends import ptx, ptx_targets
from tmlir.backends.ptx import KernelStats
from tmlir.backends.ptx_targets import (
    CubinTarget,
    PtxTarget,
    ReportTarget,
    TargetError,
    TargetOptionError,
    format_report,
    kernel_reports,
)
from tmlir.registry import make_context
from tmlir.tools.tm_opt import main as tm_opt

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
needs_nvrtc = pytest.mark.skipif(ptx.nvrtc_version() is None, reason="NVRTC does not load")

# One hand-written kernel, launched twice with different grids, and one never launched.
GPU = """
tmgpu.kernel @scale(%x: memref<256xf32>, %y: memref<256xf32>) block(64) attributes {
    tm.template = "elementwise", tm.params = {block = 64 : i64, expr = "x0*x0"}} {
  %tid = tmgpu.thread_id x
  %bid = tmgpu.block_id x
  %c64 = arith.constant 64 : index
  %n = arith.constant 256 : index
  %0 = arith.muli %bid, %c64 : index
  %i = arith.addi %0, %tid : index
  %in = arith.cmpi ult, %i, %n : index
  scf.if %in {
    %v = memref.load %x[%i] : memref<256xf32>
    %sq = arith.mulf %v, %v : f32
    memref.store %sq, %y[%i] : memref<256xf32>
  }
}

tmgpu.kernel @unused(%x: memref<256xf32>) block(32) {
  %tid = tmgpu.thread_id x
  %v = memref.load %x[%tid] : memref<256xf32>
  memref.store %v, %x[%tid] : memref<256xf32>
}

func.func @main(%x: memref<256xf32>, %y: memref<256xf32>) {
  tmgpu.launch @scale(%x, %y) grid(4) block(64) : memref<256xf32>, memref<256xf32>
  tmgpu.launch @scale(%y, %x) grid(2) block(64) : memref<256xf32>, memref<256xf32>
  tmgpu.launch @scale(%x, %y) grid(4) block(64) : memref<256xf32>, memref<256xf32>
  func.return
}
"""

GRAPH = """
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = graph.relu %x : tensor<4xf32>
  func.return %y : tensor<4xf32>
}
"""


def parse(text: str) -> ModuleOp:
    module = Parser(make_context(), text).parse_module()
    module.verify()
    return module


def emit(target, text: str = GPU) -> str:
    return ptx_targets.emit_text(target, make_context(), parse(text))


@pytest.fixture
def gpu_file(tmp_path):
    path = tmp_path / "gpu.mlir"
    path.write_text(GPU)
    return path


# ---- options -----------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [PtxTarget, CubinTarget, ReportTarget])
def test_a_misspelled_arch_is_refused_with_the_closest_one(cls) -> None:
    with pytest.raises(TargetOptionError, match=r"unknown arch 'sm90' for target '\w+'; did you mean 'sm_90'"):
        cls(arch="sm90")


def test_bad_compiler_and_format_name_the_valid_ones() -> None:
    with pytest.raises(TargetOptionError, match=r"unknown compiler 'gcc' .*\(valid: auto, nvrtc, nvcc\)"):
        PtxTarget(compiler="gcc")
    with pytest.raises(TargetOptionError, match=r"unknown format 'yaml' .*\(valid: table, json\)"):
        ReportTarget(format="yaml")


def test_arch_flag_sets_the_option_and_conflicts_are_one_line() -> None:
    from xdsl.utils.arg_spec import parse_spec

    target = ptx_targets.build_target(lambda: PtxTarget, parse_spec("ptx"), "sm_80")
    assert target == PtxTarget(arch="sm_80")
    same = ptx_targets.build_target(lambda: PtxTarget, parse_spec("ptx{arch=sm_80}"), "sm_80")
    assert same.arch == "sm_80"
    with pytest.raises(TargetOptionError, match=r"--arch sm_80 and -t ptx\{arch=sm_90\} disagree"):
        ptx_targets.build_target(lambda: PtxTarget, parse_spec("ptx{arch=sm_90}"), "sm_80")
    with pytest.raises(TargetOptionError, match="has no option 'arc'; did you mean 'arch'"):
        ptx_targets.build_target(lambda: PtxTarget, parse_spec("ptx{arc=sm_80}"), None)


# ---- the report, without a compiler -------------------------------------------------------


def test_report_rows_join_kernels_launch_shapes_and_ptxas_stats() -> None:
    program = ptx_targets.emit_cuda(parse(GPU))
    stats = {"scale": KernelStats(registers=12, spill_bytes=8, shared_bytes=0, local_bytes=16),
             "unused": KernelStats(registers=6, spill_bytes=0, shared_bytes=512, local_bytes=0)}
    reports = kernel_reports(program, stats)
    assert [(r.kernel, r.launches) for r in reports] == [("scale", ((4, 64), (2, 64))), ("unused", ())]
    lines = format_report(reports, len(program.launches), "sm_80").splitlines()
    assert lines[0].startswith("# ptxas -v for sm_80")
    assert lines[1].split() == ["kernel", "template", "grid", "x", "block", "regs", "spill", "B",
                                "smem", "B", "stack", "B", "parameters"]
    assert lines[2].split() == ["scale", "elementwise", "4", "x", "64,", "2", "x", "64", "12", "8",
                                "0", "16", "block=64,", "expr=x0*x0"]
    assert lines[3].split() == ["unused", "hand-written", "-", "6", "0", "512", "0", "-"]
    assert lines[4] == ("total: 2 kernels, 3 launches, max 12 registers, 8 B spilled, 512 B shared, "
                        "16 B stack")
    columns = zip(lines[1:4], ("template", "elementwise", "hand-written"), ("parameters", "block", "-"))
    starts = {(line.index(second), line.rindex(last)) for line, second, last in columns}
    assert len(starts) == 1  # fixed width: every row's columns start where the header's do


def test_a_kernel_ptxas_did_not_report_is_an_error() -> None:
    program = ptx_targets.emit_cuda(parse(GPU))
    with pytest.raises(TargetError, match="ptxas reported nothing for kernel 'unused'"):
        kernel_reports(program, {"scale": KernelStats(1, 0, 0, 0)})


# ---- compiling ----------------------------------------------------------------------------


@needs_nvrtc
def test_ptx_has_the_arch_and_every_kernel() -> None:
    text = emit(PtxTarget(arch="sm_80"))
    assert "\n.target sm_80\n" in text
    assert ptx.ptx_kernel_names(text) == ["scale", "unused"]


@needs_nvrtc
def test_report_json_has_the_launch_shapes_and_totals() -> None:
    data = json.loads(emit(ReportTarget(format="json")))
    assert data["arch"] == "sm_90"
    assert data["totals"]["kernels"] == 2 and data["totals"]["launches"] == 3
    scale = data["kernels"][0]
    assert scale["launches"] == [{"grid": 4, "block": 64}, {"grid": 2, "block": 64}]
    assert scale["params"] == {"block": 64, "expr": "x0*x0"}
    assert scale["registers"] > 0 and scale["spill_bytes"] == 0 and scale["shared_bytes"] == 0


@needs_nvrtc
def test_cubin_is_an_elf_file() -> None:
    data = CubinTarget(arch="sm_80").emit_binary(make_context(), parse(GPU))
    assert data[:4] == b"\x7fELF"
    assert b"scale" in data


@pytest.mark.parametrize("cls", [PtxTarget, ReportTarget])
def test_ir_above_the_gpu_level_says_to_lower_first(cls) -> None:
    with pytest.raises(TargetError, match=rf"^'graph.relu' is above the gpu level; run -p lower-to-cuda "
                                          rf"before -t {cls.name}$"):
        emit(cls(), GRAPH)


def test_a_compile_error_is_one_line_naming_the_target(monkeypatch) -> None:
    def fail(*args, **kwargs):
        raise ptx.CudaCompileError("NVRTC failed to compile program.cu for sm_90: error: bad",
                                   "program.cu(3): error: bad\n1 error detected")

    monkeypatch.setattr(ptx_targets, "compile_ptx", fail)
    with pytest.raises(TargetError) as info:
        emit(PtxTarget())
    assert str(info.value) == "-t ptx: NVRTC failed to compile program.cu for sm_90: error: bad"


def test_nvcc_missing_is_one_line(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("TMLIR_CACHE_DIR", str(tmp_path / "cache"))  # a cold cache: nvcc is needed
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    with pytest.raises(TargetError, match=r"^-t ptx: nvcc not found on PATH"):
        emit(PtxTarget(compiler="nvcc"))


# ---- tm-opt ---------------------------------------------------------------------------------


def test_cubin_to_a_terminal_is_refused(gpu_file, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert tm_opt([str(gpu_file), "-t", "cubin"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "tm-opt: error: -t cubin writes binary; give -o FILE\n"


@needs_nvrtc
def test_cubin_is_written_to_the_output_file(gpu_file, tmp_path) -> None:
    out = tmp_path / "gpu.cubin"
    assert tm_opt([str(gpu_file), "-t", "cubin", "--arch", "sm_80", "-o", str(out)]) == 0
    data = out.read_bytes()
    assert data[:4] == b"\x7fELF" and data == CubinTarget(arch="sm_80").emit_binary(
        make_context(), parse(GPU))


def test_arch_with_a_text_target_is_refused(gpu_file, capsys) -> None:
    assert tm_opt([str(gpu_file), "-t", "cuda", "--arch", "sm_80"]) == 1
    assert capsys.readouterr().err == ("tm-opt: error: --arch applies to -t ptx, cubin and report, "
                                       "not -t cuda\n")
    assert tm_opt([str(gpu_file), "-t", "ptx", "--arch", "sm_81"]) == 1
    assert "unknown arch 'sm_81' for target 'ptx'; did you mean" in capsys.readouterr().err


@needs_nvcc
def test_report_through_nvcc_has_the_same_rows() -> None:
    data = json.loads(emit(ReportTarget(format="json", compiler="nvcc")))
    assert [k["kernel"] for k in data["kernels"]] == ["scale", "unused"]
    assert all(k["registers"] > 0 and k["spill_bytes"] == 0 for k in data["kernels"])


def test_report_with_nvrtc_asked_for_but_missing_is_one_line(monkeypatch) -> None:
    monkeypatch.setattr(ptx, "nvrtc_version", lambda: None)
    with pytest.raises(TargetError, match=r"^-t report: NVRTC is not available"):
        emit(ReportTarget(compiler="nvrtc"))
