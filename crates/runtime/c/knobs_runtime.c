/* knobs region-timing runtime (ConfigCrusher §3.4), linked into instrumented programs.
 * Every interval is charged by two clocks: the wall clock, and the thread's CPU clock
 * (CLOCK_THREAD_CPUTIME_ID, a system call: read only after intervals of at least
 * KNOBS_REGION_CPU_US, default 100 us; shorter ones count as on a CPU; docs/region-times.md).
 *
 * API (C ABI, called by the code `llvm::instrument` inserts):
 *     void __knobs_region_enter(uint32_t id);
 *     void __knobs_region_exit(uint32_t id);
 *     void __knobs_fixed_check(uint32_t id, int64_t value, int64_t expected);
 * With KNOBS_FIXED_OBSERVE set (non-empty), checks expect nothing: each records the first
 * value it sees, how often it ran and whether another value came (`observed` lines), which
 * is how fixed settings are inferred from a program's own runs.
 * Region ids are dense from 0, and so are check ids (a separate id space). Output: at exit, the file named by KNOBS_REGION_TIMES (read
 * when the runtime starts) receives the per-region self times and entry counts in the format
 * of docs/region-times.md. Nothing is ever printed on stdout or stderr.
 *
 * Semantics:
 * - Each thread keeps a stack of open region activations. Every instant of a thread's time
 *   between two of its events is charged to exactly one place: the innermost open activation
 *   (the region's self time) or, with nothing open, the thread's base. So nested time is
 *   subtracted from the enclosing region, and base + sum of self times = total, exactly.
 * - Re-entering an open region (recursion) pushes another activation of it; its time is still
 *   charged once (to the innermost activation). Every enter counts one entry.
 * - An exit closes the innermost open activation of its id, wherever it is on the stack
 *   (activations above it stay open); an exit for a region that is not open is ignored and
 *   only counted (`unmatched_exits`).
 * - exit() from anywhere and return from main: a destructor charges the exiting thread's time
 *   up to that moment to its open regions, closes them and writes the file. _exit(), fatal
 *   signals, abort() and exec lose everything. Only the process that loaded the runtime
 *   writes (a fork()ed child that exits writes nothing).
 * - Fixed-setting checks: a load the analysis folded to a constant calls
 *   __knobs_fixed_check with the loaded value and the assumed one (both sign-extended to 64
 *   bits). Equal: nothing happens. Different: the violation is counted per check id, and the
 *   value of the first violation of that id (over all threads, by a global sequence number)
 *   is kept; the file gets one `fixed` line per violated id. Checks need no open region.
 * - Probe cost: every interval between two of a thread's events holds probe work (the rest
 *   of the previous probe after its clock read, the start of this one before it). The
 *   runtime measures it once at start per kind of interval (enter->exit, exit->enter,
 *   enter->enter or exit->exit: medians over batches of empty regions, flat, nested and
 *   crossed)
 *   and takes it out of each interval, never below zero, so a region entered millions of
 *   times is not charged for its probes; the time taken out is written as `probes`.
 *   KNOBS_REGION_COMPENSATE=0 turns this off.
 * - Threads: per-thread stacks and counters, summed when written. Another thread's time is
 *   counted up to its last region event; `total` is then thread-seconds, not wall time
 *   (`wall` is the process's wall time from the runtime's start).
 *
 * Test clock: compiled with -DKNOBS_TEST_CLOCK (`runtime::build_test_clock`), time is a
 * counter in nanoseconds that only the program advances (`__knobs_test_work(ns)`), and each
 * probe costs fixed amounts before and after its clock read (enter 3 + 5 ns, exit 7 + 11 ns:
 * every kind of interval gets another cost), so calibration and compensation can be checked
 * exactly, whatever the machine is doing; `__knobs_test_sleep(ns)` advances it without the
 * CPU clock (which is the test time less the sleeps). The normal build has none of it.
 *
 * Count clock: compiled with -DKNOBS_COUNT_CLOCK (`runtime::build_counting`), the clock is
 * the thread's count of the program's own IR instructions, `__knobs_instructions` (defined
 * here, kept by the code `llvm::instrument_counting` adds to every segment of original code):
 * no calibration (the probes add nothing to it), no CPU clock, and the file says
 * `unit instructions` and holds whole counts (docs/region-times.md, "Counting").
 *
 * Hot path: one clock read (rdtsc when the CPU has an invariant TSC, converted at exit with
 * the ratio to CLOCK_MONOTONIC over the whole run; else clock_gettime), a thread-local
 * pointer, a few loads and stores. No locks, no system calls, no allocation except when a
 * thread's stack or region table has to grow (mmap, amortised doubling), and the CPU clock's
 * read after an interval of KNOBS_REGION_CPU_US or more (one per 100 us of a thread's time
 * at most, by default). A check that holds
 * is a compare and a return; a violation updates the thread's own check table (grown like the
 * region table) and, the first time per id and thread, takes a global sequence number.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define KNOBS_HAVE_TSC 1
#endif

#define KNOBS_API __attribute__((visibility("default")))
#ifdef KNOBS_COUNT_CLOCK
#define KNOBS_COUNTING 1
#else
#define KNOBS_COUNTING 0
#endif
#define KNOBS_COLD __attribute__((noinline, cold))
#define unlikely(x) __builtin_expect(!!(x), 0)

/* One region's counters in one thread; written only by the owner thread (relaxed atomics
 * compile to plain loads and stores, and let the exit handler read other threads'). */
