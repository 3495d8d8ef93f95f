// tmlir_emu_check.h -- the emu sanitizer: bounds and shared-memory race checks.
//
// Included at the end of tmlir_emu.h when TMLIR_EMU_CHECK is defined: a check build
// (compile_emu(..., check=True) or TMLIR_EMU_CHECK=1 in the environment) force-includes
// tmlir_emu.h with the macro defined and this text in place of its include, and compiles the
// generated source as tmlir/backends/emu/check.py rewrote it, so that every access goes
// through the types below:
//
// * a pointer kernel parameter `const float* __restrict__ x` becomes `GlobalRef<const float> x`,
//   whose `x[i]` checks 0 <= i < the element count of the array passed at launch; a load out
//   of bounds reads a zero, a store out of bounds is dropped, and both are reported.
// * a vector load `*reinterpret_cast<const float4*>(&x[i])` becomes `load_vector<float4>(x, i)`,
//   which checks every element of the vector against the bounds and its address against the
//   vector's alignment (a misaligned vector load faults on a GPU); either violation reads zeros.
// * `__shared__ float s[2][8][32];` becomes a `SharedArray<float, 2, 8, 32>` (data and a
//   shadow record per element) seen through a view named `s`: `s[a][b][c]` checks each index
//   against its dimension and records the access. Per element the shadow keeps the last
//   write and up to two reads since, each as (thread, block epoch, warp epoch). The block
//   epoch advances when a __syncthreads() completes (and when the worker starts a new block),
//   a warp's epoch when its warp barrier completes (__syncwarp, and the exchanges of the
//   __shfl_*_sync intrinsics). An earlier access by another thread is ordered before the
//   current one when an epoch it was made in has since advanced -- the block epoch, or the
//   warp epoch where both threads are lanes of one warp; otherwise the two race: a read after
//   another thread's write, or a write after another thread's read or write.
//
// Fibers of a block run one at a time on one OS worker, so the shadow state (thread_local,
// like `__shared__` itself) needs no locking. The first violation of a launch in (block,
// thread) order is reported, with the number of others; execution continues to the end.
#pragma once

#include <stdarg.h>

