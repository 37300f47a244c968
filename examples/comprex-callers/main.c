/* A callee whose cost its callers decide (issue 45): `helper` sleeps for the length it is
 * given and decides nothing itself. It is called through a function pointer option M chooses
 * (one handler calls it with 25, the other with 45), under `if (S)`, and in a loop whose trip
 * count option W sets, with a length read from a struct option H chooses. X decides a branch
 * of main's own that costs no time. The true model, in milliseconds:
 *     25 + 20M + 10S + (1 + 3W)(10 + 20H)
 * Partitioned by its own decisions only (the paper's), helper's one decision is the sleep's
 * argument, tainted by H under W's loop: M's and S's calls are lost.
 */
#include <string.h>
#include <time.h>

#define OPTION(name) __attribute__((used, annotate("knobs:option=" #name))) static int name
OPTION(M);
OPTION(S);
OPTION(W);
OPTION(H);
OPTION(X);

static volatile unsigned long sink;

struct params {
    int length;
};
static struct params small = {10}, large = {30};

static void helper(int length) {
    struct timespec t = {0, length * 1000000L};
    nanosleep(&t, NULL);
}

static void handle_short(void) { helper(25); }
static void handle_long(void) { helper(45); }

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-M")) M = 1;
        if (!strcmp(argv[i], "-S")) S = 1;
        if (!strcmp(argv[i], "-W")) W = 1;
        if (!strcmp(argv[i], "-H")) H = 1;
        if (!strcmp(argv[i], "-X")) X = 1;
    }
    void (*handle)(void) = M ? handle_long : handle_short;
    handle();
    if (S)
        helper(10);
    struct params *p = H ? &large : &small;
    int trips = W ? 4 : 1;
    for (int t = 0; t < trips; t++)
        helper(p->length);
    if (X)
        sink++;
    return 0;
}