struct knobs_slot {
    _Atomic uint64_t ticks;
    _Atomic uint64_t entries;
    _Atomic uint64_t cpu_ns;    /* CPU time of the intervals the CPU clock was read for */
    _Atomic uint64_t cpu_ticks; /* intervals too short to read it for: taken as on a CPU */
};

struct knobs_table {
    uint32_t cap;
    struct knobs_slot slot[];
};

/* One check id's violations in one thread: written only by the owner thread; `count` is
 * stored last (release), so a reader that sees it non-zero sees `value` and `seq`. */
struct knobs_fixed_slot {
    _Atomic uint64_t count;
    _Atomic int64_t value; /* this thread's first violating value */
    _Atomic uint64_t seq;  /* its global sequence number: the earliest over threads wins */
    _Atomic int varied;    /* observing: this thread saw another value than its first */
};

struct knobs_fixed_table {
    uint32_t cap;
    struct knobs_fixed_slot slot[];
};

struct knobs_thread {
    struct knobs_thread *next; /* the global list, pushed once per thread */
    _Atomic(struct knobs_table *) table;
    _Atomic(struct knobs_fixed_table *) fixed; /* NULL until this thread's first violation */
    uint32_t *stack;
    uint32_t depth;
    uint32_t stack_cap;
    uint64_t last; /* tick of this thread's previous event */
    _Atomic uint64_t base_ticks;
    _Atomic uint64_t unmatched;
    _Atomic uint64_t probe_ticks; /* the probes' own cost, taken out of the intervals */
    _Atomic uint64_t base_cpu_ns;   /* the base's CPU time, as a slot's cpu_ns and cpu_ticks */
    _Atomic uint64_t base_cpu_ticks;
    _Atomic uint64_t cpu_reads; /* reads of the thread's CPU clock */
    uint64_t cpu_sync;          /* the thread's CPU clock (ns) at its last read */
    uint64_t cpu_pending;       /* ticks since then taken as on a CPU, probes included */
    uint8_t after_exit; /* the previous event was an exit (or the thread has just started) */
};

enum { KNOBS_UNINIT = 0, KNOBS_INITIALISING, KNOBS_ENABLED, KNOBS_DISABLED };

static _Atomic int knobs_state = KNOBS_UNINIT;
static int knobs_use_tsc;
static uint64_t knobs_tick0;   /* ticks at start */
static uint64_t knobs_mono0;   /* CLOCK_MONOTONIC ns at start */
static pid_t knobs_pid;        /* only this process writes */
static char *knobs_path;       /* KNOBS_REGION_TIMES, copied at start */
static _Atomic(struct knobs_thread *) knobs_threads;
static _Atomic int knobs_finished;
static _Atomic uint64_t knobs_fixed_seq; /* first violations, in order over all threads */
static int knobs_observe; /* KNOBS_FIXED_OBSERVE set: checks record values, expect nothing */
/* Ticks the probes add to an interval, by the kind of its first and last event
 * ([previous was an exit][this is an exit]); calibrated at start. */
static uint64_t knobs_probe_cost[2][2];
/* The CPU clock: on unless KNOBS_REGION_CPU_US=off; read at an event that ends an interval
 * of at least knobs_cpu_min_ticks (KNOBS_REGION_CPU_US, default 100 us), shorter ones are
 * taken as on a CPU; knobs_cpu_read_ns is what one read costs (taken out like a probe). */
static int knobs_cpu_on;
static uint64_t knobs_cpu_min_ticks;
static uint64_t knobs_cpu_min_us = 100;
static uint64_t knobs_cpu_read_ns;
/* The runtime's own start (calibration), wall and CPU ns: not the program's time. */
static uint64_t knobs_startup_ns, knobs_startup_cpu_ns;
static __thread struct knobs_thread *knobs_self __attribute__((tls_model("initial-exec")));

#ifdef KNOBS_TEST_CLOCK
#undef KNOBS_HAVE_TSC
static _Atomic uint64_t knobs_test_now;

static _Atomic uint64_t knobs_test_slept;

