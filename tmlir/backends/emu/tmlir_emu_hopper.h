// tmlir_emu_hopper.h -- Hopper's primitives of tmlir/backends/hopper.py on the emu.
//
// Included by tmlir_emu.h after tmlir_emu_tc.h (emu.py inlines both). On the GPU these are
// inline PTX (wgmma: sm_90a; mbarriers, bulk copies: sm_90); here they keep the same contract
// (docs/tensor_cores.md, "Hopper (sm_90a)") and make its misuses give wrong results:
//
// * A wgmma descriptor holds bits 4-17 of a shared address. The emu's shared address of a
//   pointer is its low 32 bits, and a descriptor's address is turned back into a pointer in
//   the block's shared window: the 256 KiB that hold every pointer a descriptor was made
//   from (as a GPU block's shared memory does). wgmma decodes both descriptors -- start, LBO,
//   SBO, swizzle mode -- and reads every element of A and B from the address the hardware
//   would (tmlir/wgmma_layouts.py: canonical_offset, then Swizzle<b,4,3> on the address).
// * wgmma is asynchronous: each thread queues its wgmmas (accumulator pointer, descriptors,
//   scale-d, group); wgmma_commit closes the group; wgmma_wait<N> performs, in issue order,
//   those of all but the newest N committed groups. Only then are the thread's N/2
//   accumulators written: D = (scale-d ? D : 0) + sum over k of A[row][k] * B[k][col], in
//   float in order of increasing k (f16/bf16 products are exact; tf32 operands lose their
//   low 13 mantissa bits first, as the PTX ISA says wgmma does). Reading an accumulator
//   before its wait reads the old value; the shared tiles are read at the wait.
// * wgmma_fence orders the thread's earlier accesses to registers before later wgmmas. The
//   emu counts the thread's fences and remembers what each completed wgmma left in its
//   accumulator (a hash, and the fence count then). A wgmma whose accumulator is not in
//   flight (those are ordered by the hardware) is unordered, and its result NaN, when the
//   thread never executed a fence, or when no fence came since a wgmma last completed on
//   that accumulator and the accumulator is no longer as it left it: the thread wrote it
//   without a fence.
// * mbarrier: init/arrive/arrive.expect_tx/wait.parity on the 64 bits of the barrier (pending
//   and expected arrivals, phase parity, transaction bytes). A bulk copy is queued on the
//   block with its barrier and lands -- copied, its bytes counted off the barrier -- when a
//   thread waits on that barrier, never earlier: a thread that reads without waiting reads
//   the old contents. A wait whose phase cannot complete yet lets the block's other threads
//   run (tmlir_emu.h: spin_yield); if none can make progress the launch fails as a deadlock.
// * fence.proxy.async orders nothing on the emu (there is one proxy): a missing one is not
//   caught.
//
// Misuse traps with one line (tc_misuse): a wgmma in a warpgroup with fewer than 128 threads,
// a descriptor with a base offset, misaligned addresses, too many operations in flight.
#pragma once

