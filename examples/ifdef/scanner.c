/* A document scanner in the style of the family-based measurement paper's running example
 * (its Figure 3): Base is always built; Logging, ColorScan and AutoScan are features chosen
 * when the program is built (-DLOGGING, -DCOLOR_SCAN, -DAUTO_SCAN). As feature modules
 * refine methods, each feature here is a set of functions, defined and called under #ifdef;
 * Logging calling AutoScan's log_adjustment is their interaction. knobs encodes
 * the features as run-time reads (a variant simulator). Every cost is counted work, the same
 * in every run. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long work(unsigned long n, unsigned long seed) {
    unsigned long x = seed;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

static unsigned long scan_page(int page) {
    return work(2000, (unsigned long)page);
}

#ifdef COLOR_SCAN
static unsigned long scan_colors(int page) {
    return work(3000, (unsigned long)page + 1);
}
#endif

#ifdef AUTO_SCAN
static unsigned long adjust_contrast(int page) {
    return work(700, (unsigned long)page);
}

static unsigned long log_adjustment(int page) {
    return work(200, (unsigned long)page + 11);
}
#endif

#ifdef LOGGING
static unsigned long log_page(int page) {
    unsigned long line = work(300, (unsigned long)page + 7);
#ifdef AUTO_SCAN
    line ^= log_adjustment(page);
#endif
    return line;
}
#endif

int main(int argc, char **argv) {
    int pages = argc > 1 ? atoi(argv[1]) : 8;
    unsigned long digest = work(5000, 1);
    for (int page = 0; page < pages; page++) {
#ifdef AUTO_SCAN
        digest ^= adjust_contrast(page);
#endif
        digest ^= scan_page(page);
#ifdef COLOR_SCAN
        digest ^= scan_colors(page);
#endif
#ifdef LOGGING
        digest ^= log_page(page);
#endif
    }
    printf("%lu\n", digest);
    return 0;
}