/* The program's own work: the only way time passes, besides the probes' fixed costs. */
KNOBS_API void __knobs_test_work(uint64_t ns) { atomic_fetch_add(&knobs_test_now, ns); }

/* The program sleeping: wall time passes, CPU time does not. */
KNOBS_API void __knobs_test_sleep(uint64_t ns) {
    atomic_fetch_add(&knobs_test_slept, ns);
    atomic_fetch_add(&knobs_test_now, ns);
}

static uint64_t mono_ns(void) { return atomic_load(&knobs_test_now); }

/* The test clock's CPU time: its time less its sleeps (one clock for every thread). */
static uint64_t cpu_ns(void) { return atomic_load(&knobs_test_now) - atomic_load(&knobs_test_slept); }
#else
static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* The calling thread's CPU time (user + system): the thread's own clock, since its events
 * are charged to its own regions; a system call, not vDSO (~0.3-1.5 us on a VM). */
static uint64_t cpu_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}
#endif

#ifdef KNOBS_COUNT_CLOCK
/* The count clock (`runtime::build_counting`): the thread's count of the program's own IR
 * instructions, which the instrumentation (`llvm::add_instruction_counters`) adds to at every
 * straight-line segment of original code. The probes add nothing to it, so their cost is
 * zero by construction; docs/region-times.md says what is counted. */
KNOBS_API __thread uint64_t __knobs_instructions __attribute__((tls_model("initial-exec")));

static inline uint64_t ticks(void) { return __knobs_instructions; }
#else
static inline uint64_t ticks(void) {
#ifdef KNOBS_HAVE_TSC
    if (__builtin_expect(knobs_use_tsc, 1))
        return __rdtsc();
#endif
    return mono_ns();
}
#endif

static void *map(size_t bytes) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int invariant_tsc(void) {
#ifdef KNOBS_HAVE_TSC
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
#else
    return 0;
#endif
}

#ifdef KNOBS_TEST_CLOCK
/* The timed part of each probe; the exported functions wrap it in its fixed costs. */
#define KNOBS_ENTER static void timed_enter
#define KNOBS_EXIT static void timed_exit
static void timed_enter(uint32_t id);
static void timed_exit(uint32_t id);
#else
#define KNOBS_ENTER KNOBS_API void __knobs_region_enter
#define KNOBS_EXIT KNOBS_API void __knobs_region_exit
#endif
KNOBS_API void __knobs_region_enter(uint32_t id);
KNOBS_API void __knobs_region_exit(uint32_t id);
static struct knobs_table *grow_table(struct knobs_thread *t, uint32_t id);

/* The shapes of calibration batches: an empty region (enter 0, exit 0); one nested in
 * another (enter 0, enter 1, exit 1, exit 0: region 0 gets enter->enter plus exit->exit);
 * crossed (enter 0, enter 1, exit 0, exit 1: region 0 gets enter->enter alone, since an exit
 * closes its own region wherever it is on the stack). */
enum { FLAT, NESTED, CROSSED };

/* One calibration batch of `pairs` repetitions of a shape on the scratch state `t`; the
 * runtime's own accounting sorts the intervals by kind. Returns them per repetition: flat
 * [0] enter->exit, [1] exit->enter; nested [0] enter->enter + exit->exit; crossed [0]
 * enter->enter. */