namespace tmlir_emu {

constexpr int kMaxWgmma = 32;        // wgmmas one thread may have in flight
constexpr int kMaxImages = 16;       // accumulators per thread whose last completed contents are known
constexpr int kMaxBulkCopies = 1024;  // bulk copies in flight in a block
constexpr uintptr_t kSharedWindow = uintptr_t(1) << 18;  // what a descriptor's start field addresses

struct AsyncMma {
  float* d;
  uint64_t desc_a, desc_b;
  int n, kind, trans_a, trans_b, scale_d, group;
  bool unordered;  // issued without a fence after the thread wrote d: NaN
};
struct AccImage { const float* d; int n, fences; uint64_t hash; };  // fences: the count at completion
struct WgmmaQueue {
  int n, committed, n_images, fences;
  AsyncMma ops[kMaxWgmma];
  AccImage images[kMaxImages];
};
struct BulkCopy { void* dst; const void* src; int bytes; void* bar; };

// The worker's Hopper state (Worker::hopper), allocated on first use.
struct HopperState {
  WgmmaQueue wgmma[kMaxThreads];
  int n_bulk;
  BulkCopy bulk[kMaxBulkCopies];
  bool window_set;
  uintptr_t window_lo, window_hi;  // the pointers descriptors were made from in this block
};

inline HopperState& hopper_state() {
  Worker& w = *worker;
  if (!w.hopper && !(w.hopper = calloc(1, sizeof(HopperState))))
    tc_misuse("out of memory for the Hopper state");
  return *static_cast<HopperState*>(w.hopper);
}

// A new block: no bulk copies in flight, no shared window yet.
inline void hopper_block_begin() {
  if (!worker->hopper) return;
  HopperState& s = hopper_state();
  s.n_bulk = 0;
  s.window_set = false;
}

inline void hopper_thread_begin() {
  if (!worker->hopper) return;
  WgmmaQueue& q = hopper_state().wgmma[linear_tid()];
  q.n = q.committed = q.n_images = q.fences = 0;
}

inline void hopper_thread_end() {
  if (!worker->hopper) return;
  WgmmaQueue& q = hopper_state().wgmma[linear_tid()];
#ifdef TMLIR_EMU_CHECK
  if (q.n)
    check::violation("%d wgmma operation%s never waited for (no tmlir_wgmma_wait covers %s)", q.n,
                     q.n == 1 ? "" : "s", q.n == 1 ? "it" : "them");
#endif
  q.n = 0;
}

// ---- shared addresses of descriptors ----------------------------------------------------
inline uint32_t shared_address(const void* p) {
  HopperState& s = hopper_state();
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  if (!s.window_set) {
    s.window_set = true, s.window_lo = s.window_hi = a;
  } else {
    s.window_lo = a < s.window_lo ? a : s.window_lo;
    s.window_hi = a > s.window_hi ? a : s.window_hi;
    if (s.window_hi - s.window_lo >= kSharedWindow)
      tc_misuse("wgmma descriptors address shared memory spanning more than 256 KiB");
  }
  return uint32_t(a);
}

// The pointer at shared address `address` (only its low 18 bits count): the one in the window.
inline const unsigned char* shared_pointer(uint64_t address) {
  HopperState& s = hopper_state();
  if (!s.window_set) tc_misuse("wgmma with a descriptor not made by tmlir_wgmma_desc");
  const uintptr_t lo = s.window_lo;
  return reinterpret_cast<const unsigned char*>(lo + ((uintptr_t(address) - lo) & (kSharedWindow - 1)));
}

// ---- wgmma ------------------------------------------------------------------------------
struct Descriptor { uint32_t start, lbo, sbo, swizzle; };  // bytes; swizzle: row bytes (0: none)

inline Descriptor decode(uint64_t desc) {
  if ((desc >> 49) & 7) tc_misuse("wgmma descriptor with a nonzero base offset (tmlir aligns its patterns)");
  static const uint32_t kRows[4] = {0, 128, 64, 32};
  return {uint32_t(desc & 0x3fff) << 4, uint32_t(desc >> 16 & 0x3fff) << 4, uint32_t(desc >> 32 & 0x3fff) << 4,
          kRows[desc >> 62]};
}

// Byte offset of element (mn, k) of the tile from its start, before the swizzle (the
// canonical layouts: tmlir/wgmma_layouts.py, canonical_offset).
inline uint32_t canonical_offset(const Descriptor& d, bool k_major, int bytes, int mn, int k) {
  const int per_chunk = 16 / bytes, chunks = int(d.swizzle) / 16;
  if (k_major) {
    if (!chunks) return mn % 8 * 16 + mn / 8 * d.sbo + k / per_chunk * d.lbo + k % per_chunk * bytes;
    return mn % 8 * 16 * chunks + mn / 8 * d.sbo + k * bytes;
  }
  if (!chunks) return mn % per_chunk * bytes + mn / per_chunk * d.sbo + k % 8 * 16 + k / 8 * d.lbo;
  const int atom = chunks * per_chunk;
  return mn % atom * bytes + mn / atom * d.lbo + k % 8 * 16 * chunks + k / 8 * d.sbo;
}

// Element (mn, k) of an operand tile as the tensor core multiplies it.
inline float operand(const Descriptor& d, bool k_major, int kind, int mn, int k) {
  const int bytes = kind == 2 ? 4 : 2;
  uint64_t address = uint64_t(d.start) + canonical_offset(d, k_major, bytes, mn, k);
  if (d.swizzle) {  // Swizzle<log2(rows / 16), 4, 3> on the address
    const uint64_t mask = (uint64_t(d.swizzle / 16) - 1) << 4;
    address ^= (address >> 3) & mask;
  }
  const unsigned char* p = shared_pointer(address);
  if (kind == 2) {
    uint32_t word;
    memcpy(&word, p, 4);
    return word_as_float(word & 0xffffe000u);  // wgmma ignores tf32's low 13 mantissa bits
  }
  uint16_t half;
  memcpy(&half, p, 2);
  return kind == 0 ? half_to_float(half) : bf16_to_float(half);
}

inline uint64_t accumulator_hash(const float* d, int n) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over the bits
  for (int i = 0; i < n; ++i) {
    uint32_t bits;
    memcpy(&bits, &d[i], 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

inline AccImage* find_image(WgmmaQueue& q, const float* d) {
  for (int i = 0; i < q.n_images; ++i)
    if (q.images[i].d == d) return &q.images[i];
  return nullptr;
}

// Performs one queued wgmma of the calling thread (thread `tid` of its block).
inline void wgmma_perform(const AsyncMma& op, WgmmaQueue& q, int tid) {
  const Descriptor a = decode(op.desc_a), b = decode(op.desc_b);
  const int rank = tid % 128, warp = rank / 32, lane = rank % 32, g = lane >> 2, t = lane & 3;
  const int k_steps = op.kind == 2 ? 8 : 16;
  float out[128];
  for (int i = 0; i < op.n; ++i) {  // register 4j + 2h + e: D[16 warp + 8h + g][8j + 2t + e]
    const int row = 16 * warp + 8 * (i >> 1 & 1) + g, col = 8 * (i >> 2) + 2 * t + (i & 1);
    float acc = op.scale_d ? op.d[i] : 0.0f;
    for (int k = 0; k < k_steps; ++k)
      acc += operand(a, !op.trans_a, op.kind, row, k) * operand(b, !op.trans_b, op.kind, col, k);
    out[i] = op.unordered ? __builtin_nanf("") : acc;
  }
  memcpy(op.d, out, sizeof(float) * size_t(op.n));
  AccImage* image = find_image(q, op.d);
  if (!image) {
    if (q.n_images == kMaxImages) memmove(q.images, q.images + 1, sizeof(AccImage) * (kMaxImages - 1)), --q.n_images;
    image = &q.images[q.n_images++];
  }
  *image = {op.d, op.n, q.fences, accumulator_hash(op.d, op.n)};
}

inline void wgmma_issue(float* d, uint64_t desc_a, uint64_t desc_b, int scale_d, int n, int kind, int trans_a,
                        int trans_b) {
  const int tid = linear_tid();
  if (worker->n_threads < (tid / 128 + 1) * 128) tc_misuse("wgmma needs all 128 threads of its warpgroup");
  WgmmaQueue& q = hopper_state().wgmma[tid];
  if (q.n == kMaxWgmma) tc_misuse("more than 32 wgmma operations in flight in one thread (no wait?)");
  bool in_flight = false;
  for (int i = 0; i < q.n; ++i) in_flight |= q.ops[i].d == d;
  bool unordered = false;
  if (!in_flight) {  // a fence since the thread's writes, or no writes since the last wgmma on it
    const AccImage* image = find_image(q, d);
    unordered = !image ? q.fences == 0
                       : q.fences == image->fences && (image->n != n || image->hash != accumulator_hash(d, n));
  }
  q.ops[q.n++] = {d, desc_a, desc_b, n, kind, trans_a, trans_b, scale_d, q.committed, unordered};
}

inline void wgmma_wait(int newest_pending) {
  const int tid = linear_tid();
  WgmmaQueue& q = hopper_state().wgmma[tid];
  const int done_below = q.committed - newest_pending;
  int kept = 0;
  for (int i = 0; i < q.n; ++i) {
    if (q.ops[i].group >= done_below) q.ops[kept++] = q.ops[i];
    else wgmma_perform(q.ops[i], q, tid);
  }
  q.n = kept;
}

// ---- mbarriers and bulk copies -------------------------------------------------------------
// The 64 bits of an mbarrier: pending arrivals (bits 0-19), expected arrivals (20-39), the
// phase parity (40), the transaction bytes still to land (41-63, two's complement).
struct Mbarrier { uint32_t pending, expected, phase; int32_t tx; };

inline Mbarrier mbarrier_load(const void* bar) {
  if (reinterpret_cast<uintptr_t>(bar) % 8) tc_misuse("mbarrier not 8-byte aligned");
  uint64_t v;
  memcpy(&v, bar, 8);
  const int32_t tx = int32_t(uint32_t(v >> 41) << 9) >> 9;  // sign-extend 23 bits
  return {uint32_t(v & 0xfffff), uint32_t(v >> 20 & 0xfffff), uint32_t(v >> 40 & 1), tx};
}

inline void mbarrier_store(void* bar, Mbarrier m) {
  if (m.pending == 0 && m.tx == 0) m.phase ^= 1, m.pending = m.expected;  // the phase completes
  const uint64_t v = m.pending | uint64_t(m.expected) << 20 | uint64_t(m.phase) << 40 |
                     uint64_t(uint32_t(m.tx) & 0x7fffff) << 41;
  memcpy(bar, &v, 8);
}

inline void mbarrier_init(void* bar, unsigned count) {
  if (count < 1 || count > 0xfffff) tc_misuse("mbarrier count outside [1, 2^20 - 1]");
  mbarrier_load(bar);  // alignment
  const uint64_t v = count | uint64_t(count) << 20;
  memcpy(bar, &v, 8);
}

inline void mbarrier_arrive(void* bar, unsigned tx_bytes) {
  Mbarrier m = mbarrier_load(bar);
  if (m.expected == 0) tc_misuse("mbarrier arrive before mbarrier init");
  m.tx += int32_t(tx_bytes);
  --m.pending;
  mbarrier_store(bar, m);
}

// Lands the block's bulk copies on `bar`, in issue order.
inline void bulk_land(void* bar) {
  HopperState& s = hopper_state();
  int kept = 0;
  for (int i = 0; i < s.n_bulk; ++i) {
    const BulkCopy c = s.bulk[i];
    if (c.bar != bar) {
      s.bulk[kept++] = c;
      continue;
    }
    memcpy(c.dst, c.src, size_t(c.bytes));
    Mbarrier m = mbarrier_load(bar);
    m.tx -= c.bytes;
    mbarrier_store(bar, m);
  }
  s.n_bulk = kept;
}

inline void mbarrier_wait(void* bar, unsigned parity) {
  for (bool idle = false;; idle = true) {
    if (worker->hopper) bulk_land(bar);
    const Mbarrier m = mbarrier_load(bar);
    if (m.expected == 0) tc_misuse("mbarrier wait before mbarrier init");
    if (m.phase != (parity & 1)) return;  // the phase of that parity has completed
    spin_yield(idle);
  }
}

inline void bulk_issue(void* dst, const void* src, unsigned bytes, void* bar) {
  if (bytes == 0 || bytes % 16 || (reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16)
    tc_misuse("cp.async.bulk of a size or at an address that is not a multiple of 16 bytes");
  HopperState& s = hopper_state();
  if (s.n_bulk == kMaxBulkCopies) tc_misuse("more than 1024 bulk copies in flight in a block (no wait?)");
  s.bulk[s.n_bulk++] = {dst, src, int(bytes), bar};
}

}  // namespace tmlir_emu

inline unsigned long long tmlir_wgmma_desc(const void* smem, unsigned lbo, unsigned sbo, int swizzle) {
  if (reinterpret_cast<uintptr_t>(smem) % 16) tmlir_emu::tc_misuse("wgmma descriptor of an address not 16-byte aligned");
  const unsigned long long mode = swizzle == 128 ? 1 : swizzle == 64 ? 2 : swizzle == 32 ? 3 : 0;
  return (unsigned long long)((tmlir_emu::shared_address(smem) & 0x3FFFFu) >> 4) |
         (unsigned long long)((lbo & 0x3FFFFu) >> 4) << 16 | (unsigned long long)((sbo & 0x3FFFFu) >> 4) << 32 |
         mode << 62;
}
#define TMLIR_EMU_WGMMA(N)                                                                            \
  template <int TRANS_A, int TRANS_B>                                                                 \
  inline void tmlir_wgmma_m64n##N##k16_f16(float d[N / 2], unsigned long long a, unsigned long long b, \
                                           int scale_d) {                                             \
    tmlir_emu::wgmma_issue(d, a, b, scale_d, N / 2, 0, TRANS_A, TRANS_B);                             \
  }                                                                                                   \
  template <int TRANS_A, int TRANS_B>                                                                 \
  inline void tmlir_wgmma_m64n##N##k16_bf16(float d[N / 2], unsigned long long a, unsigned long long b, \
                                            int scale_d) {                                            \
    tmlir_emu::wgmma_issue(d, a, b, scale_d, N / 2, 1, TRANS_A, TRANS_B);                             \
  }                                                                                                   \
  inline void tmlir_wgmma_m64n##N##k8_tf32(float d[N / 2], unsigned long long a, unsigned long long b,  \
                                           int scale_d) {                                             \
    tmlir_emu::wgmma_issue(d, a, b, scale_d, N / 2, 2, 0, 0);                                         \
  }
