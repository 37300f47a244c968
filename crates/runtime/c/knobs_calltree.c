/* knobs call-tree runtime (family-based performance measurement, Siegmund et al. 2013,
 * Algorithm 1 and Equation 2), linked into programs whose functions are instrumented with
 * enter/exit calls *instead of* knobs_runtime.c or knobs_profiler.c (link one of them).
 *
 * API (C ABI, the names `llvm::instrument` emits; ids are the instrumenter's, one per
 * function, dense from 0):
 *     void __knobs_region_enter(uint32_t id);
 *     void __knobs_region_exit(uint32_t id);
 *
 * What it records: the dynamic call tree, one node per (parent node, function), with the
 * node's entries and self time: every instant between two events is charged to the node on
 * top of the stack (node 0, the root, holds the time outside every instrumented function),
 * so a node's self time is its inclusive time minus its children's (Equation 2). Recursion is
 * folded (the paper's footnote 5): entering a function already open on the stack stays on
 * its innermost open node, whose self time then holds the recursive calls too.
 *
 * Overhead (the paper's §5.1): at exit the runtime times batches of enter/exit pairs on a
 * scratch tree and writes the cheapest batch's cost per pair, `visit_overhead`; half of a
 * visit's cost falls in the callee's self time and half in its caller's, for the reader to
 * subtract.
 *
 * Output: at exit (exit() or return from main; a destructor), when KNOBS_CALL_TREE names a
 * file:
 *     knobs-call-tree 1
 *     total <seconds from the runtime's start>
 *     visit_overhead <seconds per enter/exit pair>
 *     calibration <seconds the calibration took, after `total`>
 *     other_threads <events ignored from threads other than the first>
 *     cpu_total <CPU seconds of the main thread from the runtime's start>   (CPU clock only)
 *     cpu_reads <reads of the CPU clock>  cpu_read_ns <one read's cost>  cpu_interval_us <N>
 *     node <id> <parent id or -> <function id or -> <entries> <self seconds> [<CPU self seconds>]
 * one node line per node, parents before children. Nothing is printed; _exit(), fatal
 * signals and exec lose the tree.
 *
 * CPU clock (unless KNOBS_REGION_CPU_US=off): every interval is charged by the thread's CPU
 * clock too, as the region timers do (docs/region-times.md): an interval shorter than
 * KNOBS_REGION_CPU_US microseconds (default 100) is taken as on a CPU, a longer one reads
 * CLOCK_THREAD_CPUTIME_ID (a system call) and gets the clock's advance since its last read less
 * the short intervals since then and the read's calibrated cost, at most its wall time. So the
 * clock is read at most once per 100 us of the thread's time, and a sleep or a wait for a CPU
 * (always a long interval) is charged what the thread really ran.
 *
 * Threads: only the thread that loaded the runtime (the main thread) is traced; events from
 * others are counted and ignored. Hot path: one clock_gettime, a compare and two adds, a hash
 * probe per enter; the tables grow by doubling (malloc).
 *
 * Test clock: compiled with -DKNOBS_TEST_CLOCK (`runtime::call_tree::build_test_clock`), time
 * is a counter in nanoseconds that only the program advances (`void __knobs_test_work(uint64_t
 * ns)`), and each enter/exit costs fixed amounts before and after its clock read (enter 3 + 5
 * ns, exit 7 + 9 ns), the calibration's visits included: a pair costs 24 ns, 12 of them (3 + 9)
 * in the caller and 12 (5 + 7) in the callee, the even split the reader's correction assumes,
 * so the tree, the calibration and its subtraction can be checked exactly whatever the machine
 * is doing; `void __knobs_test_sleep(uint64_t ns)` advances it without the CPU clock (which is
 * the test time less the sleeps, and costs nothing to read). The normal build has none of it.
 *
 * Count clock: compiled with -DKNOBS_COUNT_CLOCK (`runtime::call_tree::build_counting`), the
 * clock is the program's count of its own IR instructions (docs/region-times.md,
 * "Counting"): `unit instructions` after the header, whole counts in `total` and the nodes'
 * self fields, `visit_overhead` 0 (the visits add nothing to the count), no CPU clock.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define KNOBS_API __attribute__((visibility("default")))
#define NO_FUNC UINT32_MAX

struct kc_node {
  uint32_t parent, func;
  uint64_t entries, self_ns;
  uint64_t cpu_ns; /* self time by the thread's CPU clock (kc_charge_cpu) */
};