static KNOBS_COLD void calibration_batch(struct knobs_thread *t, int shape, int pairs,
                                         uint64_t out[2]) {
    void (*volatile enter)(uint32_t) = __knobs_region_enter;
    void (*volatile leave)(uint32_t) = __knobs_region_exit;
    struct knobs_table *tab = atomic_load_explicit(&t->table, memory_order_relaxed);
    /* After one pair the counters start from zero, so each holds only this batch's
     * intervals: `pairs` of every kind, the first exit->enter included. */
    enter(0);
    leave(0);
    for (int r = 0; r < 2; r++)
        atomic_store_explicit(&tab->slot[r].ticks, 0, memory_order_relaxed);
    atomic_store_explicit(&t->base_ticks, 0, memory_order_relaxed);
    for (int k = 0; k < pairs; k++) {
        enter(0);
        if (shape != FLAT)
            enter(1);
        if (shape == NESTED)
            leave(1);
        leave(0);
        if (shape == CROSSED)
            leave(1);
    }
    uint64_t region0 = atomic_load_explicit(&tab->slot[0].ticks, memory_order_relaxed);
    out[0] = region0 / pairs;
    out[1] = atomic_load_explicit(&t->base_ticks, memory_order_relaxed) / pairs;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Fills knobs_probe_cost: each kind of interval between two probes with nothing between
 * them, medians over batches (of flat, nested and crossed regions), run on a scratch thread
 * state through the public entry points, calls included. All zero with
 * KNOBS_REGION_COMPENSATE=0 or when memory is short. */
static KNOBS_COLD void calibrate(void) {
    const char *setting = getenv("KNOBS_REGION_COMPENSATE");
#ifdef KNOBS_COUNT_CLOCK
    setting = "0"; /* the probes add nothing to the count: no cost to take out */
#endif
    if (setting && !strcmp(setting, "0"))
        return;
    struct knobs_thread *t = map(sizeof *t);
    if (!t)
        return;
    t->stack_cap = 1024 / sizeof(uint32_t);
    t->stack = map(t->stack_cap * sizeof(uint32_t));
    struct knobs_table *tab = t->stack ? grow_table(t, 1) : NULL;
    if (tab) {
        struct knobs_thread *saved = knobs_self;
        knobs_self = t;
        enum { PAIRS = 256, BATCHES = 31 };
        uint64_t flat[2][BATCHES], nested[BATCHES], crossed[BATCHES], one[2];
        t->last = ticks();
        t->after_exit = 1;
        for (int b = 0; b < BATCHES; b++) {
            calibration_batch(t, FLAT, PAIRS, one);
            flat[0][b] = one[0];
            flat[1][b] = one[1];
            calibration_batch(t, NESTED, PAIRS, one);
            nested[b] = one[0];
            calibration_batch(t, CROSSED, PAIRS, one);
            crossed[b] = one[0];
        }
        qsort(flat[0], BATCHES, sizeof(uint64_t), cmp_u64);
        qsort(flat[1], BATCHES, sizeof(uint64_t), cmp_u64);
        qsort(nested, BATCHES, sizeof(uint64_t), cmp_u64);
        qsort(crossed, BATCHES, sizeof(uint64_t), cmp_u64);
        uint64_t enter_enter = crossed[BATCHES / 2], both = nested[BATCHES / 2];
        knobs_probe_cost[0][1] = flat[0][BATCHES / 2];
        knobs_probe_cost[1][0] = flat[1][BATCHES / 2];
        knobs_probe_cost[0][0] = enter_enter;
        knobs_probe_cost[1][1] = both > enter_enter ? both - enter_enter : 0;
        knobs_self = saved;
        munmap(tab, sizeof *tab + tab->cap * sizeof(struct knobs_slot));
    }
    if (t->stack)
        munmap(t->stack, t->stack_cap * sizeof(uint32_t));
    munmap(t, sizeof *t);
}

/* Nanoseconds per tick so far (1 without the TSC): exact enough after the calibration. */
static double ns_per_tick_at(uint64_t now) {
    if (!knobs_use_tsc || now <= knobs_tick0)
        return 1.0;
    return (double)(mono_ns() - knobs_mono0) / (double)(now - knobs_tick0);
}

/* Sets up the CPU clock (after calibrate(), which runs with it off): KNOBS_REGION_CPU_US
 * (`off`, or the shortest interval in us read by the clock; default 100), the interval in
 * ticks, and the median cost of one read. */
static KNOBS_COLD void calibrate_cpu(void) {
    const char *setting = getenv("KNOBS_REGION_CPU_US");
#ifdef KNOBS_COUNT_CLOCK
    setting = "off"; /* counts are not time: no CPU clock beside them */
#endif
    if (setting && !strcmp(setting, "off"))
        return;
    if (setting && *setting) {
        char *end;
        unsigned long long us = strtoull(setting, &end, 10);
        if (!*end && us <= 1000000)
            knobs_cpu_min_us = us;
    }
#ifdef KNOBS_HAVE_TSC
    /* The tick rate needs a span to be read from: calibrate() is one, unless it was off. */
    if (knobs_use_tsc)
        while (mono_ns() - knobs_mono0 < 200000)
            ;
#endif
    knobs_cpu_min_ticks =
        (uint64_t)((double)knobs_cpu_min_us * 1000.0 / ns_per_tick_at(ticks()));
    enum { READS = 15 };
    uint64_t cost[READS];
    for (int k = 0; k < READS; k++) {
        uint64_t a = cpu_ns();
        cost[k] = cpu_ns() - a;
    }
    qsort(cost, READS, sizeof(uint64_t), cmp_u64);
    knobs_cpu_read_ns = cost[READS / 2];
    knobs_cpu_on = 1;
}

/* Once per process, from the constructor or the first event (whichever comes first). */
static KNOBS_COLD void global_init(void) {
    int expected = KNOBS_UNINIT;
    if (!atomic_compare_exchange_strong(&knobs_state, &expected, KNOBS_INITIALISING)) {
        while (atomic_load(&knobs_state) == KNOBS_INITIALISING)
            ;
        return;
    }
    const char *path = getenv("KNOBS_REGION_TIMES");
    if (!path || !*path) {
        atomic_store(&knobs_state, KNOBS_DISABLED);
        return;
    }
    size_t n = strlen(path) + 1;
    knobs_path = map(n);
    if (!knobs_path) {
        atomic_store(&knobs_state, KNOBS_DISABLED);
        return;
    }
    memcpy(knobs_path, path, n);
    const char *observe = getenv("KNOBS_FIXED_OBSERVE");
    knobs_observe = observe && *observe;
    knobs_pid = getpid();
    knobs_use_tsc = invariant_tsc();
    knobs_mono0 = mono_ns();
    knobs_tick0 = ticks();
    uint64_t cpu0 = cpu_ns();
    calibrate();
    calibrate_cpu();
    knobs_startup_ns = mono_ns() - knobs_mono0;
    knobs_startup_cpu_ns = cpu_ns() - cpu0;
    atomic_store(&knobs_state, KNOBS_ENABLED);
}

/* This thread's state, created on its first event; NULL when the runtime is disabled. */
static KNOBS_COLD struct knobs_thread *thread_init(void) {
    int state = atomic_load_explicit(&knobs_state, memory_order_acquire);
    if (state == KNOBS_DISABLED)
        return NULL;
    if (state != KNOBS_ENABLED) {
        global_init();
        if (atomic_load_explicit(&knobs_state, memory_order_acquire) != KNOBS_ENABLED)
            return NULL;
    }
    if (atomic_load(&knobs_finished))
        return NULL;
    struct knobs_thread *t = map(sizeof *t);
    if (!t)
        return NULL;
    t->stack_cap = 1024 / sizeof(uint32_t);
    t->stack = map(t->stack_cap * sizeof(uint32_t));
    if (!t->stack) {
        munmap(t, sizeof *t);
        return NULL;
    }
#ifdef KNOBS_COUNT_CLOCK
    t->last = 0; /* a thread's count starts with the thread: its code before its first event */
#else
    t->last = ticks();
#endif
    t->after_exit = 1;
    if (knobs_cpu_on)
        t->cpu_sync = cpu_ns();
    struct knobs_thread *head = atomic_load(&knobs_threads);
    do
        t->next = head;
    while (!atomic_compare_exchange_weak_explicit(&knobs_threads, &head, t, memory_order_release,
                                                  memory_order_relaxed));
    knobs_self = t;
    return t;
}

static inline void add(_Atomic uint64_t *counter, uint64_t d) {
    atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + d,
                          memory_order_relaxed);
}