namespace tmlir_emu {
namespace check {

inline unsigned long long next_serial() {
  static unsigned long long serial = 0;
  return __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
}

// One checked launch: built by the launch wrapper, shared by its workers.
struct Launch {
  explicit Launch(const char* name) : kernel(name), serial(next_serial()) {}
  const char* kernel;
  unsigned long long serial;   // distinguishes launches: a worker notices a new block by it
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;  // guards the report (taken on a violation)
  long long count = 0;         // violations so far
  long long first_block = 0, first_thread = 0;
  char message[768] = "";
};

// The per-worker-thread state: the launch being run, its block, and the epochs.
struct WorkerState {
  Launch* launch;
  unsigned long long serial;
  long long block;
  uint32_t block_epoch;
  uint32_t warp_epoch[kMaxThreads / kWarp];
};
static thread_local WorkerState state;

inline long long block_linear() {
  return (long long)(block_idx.z * grid_dim.y + block_idx.y) * grid_dim.x + block_idx.x;
}

// "(x,y,z)" of the thread with linear id `tid` in the running block.
inline void format_thread(char* out, size_t n, int tid) {
  snprintf(out, n, "(%u,%u,%u)", tid % block_dim.x, tid / block_dim.x % block_dim.y,
           tid / (block_dim.x * block_dim.y));
}

// Records a violation by the running thread; `fmt` describes it.
__attribute__((noinline, format(printf, 1, 2))) inline void violation(const char* fmt, ...) {
  Launch* L = state.launch;
  if (!L) return;
  const long long block = block_linear(), thread = linear_tid();
  pthread_mutex_lock(&L->mutex);
  const bool first = L->count++ == 0 || block < L->first_block ||
                     (block == L->first_block && thread < L->first_thread);
  if (first) {
    L->first_block = block, L->first_thread = thread;
    char who[48];
    format_thread(who, sizeof who, int(thread));
    int n = snprintf(L->message, sizeof L->message, "emu check: block (%u,%u,%u) thread %s: ",
                     block_idx.x, block_idx.y, block_idx.z, who);
    va_list args;
    va_start(args, fmt);
    if (n > 0 && size_t(n) < sizeof L->message) vsnprintf(L->message + n, sizeof L->message - n, fmt, args);
    va_end(args);
  }
  pthread_mutex_unlock(&L->mutex);
}

// Called by every CUDA thread as it starts the kernel: notes the launch, and starts a new
// block epoch when this worker has moved on to another block.
inline void enter(Launch* L) {
  const long long block = block_linear();
  if (state.launch != L || state.serial != L->serial || state.block != block) {
    state.launch = L, state.serial = L->serial, state.block = block;
    ++state.block_epoch;
  }
}

// Called by the launch wrapper after the grid ran: the launch's status, with the first
// violation (and the number of others) in `err` when there was one. A status other than
// 0 or 1 (an interrupted launch) is passed on as it is.
inline int finish(Launch& L, int status, char* err, unsigned long errlen) {
  if (L.count == 0 || (status != 0 && status != 1)) return status;
  char also[320] = "";
  if (status != 0) snprintf(also, sizeof also, "; the launch also failed: %s", err);
  char more[64] = "";
  if (L.count > 1) snprintf(more, sizeof more, " (and %lld more violation%s)", L.count - 1, L.count > 2 ? "s" : "");
  snprintf(err, errlen, "%s%s%s", L.message, more, also);
  return 1;
}

// ---- global memory ---------------------------------------------------------------------
template <class T>
const T& zero() {  // what an out-of-bounds load reads; an out-of-bounds store goes to a copy
  static thread_local std::remove_const_t<T> value;
  memset(static_cast<void*>(&value), 0, sizeof value);
  return value;
}

__attribute__((noinline, cold)) inline void global_oob(const char* what, const char* name,
                                                       long long i, long long count) {
  violation("out-of-bounds %s '%s' at index %lld (buffer has %lld elements)", what, name, i, count);
}

template <class I>
inline bool in_bounds(I i, long long count) {
  return (long long)i >= 0 && (long long)i < count;
}

// One element of a written buffer: a load through `operator T`, a store through `=`.
template <class T>
struct GlobalElem {
  T* ptr;
  long long count;
  const char* name;
  long long i;

  operator T() const {
    if (__builtin_expect(in_bounds(i, count), 1)) return ptr[i];
    global_oob("load from", name, i, count);
    return zero<T>();
  }
  GlobalElem& operator=(const T& v) {
    if (__builtin_expect(in_bounds(i, count), 1)) ptr[i] = v;
    else global_oob("store to", name, i, count);
    return *this;
  }
  GlobalElem& operator=(const GlobalElem& other) { return *this = T(other); }
  template <class U> GlobalElem& operator+=(const U& v) { return *this = T(T(*this) + v); }
  template <class U> GlobalElem& operator-=(const U& v) { return *this = T(T(*this) - v); }
  template <class U> GlobalElem& operator*=(const U& v) { return *this = T(T(*this) * v); }
  // `&x[i]` (atomics): checked as an access; out of bounds gives a scratch element.
  T* operator&() const {
    if (__builtin_expect(in_bounds(i, count), 1)) return ptr + i;
    global_oob("access of", name, i, count);
    return const_cast<T*>(&zero<T>());
  }
};

// A pointer kernel parameter with the element count of its buffer.
template <class T>
struct GlobalRef {
  T* ptr;
  long long count;
  const char* name;