struct kc_frame {
  uint32_t node, func;
  uint32_t prev_open; /* the function's innermost open node + 1 before this frame */
};

struct kc_tree {
  struct kc_node *nodes;
  uint32_t n, cap;
  uint32_t *table; /* open addressing on (parent, func): node index + 1 (0 = free) */
  uint32_t table_cap;
  struct kc_frame *stack;
  uint32_t depth, stack_cap;
  uint32_t *open_node; /* per function: its innermost open node + 1 (0 = not open) */
  uint32_t funcs_cap;
  uint64_t last_ns;
  int cpu;              /* charge the CPU clock too (the main tree, not the calibration's) */
  uint64_t cpu_sync;    /* the thread's CPU clock (ns) at its last read */
  uint64_t cpu_pending; /* ns of the intervals since then taken as on a CPU */
};

static struct kc_tree kc_main;
static __thread int kc_is_main;
static _Atomic uint64_t kc_other_threads;
static uint64_t kc_start_ns, kc_start_cpu_ns;

/* The CPU clock (KNOBS_REGION_CPU_US, as the region timers read it): intervals of at least
 * kc_cpu_min_ns (default 100 us) read the thread's CPU clock, shorter ones are taken as on a
 * CPU; kc_cpu_read_ns is one read's cost, taken out of the interval it ends. */
static int kc_cpu_on;
static uint64_t kc_cpu_min_ns = 100000;
static uint64_t kc_cpu_read_ns;
static uint64_t kc_cpu_reads;

#ifdef KNOBS_TEST_CLOCK
static _Atomic uint64_t kc_test_now;

/* The program's own work: the only way time passes, besides the visits' fixed costs. */
KNOBS_API void __knobs_test_work(uint64_t ns) { atomic_fetch_add(&kc_test_now, ns); }

static uint64_t kc_now(void) { return atomic_load(&kc_test_now); }

/* The program sleeping: wall time passes, CPU time does not. */
static _Atomic uint64_t kc_test_slept;
KNOBS_API void __knobs_test_sleep(uint64_t ns) {
  atomic_fetch_add(&kc_test_slept, ns);
  atomic_fetch_add(&kc_test_now, ns);
}

/* The test clock's CPU time: its time less its sleeps. */
static uint64_t kc_cpu(void) { return atomic_load(&kc_test_now) - atomic_load(&kc_test_slept); }

/* A visit's fixed virtual cost around its clock read. */
#define KC_WORK(ns) __knobs_test_work(ns)
#elif defined(KNOBS_COUNT_CLOCK)
/* The count clock (`runtime::call_tree::build_counting`): the thread's count of the program's
 * own IR instructions, kept by the code `llvm::instrument_counting` adds (the region timers'
 * counting build defines the same counter; link one of them). The visits add nothing to it. */
KNOBS_API __thread uint64_t __knobs_instructions __attribute__((tls_model("initial-exec")));

static uint64_t kc_now(void) { return __knobs_instructions; }

static uint64_t kc_cpu(void) { return 0; }

#define KC_WORK(ns) ((void)0)
#else
static uint64_t kc_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* The calling thread's CPU time: a system call on most VMs (~0.3-1.5 us). */
static uint64_t kc_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

#define KC_WORK(ns) ((void)0)
#endif

static void *kc_grow(void *p, size_t n) {
  void *q = realloc(p, n);
  if (!q)
    abort();
  return q;
}

