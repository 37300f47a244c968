/* knobs sampling profiler runtime (Comprex §IV "granularity of regions", §V.A), linked into
 * programs instrumented at method level *instead of* knobs_runtime.c (link one or the other).
 *
 * API (C ABI):
 *     void __knobs_method_enter(uint32_t id);
 *     void __knobs_method_exit(uint32_t id);
 *     void __knobs_region_enter(uint32_t id);   same functions under the names
 *     void __knobs_region_exit(uint32_t id);    llvm::instrument emits
 * Enter/exit only push/pop a per-thread stack of region ids and publish its top (no clock
 * read, no system call, no lock, no allocation but amortised growth). A sampler charges
 * every tick of `period` to the innermost open region of each sampled thread (its self
 * time) or, with nothing open, to the base. At exit the file named by KNOBS_REGION_TIMES
 * receives per-region samples x period (seconds), entries, base, total, the period and the
 * sample counts, in the region-times format family (docs/profiler.md). Never prints.
 *
 * Environment (read once, by a constructor):
 *     KNOBS_REGION_TIMES       output file; unset or empty: nothing is sampled or written
 *     KNOBS_PROFILE_PERIOD_US  sampling period in microseconds (default 1000; 10..1000000,
 *                              anything else means the default; the file says what was used)
 *     KNOBS_PROFILE_CLOCK      `wall` (default) or `cpu`
 *     KNOBS_PROFILE_TIMER      `posix`: the cpu clock uses POSIX CPU timers even where perf
 *                              events are allowed (to compare the two)
 *
 * Clocks:
 * - wall: a sampler thread (started when the first thread registers; all signals blocked) wakes every
 *   period on CLOCK_MONOTONIC (absolute deadlines) and takes one sample of each live
 *   registered thread; a late wake-up covers several periods, and each sample weighs the
 *   covered time over the wake-ups (`weight`), so the total stays the wall time and a
 *   starved sampler loses precision (`missed`), not time. No signal reaches the program, so its
 *   sleeps and blocking calls are never interrupted (a wall-clock *signal* would make every
 *   nanosleep longer than a period return EINTR early). Execution time as Comprex measures it.
 * - cpu, where perf events are allowed: each registered thread opens its own `task-clock`
 *   software perf event (perf_event_open on itself, so perf_event_paranoid 2 allows it; no
 *   PMU needed), which counts its CPU time, user and kernel, in nanoseconds. The sampler
 *   thread, as for the wall clock, wakes every period, reads each live thread's count and
 *   charges the whole periods it grew by to that thread's innermost region: no signal
 *   reaches the program (a signal per period would cut its sleeps short, and the perf
 *   event's own overflow signals arrive late enough under load to land in the next sleep).
 *   A thread ending waits for a wake-up in progress before it closes its event.
 * - cpu, where they are not (a higher perf_event_paranoid, a container's seccomp; or
 *   KNOBS_PROFILE_TIMER=posix): one timer per registered thread,
 *   timer_create(CLOCK_THREAD_CPUTIME_ID) delivering SIGPROF to that very thread
 *   (SIGEV_THREAD_ID); the handler charges 1 + the timer's overrun (kernel CPU timers fire at
 *   most once per scheduler tick, 4 ms at HZ=250, the overrun counts the rest) to the
 *   thread's innermost region, so a period shorter than the tick is charged in lumps and a
 *   short method's time is seen only in the long run. The handler is async-signal-safe: it
 *   reads a thread-local pointer, the published top of the stack and the overrun, and adds to
 *   a counter; errno is preserved. SA_RESTART is set; blocking calls can still see EINTR
 *   where the kernel never restarts them (but a sleeping thread uses no CPU, so its timer
 *   does not fire). The program must not use SIGPROF itself.
 *
 * Test clock (-DKNOBS_TEST_CLOCK; runtime::profiler::build_test_clock): no sampler thread and
 * no CPU timer; time passes only when the program calls the one extra export
 *     void __knobs_test_sample(uint32_t periods);
 * wall: exactly one sampler wake-up covering `periods` periods (the same function the sampler
 * thread runs: one sample of every live registered thread, `weight` and `missed` as above);
 * cpu: the calling thread's timer expiring with `periods` - 1 overruns. And
 *     void __knobs_test_sleep(uint32_t periods);
 * the calling thread sleeping: wall as __knobs_test_sample, cpu nothing charged (a sleeping
 * thread's CPU timer does not fire), the time passing either way. The `wall` line is the
 * test clock's time (the periods passed to it), so a test can check attribution exactly. The
 * normal build has no such symbol and is unchanged.
 *
 * Semantics:
 * - Enter pushes (recursion pushes again; every enter counts one entry). Exit pops the
 *   innermost activation of its id and, if it is not the top, every activation above it
 *   (they were skipped by longjmp or an exception: counted in `unwound`); an exit for an id
 *   not open is ignored (`unmatched_exits`). Method regions nest like calls, so this is the
 *   call stack's own discipline.
 * - Threads: per-thread stacks, counters and (cpu) timers; a thread is registered at its
 *   first event (the main thread at start) and unregistered by a pthread key destructor when
 *   it ends. Threads that never call enter/exit are not sampled. Region times and base are
 *   sums over threads (thread-seconds).
 * - exit() from anywhere and return from main: a destructor stops sampling, charges the
 *   remaining whole periods (wall), closes the exiting thread's open activations
 *   (`open_at_exit`) and writes the file. _exit(), abort(), fatal signals, exec lose it; a
 *   fork()ed child never writes (and has no sampler thread).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#ifdef KNOBS_TEST_CLOCK
#define KP_TEST_CLOCK 1
#else
#define KP_TEST_CLOCK 0
#endif

#define KNOBS_API __attribute__((visibility("default")))
#define KNOBS_COLD __attribute__((noinline, cold))
#define unlikely(x) __builtin_expect(!!(x), 0)
#define RELAXED memory_order_relaxed

/* Region counters live in chunks that never move (a sampler may be adding to one while the
 * owner thread allocates another): a fixed directory of CHUNKS chunks of CHUNK slots. */