  template <class I>
  decltype(auto) operator[](I i) const {  // const T& for a read-only buffer: `&x[i]` works
    static_assert(std::is_integral<I>::value, "index a buffer with an integer");
    if constexpr (std::is_const<T>::value) {
      if (__builtin_expect(in_bounds(i, count), 1)) return static_cast<const T&>(ptr[i]);
      global_oob("load from", name, (long long)i, count);
      return static_cast<const T&>(zero<T>());
    } else {
      return GlobalElem<T>{ptr, count, name, (long long)i};
    }
  }
  // Passing the buffer on as a plain pointer (a helper function) leaves it unchecked.
  operator T*() const { return ptr; }
};

// `*reinterpret_cast<const V*>(&x[i])` of a kernel parameter, checked: elements i .. i + n - 1
// (n elements of T in a V) inside the buffer, the address aligned to alignof(V).
template <class V, class T>
V load_vector(const GlobalRef<T>& x, long long i) {
  constexpr long long n = sizeof(V) / sizeof(T);
  if (__builtin_expect(!in_bounds(i, x.count) || !in_bounds(i + n - 1, x.count), 0)) {
    violation("out-of-bounds %d-byte vector load from '%s' at indices %lld..%lld (buffer has %lld elements)",
              int(sizeof(V)), x.name, i, i + n - 1, x.count);
    return V{};
  }
  if (__builtin_expect(reinterpret_cast<uintptr_t>(x.ptr + i) % alignof(V) != 0, 0)) {
    violation("misaligned %d-byte vector load from '%s' at index %lld (address %p)", int(sizeof(V)),
              x.name, i, static_cast<const void*>(x.ptr + i));
    return V{};
  }
  return *reinterpret_cast<const V*>(x.ptr + i);
}

// ---- shared memory -----------------------------------------------------------------
struct Access {          // one access of a shared element; tid1 == 0: none
  uint32_t tid1;         // linear thread id + 1
  uint32_t block_epoch, warp_epoch;
};
struct Shadow { Access write, reads[2]; };

// Whether access `a` races with one by thread `tid` now (`st`: this worker's epochs).
inline bool concurrent(const Access& a, const WorkerState* st, int tid) {
  if (a.tid1 == 0 || a.tid1 - 1 == tid || a.block_epoch != st->block_epoch) return false;
  const int warp = tid / kWarp;
  return (a.tid1 - 1) / kWarp != warp || a.warp_epoch == st->warp_epoch[warp];  // not ordered by a warp barrier
}

// Records an access by thread `tid` now (field by field: a copy of a temporary would be
// read back wider than it was written, a store-forwarding stall on every shared access).
inline void record(Access& a, const WorkerState* st, int tid) {
  a.tid1 = uint32_t(tid + 1);
  a.block_epoch = st->block_epoch;
  a.warp_epoch = st->warp_epoch[tid / kWarp];
}

inline bool is_now(const Access& a, const WorkerState* st, int tid) {
  return a.tid1 == uint32_t(tid + 1) && a.block_epoch == st->block_epoch &&
         a.warp_epoch == st->warp_epoch[tid / kWarp];
}

// A shared array's name and shape, for messages.
struct SharedInfo {
  const char* name;
  int rank;
  const int* dims;
};

// "'name'[1][0][5]" (the element at flat index `flat`) and "[2][8][32]" (the shape).
inline void format_element(char* out, size_t n, const SharedInfo& info, long long flat) {
  int k = snprintf(out, n, "'%s'", info.name);
  for (int d = 0; d < info.rank && k > 0 && size_t(k) < n; ++d) {
    long long stride = 1;
    for (int e = d + 1; e < info.rank; ++e) stride *= info.dims[e];
    k += snprintf(out + k, n - k, "[%lld]", flat / stride % info.dims[d]);
  }
}
inline void format_shape(char* out, size_t n, const SharedInfo& info) {
  int k = 0;
  out[0] = 0;
  for (int d = 0; d < info.rank && k >= 0 && size_t(k) < n; ++d) k += snprintf(out + k, n - k, "[%d]", info.dims[d]);
}

__attribute__((noinline, cold)) inline void shared_oob(const char* what, const SharedInfo& info,
                                                       int level, long long index) {
  char shape[96];
  format_shape(shape, sizeof shape, info);
  violation("out-of-bounds %s __shared__ '%s': index %lld of dimension %d (shape %s)", what,
            info.name, index, level, shape);
}

__attribute__((noinline, cold)) inline void shared_race(const SharedInfo& info, long long flat,
                                                        const char* access, const char* earlier, int other) {
  char element[160], me[48], them[48];
  format_element(element, sizeof element, info, flat);
  format_thread(me, sizeof me, linear_tid());
  format_thread(them, sizeof them, other);
  violation("shared-memory race on %s: %s by thread %s after a %s by thread %s with no "
            "__syncthreads() between", element, access, me, earlier, them);
}

// Thread `tid` reads (writes) the element at `flat`, whose shadow is `s`.
inline void shared_read(Shadow& s, const WorkerState* st, int tid, const SharedInfo& info, long long flat) {
  // Read before by this thread in these epochs: no write since (it would have cleared the
  // reads), and the write before was checked then.
  if (__builtin_expect(is_now(s.reads[0], st, tid) || is_now(s.reads[1], st, tid), 1)) return;
  if (__builtin_expect(concurrent(s.write, st, tid), 0)) shared_race(info, flat, "read", "write", s.write.tid1 - 1);
  for (Access& r : s.reads)  // this thread's slot, else a free or stale one
    if (r.tid1 == uint32_t(tid + 1)) return record(r, st, tid);
  for (Access& r : s.reads)
    if (!concurrent(r, st, tid)) return record(r, st, tid);
  record(s.reads[1], st, tid);  // a third concurrent reader: forget one (a write still sees one)
}

inline void shared_write(Shadow& s, const WorkerState* st, int tid, const SharedInfo& info, long long flat) {
  if (__builtin_expect(concurrent(s.write, st, tid), 0)) shared_race(info, flat, "write", "write", s.write.tid1 - 1);
  for (const Access& r : s.reads)
    if (__builtin_expect(concurrent(r, st, tid), 0)) {
      shared_race(info, flat, "write", "read", r.tid1 - 1);
      break;
    }
  record(s.write, st, tid);
  s.reads[0].tid1 = s.reads[1].tid1 = 0;
}

// The storage of `__shared__ T name[D...]` (zero-initialized, per worker thread).
template <class T, int... D>
struct SharedArray {
  using Element = T;
  static constexpr int kRank = sizeof...(D);
  static constexpr long long kCount = (1LL * ... * D);
  static constexpr int kDims[kRank] = {D...};
  T data[kCount];
  Shadow shadow[kCount];
};

// Element `flat` of array A: a load through `operator T`, a store through `=`. `bad` >= 0:
// an index was out of bounds, `bad_index` in dimension `bad`.
template <class A>
struct SharedElem {
  using T = typename A::Element;
  A* array;
  const char* name;
  const WorkerState* st;
  int tid, bad;
  long long flat, bad_index;