static uint32_t kc_hash(uint32_t parent, uint32_t func) {
  uint64_t h = ((uint64_t)parent << 32 | func) * 0x9e3779b97f4a7c15ull;
  return (uint32_t)(h >> 32);
}

static void kc_table_insert(struct kc_tree *t, uint32_t k) {
  uint32_t mask = t->table_cap - 1;
  uint32_t i = kc_hash(t->nodes[k].parent, t->nodes[k].func) & mask;
  while (t->table[i])
    i = (i + 1) & mask;
  t->table[i] = k + 1;
}

static void kc_init(struct kc_tree *t) {
  memset(t, 0, sizeof *t);
  t->cap = 256;
  t->nodes = kc_grow(NULL, t->cap * sizeof *t->nodes);
  t->nodes[0] = (struct kc_node){NO_FUNC, NO_FUNC, 1, 0, 0};
  t->n = 1;
  t->table_cap = 1024;
  t->table = calloc(t->table_cap, sizeof *t->table);
  if (!t->table)
    abort();
  t->last_ns = kc_now();
}

/* The node of `func` called from node `parent`, made on first sight. */
static uint32_t kc_child(struct kc_tree *t, uint32_t parent, uint32_t func) {
  uint32_t mask = t->table_cap - 1;
  for (uint32_t i = kc_hash(parent, func) & mask; t->table[i]; i = (i + 1) & mask) {
    struct kc_node *n = &t->nodes[t->table[i] - 1];
    if (n->parent == parent && n->func == func)
      return t->table[i] - 1;
  }
  if (t->n == t->cap) {
    t->cap *= 2;
    t->nodes = kc_grow(t->nodes, t->cap * sizeof *t->nodes);
  }
  uint32_t k = t->n++;
  t->nodes[k] = (struct kc_node){parent, func, 0, 0, 0};
  if ((uint64_t)t->n * 2 > t->table_cap) {
    t->table_cap *= 2;
    free(t->table);
    t->table = calloc(t->table_cap, sizeof *t->table);
    if (!t->table)
      abort();
    for (uint32_t j = 0; j < t->n; j++)
      kc_table_insert(t, j);
  } else {
    kc_table_insert(t, k);
  }
  return k;
}

static void kc_funcs(struct kc_tree *t, uint32_t func) {
  if (func < t->funcs_cap)
    return;
  uint32_t cap = t->funcs_cap ? t->funcs_cap : 64;
  while (cap <= func)
    cap *= 2;
  t->open_node = kc_grow(t->open_node, cap * sizeof(uint32_t));
  memset(t->open_node + t->funcs_cap, 0, (cap - t->funcs_cap) * sizeof(uint32_t));
  t->funcs_cap = cap;
}

/* A long interval's CPU time: the CPU clock's advance since its last read, less the short
 * intervals since then (already charged as on a CPU) and the read's own cost, at most the
 * interval's wall time. */
static __attribute__((noinline, cold)) void kc_charge_cpu(struct kc_tree *t, struct kc_node *n,
                                                           uint64_t d) {
  uint64_t c = kc_cpu();
  kc_cpu_reads++;
  int64_t spent = (int64_t)(c - t->cpu_sync) - (int64_t)t->cpu_pending - (int64_t)kc_cpu_read_ns;
  n->cpu_ns += spent < 0 ? 0 : (uint64_t)spent > d ? d : (uint64_t)spent;
  t->cpu_sync = c;
  t->cpu_pending = 0;
}

/* Charges the time since the last event to the node on top of the stack, by the wall clock
 * and (the main tree, KNOBS_REGION_CPU_US not `off`) the CPU clock. */
