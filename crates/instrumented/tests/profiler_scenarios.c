/* Scenarios for the sampling profiler: busy loops and sleeps of known length in nested
   regions, threads, exits and longjmp. `prog SCENARIO` prints each region's own measured
   self time (region -1: the base). Used by tests/profiler.rs and
   examples/bench_cpu_attribution.rs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void __knobs_method_enter(uint32_t id);
void __knobs_method_exit(uint32_t id);

static double now(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* The truth (main thread only): self wall time per region measured by the program itself
 * with the same stack discipline, printed on stdout at exit as `id seconds` lines
 * (id -1: the base). On a loaded machine it is what actually happened, not what was meant. */
static double truth[16], truth_last;
static int truth_stack[64], truth_depth, tracking;
static void truth_charge(void) {
    double t = now(CLOCK_MONOTONIC);
    truth[truth_depth ? truth_stack[truth_depth - 1] + 1 : 0] += t - truth_last;
    truth_last = t;
}
static void truth_print(void) {
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

static void g(void) { ENTER(1); WALL(40); EXIT(1); }
static void f(void) { ENTER(0); WALL(30); g(); WALL(30); EXIT(0); }

static void deepest(void) { ENTER(2); WALL(20); exit(3); }
static void deeper(void) { ENTER(1); WALL(20); deepest(); EXIT(1); }

static void cpu_work(void) { ENTER(0); CPU(60); EXIT(0); }
static void sleeper(void) { ENTER(1); nap(60); EXIT(1); }

static void *worker(void *arg) {
    (void)arg;
    __knobs_method_enter(3);
    WALL(40);
    __knobs_method_exit(3);
    return NULL;
}

static jmp_buf env;
static void thrower(void) { ENTER(2); longjmp(env, 1); }
static void middle(void) { ENTER(1); thrower(); EXIT(1); }

int main(int argc, char **argv) {
    const char *s = argc > 1 ? argv[1] : "";
    tracking = 1;
    truth_last = now(CLOCK_MONOTONIC);
    atexit(truth_print);
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
    } else if (!strcmp(s, "threads")) {
        ENTER(4);
        pthread_t a, b;
        pthread_create(&a, NULL, worker, NULL);
        pthread_create(&b, NULL, worker, NULL);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        EXIT(4);
        WALL(20);                 /* base: the workers are gone and no longer sampled */
    } else if (!strcmp(s, "longjmp")) {
        ENTER(0);
        if (!setjmp(env)) middle();   /* 1 and 2 left open by longjmp */
        EXIT(0);                      /* pops 2 and 1 too */
        WALL(20);                     /* base */
    } else if (!strcmp(s, "fork")) {
        int fds[2];
        if (pipe(fds)) return 1;
        pid_t child = fork();
        if (child == 0) {
            close(fds[1]);
            tracking = 0;
            ENTER(9);
            char c;
            while (read(fds[0], &c, 1) > 0) {}
            _exit(0);             /* must not write (and prints nothing) */
        }
        ENTER(0);
        WALL(20);
        EXIT(0);
    }
    return 0;
}
