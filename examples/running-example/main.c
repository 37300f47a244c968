/* ConfigCrusher's running example (Velez et al., journal version, Fig. 2, lines 1-32) in C.
 *
 * Ten binary options A-J, each selected by an argument "-A" ... "-J" and kept in a global
 * marked with `knobs:option=NAME` (so the analysis finds the sources from the annotations).
 * The paper's "... // execution: Ns" becomes a nanosleep of N time units; a unit is 10 ms
 * unless FIG2_UNIT_MS says otherwise, so the expected model in units is
 *     1 + 3A + 3AB + 3AC + 5DEF + 0.1A + 0.2B + ... + 0.9I
 * (with the paper's "1 + 3A" combining foo's 1 and line 16's 2 under A).
 *
 * The sleeps are a macro around nanosleep, not a helper function: a helper called from every
 * region would carry the union of all their options in a context-insensitive analysis.
 * Comments "paper line N" mark the statements of the figure's line N.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

/* `used`: J is never read, yet must stay in the program for the analysis to find it irrelevant. */
#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name

OPTION(A);
OPTION(B);
OPTION(C);
OPTION(D);
OPTION(E);
OPTION(F);
OPTION(G);
OPTION(H);
OPTION(I);
OPTION(J);

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
        case 'E': E = true; break;
        case 'F': F = true; break;
        case 'G': G = true; break;
        case 'H': H = true; break;
        case 'I': I = true; break;
        case 'J': J = true; break;
        default: break;
        }
    }
    const char *unit = getenv("FIG2_UNIT_MS");
    if (unit)
        unit_ms = atof(unit);
}

int main(int argc, char **argv) {
    parse_options(argc, argv); /* paper lines 7-11 */
    WORK(1);                   /* paper line 12 */
    bool x = false;            /* paper line 13 */
    if (A) {                   /* paper line 15 */
        WORK(2);               /* paper line 16 */
        foo(C);                /* paper line 17 */
        x = true;              /* paper line 18 */
    }
    if (B && x) WORK(3);       /* paper line 21 */
    if (D && E && F) WORK(5);  /* paper line 23 */
    if (A) WORK(0.1);          /* paper line 24 */
    if (B) WORK(0.2);          /* paper line 25 */
    if (C) WORK(0.3);          /* paper line 26 */
    if (D) WORK(0.4);          /* paper line 27 */
    if (E) WORK(0.5);          /* paper line 28 */
    if (F) WORK(0.6);          /* paper line 29 */
    if (G) WORK(0.7);          /* paper line 30 */
    if (H) WORK(0.8);          /* paper line 31 */
    if (I) WORK(0.9);          /* paper line 32 */
    return 0;
}
