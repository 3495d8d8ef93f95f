// tmlir_emu.h -- run the CUDA C that tmlir emits on the CPU, with real CUDA semantics.
//
// Force-included (g++ -std=c++17 -O2 -fPIC -shared -include tmlir_emu.h -x c++) ahead of
// an unchanged generated .cu file, this header maps CUDA onto C++17:
//
// * Every CUDA thread is a fiber with its own 64 KiB stack; a block runs its fibers in
//   thread order on one OS thread. `__syncthreads()` suspends the calling fiber until every
//   thread of the block has arrived -- a real barrier, so a kernel missing one races here
//   too. A fiber that finishes without waiting hands its stack on to the next thread, so
//   barrier-free kernels cost one context switch per thread and touch a single stack.
// * Switching is a hand-written x86-64 stack switch (no syscalls); elsewhere, ucontext.
// * `__shared__` is `thread_local` (at block scope: static too): a worker OS thread runs one
//   block at a time, so its copy *is* that block's shared memory. Dynamic shared memory (the
//   printer's `extern __shared__ ... tmlir_dynamic_smem[]` when a kernel's shared arrays
//   exceed 48 KiB) is one per-worker buffer of the largest size a block may have on any GPU
//   (227 KiB), which that declaration names. Blocks run in parallel on min(#blocks, #cpus)
//   workers (TMLIR_EMU_THREADS overrides); stacks are allocated once and reused until
//   tmlir_emu_release() unmaps them.
// * Warp shuffles meet at a per-warp barrier: lanes publish, all arrive, read, arrive.
// * A thread waiting at an mbarrier (tmlir_emu_hopper.h) yields until its phase completes;
//   a round of the scheduler in which no thread did more than re-check such a wait is a
//   deadlock, reported like one at a barrier.
// * A barrier that cannot complete (some threads exited, others wait) is reported to the
//   caller as an error instead of hanging.
// * Faults are reported, not fatal, once the module has the guard (tmlir_emu_set_guard, see
//   tmlir_emu_guard.cc): a SIGSEGV/SIGBUS/SIGFPE/SIGILL raised while a fiber runs jumps
//   back to its worker's scheduler, on a per-worker alternate signal stack (so a fiber stack
//   overflow into its guard page is caught too), and fails the launch naming the signal,
//   block and thread. The block's fiber stacks go back to the worker for reuse.
// * A launch stops early, between threads and blocks (so also at barriers), when another
//   worker failed or the guard's cancel flag is set (SIGINT in an interruptible launch).
#pragma once
#define TMLIR_EMU 1  // lets a source tell the emu from nvcc/NVRTC (tensor_core.py's prelude)
// `#pragma unroll` is nvcc's business. Only -Wall would warn, and g++ < 13 ignores this.
#pragma GCC diagnostic ignored "-Wunknown-pragmas"

#include <fenv.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <type_traits>
#if !defined(__x86_64__) || defined(TMLIR_EMU_UCONTEXT)
#define TMLIR_EMU_USE_UCONTEXT 1
#include <ucontext.h>
#endif

// Nothing but the launch wrappers leaves the .so. Hidden visibility also keeps the statics
// of inline functions (the worker pool, `__shared__` in inline helpers) out of GNU_UNIQUE
// symbols, which the dynamic loader would otherwise share between all loaded kernel files.
#pragma GCC visibility push(hidden)
#pragma GCC diagnostic ignored "-Wattributes"  // visibility on `static __device__` functions

// ---- CUDA qualifiers -----------------------------------------------------------------
#define __global__ __attribute__((visibility("hidden")))
#define __device__ __attribute__((visibility("hidden")))
#define __host__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
// One copy per worker thread = per running block (`thread_local` at block scope is static;
// `extern __shared__` then names the per-worker dynamic buffer below).
#define __shared__ thread_local
#define __constant__ static

// The dynamic shared memory of a block (see the top of this file): generated code declares it
// `extern __shared__ __align__(16) unsigned char tmlir_dynamic_smem[];` inside a kernel. Inline,
// so a module whose kernels never name it has none.
extern "C" {
alignas(1024) inline thread_local unsigned char tmlir_dynamic_smem[227 * 1024];  // 1024: wgmma swizzles
}