#define CHUNK_BITS 10
#define CHUNK (1u << CHUNK_BITS)
#define CHUNKS 4096u
#define MAX_ID (CHUNK * CHUNKS) /* ids from MAX_ID on are ignored */

struct kp_slot {
    _Atomic uint64_t samples; /* written by the sampler (wall) or this thread's handler */
    _Atomic uint64_t entries; /* written by the owner thread */
};

struct kp_thread {
    struct kp_thread *next; /* the global list, pushed once per thread */
    _Atomic(struct kp_slot *) *dir; /* CHUNKS chunk pointers */
    _Atomic uint32_t top; /* innermost open region id + 1; 0: none (base) */
    _Atomic int alive;
    uint32_t *stack;
    uint32_t depth;
    uint32_t stack_cap;
    timer_t timer; /* cpu clock, KP_TIMER_POSIX */
    int perf_fd;   /* cpu clock, KP_TIMER_PERF: the thread's task-clock event */
    uint64_t perf_charged; /* periods of its count charged so far (by the sampler) */
    int has_timer; /* 0, or which timer: KP_TIMER_PERF or KP_TIMER_POSIX */
    _Atomic uint64_t base_samples;
    _Atomic uint64_t unmatched;
    _Atomic uint64_t unwound;
};

enum { KP_UNINIT = 0, KP_INITIALISING, KP_ENABLED, KP_DISABLED };
enum { KP_WALL = 0, KP_CPU = 1 };
enum { KP_TIMER_PERF = 1, KP_TIMER_POSIX = 2 };

static _Atomic int kp_state = KP_UNINIT;
static int kp_clock;
static uint64_t kp_period_ns = 1000000;
static uint64_t kp_mono0;
static pid_t kp_pid;
static char *kp_path;
static pthread_key_t kp_key;
static _Atomic(struct kp_thread *) kp_threads;
static _Atomic int kp_finished;
static _Atomic int kp_sampler_started;
/* The sampler thread's own CPU time as of its last wake-up (cpu clock): the process's CPU
 * time holds it, the program's does not, so the file gives it as the probes' cost. */
