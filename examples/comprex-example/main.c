/* The Comprex paper's running example (Velez et al., Comprex, Fig. 2) in C: options A-D as
 * "-A" ... "-D", kept in globals annotated `knobs:option=NAME`. Work is a nanosleep of N
 * time units; a unit is UNIT_MS milliseconds (0 for the quick taint runs). The expected
 * local models, in units:
 *     main = 3 - A        foo = A + 3AB        bar = 5 + 15A + 10C + 30AC
 * (bar runs 20 times under A and 5 times otherwise, one unit each plus two more when C).
 * D is read but influences nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name

OPTION(A);
OPTION(B);
OPTION(C);
OPTION(D);

static double unit_ms = 1.0;
volatile int sink;

/* No branch in here: a decision in a helper called from every region would carry their
   control-flow taints and become a region of its own. */
static void work(double units) {
    double ns = units * unit_ms * 1e6;
    struct timespec t = {(time_t)(ns / 1e9), (long)(ns - (double)(time_t)(ns / 1e9) * 1e9)};
    nanosleep(&t, NULL);
}

static void foo(int b) {
    work(1);
    if (b) /* foo */
        work(3);
}

static void bar(int c) {
    work(1);
    if (c) /* bar */
        work(2);
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-A")) A = 1;
        if (!strcmp(argv[i], "-B")) B = 1;
        if (!strcmp(argv[i], "-C")) C = 1;
        if (!strcmp(argv[i], "-D")) D = 1;
    }
    const char *unit = getenv("UNIT_MS");
    if (unit)
        unit_ms = atof(unit);
    int i;
    if (A) { /* main-if */
        work(2);
        foo(B);
        i = 20;
    } else {
        work(3);
        i = 5;
    }
    while (i > 0) { /* main-while */
        bar(C);
        i--;
    }
    sink += D;
    return 0;
}
