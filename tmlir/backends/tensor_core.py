"""Tensor-core warp primitives for generated CUDA C: mma.sync, ldmatrix and cp.async.

Generated CUDA C calls device functions named ``tmlir_mma_m16n8k16_f16``,
``tmlir_ldmatrix_x4_trans``, ``tmlir_cp_async<16>``, ``tmlir_cp_async_zfill<16>``, ... (the contract and the fragment
layouts are in docs/tensor_cores.md). `prelude_for(source)` gives the definitions that a
source calls, by name, and nothing else -- as `cuda_types.prelude` does for ``tm_half`` --
so a kernel without tensor cores is unchanged. Each definition is inline PTX for sm_80+
(no CCCL headers, no ``<mma.h>``) inside ``#ifndef TMLIR_EMU``: the emu backend compiles
the same text and takes its definitions from ``emu/tmlir_emu_tc.h`` instead, where they
are warp-collective emulations. For example::

    prelude_for("tmlir_cp_async<16>(s, g); tmlir_cp_async_commit(); ...")

returns the three cp.async definitions wrapped in one ``#ifndef TMLIR_EMU`` block.
`tensor_core_call` is the other side: the CUDA printer's call of a primitive for a
``tmgpu`` tensor-core op. Hopper's primitives (wgmma, mbarriers, bulk copies) are defined
in tmlir.backends.hopper; `prelude_for` includes them the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from xdsl.ir import Attribute, Operation, SSAValue

from tmlir.backends import hopper
from tmlir.dialects import tmgpu

_MMA = """\
__device__ __forceinline__ void tmlir_mma_m16n8k16_{ab}(float d[4], const unsigned a[4], const unsigned b[2],
                                                        const float c[4]) {{
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.{ab}.{ab}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, "
               "{{%8, %9}}, {{%10, %11, %12, %13}};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}}
"""

_MMA_TF32 = """\
__device__ __forceinline__ unsigned tmlir_tf32_rna(unsigned x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}
__device__ __forceinline__ void tmlir_mma_m16n8k8_tf32(float d[4], const unsigned a[4], const unsigned b[2],
                                                       const float c[4]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
               "{%8, %9}, {%10, %11, %12, %13};"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(tmlir_tf32_rna(a[0])), "r"(tmlir_tf32_rna(a[1])), "r"(tmlir_tf32_rna(a[2])),
                 "r"(tmlir_tf32_rna(a[3])), "r"(tmlir_tf32_rna(b[0])), "r"(tmlir_tf32_rna(b[1])),
                 "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
"""


def _ldmatrix(count: int, trans: bool) -> str:
    suffix, qualifier = ("_trans", ".trans") if trans else ("", "")
    regs = ", ".join(f"%{i}" for i in range(count))
    outs = ", ".join(f'"=r"(r[{i}])' for i in range(count))
    return (f"__device__ __forceinline__ void tmlir_ldmatrix_x{count}{suffix}(unsigned r[{count}], "
            "const void* row) {\n"
            f'  asm volatile("ldmatrix.sync.aligned.m8n8.x{count}{qualifier}.shared.b16 {{{regs}}}, '
            f'[%{count}];"\n'
            f"               : {outs}\n"
            '               : "r"((unsigned)__cvta_generic_to_shared(row)) : "memory");\n}\n')


_CP_ASYNC = """\
template <int BYTES> __device__ __forceinline__ void tmlir_cp_async(void* smem_dst, const void* gmem_src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem_dst);
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" :: "r"(dst), "l"(gmem_src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" :: "r"(dst), "l"(gmem_src), "n"(BYTES) : "memory");
}
"""
# src-size (PTX's fourth operand): BYTES copies the source, 0 reads nothing and writes BYTES
# zeros; either way the write is part of the async copy. `gmem_src` must still be an address
# inside the buffer (templates pass a clamped one); it is not read when `copy` is false.
_CP_ASYNC_ZFILL = """\
template <int BYTES> __device__ __forceinline__ void tmlir_cp_async_zfill(void* smem_dst, const void* gmem_src,
                                                                         bool copy) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  const unsigned dst = (unsigned)__cvta_generic_to_shared(smem_dst), src_size = copy ? BYTES : 0;
  if (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(gmem_src), "r"(src_size)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;" :: "r"(dst), "l"(gmem_src), "n"(BYTES),
                 "r"(src_size) : "memory");
}
"""
_CP_ASYNC_COMMIT = """\
__device__ __forceinline__ void tmlir_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
"""
_CP_ASYNC_WAIT = """\
template <int N> __device__ __forceinline__ void tmlir_cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory");
}
"""

#: GPU definition of every primitive, by the name generated code calls, in prelude order.
DEFINITIONS: dict[str, str] = {
    "tmlir_mma_m16n8k16_f16": _MMA.format(ab="f16"),
    "tmlir_mma_m16n8k16_bf16": _MMA.format(ab="bf16"),
    "tmlir_mma_m16n8k8_tf32": _MMA_TF32,
    **{f"tmlir_ldmatrix_x{n}{'_trans' if t else ''}": _ldmatrix(n, t)
       for t in (False, True) for n in (1, 2, 4)},
    "tmlir_cp_async": _CP_ASYNC,
    "tmlir_cp_async_zfill": _CP_ASYNC_ZFILL,
    "tmlir_cp_async_commit": _CP_ASYNC_COMMIT,
    "tmlir_cp_async_wait": _CP_ASYNC_WAIT,
}

#: Every primitive: these and Hopper's (tmlir.backends.hopper), in prelude order.
ALL_DEFINITIONS: dict[str, str] = {**DEFINITIONS, **hopper.DEFINITIONS}

_HEADER = ("// Tensor-core primitives (tmlir/backends/tensor_core.py, hopper.py): inline PTX for sm_80+\n"
           "// (Hopper's for sm_90/sm_90a); the emu defines them itself (tmlir_emu_tc.h, tmlir_emu_hopper.h).\n"
           "#ifndef TMLIR_EMU\n")


def used_primitives(source: str) -> list[str]:
    """The names of `ALL_DEFINITIONS` that `source` mentions as whole identifiers, in prelude order."""
    return [name for name in ALL_DEFINITIONS if re.search(rf"\b{name}\b", source)]


def prelude_for(source: str) -> str:
    """The definitions of the primitives `source` uses, in one ``#ifndef TMLIR_EMU`` block
    (after an ``#error`` for device archs that lack a Hopper one it uses); empty if it uses
    none."""
    used = used_primitives(source)
    if not used:
        return ""
    return (_HEADER + hopper.arch_guards(used) + "".join(ALL_DEFINITIONS[name] for name in used)
            + "#endif  // TMLIR_EMU\n")


def tensor_core_call(op: Operation, access: Callable[[SSAValue, Sequence[SSAValue]], str],
                     c_type: Callable[[Attribute], str], expr: Callable[[SSAValue], str] | None = None) -> str:
    """The CUDA C statement calling the primitive a ``tmgpu`` tensor-core op stands for
    (tmlir.ir.tensor_core_ops), with the printer's `access` (a buffer at indices as C text),
    `c_type` and `expr` (a scalar value as C text: a cp_async's zfill condition): a fragment
    is its C array (``acc[mi][ni]`` for one of an array of them), word fragments pass as
    ``unsigned*``; shared and global operands by address."""

    def words(buffer: SSAValue, indices, const: bool = True) -> str:
        array = access(buffer, indices)
        if c_type(buffer.type.element_type) == "unsigned int":
            return array
        return f"({'const ' if const else ''}unsigned*){array}"

    match op:
        case tmgpu.MmaOp():
            return (f"tmlir_mma_{op.shape.data}_{op.dtype.data}({access(op.d, op.d_indices)}, "
                    f"{words(op.a, op.a_indices)}, {words(op.b, op.b_indices)}, "
                    f"{access(op.c, op.c_indices)});")
        case tmgpu.LdmatrixOp():
            suffix = "_trans" if op.trans is not None else ""
            return (f"tmlir_ldmatrix_x{op.num.data}{suffix}({words(op.frag, op.frag_indices, False)}, "
                    f"&{access(op.smem, op.smem_indices)});")
        case tmgpu.CpAsyncOp():
            addresses = f"&{access(op.dst, op.dst_indices)}, &{access(op.src, op.src_indices)}"
            if op.inside is None:
                return f"tmlir_cp_async<{op.bytes.data}>({addresses});"
            assert expr is not None, "a zero-filling cp_async needs the printer's expressions"
            condition = expr(op.inside)
            if condition.startswith("(") and condition.endswith(")") and condition.count("(") == 1:
                condition = condition[1:-1]
            return f"tmlir_cp_async_zfill<{op.bytes.data}>({addresses}, {condition});"
        case tmgpu.CpAsyncCommitOp():
            return "tmlir_cp_async_commit();"
    assert isinstance(op, tmgpu.CpAsyncWaitOp)
    return f"tmlir_cp_async_wait<{op.pending.data}>();"


def shared_alignment(alloc: SSAValue, ctype: str) -> str:
    """``" __align__(16)"`` for a shared array the tensor-core instructions need 16-byte
    aligned rows in (every 16-bit tile; a 32-bit tf32 tile that ``ldmatrix`` or a 16-byte
    ``cp.async`` reads or fills), ``" __align__(1024)"`` for a swizzled wgmma operand
    (`hopper.wgmma_alignment`), else ``""``."""
    if hopper.wgmma_alignment(alloc) > 16:
        return f" __align__({hopper.wgmma_alignment(alloc)})"
    vector = any(isinstance(u.operation, tmgpu.LdmatrixOp)
                 or (isinstance(u.operation, tmgpu.CpAsyncOp) and u.operation.bytes.data == 16)
                 for u in alloc.uses) or hopper.wgmma_alignment(alloc) == 16
    return " __align__(16)" if ctype in ("tm_half", "tm_bf16") or vector else ""