static _Atomic uint64_t kp_sampler_cpu_ns;
static _Atomic int kp_sampling; /* the sampler thread is charging */
static uint64_t kp_ticks;   /* whole periods covered so far (wall; sampler, then exit) */
static uint64_t kp_wakeups; /* samples taken of each live thread (wall) */
static _Atomic uint64_t kp_untracked; /* cpu samples of unregistered threads (none expected) */
static int kp_force_posix; /* KNOBS_PROFILE_TIMER=posix */
static _Atomic int kp_posix_timers; /* cpu threads that fell back to a POSIX CPU timer */
static _Atomic int kp_sigprof_handler; /* 1 installed, -1 failed, 0 not needed yet */
static _Atomic uint64_t kp_test_ns; /* the test clock's time since kp_mono0 (test clock only) */
static __thread struct kp_thread *kp_self __attribute__((tls_model("initial-exec")));

static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The clock the profile's wall time is read from: CLOCK_MONOTONIC, or the test clock. */
static uint64_t now_ns(void) {
    return KP_TEST_CLOCK ? kp_mono0 + atomic_load(&kp_test_ns) : mono_ns();
}

static void *map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline void add(_Atomic uint64_t *counter, uint64_t d) {
    atomic_store_explicit(counter, atomic_load_explicit(counter, RELAXED) + d, RELAXED);
}

/* Charges `n` periods to `t`'s innermost open region, or its base. Async-signal-safe: loads
 * and stores only. Single writer per thread's sample counters: the sampler thread (wall) or
 * the thread's own handler (cpu), never both (test clock: the __knobs_test_sample caller
 * holding its lock, or the thread itself). */
static inline void charge(struct kp_thread *t, uint64_t n) {
    uint32_t top = atomic_load_explicit(&t->top, RELAXED);
    if (top) {
        uint32_t id = top - 1;
        struct kp_slot *c = atomic_load_explicit(&t->dir[id >> CHUNK_BITS], memory_order_acquire);
        if (c) {
            add(&c[id & (CHUNK - 1)].samples, n);
            return;
        }
    }
    add(&t->base_samples, n);
}

static void on_sigprof(int sig, siginfo_t *info, void *uctx) {
    (void)sig;
    (void)info;
    (void)uctx;
    int saved = errno;
    struct kp_thread *t = kp_self;
    if (t && t->has_timer == KP_TIMER_POSIX) {
        int over = timer_getoverrun(t->timer);
        charge(t, 1 + (uint64_t)(over > 0 ? over : 0));
    } else {
        atomic_fetch_add_explicit(&kp_untracked, 1, RELAXED);
    }
    errno = saved;
}

/* Wall clock: one sample of every live thread per wake-up, covering the whole periods elapsed
 * up to `now` (more than one when the sampler woke late; the file's `weight` spreads the
 * covered time evenly over the wake-ups, so a starved sampler loses precision, not time, and
 * never charges a long gap to whatever state it happens to see). */
static void charge_all_until(uint64_t now) {
    uint64_t ticks = (now - kp_mono0) / kp_period_ns;
    if (ticks <= kp_ticks)
        return;
    kp_ticks = ticks;
    kp_wakeups++;
    for (struct kp_thread *t = atomic_load_explicit(&kp_threads, memory_order_acquire); t;
         t = t->next)
        if (atomic_load_explicit(&t->alive, memory_order_acquire))
            charge(t, 1);
}

/* CPU clock through perf counts: each live thread's CPU time since the last charge, in whole
 * periods, to its innermost region. `alive` and kp_sampling are sequentially consistent: a
 * thread ending stores `alive` and then waits while kp_sampling is set, the sampler sets
 * kp_sampling and then loads `alive`, so no count is read from a closed event. */
static void charge_cpu_counts(void) {
    for (struct kp_thread *t = atomic_load_explicit(&kp_threads, memory_order_acquire); t;
         t = t->next) {
        uint64_t ns;
        if (!atomic_load(&t->alive) || t->has_timer != KP_TIMER_PERF ||
            read(t->perf_fd, &ns, sizeof ns) != (ssize_t)sizeof ns)
            continue;
        uint64_t periods = ns / kp_period_ns;
        if (periods > t->perf_charged) {
            charge(t, periods - t->perf_charged);
            t->perf_charged = periods;
        }
    }
}

/* One wake-up of the sampler (the sampler thread's, or the wall test clock's): charges up to
 * now unless the profile is finished; 0 then (the sampler stops). kp_sampling tells the
 * exiting destructor and ending threads to wait for the charge in progress. */
