// tmlir_emu_tc.h -- the tensor-core warp primitives of tmlir/backends/tensor_core.py on the emu.
//
// Included by tmlir_emu.h (emu.py inlines it into the force-included text). On the GPU these
// functions are inline PTX (sm_80+); here they are emulations with the same per-lane contract
// (docs/tensor_cores.md):
//
// * mma (m16n8k16 f16/bf16, m16n8k8 tf32): a warp collective. Every lane publishes its
//   fragment words (a[4], b[2]) into the worker's per-thread scratch, the warp meets at
//   its barrier, each lane computes its own four outputs from the whole warp's fragments
//   with the PTX ISA's layouts (its c is its own d's), and the warp meets again before the scratch is reused.
//   Operands are widened exactly to float (f16, bf16; tf32 is first rounded as
//   cvt.rna.tf32.f32 does: to nearest, ties away from zero, 10 mantissa bits kept); each
//   product is then exact in float, and d = c + p[0] + p[1] + ... + p[K-1] is summed in float
//   in order of increasing k.
// * ldmatrix (x1/x2/x4, .trans): lanes publish their row addresses, meet, read the 32-bit
//   words their fragment holds, meet again.
// * cp.async: each thread keeps a queue of (dst, src, bytes, group). commit closes the open
//   group; wait<N> performs, in issue order, the copies of all but the newest N committed
//   groups. A copy is therefore only visible after the wait that covers it -- a kernel that
//   reads shared memory before waiting reads the old contents, as a racing GPU may. Copies
//   still queued when the thread exits are dropped (and reported by a check build).
//   tmlir_cp_async_zfill with a false condition queues a copy without a source: at its wait
//   it writes `bytes` zeros and reads nothing (the source pointer is never dereferenced).
//
// A misuse (a partial warp, a misaligned cp.async, more than kMaxAsyncCopies copies in
// flight) traps; the fault guard then fails the launch with that reason, block and thread.
#pragma once

namespace tmlir_emu {

// cp.async copies one thread may have in flight: a SIMT pipeline's element copies of 4 stages
// (the space allows 64 per thread and k-tile)
constexpr int kMaxAsyncCopies = 256;

struct AsyncCopy { void* dst; const void* src; int bytes, group; };  // src null: zero-fill
struct AsyncQueue { int n, committed; AsyncCopy copies[kMaxAsyncCopies]; };

// The worker's tensor-core state (Worker::tensor_cores), allocated on first use.
struct TensorCoreState {
  uint32_t fragments[kMaxThreads][6];  // a published mma fragment: a[4], b[2]
  AsyncQueue queues[kMaxThreads];       // cp.async, per thread of the block
};

// Fails the launch with `what` (describe_fault names the block and thread).
[[noreturn]] __attribute__((noinline, cold)) inline void tc_misuse(const char* what) {
  worker->misuse = what;
  __builtin_trap();
}

inline TensorCoreState& tc_state() {
  Worker& w = *worker;
  if (!w.tensor_cores && !(w.tensor_cores = calloc(1, sizeof(TensorCoreState))))
    tc_misuse("out of memory for the tensor-core state");
  return *static_cast<TensorCoreState*>(w.tensor_cores);
}

// Called by every thread before the kernel body: a new thread has no copies in flight (also
// after a block abandoned by a fault).
inline void tc_thread_begin() {
  worker->misuse = nullptr;
  if (!worker->tensor_cores) return;
  AsyncQueue& q = tc_state().queues[linear_tid()];
  q.n = q.committed = 0;
}

#ifdef TMLIR_EMU_CHECK
namespace check { inline void violation(const char* fmt, ...); }  // tmlir_emu_check.h
#endif

// Called by every thread after the kernel body: copies it never waited for are dropped (a
// check build reports them: on a GPU they would land at an unknown time).
inline void tc_thread_end() {
  if (!worker->tensor_cores) return;
  AsyncQueue& q = tc_state().queues[linear_tid()];
#ifdef TMLIR_EMU_CHECK
  if (q.n)
    check::violation("%d cp.async cop%s never waited for (no tmlir_cp_async_wait covers %s)", q.n,
                     q.n == 1 ? "y" : "ies", q.n == 1 ? "it" : "them");
#endif
  q.n = 0;
}

// The calling lane's warp barrier; warp collectives need all 32 lanes.
inline Barrier& full_warp(const char* what) {
  Barrier& b = worker->warp_barriers[linear_tid() / kWarp];
  if (b.count != kWarp) tc_misuse(what);
  return b;
}

inline float word_as_float(uint32_t u) { float f; memcpy(&f, &u, sizeof f); return f; }

inline float half_to_float(uint32_t h) {  // exact
  const uint32_t sign = (h & 0x8000u) << 16, exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0x1fu) return word_as_float(sign | 0x7f800000u | (mantissa << 13));
  if (exponent) return word_as_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  const float tiny = float(mantissa) * 5.9604644775390625e-08f;  // mantissa * 2^-24
  return sign ? -tiny : tiny;
}
inline float bf16_to_float(uint32_t h) { return word_as_float((h & 0xffffu) << 16); }
// cvt.rna.tf32.f32: round to 10 mantissa bits, to nearest, ties away from zero.
inline float tf32_round(uint32_t x) {
  if ((x & 0x7f800000u) == 0x7f800000u) return word_as_float(x);  // inf, nan
  return word_as_float((x + 0x1000u) & 0xffffe000u);
}

