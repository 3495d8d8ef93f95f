"""Hopper (sm_90/sm_90a) primitives for generated CUDA C: wgmma, mbarriers, bulk copies.

The CUDA printer calls ``tmlir_wgmma_desc``, ``tmlir_wgmma_m64n128k16_f16<TRANS_A,
TRANS_B>``, ``tmlir_wgmma_fence``, ``tmlir_wgmma_commit``, ``tmlir_wgmma_wait<N>``,
``tmlir_wgmma_fence_operand<COUNT>``, ``tmlir_mbarrier_init``, ``tmlir_mbarrier_arrive``,
``tmlir_mbarrier_arrive_expect_tx``, ``tmlir_mbarrier_wait``, ``tmlir_cp_async_bulk`` and
``tmlir_fence_proxy_async`` (the contract: docs/tensor_cores.md, "Hopper (sm_90a)"). As for
the Ampere primitives (tmlir.backends.tensor_core, whose ``prelude_for`` includes these),
each definition is inline PTX inside ``#ifndef TMLIR_EMU``; the emu backend defines them in
``emu/tmlir_emu_hopper.h``. The wgmma family is sm_90a only: its definitions open with an
``#error`` for any other device arch (``nvcc -arch=sm_90`` fails with that one line), and
`check_target_arch` refuses a module whose ops need more than the target arch has.
`hopper_call` is the printer's side: the statement (or expression) for each tmgpu op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import Operation, SSAValue

from tmlir.dialects import tmgpu
from tmlir.wgmma_layouts import WGMMA_K, WGMMA_N

_SM90A_ONLY = """\
#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)
#error "tmlir: wgmma needs the arch-specific target sm_90a (nvcc -arch=sm_90a)"
#endif
"""
_SM90 = """\
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#error "tmlir: mbarrier transactions and bulk copies need sm_90 or later"
#endif
"""
_SMEM = "(unsigned)__cvta_generic_to_shared"


def _wgmma(n: int, dtype: str) -> str:
    """``tmlir_wgmma_m64n<n>k<k>_<dtype>``: N/2 accumulators as ``+f`` operands, the two
    descriptors, scale-d through a predicate and, for f16/bf16, the transposes as template
    arguments (immediates)."""
    k, regs = WGMMA_K[dtype], n // 2
    name = f"tmlir_wgmma_m64n{n}k{k}_{dtype}"
    accumulators = ", ".join(f"%{i}" for i in range(regs))
    outputs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    trans = dtype != "tf32"
    immediates = f", %{regs + 3}, %{regs + 4}" if trans else ""
    inputs = '"l"(desc_a), "l"(desc_b), "r"(scale_d)' + (', "n"(TRANS_A), "n"(TRANS_B)' if trans else "")
    template = "template <int TRANS_A, int TRANS_B>\n" if trans else ""
    return (f"{template}__device__ __forceinline__ void {name}(float d[{regs}], unsigned long long desc_a,\n"
            f"    unsigned long long desc_b, int scale_d) {{\n"
            f'  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"\n'
            f'               "wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{dtype}.{dtype} "\n'
            f'               "{{{accumulators}}}, %{regs}, %{regs + 1}, p, 1, 1{immediates};\\n}}\\n"\n'
            f"               : {outputs}\n"
            f'               : {inputs} : "memory");\n}}\n')


_WGMMA_DESC = f"""\
// bits 0-13: shared start address >> 4; 16-29: LBO >> 4; 32-45: SBO >> 4; 62-63: swizzle mode
__device__ __forceinline__ unsigned long long tmlir_wgmma_desc(const void* smem, unsigned lbo, unsigned sbo,
                                                               int swizzle) {{
  const unsigned long long mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : swizzle == 32 ? 3 : 0;
  return (unsigned long long)(({_SMEM}(smem) & 0x3FFFFu) >> 4) |
         (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 | (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32 |
         mode << 62;
}}
"""
_WGMMA_FENCE = """\
__device__ __forceinline__ void tmlir_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
"""
_WGMMA_COMMIT = """\
__device__ __forceinline__ void tmlir_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
"""
_WGMMA_WAIT = """\
template <int N> __device__ __forceinline__ void tmlir_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(N) : "memory");
}
"""
# After a wait: each accumulator register passes through an empty asm, so the compiler
# cannot move the thread's reads of it above the wait.
_WGMMA_FENCE_OPERAND = """\
template <int COUNT> __device__ __forceinline__ void tmlir_wgmma_fence_operand(float* r) {
#pragma unroll
  for (int i = 0; i < COUNT; ++i) asm volatile("" : "+f"(r[i]) :: "memory");
}
"""
_MBARRIER_INIT = f"""\
__device__ __forceinline__ void tmlir_mbarrier_init(void* bar, unsigned count) {{
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"({_SMEM}(bar)), "r"(count) : "memory");
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}}
"""
_MBARRIER_ARRIVE = f"""\
__device__ __forceinline__ void tmlir_mbarrier_arrive(void* bar) {{
  asm volatile("{{\\n.reg .b64 state;\\nmbarrier.arrive.shared::cta.b64 state, [%0];\\n}}\\n"
               :: "r"({_SMEM}(bar)) : "memory");
}}
"""
_MBARRIER_ARRIVE_EXPECT_TX = f"""\
__device__ __forceinline__ void tmlir_mbarrier_arrive_expect_tx(void* bar, unsigned bytes) {{
  asm volatile("{{\\n.reg .b64 state;\\nmbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\\n}}\\n"
               :: "r"({_SMEM}(bar)), "r"(bytes) : "memory");
}}
"""
_MBARRIER_WAIT = f"""\
__device__ __forceinline__ void tmlir_mbarrier_wait(void* bar, unsigned parity) {{
  const unsigned addr = {_SMEM}(bar);
  unsigned done;
  do {{
    asm volatile("{{\\n.reg .pred p;\\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\\n"
                 "selp.u32 %0, 1, 0, p;\\n}}\\n" : "=r"(done) : "r"(addr), "r"(parity) : "memory");
  }} while (!done);
}}
"""
_CP_ASYNC_BULK = f"""\
__device__ __forceinline__ void tmlir_cp_async_bulk(void* smem_dst, const void* gmem_src, unsigned bytes, void* bar) {{
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"({_SMEM}(smem_dst)), "l"(gmem_src), "r"(bytes), "r"({_SMEM}(bar)) : "memory");
}}
"""
_FENCE_PROXY_ASYNC = """\
__device__ __forceinline__ void tmlir_fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
"""

#: The wgmma family: sm_90a only.
WGMMA_DEFINITIONS: dict[str, str] = {
    "tmlir_wgmma_desc": _WGMMA_DESC,
    **{f"tmlir_wgmma_m64n{n}k{WGMMA_K[t]}_{t}": _wgmma(n, t) for t in WGMMA_K for n in WGMMA_N},
    "tmlir_wgmma_fence": _WGMMA_FENCE,
    "tmlir_wgmma_commit": _WGMMA_COMMIT,
    "tmlir_wgmma_wait": _WGMMA_WAIT,
    "tmlir_wgmma_fence_operand": _WGMMA_FENCE_OPERAND,
}
#: mbarriers with transactions, bulk copies, the async-proxy fence: sm_90 and later.
SM90_DEFINITIONS: dict[str, str] = {
    "tmlir_mbarrier_init": _MBARRIER_INIT,
    "tmlir_mbarrier_arrive": _MBARRIER_ARRIVE,
    "tmlir_mbarrier_arrive_expect_tx": _MBARRIER_ARRIVE_EXPECT_TX,
    "tmlir_mbarrier_wait": _MBARRIER_WAIT,
    "tmlir_cp_async_bulk": _CP_ASYNC_BULK,
    "tmlir_fence_proxy_async": _FENCE_PROXY_ASYNC,
}
DEFINITIONS: dict[str, str] = {**WGMMA_DEFINITIONS, **SM90_DEFINITIONS}


def arch_guards(used: Sequence[str]) -> str:
    """The ``#error`` lines for the device archs that lack a primitive of `used`."""
    needs = [guard for guard, family in ((_SM90A_ONLY, WGMMA_DEFINITIONS), (_SM90, SM90_DEFINITIONS))
             if any(name in family for name in used)]
    return "".join(needs)


