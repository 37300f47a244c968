/* Scenarios for the sampling profiler: work of known length in nested regions, recursion,
   threads, exits, longjmp and fork. `prog SCENARIO`. Two builds:

   - With -DKNOBS_TEST_CLOCK, linked with the profiler's test-clock build (tests/profiler.rs):
     no time passes but through __knobs_test_sample, and a "millisecond" below is one call of
     one period. Busy work of n ms is n such calls under either clock (wall: n sampler
     wake-ups; cpu: n periods of the calling thread's CPU time); a sleep of n ms is n calls of
     __knobs_test_sleep(1), which the wall clock counts and the cpu clock does not (a
     sleeping thread uses no CPU). The
     tests know the exact counts; nothing is printed.
   - Without it, linked with the real profiler (tests/profiler.rs's checks that load cannot
     break, examples/bench_cpu_attribution.rs, examples/bench_wall_attribution.rs): busy loops
     and sleeps of n real milliseconds. The program measures the main thread's self wall time
     per region itself, with the same stack discipline, and prints it at exit as `id seconds`
     lines (id -1: the base): on a loaded machine, what actually happened. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void __knobs_method_enter(uint32_t id);
void __knobs_method_exit(uint32_t id);

static int tracking;

#ifdef KNOBS_TEST_CLOCK
void __knobs_test_sample(uint32_t periods);

static int cpu_clock; /* KNOBS_PROFILE_CLOCK=cpu */
static void periods(int n) {
    for (int k = 0; k < n; k++) __knobs_test_sample(1);
}
#define ENTER __knobs_method_enter
#define EXIT __knobs_method_exit
#define WALL(ms) periods(ms)
#define CPU(ms) periods(ms)
void __knobs_test_sleep(uint32_t periods);
/* The profiler decides: the wall clock counts a sleep, the CPU clock does not. */
static void nap(int ms) {
    for (int k = 0; k < ms; k++) __knobs_test_sleep(1);
}
static void start(void) {
    const char *c = getenv("KNOBS_PROFILE_CLOCK");
    cpu_clock = c && !strcmp(c, "cpu");
}
#else
static double now(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The truth (main thread only). */
static double truth[16], truth_last;
static int truth_stack[64], truth_depth;
static void truth_charge(void) {
    double t = now(CLOCK_MONOTONIC);
    truth[truth_depth ? truth_stack[truth_depth - 1] + 1 : 0] += t - truth_last;
    truth_last = t;
}
static void truth_print(void) {
    if (!tracking) return; /* a forked child */
    truth_charge();
    for (int k = 0; k < 16; k++) printf("%d %.9f\n", k - 1, truth[k]);
}
static void ENTER(uint32_t id) {
    if (tracking) { truth_charge(); truth_stack[truth_depth++] = (int)id; }
    __knobs_method_enter(id);
}
static void EXIT(uint32_t id) {
    if (tracking) {
        truth_charge();
        int k = truth_depth;
        while (k > 0 && truth_stack[k - 1] != (int)id) k--;
        if (k) truth_depth = k - 1;
    }
    __knobs_method_exit(id);
}
/* Busy until `ms` of the clock have passed: wall time, or this thread's CPU time. */
static void spin(clockid_t c, double ms) {
    double end = now(c) + ms * 1e-3;
    while (now(c) < end) {}
}
#define WALL(ms) spin(CLOCK_MONOTONIC, ms)
#define CPU(ms) spin(CLOCK_THREAD_CPUTIME_ID, ms)
/* One nanosleep, no retry: a signal would cut it short, and that is an error here. */
static void nap(double ms) {
    double t0 = now(CLOCK_MONOTONIC);
    struct timespec t = {0, (long)(ms * 1e6)};
    if (nanosleep(&t, NULL) != 0 || now(CLOCK_MONOTONIC) - t0 < ms * 1e-3) exit(7);
}
static void start(void) {
    truth_last = now(CLOCK_MONOTONIC);
    atexit(truth_print);
}
#endif

static void g(void) { ENTER(1); WALL(40); EXIT(1); }
static void f(void) { ENTER(0); WALL(30); g(); WALL(30); EXIT(0); }

static void deepest(void) { ENTER(2); WALL(20); exit(3); }
static void deeper(void) { ENTER(1); WALL(20); deepest(); EXIT(1); }

static void cpu_work(void) { ENTER(0); CPU(60); EXIT(0); }
static void sleeper(void) { ENTER(1); nap(60); EXIT(1); }

static void recurse(int depth) {
    ENTER(5);
    WALL(10);
    if (depth > 1) recurse(depth - 1);
    EXIT(5);
}

/* Threads: main, two workers in region 3 and an idle thread that never enters a region all
 * meet at `in` with the workers' region open, and at `out` after the work. */
static pthread_barrier_t in, out;
static void *worker(void *arg) {
    (void)arg;
    __knobs_method_enter(3);
    pthread_barrier_wait(&in);
#ifdef KNOBS_TEST_CLOCK
    if (cpu_clock) periods(40); /* its own CPU time; wall time passes in main */
#else
    WALL(40);
#endif
    pthread_barrier_wait(&out);
    __knobs_method_exit(3);
    return NULL;
}
static void *idle(void *arg) {
    (void)arg;
    pthread_barrier_wait(&in);
    pthread_barrier_wait(&out);
    return NULL;
}

static jmp_buf env;
static void thrower(void) { ENTER(2); WALL(15); longjmp(env, 1); }
static void middle(void) { ENTER(1); WALL(10); thrower(); EXIT(1); }

int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "";
    tracking = 1;
    start();
    if (!strcmp(s, "nested")) {
        WALL(20);                 /* base */
        f();                      /* 0: 60 ms self, 1: 40 ms */
        WALL(10);                 /* base */
    } else if (!strcmp(s, "exit-deep")) {
        ENTER(0);
        WALL(20);                 /* 0 */
        deeper();                 /* 1: 20 ms, 2: 20 ms, then exit(3) with 3 open */
    } else if (!strcmp(s, "cpu-vs-sleep")) {
        cpu_work();               /* 0: 60 ms of CPU */
        sleeper();                /* 1: 60 ms asleep */
    } else if (!strcmp(s, "recursion")) {
        recurse(4);               /* 5: four activations, 10 ms each */
        WALL(5);                  /* base */
    } else if (!strcmp(s, "threads")) {
        pthread_barrier_init(&in, NULL, 4);
        pthread_barrier_init(&out, NULL, 4);
        ENTER(4);
        pthread_t a, b, c;
        pthread_create(&a, NULL, worker, NULL);
        pthread_create(&b, NULL, worker, NULL);
        pthread_create(&c, NULL, idle, NULL);
        pthread_barrier_wait(&in);
#ifdef KNOBS_TEST_CLOCK
        nap(40);                  /* wall: 40 ms pass for all while the workers work */
#endif
        pthread_barrier_wait(&out);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_join(c, NULL);
        EXIT(4);
        WALL(20);                 /* base: the workers are gone and no longer sampled */
    } else if (!strcmp(s, "longjmp")) {
        ENTER(0);
        WALL(5);                      /* 0 */
        if (!setjmp(env)) middle();   /* 1: 10 ms; 2: 15 ms, then 1 and 2 left open */
        WALL(7);                      /* still 2, the abandoned innermost activation */
        EXIT(0);                      /* pops 2 and 1 too */
        EXIT(1);                      /* not open: ignored */
        WALL(20);                     /* base */
    } else if (!strcmp(s, "fork")) {
        int fds[2];
        if (pipe(fds)) return 1;
        pid_t child = fork();
        if (child == 0) {
            close(fds[1]);
            tracking = 0;
            ENTER(9);
            WALL(5);
            char c;
            while (read(fds[0], &c, 1) > 0) {}
            exit(0);              /* runs the destructors, which must not write */
        }
        ENTER(0);
        WALL(20);
        EXIT(0);
    } else if (!strcmp(s, "sigprof")) {
        /* Exit 4 when the profiler has taken SIGPROF (only its POSIX CPU timers need it). */
        ENTER(0);
        WALL(5);
        EXIT(0);
        struct sigaction now;
        if (sigaction(SIGPROF, NULL, &now)) return 1;
        if (now.sa_handler != SIG_DFL) return 4;
#ifdef KNOBS_TEST_CLOCK
    } else if (!strcmp(s, "late")) {
        /* Wake-ups covering several periods (a sampler woken late): 10 periods, 6 wake-ups. */
        ENTER(0);
        periods(4);
        __knobs_test_sample(3);   /* 0: 5 samples over 7 periods */
        EXIT(0);
        __knobs_test_sample(3);   /* base: 1 sample over 3 periods */
#endif
    }
    return 0;
}