static int sampler_wake_up(void) {
    atomic_store(&kp_sampling, 1);
    if (atomic_load(&kp_finished)) {
        atomic_store(&kp_sampling, 0);
        return 0;
    }
    if (kp_clock == KP_CPU)
        charge_cpu_counts();
    else
        charge_all_until(now_ns());
    atomic_store(&kp_sampling, 0);
    return 1;
}

static void *sampler(void *arg) {
    (void)arg;
    uint64_t next = kp_mono0;
    for (;;) {
        next += kp_period_ns;
        uint64_t now = mono_ns();
        if (next < now) /* late: skip to the next deadline; the catch-up charges the gap */
            next = now + kp_period_ns - (now - kp_mono0) % kp_period_ns;
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
            ;
        if (!sampler_wake_up())
            return NULL;
        if (kp_clock == KP_CPU) {
            struct timespec cpu;
            if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
                atomic_store_explicit(&kp_sampler_cpu_ns,
                                      (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec,
                                      RELAXED);
        }
    }
}

/* Stops `t`'s CPU timer (the calling thread's own). A perf count is closed once no sampler
 * wake-up reads it (`alive` is 0 by then, so none will again), after its last whole periods
 * are charged here. */
static void stop_cpu_timer(struct kp_thread *t) {
    int kind = t->has_timer;
    t->has_timer = 0;
    if (kind == KP_TIMER_PERF) {
        while (atomic_load(&kp_sampling))
            ;
        uint64_t ns;
        if (read(t->perf_fd, &ns, sizeof ns) == (ssize_t)sizeof ns &&
            ns / kp_period_ns > t->perf_charged) {
            charge(t, ns / kp_period_ns - t->perf_charged);
            t->perf_charged = ns / kp_period_ns;
        }
        close(t->perf_fd);
    } else if (kind == KP_TIMER_POSIX) {
        timer_delete(t->timer);
    }
}

static void thread_gone(void *p) {
    struct kp_thread *t = p;
    atomic_store(&t->alive, 0);
    stop_cpu_timer(t);
}

/* The calling thread's task-clock perf event, counting its CPU time for the sampler thread
 * to read; 0 where perf events are not allowed. */
static KNOBS_COLD int open_cpu_count(struct kp_thread *t) {
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.type = PERF_TYPE_SOFTWARE;
    a.size = sizeof a;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return 0;
    t->perf_fd = fd;
    t->perf_charged = 0;
    t->has_timer = KP_TIMER_PERF;
    return 1;
}

/* The SIGPROF handler, installed by the first thread that needs a POSIX CPU timer (perf
 * counts send no signal, so a program profiled through them keeps its own SIGPROF). Two
 * threads installing it at once install the same handler. */
static KNOBS_COLD int install_sigprof_handler(void) {
    int installed = atomic_load(&kp_sigprof_handler);
    if (installed)
        return installed > 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigprof;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGPROF, &sa, NULL) == 0 ? 1 : -1;
    atomic_store(&kp_sigprof_handler, installed);
    return installed > 0;
}

static KNOBS_COLD void start_cpu_timer(struct kp_thread *t) {
    if (!install_sigprof_handler())
        return;
    atomic_fetch_add(&kp_posix_timers, 1);
    struct sigevent ev;
    memset(&ev, 0, sizeof ev);
    ev.sigev_notify = SIGEV_THREAD_ID;
    ev.sigev_signo = SIGPROF;
    ev.sigev_notify_thread_id = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_THREAD_CPUTIME_ID, &ev, &t->timer) != 0)
        return;
    struct itimerspec its;
    its.it_interval.tv_sec = (time_t)(kp_period_ns / 1000000000u);
    its.it_interval.tv_nsec = (long)(kp_period_ns % 1000000000u);
    its.it_value = its.it_interval;
    t->has_timer = KP_TIMER_POSIX;
    if (timer_settime(t->timer, 0, &its, NULL) != 0) {
        t->has_timer = 0;
        timer_delete(t->timer);
    }
}

static uint64_t period_from_env(void) {
    const char *s = getenv("KNOBS_PROFILE_PERIOD_US");
    if (!s || !*s)
        return 1000000;
    char *end;
    double us = strtod(s, &end);
    if (*end || !(us >= 10.0 && us <= 1e6))
        return 1000000;
    return (uint64_t)(us * 1000.0 + 0.5);
}