  SharedInfo info() const { return {name, A::kRank, A::kDims}; }
  operator T() const {
    if (__builtin_expect(bad >= 0, 0)) return shared_oob("load from", info(), bad, bad_index), zero<T>();
    shared_read(array->shadow[flat], st, tid, info(), flat);
    return array->data[flat];
  }
  SharedElem& operator=(const T& v) {
    if (__builtin_expect(bad >= 0, 0)) return shared_oob("store to", info(), bad, bad_index), *this;
    shared_write(array->shadow[flat], st, tid, info(), flat);
    array->data[flat] = v;
    return *this;
  }
  SharedElem& operator=(const SharedElem& other) { return *this = T(other); }
  template <class U> SharedElem& operator+=(const U& v) { return *this = T(T(*this) + v); }
  template <class U> SharedElem& operator-=(const U& v) { return *this = T(T(*this) - v); }
  template <class U> SharedElem& operator*=(const U& v) { return *this = T(T(*this) * v); }
  // `&s[i][j]` (ldmatrix rows, cp.async destinations): checked as an access; the accesses
  // made through the pointer are not seen by the race check. Out of bounds: scratch.
  T* operator&() const {
    if (__builtin_expect(bad >= 0, 0)) return shared_oob("access of", info(), bad, bad_index),
                                              const_cast<T*>(&zero<T>());
    return &array->data[flat];
  }
};

// Shared array A indexed down to dimension L, `name[i0]...[iL-1]`, by thread `tid` of the
// block `st` runs (both looked up once, where the kernel declares the array).
template <class A, int L>
struct SharedRef {
  A* array;
  const char* name;
  const WorkerState* st;
  int tid, bad;
  long long flat, bad_index;