def arch_has(arch: str, required: str) -> bool:
    """Whether target `arch` (``sm_80``, ``sm_90a``, ...) has what `required` names:
    ``sm_90a`` only sm_90a itself; ``sm_90`` every arch from sm_90 on."""
    if required == "sm_90a":
        return arch == "sm_90a"
    return int(arch.removeprefix("sm_").rstrip("a")) >= int(required.removeprefix("sm_").rstrip("a"))


def unsupported_op(ops: Sequence[Operation], arch: str) -> tuple[Operation, str] | None:
    """The first op of `ops` that target `arch` lacks, with the arch it needs."""
    for op in ops:
        required = getattr(type(op), "REQUIRED_ARCH", None)
        if required is not None and not arch_has(arch, required):
            return op, required
    return None


def hopper_call(op: Operation, access: Callable[[SSAValue, Sequence[SSAValue]], str],
                expr: Callable[[SSAValue], str]) -> str:
    """The CUDA C for a tmgpu Hopper op: statements (one a line), or for
    ``tmgpu.wgmma_desc`` the expression of its value; `access` and `expr` are the printer's (a buffer at indices, a
    scalar value, as C text). Accumulators pass as their C array (one of an array of them
    by its leading indices), shared and global operands by address."""

    def address(buffer: SSAValue, indices: Sequence[SSAValue]) -> str:
        return f"&{access(buffer, indices)}"

    match op:
        case tmgpu.WgmmaDescOp():
            return (f"tmlir_wgmma_desc({address(op.smem, op.indices)}, {op.lbo.data}, {op.sbo.data}, "
                    f"{op.swizzle.data})")
        case tmgpu.WgmmaOp():
            scale = "1" if op.scale_d is None else _bare(expr(op.scale_d))
            trans = "" if op.dtype.data == "tf32" else \
                f"<{int(op.a_major.data == 'mn')}, {int(op.b_major.data == 'mn')}>"
            return (f"tmlir_wgmma_{op.shape.data}_{op.dtype.data}{trans}({access(op.acc, op.acc_indices)}, "
                    f"{expr(op.desc_a)}, {expr(op.desc_b)}, {scale});")
        case tmgpu.WgmmaFenceOp():
            return "tmlir_wgmma_fence();"
        case tmgpu.WgmmaCommitOp():
            return "tmlir_wgmma_commit();"
        case tmgpu.WgmmaWaitOp():
            fences = [f"tmlir_wgmma_fence_operand<{_elements(f)}>((float*){access(f, [])});"
                      for f in op.fragments]
            return "\n".join([f"tmlir_wgmma_wait<{op.pending.data}>();", *fences])
        case tmgpu.MbarrierInitOp():
            return f"tmlir_mbarrier_init({address(op.bar, op.bar_indices)}, {op.count.data});"
        case tmgpu.MbarrierArriveOp() if op.expect_tx is not None:
            return f"tmlir_mbarrier_arrive_expect_tx({address(op.bar, op.bar_indices)}, {op.expect_tx.data});"
        case tmgpu.MbarrierArriveOp():
            return f"tmlir_mbarrier_arrive({address(op.bar, op.bar_indices)});"
        case tmgpu.MbarrierWaitOp():
            return f"tmlir_mbarrier_wait({address(op.bar, op.bar_indices)}, {_bare(expr(op.parity))});"
        case tmgpu.CpAsyncBulkOp():
            return (f"tmlir_cp_async_bulk({address(op.dst, op.dst_indices)}, {address(op.src, op.src_indices)}, "
                    f"{op.bytes.data}, {address(op.bar, op.bar_indices)});")
    assert isinstance(op, tmgpu.FenceProxyAsyncOp), op.name
    return "tmlir_fence_proxy_async();"


def _bare(text: str) -> str:
    """`text` without one pair of enclosing parentheses."""
    if text.startswith("(") and text.endswith(")") and text.count("(") == 1:
        return text[1:-1]
    return text


def _elements(buffer: SSAValue) -> int:
    count = 1
    for d in buffer.type.get_shape():
        count *= d
    return count


def wgmma_alignment(alloc: SSAValue) -> int:
    """The alignment a shared array needs for the Hopper ops on it: 1024 bytes where a
    swizzled wgmma descriptor addresses it (its pattern must start where the hardware's
    does), 16 where a descriptor or a bulk copy does, else 0 (no requirement)."""
    best = 0
    for use in alloc.uses:
        user = use.operation
        if isinstance(user, tmgpu.WgmmaDescOp):
            best = max(best, 1024 if user.swizzle.data else 16)
        elif isinstance(user, tmgpu.CpAsyncBulkOp) and use.index == 0:  # its destination
            best = max(best, 16)
    return best