static KNOBS_COLD void global_init(void) {
    int expected = KP_UNINIT;
    if (!atomic_compare_exchange_strong(&kp_state, &expected, KP_INITIALISING)) {
        while (atomic_load(&kp_state) == KP_INITIALISING)
            ;
        return;
    }
    const char *path = getenv("KNOBS_REGION_TIMES");
    if (!path || !*path) {
        atomic_store(&kp_state, KP_DISABLED);
        return;
    }
    size_t n = strlen(path) + 1;
    kp_path = map(n);
    if (!kp_path || pthread_key_create(&kp_key, thread_gone) != 0) {
        atomic_store(&kp_state, KP_DISABLED);
        return;
    }
    memcpy(kp_path, path, n);
    const char *clock = getenv("KNOBS_PROFILE_CLOCK");
    kp_clock = clock && !strcmp(clock, "cpu") ? KP_CPU : KP_WALL;
    const char *timer = getenv("KNOBS_PROFILE_TIMER");
    kp_force_posix = timer && !strcmp(timer, "posix");
    kp_period_ns = period_from_env();
    kp_pid = getpid();
    kp_mono0 = now_ns();
    atomic_store(&kp_state, KP_ENABLED);
}

/* The sampler thread (wall clock; cpu clock through perf counts), started by the first thread
 * to register (so that thread is in the list before the first tick). It inherits a mask
 * blocking every signal. */