/* The CPU time of an interval of `raw` ticks (`d` after its probes' cost) that ends `now`:
 * one that short is taken as on a CPU (ticks, to cpu_ticks); a longer one (or `force`) reads
 * the thread's CPU clock, and gets what it advanced since its last read less the intervals
 * taken as on a CPU since, this one's probes and one read's cost, within [0, d] (ns, to
 * cpu_ns). So the system call is made at most once per knobs_cpu_min_us of the thread's
 * time, and a wait (the thread preempted, sleeping, blocked) is seen when it lasts that
 * long; a shorter one counts as CPU time and is taken back from the next interval read. */
static KNOBS_COLD void charge_cpu_read(struct knobs_thread *t, uint64_t now, uint64_t raw,
                                       uint64_t d, _Atomic uint64_t *cpu_ns_to) {
    uint64_t c = cpu_ns();
    add(&t->cpu_reads, 1);
    double r = ns_per_tick_at(now);
    double spent = (double)(c - t->cpu_sync) - (double)t->cpu_pending * r -
                   (double)(raw - d) * r - (double)knobs_cpu_read_ns;
    double most = (double)d * r;
    t->cpu_sync = c;
    t->cpu_pending = 0;
    add(cpu_ns_to, (uint64_t)(spent < 0 ? 0 : spent > most ? most : spent));
}

static inline void charge_cpu(struct knobs_thread *t, uint64_t now, uint64_t raw, uint64_t d,
                              _Atomic uint64_t *cpu_ns_to, _Atomic uint64_t *cpu_ticks_to,
                              int force) {
    if (!knobs_cpu_on)
        return;
    if (__builtin_expect(raw < knobs_cpu_min_ticks && !force, 1)) {
        t->cpu_pending += raw;
        add(cpu_ticks_to, d);
        return;
    }
    charge_cpu_read(t, now, raw, d, cpu_ns_to);
}

/* The time since this thread's previous event goes to its innermost open activation
 * (`force`: read the CPU clock whatever the interval's length). */