// Element `half` (0: low, 1: high) of 16-bit pair word `word` of lane `lane`'s fragment.
inline uint32_t pair_half(const uint32_t (*lanes)[6], int lane, int word, int half) {
  return (lanes[lane][word] >> (16 * half)) & 0xffffu;
}

// d = A*B + C for the calling warp, A 16xK row-major, B Kx8 column-major (K = 16 for
// f16/bf16 pairs, 8 for tf32 words), per the layouts of the PTX ISA (9.7.13.5.8.1).
template <int kind>  // 0: f16, 1: bf16, 2: tf32
inline void mma_sync(float d[4], const unsigned a[4], const unsigned b[2], const float c[4]) {
  Barrier& bar = full_warp("mma.sync needs all 32 lanes of the warp");
  TensorCoreState& s = tc_state();
  const int tid = linear_tid(), lane = tid % kWarp;
  uint32_t* mine = s.fragments[tid];
  for (int i = 0; i < 4; ++i) mine[i] = a[i];
  mine[4] = b[0], mine[5] = b[1];
  arrive(bar);
  const uint32_t (*lanes)[6] = s.fragments + bar.first;
  const int g = lane >> 2, t = lane & 3;
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = g + 8 * (i >> 1), col = 2 * t + (i & 1);
    float acc = c[i];
    if (kind == 2) {
      for (int k = 0; k < 8; ++k) {
        const float x = tf32_round(lanes[(row % 8) * 4 + k % 4][row / 8 + 2 * (k / 4)]);
        const float y = tf32_round(lanes[col * 4 + k % 4][4 + k / 4]);
        acc += x * y;
      }
    } else {
      for (int k = 0; k < 16; ++k) {
        const uint32_t x = pair_half(lanes, (row % 8) * 4 + (k % 8) / 2, row / 8 + 2 * (k / 8), k % 2);
        const uint32_t y = pair_half(lanes, col * 4 + (k % 8) / 2, 4 + k / 8, k % 2);
        acc += kind == 0 ? half_to_float(x) * half_to_float(y) : bf16_to_float(x) * bf16_to_float(y);
      }
    }
    out[i] = acc;
  }
  arrive(bar);  // every lane has read the scratch: it may be reused
  memcpy(d, out, sizeof out);
}

