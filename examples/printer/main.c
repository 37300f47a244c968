/* The family-based approach's running example (Siegmund et al. 2013, §3.2): a printer driver
 * with the mandatory Base and the optional features Logging, ColorScan and AutoScan, as a C
 * program that already is its own variant simulator: each feature's code is a function,
 * called under its option. Times are those of the paper's Fig. 3 in units of PRINTER_UNIT_MS
 * milliseconds (default 10):
 *
 *     print: AutoScan 1, ColorScan 5, Logging 1, Base 2; AutoScan and ColorScan each scan once
 *     scan:  Logging 0.5, Base 1
 *
 * so the model, in units, is the paper's final model (its terms on the mandatory Base
 * merged into the others):
 *
 *     2 + 1 Logging + 6 ColorScan + 2 AutoScan + 0.5 ColorScan·Logging + 0.5 AutoScan·Logging
 *
 * The three ways of mapping functions to features all appear: scan_logging is annotated
 * below, print_logging is named in knobs.toml (`functions`), and print_colorscan and
 * print_autoscan are derived by the static analysis (called only under their option).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name
#define FEATURE(name) __attribute__((annotate("knobs:feature=" #name)))

OPTION(Logging);
OPTION(ColorScan);
OPTION(AutoScan);

static double unit_ms = 10.0;

/* A unit also runs WORK_STEPS increments of a volatile counter: counted in instructions
 * (metric = "instructions"), a run is then the features' work, not main's bookkeeping, while
 * the steps take tens of microseconds beside a unit's milliseconds of sleep. */
#define WORK_STEPS 10000
volatile unsigned long work_done;

static void work(double units) {
    for (long i = 0; i < (long)(units * WORK_STEPS + 0.5); i++)
        work_done++;
    double ns = units * unit_ms * 1e6;
    struct timespec t = {(time_t)(ns / 1e9), (long)(ns - (double)(time_t)(ns / 1e9) * 1e9)};
    nanosleep(&t, NULL);
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
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--logging")) Logging = true;
        if (!strcmp(argv[i], "--color-scan")) ColorScan = true;
        if (!strcmp(argv[i], "--auto-scan")) AutoScan = true;
    }
    const char *unit = getenv("PRINTER_UNIT_MS");
    if (unit)
        unit_ms = atof(unit);
    print();
    return 0;
}