static inline void charge(struct knobs_thread *t, uint64_t now, int is_exit, int force) {
    uint64_t d = now - t->last;
    if (unlikely((int64_t)d < 0)) /* a TSC not synchronised across cores */
        d = 0;
    t->last = now;
    uint64_t raw = d;
    /* The interval holds the previous probe's work after its clock read and this probe's
     * before it: the probes' cost, not the program's. */
    uint64_t cost = knobs_probe_cost[t->after_exit][is_exit];
    uint64_t probe = d < cost ? d : cost;
    d -= probe;
    t->after_exit = (uint8_t)is_exit;
    add(&t->probe_ticks, probe);
    if (t->depth) {
        struct knobs_table *tab = atomic_load_explicit(&t->table, memory_order_relaxed);
        struct knobs_slot *slot = &tab->slot[t->stack[t->depth - 1]];
        add(&slot->ticks, d);
        charge_cpu(t, now, raw, d, &slot->cpu_ns, &slot->cpu_ticks, force);
    } else {
        add(&t->base_ticks, d);
        charge_cpu(t, now, raw, d, &t->base_cpu_ns, &t->base_cpu_ticks, force);
    }
}

/* Grows this thread's region table to hold `id`; old tables are never unmapped, since the
 * exit handler may be reading them from another thread. */
/* The capacity a table of `old_cap` slots (0: none yet, then `initial`) grows to so that it
 * holds `id`, doubling; 0 when none can (id UINT32_MAX is not a dense id). */
static KNOBS_COLD uint64_t grown_capacity(uint32_t old_cap, uint64_t initial, uint32_t id) {
    uint64_t cap = old_cap ? (uint64_t)old_cap * 2 : initial;
    while (cap <= id)
        cap *= 2;
    if (cap > UINT32_MAX)
        cap = UINT32_MAX;
    return cap <= id ? 0 : cap;
}

static KNOBS_COLD struct knobs_table *grow_table(struct knobs_thread *t, uint32_t id) {
    struct knobs_table *old = atomic_load_explicit(&t->table, memory_order_relaxed);
    uint64_t cap = grown_capacity(old ? old->cap : 0, 256, id);
    if (!cap)
        return NULL;
    struct knobs_table *tab = map(sizeof *tab + cap * sizeof(struct knobs_slot));
    if (!tab)
        return NULL;
    tab->cap = (uint32_t)cap;
    if (old)
        memcpy(tab->slot, old->slot, old->cap * sizeof(struct knobs_slot));
    atomic_store_explicit(&t->table, tab, memory_order_release);
    return tab;
}

/* Grows this thread's check table to hold `id` (as grow_table: old tables stay mapped). */
static KNOBS_COLD struct knobs_fixed_table *grow_fixed(struct knobs_thread *t, uint32_t id) {
    struct knobs_fixed_table *old = atomic_load_explicit(&t->fixed, memory_order_relaxed);
    uint64_t cap = grown_capacity(old ? old->cap : 0, 64, id);
    if (!cap)
        return NULL;
    struct knobs_fixed_table *tab = map(sizeof *tab + cap * sizeof(struct knobs_fixed_slot));
    if (!tab)
        return NULL;
    tab->cap = (uint32_t)cap;
    if (old)
        memcpy(tab->slot, old->slot, old->cap * sizeof(struct knobs_fixed_slot));
    atomic_store_explicit(&t->fixed, tab, memory_order_release);
    return tab;
}