struct uint3 { unsigned int x, y, z; };
// The vector types of tmlir's vector loads (`tmgpu.load_vector`), aligned as on the GPU;
// may_alias, as they read buffers of float or of 16-bit floats.
struct __attribute__((aligned(8), may_alias)) float2 { float x, y; };
struct __attribute__((aligned(16), may_alias)) float4 { float x, y, z, w; };
struct __attribute__((aligned(8), may_alias)) uint2 { unsigned int x, y; };
struct __attribute__((aligned(16), may_alias)) uint4 { unsigned int x, y, z, w; };
constexpr int warpSize = 32;

namespace tmlir_emu {

#ifndef TMLIR_EMU_STACK_BYTES
#define TMLIR_EMU_STACK_BYTES (64 * 1024)
#endif
constexpr size_t kStackBytes = TMLIR_EMU_STACK_BYTES, kGuardBytes = 4096;
constexpr size_t kSignalStackBytes = 64 * 1024;  // a worker's alternate signal stack
constexpr int kMaxThreads = 1024, kWarp = 32;

// ---- context switching ---------------------------------------------------------------
#ifndef TMLIR_EMU_USE_UCONTEXT
struct Context { void* sp; };

// Pushes the callee-saved registers and the SSE/x87 control words on the current stack,
// stores the stack pointer in *save, switches to `load` and pops the same frame from it.
__attribute__((naked, noinline, noipa)) static void switch_stacks(void** /*save*/, void* /*load*/) {
  __asm__(
      "pushq %rbp\n\t pushq %rbx\n\t pushq %r12\n\t pushq %r13\n\t pushq %r14\n\t pushq %r15\n\t"
      "subq $8, %rsp\n\t stmxcsr (%rsp)\n\t fnstcw 4(%rsp)\n\t"
      "movq %rsp, (%rdi)\n\t movq %rsi, %rsp\n\t"
      "ldmxcsr (%rsp)\n\t fldcw 4(%rsp)\n\t addq $8, %rsp\n\t"
      "popq %r15\n\t popq %r14\n\t popq %r13\n\t popq %r12\n\t popq %rbx\n\t popq %rbp\n\t ret");
}
inline void context_switch(Context& from, Context& to) {
  __asm__ volatile("" ::: "memory");  // shared memory must be in memory at a barrier
  switch_stacks(&from.sp, to.sp);
  __asm__ volatile("" ::: "memory");
}
// Builds a frame that switch_stacks "returns" into: `entry` starts with the stack aligned
// as if it had been called (rsp % 16 == 8), default MXCSR and x87 control word.
inline void context_init(Context& c, char* stack, size_t size, void (*entry)()) {
  void** sp = reinterpret_cast<void**>(reinterpret_cast<uintptr_t>(stack + size) & ~uintptr_t{15});
  *--sp = nullptr;                                // entry's return address: it never returns
  *--sp = reinterpret_cast<void*>(entry);         // popped by `ret`
  for (int i = 0; i < 6; ++i) *--sp = nullptr;    // rbp rbx r12 r13 r14 r15
  --sp;
  reinterpret_cast<uint32_t*>(sp)[0] = 0x1F80;    // MXCSR: all exceptions masked, round-nearest
  reinterpret_cast<uint16_t*>(sp)[2] = 0x037F;    // x87 control word default
  c.sp = sp;
}
#else  // portable fallback (or forced with -DTMLIR_EMU_UCONTEXT): one sigprocmask per switch
struct Context { ucontext_t uc; };
inline void context_switch(Context& from, Context& to) { swapcontext(&from.uc, &to.uc); }
inline void context_init(Context& c, char* stack, size_t size, void (*entry)()) {
  getcontext(&c.uc);
  c.uc.uc_stack.ss_sp = stack;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;
  makecontext(&c.uc, entry, 0);
}
#endif

// ---- the fault guard (tmlir_emu_guard.cc; the two layouts must agree) -------------------
struct Recovery {
  sigjmp_buf jump;                // the worker's scheduler, where a fault resumes
  volatile sig_atomic_t armed;    // nonzero while one of the worker's fibers runs
  int sig, code;                  // the fault: signal and si_code
  void* addr;                     // si_addr
};
struct GuardApi {
  size_t recovery_size;
  void (*enter)(Recovery*);
  const volatile int* (*launch_begins)();  // the flag that stops this launch (SIGINT)
};
static const GuardApi* fault_guard = nullptr;  // set by tmlir_emu_set_guard; null: unguarded
static const volatile int never_cancelled = 0;

// ---- fibers, barriers and the per-worker block state ---------------------------------
enum class State : uint8_t { kNew, kReady, kBlocked, kDone };

// The fibers [first, first + count) must all arrive before any of them continues.
struct Barrier { int first, count, arrived; };

struct Fiber {
  uint3 idx;          // threadIdx
  State state;
  bool idle_spin;     // its last turn only re-checked an mbarrier wait that cannot complete yet
  Barrier* waiting;   // the barrier a kBlocked fiber waits at
  char* stack;
  Context ctx;
};

// Everything one OS worker needs to run a block. Allocated once, recycled across launches.
struct Worker {
  Fiber fibers[kMaxThreads];
  Barrier block_barrier, warp_barriers[kMaxThreads / kWarp];
  uint64_t lanes[kMaxThreads];  // warp shuffle exchange slots, one per thread
  char* free_stacks[kMaxThreads];
  int n_free, n_threads;
  Context scheduler;
  void (*body)(void*);          // the kernel call, type-erased
  void* arg;
  const int* failed;            // the launch's failure flag: stop when set...
  const volatile int* cancel;   // ...or when this one is (SIGINT)
  Worker* next_free;
  Recovery recovery;            // where a fault in one of this worker's fibers resumes
  void* tensor_cores;           // tmlir_emu_tc.h's scratch and cp.async queues, on first use
  void* hopper;                 // tmlir_emu_hopper.h's wgmma queues, bulk copies, on first use
  const char* misuse;           // why tmlir_emu_tc.h trapped in the running thread, or null
  fenv_t fenv;                  // the scheduler's floating-point environment, for after one
  alignas(16) char signal_stack[kSignalStackBytes];
};

static thread_local Worker* worker = nullptr;   // this OS thread's block
static thread_local Fiber* current = nullptr;   // the running CUDA thread
static thread_local uint3 block_idx, block_dim, grid_dim;
#ifdef TMLIR_EMU_CHECK
inline void check_release(Worker& w, Barrier& b);  // tmlir_emu_check.h: a barrier completed
#endif
inline void tc_thread_begin();  // tmlir_emu_tc.h: a new thread has no cp.async in flight
inline void tc_thread_end();    // tmlir_emu_tc.h: copies never waited for are dropped
inline void hopper_thread_begin();  // tmlir_emu_hopper.h: no wgmma in flight
inline void hopper_thread_end();    // tmlir_emu_hopper.h: wgmmas never waited for are dropped
inline void hopper_block_begin();   // tmlir_emu_hopper.h: no bulk copy in flight

inline char* take_stack(Worker& w) {
  if (w.n_free > 0) return w.free_stacks[--w.n_free];
  void* p = mmap(nullptr, kStackBytes + kGuardBytes, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  mprotect(p, kGuardBytes, PROT_NONE);  // overflowing a fiber stack faults instead of corrupting
  return static_cast<char*>(p) + kGuardBytes;
}

[[noreturn]] inline void fiber_main() {
  tc_thread_begin();
  hopper_thread_begin();
  worker->body(worker->arg);
  hopper_thread_end();
  tc_thread_end();
  current->state = State::kDone;
  context_switch(current->ctx, worker->scheduler);
  __builtin_unreachable();
}

// Called by a thread at barrier `b`: the last to arrive releases the others and continues;
// everybody else is suspended until released.
inline void arrive(Barrier& b) {
  Worker& w = *worker;
  if (++b.arrived == b.count) {
    b.arrived = 0;
#ifdef TMLIR_EMU_CHECK
    check_release(w, b);
#endif
    for (Fiber* f = w.fibers + b.first; f < w.fibers + b.first + b.count; ++f)
      if (f->waiting == &b) f->waiting = nullptr, f->state = State::kReady;
    return;
  }
  Fiber& f = *current;
  f.state = State::kBlocked;
  f.waiting = &b;
  context_switch(f.ctx, w.scheduler);
}

// Called by a thread whose wait (at an mbarrier) cannot complete yet: the block's other
// threads run, and it is resumed in the scheduler's next round to check again. `idle`: it
// did nothing since its last check. A round in which every thread that ran was idle is a
// deadlock (run_block).
inline void spin_yield(bool idle) {
  Fiber& f = *current;
  f.idle_spin = idle;
  context_switch(f.ctx, worker->scheduler);
}

// Gives the stacks of unfinished fibers back after a failed block and describes the failure
// (`why`, or a deadlock when null).
inline bool abandon_block(Worker& w, const char* why, char* err, size_t errlen) {
  int at_block = 0, at_warp = 0, spinning = 0, n = w.n_threads;
  for (int i = 0; i < n; ++i) {
    Fiber& f = w.fibers[i];
    if (f.state == State::kBlocked) ++(f.waiting == &w.block_barrier ? at_block : at_warp);
    if (f.state == State::kReady && f.idle_spin) ++spinning;
    if (f.state == State::kBlocked || f.state == State::kReady) w.free_stacks[w.n_free++] = f.stack;
  }
  if (!err) return false;
  if (why) return snprintf(err, errlen, "%s", why), false;
  if (spinning)
    return snprintf(err, errlen, "deadlock in block (%u,%u,%u): %d thread(s) wait at an mbarrier whose phase "
                    "never completes (%d at __syncthreads(), %d at a warp barrier, %d exited)", block_idx.x,
                    block_idx.y, block_idx.z, spinning, at_block, at_warp, n - spinning - at_block - at_warp),
           false;
  snprintf(err, errlen, "deadlock in block (%u,%u,%u): %d thread(s) wait at __syncthreads() and %d "
           "at a warp barrier (__syncwarp/__shfl_*_sync) while %d of %d exited; every thread of "
           "the block (warp) must reach each barrier", block_idx.x, block_idx.y, block_idx.z,
           at_block, at_warp, n - at_block - at_warp, n);
  return false;
}

// Runs every thread of the block at block_idx to completion, in rounds: each round resumes,
// in thread order, every fiber that can run, until it finishes or waits at a barrier. A
// round in which nothing could run is a deadlock: false, with a message in `err`. Also false,
// with an empty message, when the launch failed elsewhere or was cancelled (checked after
// every switch back, so a block of threads looping over barriers stops too).
inline bool run_block(Worker& w, char* err, size_t errlen) {
  const int n = w.n_threads;
  w.block_barrier = {0, n, 0};
  for (int first = 0, k = 0; first < n; first += kWarp, ++k)
    w.warp_barriers[k] = {first, n - first < kWarp ? n - first : kWarp, 0};
  for (int i = 0; i < n; ++i)
    w.fibers[i].state = State::kNew, w.fibers[i].waiting = nullptr, w.fibers[i].idle_spin = false;
  hopper_block_begin();
  for (int live = n; live > 0;) {
    bool ran = false;
    for (int i = 0; i < n; ++i) {
      Fiber& f = w.fibers[i];
      if (f.state == State::kNew) {
        if (!(f.stack = take_stack(w)))
          return abandon_block(w, "out of memory for fiber stacks", err, errlen);
        context_init(f.ctx, f.stack, kStackBytes, fiber_main);
        f.state = State::kReady;
      } else if (f.state != State::kReady) {
        continue;
      }
      current = &f;
      f.idle_spin = false;
      w.recovery.armed = 1;
      context_switch(w.scheduler, f.ctx);
      w.recovery.armed = 0;
      ran |= !(f.state == State::kReady && f.idle_spin);  // an idle re-check is no progress
      if (f.state == State::kDone) w.free_stacks[w.n_free++] = f.stack, --live;
      if (__atomic_load_n(w.failed, __ATOMIC_RELAXED) || *w.cancel)
        return abandon_block(w, "", err, errlen);  // the launch stops: see run_blocks
    }
    if (!ran) return abandon_block(w, nullptr, err, errlen);
  }
  return true;
}

// ---- the grid: blocks spread over OS workers -----------------------------------------
// Blocks started by this module's latest launch, for a progress display (tmlir_emu_progress).
static long long blocks_started = 0;

struct Launch {
  uint3 grid, block;
  void (*body)(void*);             // the kernel call, type-erased
  void* arg;
  long long n_blocks, next_block;  // blocks are claimed with an atomic increment
  int failed;                      // set once, by the first worker that stops: 1 failed, 2 cancelled
  const volatile int* cancel;      // the guard's cancel flag (SIGINT), or never_cancelled
  char* err;
  size_t errlen;
};

// Workers, with their fiber stacks, outlive launches on a free list shared by all launches:
// recycle(nullptr) takes one (a fresh all-zero one if the list is empty); recycle(w) gives w
// back; recycle(nullptr, true) empties the list, unmapping every stack (tmlir_emu_release).
inline Worker* recycle(Worker* back, bool release_all = false) {
  static pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  static Worker* free_list = nullptr;
  pthread_mutex_lock(&mutex);
  Worker* w = back ? nullptr : free_list;
  if (back) back->next_free = free_list, free_list = back;
  else if (release_all) free_list = nullptr;
  else if (w) free_list = w->next_free;
  pthread_mutex_unlock(&mutex);
  if (!release_all) return back || w ? w : static_cast<Worker*>(calloc(1, sizeof(Worker)));
  while (w) {
    Worker* next = w->next_free;
    free(w->tensor_cores);
    free(w->hopper);
    for (int i = 0; i < w->n_free; ++i)
      munmap(w->free_stacks[i] - kGuardBytes, kStackBytes + kGuardBytes);
    free(w);
    w = next;
  }
  return nullptr;
}

inline void fail(Launch& L, const char* msg, int why = 1) {
  int expected = 0;
  if (__atomic_compare_exchange_n(&L.failed, &expected, why, false, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    snprintf(L.err, L.errlen, "%s", msg);
}

// Describes the fault the guard recorded in w.recovery: what, and in which thread.
inline void describe_fault(const Worker& w, char* msg, size_t len) {
  const Recovery& r = w.recovery;
  const Fiber& f = *current;
  const char* addr = static_cast<const char*>(r.addr);
  char what[200];
  if (r.sig == SIGSEGV && addr < f.stack && addr >= f.stack - kGuardBytes)
    snprintf(what, sizeof what, "stack overflow (the thread used more than its %zu KiB stack: "
             "deep recursion or large local arrays)", kStackBytes / 1024);
  else if (r.sig == SIGSEGV)
    snprintf(what, sizeof what, "segmentation fault at address %p (%s)", r.addr,
             r.code == SEGV_ACCERR ? "no access rights" : "not mapped");
  else if (r.sig == SIGBUS)
    snprintf(what, sizeof what, "bus error at address %p (%s)", r.addr,
             r.code == BUS_ADRALN ? "misaligned" : "no memory behind it, e.g. a truncated mapped file");
  else if (r.sig == SIGILL && w.misuse)
    snprintf(what, sizeof what, "%s", w.misuse);
  else if (r.sig == SIGFPE)
    snprintf(what, sizeof what, "arithmetic exception (%s)",
             r.code == FPE_INTDIV ? "integer division by zero or overflow" : "floating-point trap");
  else
    snprintf(what, sizeof what, "illegal instruction at %p (e.g. __builtin_trap())", r.addr);
  snprintf(msg, len, "%s in block (%u,%u,%u) thread (%u,%u,%u)", what, block_idx.x, block_idx.y,
           block_idx.z, f.idx.x, f.idx.y, f.idx.z);
}

// Runs blocks until none is left or the launch stops. With the guard, a fault in one of the
// worker's fibers resumes at the sigsetjmp below: the block is abandoned, its stacks kept for
// reuse, and the launch fails with the fault's description.
__attribute__((noinline)) inline void run_blocks(Launch& L, Worker& w, bool guarded) {
  char msg[512];
  if (guarded) fegetenv(&w.fenv);
  if (guarded && sigsetjmp(w.recovery.jump, 0)) {  // 0: no sigprocmask call per launch...
    sigset_t handled;
    sigemptyset(&handled);
    sigaddset(&handled, w.recovery.sig);
    pthread_sigmask(SIG_UNBLOCK, &handled, nullptr);  // ...but the handler's mask undone here
    fesetenv(&w.fenv);  // the handler ran with the default environment
    abandon_block(w, nullptr, nullptr, 0);
    describe_fault(w, msg, sizeof msg);
    fail(L, msg);
    return;
  }
  while (!__atomic_load_n(&L.failed, __ATOMIC_ACQUIRE)) {
    if (*L.cancel) return fail(L, "interrupted (SIGINT)", 2);
    long long b = __atomic_fetch_add(&L.next_block, 1, __ATOMIC_RELAXED);
    if (b >= L.n_blocks) break;
    __atomic_store_n(&blocks_started, b, __ATOMIC_RELAXED);
    block_idx = {unsigned(b % L.grid.x), unsigned(b / L.grid.x % L.grid.y),
                 unsigned(b / L.grid.x / L.grid.y)};
    if (!run_block(w, msg, sizeof msg))  // an empty message: stopped by another worker or SIGINT
      msg[0] || !*L.cancel ? fail(L, msg) : fail(L, "interrupted (SIGINT)", 2);
  }
}

// Gives this OS thread the worker's alternate signal stack and recovery point; false if the
// stack cannot be set (then faults stay fatal, as without the guard).
inline bool guard_enter(Worker& w, stack_t& previous) {
  stack_t ours{};
  ours.ss_sp = w.signal_stack, ours.ss_size = kSignalStackBytes;
  if (sigaltstack(&ours, &previous) != 0) return false;
  fault_guard->enter(&w.recovery);
  return true;
}

inline void guard_leave(stack_t previous) {
  fault_guard->enter(nullptr);
  previous.ss_flags &= SS_DISABLE;
  sigaltstack(&previous, nullptr);
}

inline void* worker_main(void* p) {
  Launch& L = *static_cast<Launch*>(p);
  Worker* w = recycle(nullptr);
  if (!w) return fail(L, "out of memory for the emulator's block state"), nullptr;
  w->body = L.body, w->arg = L.arg, w->n_threads = int(L.block.x * L.block.y * L.block.z);
  w->failed = &L.failed, w->cancel = L.cancel;
  for (int i = 0; i < w->n_threads; ++i)  // threadIdx, x fastest
    w->fibers[i].idx = {i % L.block.x, i / L.block.x % L.block.y, i / (L.block.x * L.block.y)};
  worker = w, block_dim = L.block, grid_dim = L.grid;
  stack_t previous_stack;
  const bool guarded = fault_guard != nullptr && guard_enter(*w, previous_stack);
  run_blocks(L, *w, guarded);
  if (guarded) guard_leave(previous_stack);
  worker = nullptr, current = nullptr;
  recycle(w);
  return nullptr;
}

inline int worker_count(long long n_blocks) {
  int n = 0;
  if (const char* env = getenv("TMLIR_EMU_THREADS")) n = atoi(env);
  if (n <= 0) {
    cpu_set_t set;
    n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
  }
  return int(n_blocks < n ? n_blocks : n);
}

// Runs `body` (a call of the kernel) for every thread of the grid, like cuLaunchKernel
// followed by a synchronize. Returns 0; 1 with a message in `err` when it failed; 2 when the
// guard's cancel flag stopped it (SIGINT).
template <class F>
int launch(const unsigned* grid3, const unsigned* block3, F body, char* err, unsigned long errlen) {
  Launch L{{grid3[0], grid3[1], grid3[2]}, {block3[0], block3[1], block3[2]},
           [](void* f) { (*static_cast<F*>(f))(); }, &body,
           (long long)grid3[0] * grid3[1] * grid3[2], 0, 0,
           fault_guard ? fault_guard->launch_begins() : &never_cancelled, err, errlen};
  if (L.block.x * L.block.y * L.block.z > unsigned(kMaxThreads))
    return fail(L, "block has more than 1024 threads"), 1;
  __atomic_store_n(&blocks_started, 0, __ATOMIC_RELAXED);
  pthread_t threads[256];
  int n_threads = 0, n_workers = worker_count(L.n_blocks);
  while (n_threads < n_workers - 1 && n_threads < 256 &&
         pthread_create(&threads[n_threads], nullptr, worker_main, &L) == 0)
    ++n_threads;
  worker_main(&L);  // the calling thread is a worker too
  for (int i = 0; i < n_threads; ++i) pthread_join(threads[i], nullptr);
  return L.failed;
}

// ---- warp intrinsics -----------------------------------------------------------------
inline int linear_tid() { return int(current - worker->fibers); }

// Every lane of the calling warp publishes `v`, then reads the value of lane `src` (its own
// when `src` is outside the warp). Two warp barriers: all published, all read.
template <class T>
T warp_exchange(T v, int src) {
  static_assert(sizeof(T) <= sizeof(uint64_t) && std::is_trivially_copyable<T>::value,
                "shuffles move values of at most 8 bytes");
  Worker& w = *worker;
  const int tid = linear_tid();
  Barrier& b = w.warp_barriers[tid / kWarp];
  memcpy(&w.lanes[tid], &v, sizeof(T));
  arrive(b);
  T out = v;
  if (src >= 0 && src < b.count) memcpy(&out, &w.lanes[b.first + src], sizeof(T));
  arrive(b);
  return out;
}

}  // namespace tmlir_emu

// ---- CUDA built-in variables ---------------------------------------------------------
#define threadIdx (static_cast<const ::uint3&>(::tmlir_emu::current->idx))
#define blockIdx (static_cast<const ::uint3&>(::tmlir_emu::block_idx))
#define blockDim (static_cast<const ::uint3&>(::tmlir_emu::block_dim))
#define gridDim (static_cast<const ::uint3&>(::tmlir_emu::grid_dim))

// ---- synchronization -----------------------------------------------------------------
inline void __syncthreads() { tmlir_emu::arrive(tmlir_emu::worker->block_barrier); }
// The mask is not modelled: every existing lane of the warp must take part.
inline void __syncwarp(unsigned = 0xffffffffu) {
  tmlir_emu::arrive(tmlir_emu::worker->warp_barriers[tmlir_emu::linear_tid() / tmlir_emu::kWarp]);
}
inline int tmlir_emu_lane() { return tmlir_emu::linear_tid() % tmlir_emu::kWarp; }
// Shuffles within segments of `width` lanes; out-of-segment sources keep their own value.
template <class T> T __shfl_sync(unsigned, T v, int src, int width = warpSize) {
  return tmlir_emu::warp_exchange(v, (tmlir_emu_lane() & ~(width - 1)) + (src & (width - 1)));
}
template <class T> T __shfl_xor_sync(unsigned, T v, int lane_mask, int width = warpSize) {
  const int lane = tmlir_emu_lane(), src = lane ^ lane_mask;
  return tmlir_emu::warp_exchange(v, (src & ~(width - 1)) > (lane & ~(width - 1)) ? lane : src);
}
template <class T> T __shfl_down_sync(unsigned, T v, unsigned delta, int width = warpSize) {
  const int lane = tmlir_emu_lane(), in_segment = (lane & (width - 1)) + int(delta) < width;
  return tmlir_emu::warp_exchange(v, in_segment ? lane + int(delta) : lane);
}
template <class T> T __shfl_up_sync(unsigned, T v, unsigned delta, int width = warpSize) {
  const int lane = tmlir_emu_lane(), in_segment = (lane & (width - 1)) >= int(delta);
  return tmlir_emu::warp_exchange(v, in_segment ? lane - int(delta) : lane);
}

// ---- math and bit intrinsics ---------------------------------------------------------
template <class A, class B> inline std::common_type_t<A, B> min(A a, B b) {
  using T = std::common_type_t<A, B>;
  return T(b) < T(a) ? T(b) : T(a);
}
template <class A, class B> inline std::common_type_t<A, B> max(A a, B b) {
  using T = std::common_type_t<A, B>;
  return T(a) < T(b) ? T(b) : T(a);
}
#define rsqrtf tmlir_emu_rsqrtf  // not in C17's math.h; C23 libcs may declare their own
inline float tmlir_emu_rsqrtf(float x) { return 1.0f / sqrtf(x); }
inline double rsqrt(double x) { return 1.0 / sqrt(x); }  // CUDA's double rsqrt
inline float __expf(float x) { return expf(x); }
inline float __logf(float x) { return logf(x); }
inline float __powf(float x, float y) { return powf(x, y); }
inline float __fdividef(float x, float y) { return x / y; }
inline float __frcp_rn(float x) { return 1.0f / x; }
inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x; }
inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
inline int __float_as_int(float f) { int i; memcpy(&i, &f, sizeof i); return i; }
inline float __uint_as_float(unsigned u) { float f; memcpy(&f, &u, sizeof f); return f; }
inline unsigned __float_as_uint(float f) { unsigned u; memcpy(&u, &f, sizeof u); return u; }
template <class T> inline T __ldg(const T* p) { return *p; }

// Blocks run in parallel, so atomics must be real atomics, and a fence a real fence: a block
// that stores, fences and then increments a counter publishes its stores to the block that
// sees the count and fences (C++'s fence-to-fence synchronization through the atomic's
// release sequence, as PTX's fence.sc.gpu around atomics). Fibers of one block share an OS
// thread, so their program order is the thread's.
inline int atomicAdd(int* p, int v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
inline void __threadfence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
// The emu has no L1 to bypass: a load cached in L2 only (ld.global.cg) is a load.
template <class T> inline T __ldcg(const T* p) { return *p; }
inline float atomicAdd(float* p, float v) {
  float old, next;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do next = old + v;
  while (!__atomic_compare_exchange(p, &old, &next, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return old;
}

// Hands the module the process's fault guard (the table of tmlir_emu_guard_api(), or null for
// none); EmuModule does so before its first launch. -1 if the table's layout does not match.
extern "C" __attribute__((visibility("default"))) int tmlir_emu_set_guard(const void* api) {
  const auto* table = static_cast<const tmlir_emu::GuardApi*>(api);
  if (table && table->recovery_size != sizeof(tmlir_emu::Recovery)) return -1;
  tmlir_emu::fault_guard = table;
  return 0;
}

// How many blocks the module's latest launch has started (read while it runs, for a progress bar).
extern "C" __attribute__((visibility("default"))) long long tmlir_emu_progress() {
  return __atomic_load_n(&tmlir_emu::blocks_started, __ATOMIC_RELAXED);
}

// Gives back the memory this module's idle workers hold: every fiber stack is a mapping (two,
// with its guard page), so a process that loads many modules must release them or run out of
// vm.max_map_count. EmuModule.close() calls it; a later launch allocates afresh.
extern "C" __attribute__((visibility("default"))) void tmlir_emu_release() {
  tmlir_emu::recycle(nullptr, true);
}

#include "tmlir_emu_tc.h"  // mma, ldmatrix, cp.async (emu.py inlines it)
#include "tmlir_emu_hopper.h"  // wgmma, mbarriers, bulk copies (emu.py inlines it)

#ifdef TMLIR_EMU_CHECK  // the emu sanitizer (compile_emu(check=True))
#include "tmlir_emu_check.h"
#endif

#pragma GCC visibility pop