  template <class I>
  auto operator[](I i) const {
    static_assert(std::is_integral<I>::value, "index a shared array with an integer");
    const long long at = (long long)i;
    const bool inside = at >= 0 && at < A::kDims[L];
    const long long next = flat * A::kDims[L] + at;
    const int b = bad >= 0 || inside ? bad : L;
    const long long b_index = bad >= 0 || inside ? bad_index : at;
    if constexpr (L + 1 == A::kRank) return SharedElem<A>{array, name, st, tid, b, next, b_index};
    else return SharedRef<A, L + 1>{array, name, st, tid, b, next, b_index};
  }
};

template <class A>
SharedRef<A, 0> shared_view(A& array, const char* name) { return {&array, name, &state, linear_tid(), -1, 0, 0}; }

}  // namespace check

// Hook of arrive(): a barrier completed, so every access before it is ordered before every
// access after it (the block's, or the lanes' of one warp).
inline void check_release(Worker& w, Barrier& b) {
  if (&b == &w.block_barrier) ++check::state.block_epoch;
  else ++check::state.warp_epoch[&b - w.warp_barriers];
}

}  // namespace tmlir_emu

// Shuffles take the value of a checked element, not the proxy.
template <class A> typename A::Element __shfl_sync(unsigned m, tmlir_emu::check::SharedElem<A> v, int s, int w = warpSize) {
  return __shfl_sync(m, typename A::Element(v), s, w);
}
template <class A> typename A::Element __shfl_xor_sync(unsigned m, tmlir_emu::check::SharedElem<A> v, int s, int w = warpSize) {
  return __shfl_xor_sync(m, typename A::Element(v), s, w);
}
template <class A> typename A::Element __shfl_down_sync(unsigned m, tmlir_emu::check::SharedElem<A> v, unsigned s, int w = warpSize) {
  return __shfl_down_sync(m, typename A::Element(v), s, w);
}
template <class A> typename A::Element __shfl_up_sync(unsigned m, tmlir_emu::check::SharedElem<A> v, unsigned s, int w = warpSize) {
  return __shfl_up_sync(m, typename A::Element(v), s, w);
}
template <class T> T __shfl_sync(unsigned m, tmlir_emu::check::GlobalElem<T> v, int s, int w = warpSize) {
  return __shfl_sync(m, T(v), s, w);
}
template <class T> T __shfl_xor_sync(unsigned m, tmlir_emu::check::GlobalElem<T> v, int s, int w = warpSize) {
  return __shfl_xor_sync(m, T(v), s, w);
}
template <class T> T __shfl_down_sync(unsigned m, tmlir_emu::check::GlobalElem<T> v, unsigned s, int w = warpSize) {
  return __shfl_down_sync(m, T(v), s, w);
}
template <class T> T __shfl_up_sync(unsigned m, tmlir_emu::check::GlobalElem<T> v, unsigned s, int w = warpSize) {
  return __shfl_up_sync(m, T(v), s, w);
}
