/* A document scanner in the style of the family-based measurement paper's running example
 * (its Figure 3): Base is always built; Logging, ColorScan and AutoScan are features chosen
 * when the program is built (-DLOGGING, -DCOLOR_SCAN, -DAUTO_SCAN), annotated with #ifdef
 * around whole statements and whole functions, so knobs can encode them as run-time reads
 * (a variant simulator). Every cost is counted work, the same in every run. */
#include <stdio.h>
#include <stdlib.h>

static unsigned long work(unsigned long n, unsigned long seed) {
    unsigned long x = seed;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}

#ifdef LOGGING
static unsigned long log_line(const char *what, unsigned long n) {
    return work(n, 3) ^ (unsigned long)what[0];
}
#endif

#ifdef COLOR_SCAN
static unsigned long scan_page(int page) {
    return work(4000, (unsigned long)page) ^ work(1000, (unsigned long)page + 1);
}
#else
static unsigned long scan_page(int page) {
    return work(2000, (unsigned long)page);
}
#endif

int main(int argc, char **argv) {
    int pages = argc > 1 ? atoi(argv[1]) : 8;
    unsigned long digest = work(5000, 1);
    for (int page = 0; page < pages; page++) {
#ifdef AUTO_SCAN
        if (page % 2 == 0)
            digest ^= work(700, (unsigned long)page);
#endif
        digest ^= scan_page(page);
#ifdef LOGGING
        digest ^= log_line("page", 300);
#ifdef AUTO_SCAN
        digest ^= log_line("auto", 200);
#endif
#endif
    }
    printf("%lu\n", digest);
    return 0;
}