TMLIR_EMU_WGMMA(8)
TMLIR_EMU_WGMMA(16)
TMLIR_EMU_WGMMA(32)
TMLIR_EMU_WGMMA(64)
TMLIR_EMU_WGMMA(96)
TMLIR_EMU_WGMMA(128)
TMLIR_EMU_WGMMA(192)
TMLIR_EMU_WGMMA(256)
#undef TMLIR_EMU_WGMMA
inline void tmlir_wgmma_fence() { ++tmlir_emu::hopper_state().wgmma[tmlir_emu::linear_tid()].fences; }
inline void tmlir_wgmma_commit() { ++tmlir_emu::hopper_state().wgmma[tmlir_emu::linear_tid()].committed; }
template <int N> inline void tmlir_wgmma_wait() {
  static_assert(N >= 0, "wgmma.wait_group takes a count >= 0");
  tmlir_emu::wgmma_wait(N);
}
template <int COUNT> inline void tmlir_wgmma_fence_operand(float*) {}  // a compiler fence on the GPU
inline void tmlir_mbarrier_init(void* bar, unsigned count) { tmlir_emu::mbarrier_init(bar, count); }
inline void tmlir_mbarrier_arrive(void* bar) { tmlir_emu::mbarrier_arrive(bar, 0); }
inline void tmlir_mbarrier_arrive_expect_tx(void* bar, unsigned bytes) { tmlir_emu::mbarrier_arrive(bar, bytes); }
inline void tmlir_mbarrier_wait(void* bar, unsigned parity) { tmlir_emu::mbarrier_wait(bar, parity); }
inline void tmlir_cp_async_bulk(void* smem_dst, const void* gmem_src, unsigned bytes, void* bar) {
  tmlir_emu::bulk_issue(smem_dst, gmem_src, bytes, bar);
}
inline void tmlir_fence_proxy_async() {}  // one proxy on the emu