// ldmatrix.sync.aligned.m8n8.x<count>[.trans].shared.b16 for the calling warp.
template <int count, bool trans>
inline void ldmatrix(unsigned r[count], const void* row) {
  Barrier& bar = full_warp("ldmatrix needs all 32 lanes of the warp");
  Worker& w = *worker;
  const int tid = linear_tid(), lane = tid % kWarp;
  w.lanes[tid] = reinterpret_cast<uintptr_t>(row);
  arrive(bar);
  const uint64_t* rows = w.lanes + bar.first;
  unsigned out[count];
  for (int j = 0; j < count; ++j) {
    if (!trans) {
      memcpy(&out[j], reinterpret_cast<const char*>(rows[8 * j + lane / 4]) + 4 * (lane % 4), 4);
    } else {
      uint16_t lo, hi;
      memcpy(&lo, reinterpret_cast<const char*>(rows[8 * j + 2 * (lane % 4)]) + 2 * (lane / 4), 2);
      memcpy(&hi, reinterpret_cast<const char*>(rows[8 * j + 2 * (lane % 4) + 1]) + 2 * (lane / 4), 2);
      out[j] = unsigned(lo) | unsigned(hi) << 16;
    }
  }
  arrive(bar);
  memcpy(r, out, sizeof out);
}

// Queues a copy of `bytes` from `src`, or (copy false) of `bytes` zeros: src is then only
// checked for alignment, as the GPU requires of the address, and never read.
inline void async_issue(void* dst, const void* src, int bytes, bool copy = true) {
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % bytes)
    tc_misuse("cp.async with an address not aligned to its size");
  AsyncQueue& q = tc_state().queues[linear_tid()];
  if (q.n == kMaxAsyncCopies) tc_misuse("more than 256 cp.async copies in flight (no wait?)");
  q.copies[q.n++] = {dst, copy ? src : nullptr, bytes, q.committed};
}

inline void async_wait(int newest_pending) {
  AsyncQueue& q = tc_state().queues[linear_tid()];
  const int done_below = q.committed - newest_pending;  // groups [0, done_below) complete
  int kept = 0;
  for (int i = 0; i < q.n; ++i) {
    const AsyncCopy& c = q.copies[i];
    if (c.group >= done_below) q.copies[kept++] = c;
    else if (c.src) memcpy(c.dst, c.src, size_t(c.bytes));
    else memset(c.dst, 0, size_t(c.bytes));
  }
  q.n = kept;
}

}  // namespace tmlir_emu

inline void tmlir_mma_m16n8k16_f16(float d[4], const unsigned a[4], const unsigned b[2], const float c[4]) {
  tmlir_emu::mma_sync<0>(d, a, b, c);
}
inline void tmlir_mma_m16n8k16_bf16(float d[4], const unsigned a[4], const unsigned b[2], const float c[4]) {
  tmlir_emu::mma_sync<1>(d, a, b, c);
}
inline void tmlir_mma_m16n8k8_tf32(float d[4], const unsigned a[4], const unsigned b[2], const float c[4]) {
  tmlir_emu::mma_sync<2>(d, a, b, c);
}
inline void tmlir_ldmatrix_x1(unsigned r[1], const void* row) { tmlir_emu::ldmatrix<1, false>(r, row); }
inline void tmlir_ldmatrix_x2(unsigned r[2], const void* row) { tmlir_emu::ldmatrix<2, false>(r, row); }
inline void tmlir_ldmatrix_x4(unsigned r[4], const void* row) { tmlir_emu::ldmatrix<4, false>(r, row); }
inline void tmlir_ldmatrix_x1_trans(unsigned r[1], const void* row) { tmlir_emu::ldmatrix<1, true>(r, row); }
inline void tmlir_ldmatrix_x2_trans(unsigned r[2], const void* row) { tmlir_emu::ldmatrix<2, true>(r, row); }
inline void tmlir_ldmatrix_x4_trans(unsigned r[4], const void* row) { tmlir_emu::ldmatrix<4, true>(r, row); }
template <int BYTES> inline void tmlir_cp_async(void* smem_dst, const void* gmem_src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  tmlir_emu::async_issue(smem_dst, gmem_src, BYTES);
}
template <int BYTES> inline void tmlir_cp_async_zfill(void* smem_dst, const void* gmem_src, bool copy) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async copies 4, 8 or 16 bytes");
  tmlir_emu::async_issue(smem_dst, gmem_src, BYTES, copy);
}
inline void tmlir_cp_async_commit() { ++tmlir_emu::tc_state().queues[tmlir_emu::linear_tid()].committed; }
template <int N> inline void tmlir_cp_async_wait() {
  static_assert(N >= 0, "cp.async.wait_group takes a count >= 0");
  tmlir_emu::async_wait(N);
}