static void kc_charge(struct kc_tree *t, uint64_t now) {
  uint32_t top = t->depth ? t->stack[t->depth - 1].node : 0;
  uint64_t d = now - t->last_ns;
  struct kc_node *n = &t->nodes[top];
  n->self_ns += d;
  t->last_ns = now;
  if (t->cpu) {
    if (__builtin_expect(d < kc_cpu_min_ns, 1)) {
      n->cpu_ns += d;
      t->cpu_pending += d;
    } else {
      kc_charge_cpu(t, n, d);
    }
  }
}

static void kc_enter(struct kc_tree *t, uint32_t func, uint64_t now) {
  kc_charge(t, now);
  kc_funcs(t, func);
  uint32_t node;
  if (t->open_node[func]) {
    node = t->open_node[func] - 1; /* recursion: folded into the open node */
  } else {
    uint32_t parent = t->depth ? t->stack[t->depth - 1].node : 0;
    node = kc_child(t, parent, func);
  }
  t->nodes[node].entries++;
  if (t->depth == t->stack_cap) {
    t->stack_cap = t->stack_cap ? t->stack_cap * 2 : 256;
    t->stack = kc_grow(t->stack, t->stack_cap * sizeof *t->stack);
  }
  t->stack[t->depth++] = (struct kc_frame){node, func, t->open_node[func]};
  t->open_node[func] = node + 1;
}

static void kc_exit(struct kc_tree *t, uint32_t func, uint64_t now) {
  if (func >= t->funcs_cap || !t->open_node[func])
    return; /* not open: ignored */
  kc_charge(t, now);
  /* Pop up to and including the innermost activation of `func` (frames above it were
   * skipped by longjmp). */
  while (t->depth) {
    struct kc_frame f = t->stack[--t->depth];
    t->open_node[f.func] = f.prev_open;
    if (f.func == func)
      break;
  }
}

/* One enter and one exit as the program's calls do them (the calibration times these);
 * under the test clock with their fixed costs (the header). */
static inline void kc_visit_enter(struct kc_tree *t, uint32_t func) {
  KC_WORK(3);
  kc_enter(t, func, kc_now());
  KC_WORK(5);
}

static inline void kc_visit_exit(struct kc_tree *t, uint32_t func) {
  KC_WORK(7);
  kc_exit(t, func, kc_now());
  KC_WORK(9);
}

KNOBS_API void __knobs_region_enter(uint32_t id) {
  if (!kc_is_main) {
    atomic_fetch_add_explicit(&kc_other_threads, 1, memory_order_relaxed);
    return;
  }
  kc_visit_enter(&kc_main, id);
}

KNOBS_API void __knobs_region_exit(uint32_t id) {
  if (!kc_is_main) {
    atomic_fetch_add_explicit(&kc_other_threads, 1, memory_order_relaxed);
    return;
  }
  kc_visit_exit(&kc_main, id);
}

/* The cheapest of a few batches of enter/exit pairs on a scratch tree, per pair. */
static double kc_visit_overhead(void) {
  struct kc_tree scratch;
  kc_init(&scratch);
  /* As the program's visits: the CPU clock's accounting included. */
  scratch.cpu = kc_cpu_on;
  scratch.cpu_sync = kc_cpu_on ? kc_cpu() : 0;
  enum { PAIRS = 2000, BATCHES = 5 };
  double best = 0;
  for (int b = 0; b < BATCHES; b++) {
    uint64_t start = kc_now();
    for (uint32_t i = 0; i < PAIRS; i++) {
      kc_visit_enter(&scratch, i & 7);
      kc_visit_exit(&scratch, i & 7);
    }
    double per = (double)(kc_now() - start) / PAIRS * 1e-9;
    if (b == 0 || per < best)
      best = per;
  }
  free(scratch.nodes);
  free(scratch.table);
  free(scratch.stack);
  free(scratch.open_node);
  return best;
}

/* KNOBS_REGION_CPU_US: `off` (no CPU clock) or the shortest interval, in microseconds, that
 * reads it (default 100); and one read's cost (the median of a few). */
