/* SPLat's subjects: ConfigCrusher's running example (Velez et al., journal version, Fig. 2,
 * lines 1-21) in C, with a fourth option D that the figure's start-up code reads (line 8)
 * but nothing uses.
 *
 * Options are "-A" ... "-D", kept in globals marked `knobs:option=NAME`. Built as is, the
 * program reads an option where it decides on it; built with -DREAD_AT_START it first copies
 * every option into a local, as the figure's lines 7-11 do (`a = getopt("A"); ...`). One time
 * unit is FIG2_UNIT_MS milliseconds (default 10); the model in units is
 *     1 + 3A + 3AB + 3AC                     (D irrelevant)
 * SPLat explores 6 configurations of the program as is (A; C only under A; B), and all 16
 * with -DREAD_AT_START; SPLat-delayed explores 6 of both.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name

OPTION(A);
OPTION(B);
OPTION(C);
OPTION(D);

static double unit_ms = 10.0;

/* A unit also runs WORK_STEPS increments of a volatile counter: counted in instructions
 * (metric = "instructions"), a run is then the units' work, not main's bookkeeping, while the
 * steps take tens of microseconds beside a unit's milliseconds of sleep. */
#define WORK_STEPS 10000
volatile unsigned long work_done;

#define WORK(units)                                                                \
    do {                                                                           \
        for (long i_ = 0; i_ < (long)((units) * WORK_STEPS + 0.5); i_++)           \
            work_done++;                                                           \
        double ns_ = (units) * unit_ms * 1e6;                                      \
        struct timespec t_ = {(time_t)(ns_ / 1e9), (long)(ns_ - (double)(time_t)(ns_ / 1e9) * 1e9)}; \
        nanosleep(&t_, NULL);                                                      \
    } while (0)

static void foo(bool x) {
    if (x) WORK(4); /* paper line 3 */
    else WORK(1);   /* paper line 4 */
}

static void parse_options(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (arg[0] != '-' || arg[1] == 0 || arg[2] != 0)
            continue;
        switch (arg[1]) {
        case 'A': A = true; break;
        case 'B': B = true; break;
        case 'C': C = true; break;
        case 'D': D = true; break;
        default: break;
        }
    }
    const char *unit = getenv("FIG2_UNIT_MS");
    if (unit)
        unit_ms = atof(unit);
}

int main(int argc, char **argv) {
    parse_options(argc, argv);
#ifdef READ_AT_START
    /* paper lines 7-8 */
    bool a = A, b = B, c = C, d = D;
    (void)d;
#else
#define a A
#define b B
#define c C
#endif
    WORK(1);         /* paper line 12 */
    bool x = false;  /* paper line 13 */
    if (a) {         /* paper line 15 */
        WORK(2);     /* paper line 16 */
        foo(c);      /* paper line 17 */
        x = true;    /* paper line 18 */
    }
    if (b && x) WORK(3); /* paper line 21 */
    return 0;
}
