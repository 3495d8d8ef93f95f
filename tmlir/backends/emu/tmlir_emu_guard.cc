// tmlir_emu_guard.cc -- the emu backend's signal guard: faults in kernels, Ctrl-C in launches.
//
// One copy per process, built once into the cache and never unloaded (kernel modules are
// dlclose'd by EmuModule.close, so a handler living in one of them could be left installed
// after its code is gone). It owns two things:
//
// * The fault handler (SIGSEGV, SIGBUS, SIGFPE, SIGILL), installed once, on the alternate
//   signal stack. A worker OS thread of an emu launch registers a recovery point (`enter`)
//   and sets `armed` while one of its fibers runs; a fault the kernel raised there
//   (si_code > 0) is recorded and siglongjmp'd back to the worker's scheduler, which fails
//   the launch. Every other fault goes on to the handler installed before this one
//   (Python's faulthandler, pytest's, the default action) exactly as before.
// * The SIGINT hook of interruptible launches: those run by Python's main thread while
//   `tmlir_emu_guard_sigint_armed` is set (Python sets it while SIGINT has its default
//   handler). Such a launch installs the hook if SIGINT's handler is not already it, and
//   polls the flag the hook sets between threads and blocks. The hook then goes on to the
//   handler it replaced (Python's), which raises KeyboardInterrupt once the launch returns.
//   It stays installed between launches (doing the same as Python's handler alone) until
//   Python installs another SIGINT handler, which replaces it; so a launch costs one
//   sigaction() query.
//
// Kernel modules reach it through the table of tmlir_emu_guard_api(), handed to their
// tmlir_emu_set_guard() before their first launch; its layout is repeated in tmlir_emu.h.
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stddef.h>

struct tmlir_emu_recovery {
  sigjmp_buf jump;                // the worker's scheduler, where a fault resumes
  volatile sig_atomic_t armed;    // nonzero while one of the worker's fibers runs
  int sig, code;                  // the fault: signal and si_code
  void* addr;                     // si_addr
};

struct tmlir_emu_guard_api {
  size_t recovery_size;           // sizeof(tmlir_emu_recovery): the two copies must agree
  void (*enter)(struct tmlir_emu_recovery*);  // this OS thread's recovery point (nullptr: none)
  const volatile int* (*launch_begins)();  // the flag that stops this thread's launch
};

// Set by Python's main thread while its launches may be stopped by SIGINT.
extern "C" {
volatile int tmlir_emu_guard_sigint_armed = 0;
}

namespace {

const int kFaults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction previous[NSIG];  // the handlers found when ours were installed
struct sigaction previous_interrupt;  // the SIGINT handler the hook replaced
volatile int cancel_requested = 0;
const volatile int never = 0;
pthread_t main_thread;
__thread tmlir_emu_recovery* recovery __attribute__((tls_model("initial-exec"))) = nullptr;

// Hands the signal to the handler that was installed before ours, as if ours were not there.
void forward(int sig, siginfo_t* info, void* context, const struct sigaction& old) {
  if (old.sa_flags & SA_SIGINFO) return old.sa_sigaction(sig, info, context);
  const bool fault = info->si_code > 0 && sig != SIGINT;  // raised by the faulting instruction
  if (old.sa_handler == SIG_IGN && !fault) return;
  if (old.sa_handler == SIG_DFL || old.sa_handler == SIG_IGN) {
    // The default action: reinstall it; a fault recurs when its instruction is retried, a
    // sent signal is raised again (pending until this handler returns).
    struct sigaction dfl = old;
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, nullptr);
    if (!fault) raise(sig);
    return;
  }
  old.sa_handler(sig);
}

void on_fault(int sig, siginfo_t* info, void* context) {
  tmlir_emu_recovery* r = recovery;
  if (r != nullptr && r->armed && info->si_code > 0) {
    r->armed = 0;
    r->sig = sig, r->code = info->si_code, r->addr = info->si_addr;
    siglongjmp(r->jump, 1);
  }
  forward(sig, info, context, previous[sig]);
}

void on_interrupt(int sig, siginfo_t* info, void* context) {
  if (previous_interrupt.sa_handler != SIG_IGN || (previous_interrupt.sa_flags & SA_SIGINFO))
    cancel_requested = 1;
  forward(sig, info, context, previous_interrupt);
}

void enter(tmlir_emu_recovery* r) { recovery = r; }

// Called by a launch before it starts: the flag its workers poll, set by SIGINT where the
// launch is interruptible (the hook installed), else one that never is.
const volatile int* launch_begins() {
  if (!tmlir_emu_guard_sigint_armed || !pthread_equal(pthread_self(), main_thread)) return &never;
  cancel_requested = 0;
  struct sigaction current;
  if (sigaction(SIGINT, nullptr, &current) != 0) return &never;
  if ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_interrupt)
    return &cancel_requested;  // still installed
  if (!(current.sa_flags & SA_SIGINFO) && (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN))
    return &never;  // not Python's handler after all
  previous_interrupt = current;  // before the hook can run
  struct sigaction hook = current;
  hook.sa_sigaction = on_interrupt;
  hook.sa_flags = SA_SIGINFO | SA_ONSTACK | (current.sa_flags & SA_RESTART);
  return sigaction(SIGINT, &hook, nullptr) == 0 ? &cancel_requested : &never;
}

const tmlir_emu_guard_api api = {sizeof(tmlir_emu_recovery), enter, launch_begins};

}  // namespace

// Installs the fault handler (once; later calls do nothing) and records which OS thread is
// Python's main thread (`main`, its threading ident). Returns 0, or -1 if sigaction failed
// (then nothing is guarded).
extern "C" int tmlir_emu_guard_install(unsigned long main) {
  static int installed = 0;
  if (installed) return 0;
  main_thread = static_cast<pthread_t>(main);
  struct sigaction ours = {};
  ours.sa_sigaction = on_fault;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&ours.sa_mask);
  for (int sig : kFaults)
    if (sigaction(sig, &ours, &previous[sig]) != 0) return -1;
  installed = 1;
  return 0;
}

extern "C" const tmlir_emu_guard_api* tmlir_emu_guard_api() { return &api; }