static void kc_cpu_start(void) {
  const char *s = getenv("KNOBS_REGION_CPU_US");
#ifdef KNOBS_COUNT_CLOCK
  s = "off"; /* counts are not time: no CPU clock beside them */
#endif
  if (s && !strcmp(s, "off"))
    return;
  if (s && *s) {
    char *end;
    unsigned long long us = strtoull(s, &end, 10);
    if (!*end && us <= 10000000ull)
      kc_cpu_min_ns = us * 1000ull;
  }
  enum { READS = 15 };
  uint64_t cost[READS];
  for (int k = 0; k < READS; k++) {
    uint64_t a = kc_cpu();
    cost[k] = kc_cpu() - a;
  }
  for (int i = 1; i < READS; i++) /* insertion sort: 15 values */
    for (int j = i; j > 0 && cost[j - 1] > cost[j]; j--) {
      uint64_t x = cost[j];
      cost[j] = cost[j - 1];
      cost[j - 1] = x;
    }
  kc_cpu_read_ns = cost[READS / 2];
  kc_cpu_on = 1;
}

static __attribute__((constructor(101))) void kc_start(void) {
  kc_is_main = 1;
  kc_cpu_start();
#ifdef KNOBS_COUNT_CLOCK
  kc_start_ns = 0; /* the program's instructions from its start, as the region timers count */
#else
  kc_start_ns = kc_now();
#endif
  kc_start_cpu_ns = kc_cpu_on ? kc_cpu() : 0;
  kc_init(&kc_main);
  kc_main.cpu = kc_cpu_on;
  kc_main.cpu_sync = kc_start_cpu_ns;
}

static __attribute__((destructor(101))) void kc_finish(void) {
  if (!kc_is_main)
    return;
  const char *path = getenv("KNOBS_CALL_TREE");
  if (!path || !*path)
    return;
  uint64_t now = kc_now();
  kc_charge(&kc_main, now);
  double cpu_total = kc_cpu_on ? (double)(kc_cpu() - kc_start_cpu_ns) * 1e-9 : 0;
  double total = (double)(now - kc_start_ns) * 1e-9;
  uint64_t cpu_reads = kc_cpu_reads;
  double overhead = kc_visit_overhead();
  double calibration = (double)(kc_now() - now) * 1e-9;
  FILE *f = fopen(path, "w");
  if (!f)
    return;
#ifdef KNOBS_COUNT_CLOCK
  /* Counts: whole numbers where seconds are otherwise, and a `unit` line saying so. */
  const double scale = 1.0;
  total = (double)(now - kc_start_ns);
  fprintf(f, "knobs-call-tree 1\nunit instructions\n");
#else
  const double scale = 1e-9;
  fprintf(f, "knobs-call-tree 1\n");
#endif
  fprintf(f, "total %.*f\nvisit_overhead %.12f\ncalibration %.9f\nother_threads %llu\n",
          scale == 1.0 ? 0 : 9, total, overhead, calibration,
          (unsigned long long)atomic_load(&kc_other_threads));
  if (kc_cpu_on)
    fprintf(f, "cpu_total %.9f\ncpu_reads %llu\ncpu_read_ns %llu\ncpu_interval_us %llu\n", cpu_total,
            (unsigned long long)cpu_reads, (unsigned long long)kc_cpu_read_ns,
            (unsigned long long)(kc_cpu_min_ns / 1000));
  for (uint32_t k = 0; k < kc_main.n; k++) {
    const struct kc_node *n = &kc_main.nodes[k];
    fprintf(f, "node %u ", k);
    if (n->parent == NO_FUNC)
      fputs("- - ", f);
    else
      fprintf(f, "%u %u ", n->parent, n->func);
    fprintf(f, "%llu %.*f", (unsigned long long)n->entries, scale == 1.0 ? 0 : 9,
            (double)n->self_ns * scale);
    if (kc_cpu_on)
      fprintf(f, " %.9f", (double)n->cpu_ns * 1e-9);
    fputc('\n', f);
  }
  fclose(f);
}
