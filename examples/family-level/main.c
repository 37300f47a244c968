/* A program that breaks the family-based approach's assumption (Siegmund et al. 2013, §5.2:
 * a method costs the same whatever features ran before): `configure` reads Fast and sets the
 * match finder's search depth, which `find_matches` (base code, called in every
 * configuration) uses as a loop bound later. One run with every feature selected sees the
 * shallow search only, so its model charges every configuration the cost of Fast's search.
 * Work is counted: `work(n)` runs n iterations. Per block (8 blocks):
 *
 *     find_matches   depth × 100 iterations, depth 64, or 8 with Fast
 *     checksum       3,000 iterations with Check (a feature's own function)
 *     log_block      500 iterations with Verbose
 */
#include <stdbool.h>
#include <string.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static bool name

OPTION(Fast);
OPTION(Check);
OPTION(Verbose);

static volatile unsigned long sink;
static int depth = 64;

static void work(long n) {
    unsigned long acc = sink;
    for (long i = 0; i < n; i++)
        acc = acc * 2654435761u + (unsigned long)i;
    sink = acc;
}

static void configure(void) {
    if (Fast)
        depth = 8;
}

static void find_matches(void) { work((long)depth * 100); }
static void checksum(void) { work(3000); }
static void log_block(void) { work(500); }

static void compress_block(void) {
    find_matches();
    if (Check) checksum();
    if (Verbose) log_block();
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--fast")) Fast = true;
        if (!strcmp(argv[i], "--check")) Check = true;
        if (!strcmp(argv[i], "--verbose")) Verbose = true;
    }
    configure();
    for (int b = 0; b < 8; b++)
        compress_block();
    return 0;
}