static KNOBS_COLD int grow_stack(struct knobs_thread *t) {
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

KNOBS_ENTER(uint32_t id) {
    struct knobs_thread *t = knobs_self;
    if (unlikely(!t) && !(t = thread_init()))
        return;
    uint64_t now = ticks();
    struct knobs_table *tab = atomic_load_explicit(&t->table, memory_order_relaxed);
    if (unlikely(!tab || id >= tab->cap) && !(tab = grow_table(t, id)))
        return;
    if (unlikely(t->depth == t->stack_cap) && !grow_stack(t))
        return;
    charge(t, now, 0, 0);
    t->stack[t->depth++] = id;
    add(&tab->slot[id].entries, 1);
}

KNOBS_EXIT(uint32_t id) {
    struct knobs_thread *t = knobs_self;
    if (unlikely(!t) && !(t = thread_init()))
        return;
    uint64_t now = ticks();
    uint32_t depth = t->depth;
    if (__builtin_expect(depth && t->stack[depth - 1] == id, 1)) {
        charge(t, now, 1, 0);
        t->depth = depth - 1;
        return;
    }
    /* Not the innermost: close the innermost activation of `id` below, if any. */
    for (uint32_t k = depth; k-- > 0;) {
        if (t->stack[k] == id) {
            charge(t, now, 1, 0);
            memmove(&t->stack[k], &t->stack[k + 1], (depth - 1 - k) * sizeof(uint32_t));
            t->depth = depth - 1;
            return;
        }
    }
    add(&t->unmatched, 1);
}

#ifdef KNOBS_TEST_CLOCK
KNOBS_API void __knobs_region_enter(uint32_t id) {
    __knobs_test_work(3);
    timed_enter(id);
    __knobs_test_work(5);
}

KNOBS_API void __knobs_region_exit(uint32_t id) {
    __knobs_test_work(7);
    timed_exit(id);
    __knobs_test_work(11);
}
#endif

/* This thread's slot for check `id` (NULL when no memory is left). */
static KNOBS_COLD struct knobs_fixed_slot *fixed_slot(uint32_t id) {
    struct knobs_thread *t = knobs_self;
    if (!t && !(t = thread_init()))
        return NULL;
    struct knobs_fixed_table *tab = atomic_load_explicit(&t->fixed, memory_order_relaxed);
    if ((!tab || id >= tab->cap) && !(tab = grow_fixed(t, id)))
        return NULL;
    return &tab->slot[id];
}

/* A check's value that was not the expected one (or, observing, any value): the first, how
 * often, and whether another came. */
static KNOBS_COLD void fixed_record(uint32_t id, int64_t value) {
    struct knobs_fixed_slot *s = fixed_slot(id);
    if (!s)
        return;
    uint64_t n = atomic_load_explicit(&s->count, memory_order_relaxed);
    if (n == 0) {
        atomic_store_explicit(&s->value, value, memory_order_relaxed);
        atomic_store_explicit(&s->seq, atomic_fetch_add(&knobs_fixed_seq, 1),
                              memory_order_relaxed);
    } else if (atomic_load_explicit(&s->value, memory_order_relaxed) != value) {
        atomic_store_explicit(&s->varied, 1, memory_order_relaxed);
    }
    atomic_store_explicit(&s->count, n + 1, memory_order_release);
}

KNOBS_API void __knobs_fixed_check(uint32_t id, int64_t value, int64_t expected) {
    if (__builtin_expect(knobs_observe, 0)) {
        fixed_record(id, value);
        return;
    }
    if (__builtin_expect(value == expected, 1))
        return;
    fixed_record(id, value);
}

static __attribute__((constructor(101))) void knobs_start(void) {
    global_init();
    /* The main thread's time counts from here, not from its first region. */
    if (!knobs_self)
        thread_init();
}

/* Runs after main returns or exit() is called, after atexit handlers and later-registered
 * destructors (priority 101 runs last among prioritised destructors). */
static __attribute__((destructor(101))) void knobs_finish(void) {
    if (atomic_load(&knobs_state) != KNOBS_ENABLED || atomic_exchange(&knobs_finished, 1))
        return;
    if (getpid() != knobs_pid)
        return;
    uint64_t now = ticks();
    uint64_t mono1 = mono_ns();
    uint32_t open = 0;
    struct knobs_thread *self = knobs_self;
    if (self) {
        charge(self, now, 1, 1); /* as if an exit: the last probe's tail is in the interval */
        open = self->depth;
        self->depth = 0;
    }
    double ns_per_tick = 1.0;
#ifdef KNOBS_COUNT_CLOCK
    /* Counts are printed as whole numbers in the seconds' fields, with a `unit` line. */
    const double amount_scale = 1.0;
    const int decimals = 0;
#else
    const double amount_scale = 1e-9;
    const int decimals = 9;
#endif
    if (!KNOBS_COUNTING && knobs_use_tsc && now > knobs_tick0)
        ns_per_tick = (double)(mono1 - knobs_mono0) / (double)(now - knobs_tick0);

    uint64_t base = 0, regions = 0, unmatched = 0, threads = 0, probes = 0;
    uint64_t base_cpu_ns = 0, base_cpu_ticks = 0, cpu_reads = 0;
    double regions_cpu = 0; /* seconds */
    uint32_t cap = 0, fixed_cap = 0;
    struct knobs_thread *head = atomic_load_explicit(&knobs_threads, memory_order_acquire);
    for (struct knobs_thread *t = head; t; t = t->next) {
        threads++;
        base += atomic_load_explicit(&t->base_ticks, memory_order_relaxed);
        probes += atomic_load_explicit(&t->probe_ticks, memory_order_relaxed);
        unmatched += atomic_load_explicit(&t->unmatched, memory_order_relaxed);
        base_cpu_ns += atomic_load_explicit(&t->base_cpu_ns, memory_order_relaxed);
        base_cpu_ticks += atomic_load_explicit(&t->base_cpu_ticks, memory_order_relaxed);
        cpu_reads += atomic_load_explicit(&t->cpu_reads, memory_order_relaxed);
        struct knobs_table *tab = atomic_load_explicit(&t->table, memory_order_acquire);
        if (tab && tab->cap > cap)
            cap = tab->cap;
        struct knobs_fixed_table *fx = atomic_load_explicit(&t->fixed, memory_order_acquire);
        if (fx && fx->cap > fixed_cap)
            fixed_cap = fx->cap;
    }
    FILE *f = fopen(knobs_path, "w");
    if (!f)
        return;
    /* Region lines first into a second pass: totals need the sums. */
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            double s = amount_scale * ns_per_tick;
            double base_cpu = 1e-9 * ((double)base_cpu_ns + (double)base_cpu_ticks * ns_per_tick);
            fprintf(f, "knobs-region-times 2\n");
            if (KNOBS_COUNTING)
                fprintf(f, "unit\tinstructions\n");
            fprintf(f, "total\t%.*f\n", decimals, (double)(base + regions) * s);
            fprintf(f, "base\t%.*f\n", decimals, (double)base * s);
            fprintf(f, "wall\t%.9f\n", 1e-9 * (double)(mono1 - knobs_mono0));
            fprintf(f, "threads\t%llu\n", (unsigned long long)threads);
            fprintf(f, "unmatched_exits\t%llu\n", (unsigned long long)unmatched);
            fprintf(f, "open_at_exit\t%u\n", open);
            fprintf(f, "probes\t%.*f\n", decimals, (double)probes * s);
            fprintf(f, "startup\t%.*f\n", decimals,
                    KNOBS_COUNTING ? 0.0 : 1e-9 * (double)knobs_startup_ns);
            fprintf(f, "event_cost_ns\t%.3f\n",
                    0.5 * (double)(knobs_probe_cost[0][1] + knobs_probe_cost[1][0]) *
                        ns_per_tick);
            if (knobs_cpu_on) {
                fprintf(f, "cpu_total\t%.9f\n", base_cpu + regions_cpu);
                fprintf(f, "cpu_base\t%.9f\n", base_cpu);
                fprintf(f, "cpu_startup\t%.9f\n", 1e-9 * (double)knobs_startup_cpu_ns);
                fprintf(f, "cpu_reads\t%llu\n", (unsigned long long)cpu_reads);
                fprintf(f, "cpu_read_ns\t%llu\n", (unsigned long long)knobs_cpu_read_ns);
                fprintf(f, "cpu_interval_us\t%llu\n", (unsigned long long)knobs_cpu_min_us);
            }
            /* Violated (observed) checks: counts summed over threads, the earliest first
             * value, and whether any thread saw two values or threads differ. */
            for (uint32_t id = 0; id < fixed_cap; id++) {
                uint64_t n = 0, first_seq = UINT64_MAX;
                int64_t first = 0;
                int varied = 0, have = 0;
                int64_t any = 0;
                for (struct knobs_thread *t = head; t; t = t->next) {
                    struct knobs_fixed_table *fx =
                        atomic_load_explicit(&t->fixed, memory_order_acquire);
                    if (!fx || id >= fx->cap)
                        continue;
                    uint64_t c = atomic_load_explicit(&fx->slot[id].count, memory_order_acquire);
                    if (!c)
                        continue;
                    n += c;
                    int64_t v = atomic_load_explicit(&fx->slot[id].value, memory_order_relaxed);
                    varied |= atomic_load_explicit(&fx->slot[id].varied, memory_order_relaxed);
                    if (have && v != any)
                        varied = 1;
                    any = v;
                    have = 1;
                    uint64_t q = atomic_load_explicit(&fx->slot[id].seq, memory_order_relaxed);
                    if (q < first_seq) {
                        first_seq = q;
                        first = v;
                    }
                }
                if (n && knobs_observe)
                    fprintf(f, "observed\t%u\t%lld\t%llu\t%d\n", id, (long long)first,
                            (unsigned long long)n, varied);
                else if (n)
                    fprintf(f, "fixed\t%u\t%lld\t%llu\n", id, (long long)first,
                            (unsigned long long)n);
            }
        }
        for (uint32_t id = 0; id < cap; id++) {
            uint64_t tk = 0, n = 0, cns = 0, ctk = 0;
            for (struct knobs_thread *t = head; t; t = t->next) {
                struct knobs_table *tab = atomic_load_explicit(&t->table, memory_order_acquire);
                if (tab && id < tab->cap) {
                    tk += atomic_load_explicit(&tab->slot[id].ticks, memory_order_relaxed);
                    n += atomic_load_explicit(&tab->slot[id].entries, memory_order_relaxed);
                    cns += atomic_load_explicit(&tab->slot[id].cpu_ns, memory_order_relaxed);
                    ctk += atomic_load_explicit(&tab->slot[id].cpu_ticks, memory_order_relaxed);
                }
            }
            double cpu = 1e-9 * ((double)cns + (double)ctk * ns_per_tick);
            if (pass == 0) {
                regions += tk;
                regions_cpu += cpu;
            } else if ((n || tk) && knobs_cpu_on) {
                fprintf(f, "%u\t%.9f\t%llu\t%.9f\n", id, (double)tk * 1e-9 * ns_per_tick,
                        (unsigned long long)n, cpu);
            } else if (n || tk) {
                fprintf(f, "%u\t%.*f\t%llu\n", id, decimals, (double)tk * amount_scale * ns_per_tick,
                        (unsigned long long)n);
            }
        }
    }
    fclose(f);
}