static KNOBS_COLD void start_sampler(void) {
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_t tid;
    pthread_create(&tid, &attr, sampler, NULL); /* failing: no samples, the file still written */
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* This thread's state, created on its first event; NULL when disabled. */
static KNOBS_COLD struct kp_thread *thread_init(void) {
    int state = atomic_load_explicit(&kp_state, memory_order_acquire);
    if (state == KP_DISABLED)
        return NULL;
    if (state != KP_ENABLED) {
        global_init();
        if (atomic_load_explicit(&kp_state, memory_order_acquire) != KP_ENABLED)
            return NULL;
    }
    if (atomic_load(&kp_finished))
        return NULL;
    struct kp_thread *t = map(sizeof *t);
    if (!t)
        return NULL;
    t->dir = map(CHUNKS * sizeof *t->dir);
    t->stack_cap = 1024 / sizeof(uint32_t);
    t->stack = map(t->stack_cap * sizeof(uint32_t));
    if (!t->dir || !t->stack)
        return NULL; /* leaks a page or two, once, when memory is exhausted */
    atomic_store_explicit(&t->alive, 1, RELAXED);
    struct kp_thread *head = atomic_load(&kp_threads);
    do
        t->next = head;
    while (!atomic_compare_exchange_weak_explicit(&kp_threads, &head, t, memory_order_release,
                                                  RELAXED));
    kp_self = t;
    pthread_setspecific(kp_key, t);
    if (KP_TEST_CLOCK) /* no timer, no sampler: __knobs_test_sample stands for both */
        ;
    else if (kp_clock == KP_CPU && (kp_force_posix || !open_cpu_count(t)))
        start_cpu_timer(t);
    else if (!atomic_exchange(&kp_sampler_started, 1))
        start_sampler();
    return t;
}

static KNOBS_COLD struct kp_slot *new_chunk(struct kp_thread *t, uint32_t id) {
    if (id >= MAX_ID)
        return NULL;
    struct kp_slot *c = map(CHUNK * sizeof *c);
    if (!c)
        return NULL;
    atomic_store_explicit(&t->dir[id >> CHUNK_BITS], c, memory_order_release);
    return c;
}

static KNOBS_COLD int grow_stack(struct kp_thread *t) {
    uint32_t cap = t->stack_cap * 2;
    uint32_t *s = map((size_t)cap * sizeof(uint32_t));
    if (!s)
        return 0;
    memcpy(s, t->stack, t->depth * sizeof(uint32_t));
    munmap(t->stack, t->stack_cap * sizeof(uint32_t));
    t->stack = s;
    t->stack_cap = cap;
    return 1;
}

KNOBS_API void __knobs_method_enter(uint32_t id) {
    struct kp_thread *t = kp_self;
    if (unlikely(!t) && (atomic_load_explicit(&kp_state, RELAXED) == KP_DISABLED ||
                         !(t = thread_init())))
        return;
    struct kp_slot *c = unlikely(id >= MAX_ID)
                            ? NULL
                            : atomic_load_explicit(&t->dir[id >> CHUNK_BITS], RELAXED);
    if (unlikely(!c) && !(c = new_chunk(t, id)))
        return;
    if (unlikely(t->depth == t->stack_cap) && !grow_stack(t))
        return;
    t->stack[t->depth++] = id;
    atomic_store_explicit(&t->top, id + 1, RELAXED);
    add(&c[id & (CHUNK - 1)].entries, 1);
}

KNOBS_API void __knobs_method_exit(uint32_t id) {
    struct kp_thread *t = kp_self;
    if (unlikely(!t) && (atomic_load_explicit(&kp_state, RELAXED) == KP_DISABLED ||
                         !(t = thread_init())))
        return;
    uint32_t d = t->depth;
    if (__builtin_expect(d && t->stack[d - 1] == id, 1)) {
        d--;
    } else {
        uint32_t k = d;
        while (k > 0 && t->stack[k - 1] != id)
            k--;
        if (!k) {
            add(&t->unmatched, 1);
            return;
        }
        add(&t->unwound, d - k);
        d = k - 1;
    }
    t->depth = d;
    atomic_store_explicit(&t->top, d ? t->stack[d - 1] + 1 : 0, RELAXED);
}

KNOBS_API void __knobs_region_enter(uint32_t id) __attribute__((alias("__knobs_method_enter")));
KNOBS_API void __knobs_region_exit(uint32_t id) __attribute__((alias("__knobs_method_exit")));

#ifdef KNOBS_TEST_CLOCK
/* Callers take turns: each call is one sampler wake-up (wall; the charges' single writer) or
 * one timer expiry of the calling thread (cpu). */
static pthread_mutex_t kp_test_lock = PTHREAD_MUTEX_INITIALIZER;

/* The test clock: `periods` periods pass, then what the real clock would do at that moment
 * happens once (see the header comment). Does not register the calling thread. */
KNOBS_API void __knobs_test_sample(uint32_t periods) {
    if (!periods || atomic_load_explicit(&kp_state, memory_order_acquire) != KP_ENABLED)
        return;
    pthread_mutex_lock(&kp_test_lock);
    atomic_fetch_add(&kp_test_ns, (uint64_t)periods * kp_period_ns);
    if (kp_clock == KP_WALL) {
        sampler_wake_up();
    } else if (!atomic_load(&kp_finished)) {
        struct kp_thread *t = kp_self; /* as on_sigprof with an overrun of periods - 1 */
        if (t)
            charge(t, periods);
    }
    pthread_mutex_unlock(&kp_test_lock);
}

/* The calling thread sleeping `periods` periods on the test clock: time passes, so the wall
 * sampler wakes once (and charges every live thread's innermost region, the sleeper's too),
 * but the thread uses no CPU, so its CPU timer never fires and nothing is charged. */
KNOBS_API void __knobs_test_sleep(uint32_t periods) {
    if (!periods || atomic_load_explicit(&kp_state, memory_order_acquire) != KP_ENABLED)
        return;
    pthread_mutex_lock(&kp_test_lock);
    atomic_fetch_add(&kp_test_ns, (uint64_t)periods * kp_period_ns);
    if (kp_clock == KP_WALL)
        sampler_wake_up();
    pthread_mutex_unlock(&kp_test_lock);
}
#endif

static __attribute__((constructor(101))) void kp_start(void) {
    global_init();
    if (!kp_self)
        thread_init();
}

static __attribute__((destructor(101))) void kp_finish(void) {
    if (atomic_load(&kp_state) != KP_ENABLED || atomic_exchange(&kp_finished, 1))
        return;
    if (getpid() != kp_pid)
        return;
    struct kp_thread *self = kp_self;
    uint64_t now;
    if (kp_clock == KP_CPU) {
        while (atomic_load(&kp_sampling)) /* the sampler is mid-charge; it stops after */
            ;
        if (!KP_TEST_CLOCK)
            charge_cpu_counts(); /* every live thread's whole periods since the last wake-up */
        if (self)
            stop_cpu_timer(self);
        now = now_ns();
    } else {
        while (atomic_load(&kp_sampling)) /* the sampler is mid-charge; it stops after */
            ;
        now = now_ns(); /* after the sampler's last reading: no tick charged beyond `wall` */
        charge_all_until(now);
    }
    uint32_t open = 0;
    if (self) {
        open = self->depth;
        self->depth = 0;
        atomic_store_explicit(&self->top, 0, RELAXED);
    }

    uint64_t base = atomic_load(&kp_untracked), regions = 0, unmatched = 0, unwound = 0;
    uint64_t threads = 0;
    uint32_t chunks = 0;
    struct kp_thread *head = atomic_load_explicit(&kp_threads, memory_order_acquire);
    for (struct kp_thread *t = head; t; t = t->next) {
        threads++;
        base += atomic_load_explicit(&t->base_samples, RELAXED);
        unmatched += atomic_load_explicit(&t->unmatched, RELAXED);
        unwound += atomic_load_explicit(&t->unwound, RELAXED);
        for (uint32_t k = chunks; k < CHUNKS; k++)
            if (atomic_load_explicit(&t->dir[k], memory_order_acquire))
                chunks = k + 1;
    }
    FILE *f = fopen(kp_path, "w");
    if (!f)
        return;
    double p = 1e-9 * (double)kp_period_ns;
    /* Seconds per sample: the period (cpu: overruns are counted), or the covered wall time
     * over the wake-ups (wall). */
    double w = p;
    uint64_t missed = 0;
    if (kp_clock == KP_WALL && kp_wakeups) {
        w = p * (double)kp_ticks / (double)kp_wakeups;
        missed = kp_ticks - kp_wakeups;
    }
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            fprintf(f, "knobs-region-times 1\n");
            fprintf(f, "total\t%.9f\n", (double)(base + regions) * w);
            fprintf(f, "base\t%.9f\n", (double)base * w);
            fprintf(f, "wall\t%.9f\n", 1e-9 * (double)(now - kp_mono0));
            fprintf(f, "threads\t%llu\n", (unsigned long long)threads);
            fprintf(f, "unmatched_exits\t%llu\n", (unsigned long long)unmatched);
            fprintf(f, "open_at_exit\t%u\n", open);
            fprintf(f, "profiler\t%s\n", kp_clock == KP_CPU ? "cpu" : "wall");
            /* cpu: the timer every thread had, or `posix-cpu-timer` if any fell back to it */
            fprintf(f, "timer\t%s\n",
                    KP_TEST_CLOCK ? "test-clock"
                    : kp_clock == KP_WALL ? "sampler-thread"
                    : atomic_load(&kp_posix_timers) ? "posix-cpu-timer"
                                                     : "perf-task-clock");
            if (kp_clock == KP_CPU && atomic_load(&kp_sampler_started))
                fprintf(f, "probes\t%.9f\n", 1e-9 * (double)atomic_load(&kp_sampler_cpu_ns));
            fprintf(f, "period\t%.9f\n", p);
            fprintf(f, "weight\t%.12f\n", w);
            fprintf(f, "missed\t%llu\n", (unsigned long long)missed);
            fprintf(f, "samples\t%llu\n", (unsigned long long)(base + regions));
            fprintf(f, "base_samples\t%llu\n", (unsigned long long)base);
            fprintf(f, "unwound\t%llu\n", (unsigned long long)unwound);
        }
        for (uint32_t id = 0; id < chunks * CHUNK; id++) {
            uint64_t s = 0, n = 0;
            for (struct kp_thread *t = head; t; t = t->next) {
                struct kp_slot *c =
                    atomic_load_explicit(&t->dir[id >> CHUNK_BITS], memory_order_acquire);
                if (c) {
                    s += atomic_load_explicit(&c[id & (CHUNK - 1)].samples, RELAXED);
                    n += atomic_load_explicit(&c[id & (CHUNK - 1)].entries, RELAXED);
                }
            }
            if (pass == 0)
                regions += s;
            else if (n || s)
                fprintf(f, "%u\t%.9f\t%llu\n", id, (double)s * w, (unsigned long long)n);
        }
    }
    fclose(f);
}
