/* Options that choose code without a branch on them: a table of handlers indexed by MODE, a
 * codec (a struct of function pointers) chosen by PACKED through a conditional expression
 * (an LLVM `select`), and a sleep whose length LONG chooses through another `select` and
 * passes down to the C library. Work is N time units in `sleep_units`: a loop of
 * WORK_STEPS steps per unit, bounded by its parameter alone (so decided where it is called),
 * and a sleep of UNIT_MS milliseconds per unit (0 for the quick taint runs). In units:
 *
 *     time = 2                         base
 *          + 1 / 3 / 8                for MODE = 0 / 1 / 2: the handler
 *          + blocks (plain)           the codec, with blocks = 8 under MODE = 2, else 4
 *            or 2 + blocks / 2 (packed)
 *          + 6 if LONG, else 1
 *
 * so MODE and PACKED interact (through `blocks`), LONG is alone and UNUSED changes nothing.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name

OPTION(MODE);
OPTION(PACKED);
OPTION(LONG);
OPTION(UNUSED);

static double unit_ms = 4.0;
volatile int sink;

/* A unit also runs WORK_STEPS increments of a volatile counter: counted in instructions
 * (metric = "instructions"), a run is then the units' work, not main's bookkeeping, while the
 * steps take tens of microseconds beside a unit's milliseconds of sleep. */
#define WORK_STEPS 10000
volatile unsigned long work_done;

static void sleep_units(double units) {
    for (long i = 0; i < (long)(units * WORK_STEPS + 0.5); i++)
        work_done++;
    double ns = units * unit_ms * 1e6;
    struct timespec t;
    t.tv_sec = (time_t)(ns / 1e9);
    t.tv_nsec = (long)(ns - (double)t.tv_sec * 1e9);
    nanosleep(&t, NULL);
}

static void copy_mode(void) { sleep_units(1); }
static void fast_mode(void) { sleep_units(3); }
static void best_mode(void) { sleep_units(8); }

static void (*const handlers[3])(void) = {copy_mode, fast_mode, best_mode};

struct codec {
    const char *name;
    void (*encode)(int blocks);
};

static void plain_encode(int blocks) { sleep_units(blocks); }
static void packed_encode(int blocks) { sleep_units(2 + 0.5 * blocks); }

static const struct codec plain = {"plain", plain_encode};
static const struct codec packed = {"packed", packed_encode};

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--mode=", 7)) MODE = atoi(argv[i] + 7);
        if (!strcmp(argv[i], "--packed")) PACKED = 1;
        if (!strcmp(argv[i], "--long")) LONG = 1;
        if (!strcmp(argv[i], "--unused")) UNUSED = 1;
    }
    const char *unit = getenv("UNIT_MS");
    if (unit)
        unit_ms = atof(unit);
    sleep_units(2);
    handlers[MODE]();
    const struct codec *codec = PACKED ? &packed : &plain;
    codec->encode(MODE == 2 ? 8 : 4);
    sleep_units(LONG ? 6 : 1);
    sink += UNUSED;
    return 0;
}
