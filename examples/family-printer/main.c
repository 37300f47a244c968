/* The family-based approach's printer driver (Siegmund et al. 2013, §3.2, as
 * examples/printer) with counted work instead of sleeps: `work(units)` runs a loop of
 * `units` × 1,000 iterations, so its cost in counted instructions is the same whatever
 * options ran before, the paper's assumption (§5.2) holds, and the one-run model in
 * instructions matches the counted brute force:
 *
 *     2 + 1 Logging + 6 ColorScan + 2 AutoScan + 0.5 ColorScan·Logging + 0.5 AutoScan·Logging
 *
 * units of work, plus main's own instructions. What still changes with the options is a
 * few instructions per call of a feature's function (the call and its branch, in the
 * caller's own count).
 */
#include <stdbool.h>
#include <string.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name
#define FEATURE(name) __attribute__((annotate("knobs:feature=" #name)))

OPTION(Logging);
OPTION(ColorScan);
OPTION(AutoScan);

static volatile unsigned long sink;

static void work(double units) {
    unsigned long acc = sink;
    for (long i = 0; i < (long)(units * 1000); i++)
        acc = acc * 2654435761u + (unsigned long)i;
    sink = acc;
}

/* Base */
static void scan_base(void) { work(1); }
static void print_base(void) { work(2); }

/* Logging */
FEATURE(Logging) static void scan_logging(void) { work(0.5); }
static void print_logging(void) { work(1); }

static void scan(void) {
    if (Logging) scan_logging();
    scan_base();
}

/* ColorScan and AutoScan */
static void print_colorscan(void) { work(5); scan(); }
static void print_autoscan(void) { work(1); scan(); }

static void print(void) {
    if (AutoScan) print_autoscan();
    if (ColorScan) print_colorscan();
    if (Logging) print_logging();
    print_base();
}

int main(int argc, char **argv) {
    /* Every option comes as `--x` or `--no-x` (knobs.toml's `on` and `off`) and is read
     * without a branch, so main's own count is the same in every configuration. */
    for (int i = 1; i < argc; i++) {
        Logging |= !strcmp(argv[i], "--logging");
        ColorScan |= !strcmp(argv[i], "--color-scan");
        AutoScan |= !strcmp(argv[i], "--auto-scan");
    }
    print();
    return 0;
}
