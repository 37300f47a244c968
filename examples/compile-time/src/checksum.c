/* A checksum benchmark whose features are chosen when it is built:
 *   -DCRC_TABLE      table-driven CRC-32 (else bit by bit: about eight times the work)
 *   -DUNROLL=N       the table loop handles N bytes per iteration (1 or 4)
 *   -DVERIFY         checks every block twice (about twice the work)
 * and at run time: `--blocks N` blocks of 64 KiB (default 64). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef UNROLL
#define UNROLL 1
#endif

#define BLOCK (64 * 1024)

#ifdef CRC_TABLE
static uint32_t table[256];

static void make_table(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        table[i] = c;
    }
}

static uint32_t crc(const unsigned char *p, size_t n, uint32_t c) {
    size_t i = 0;
#if UNROLL == 4
    for (; i + 4 <= n; i += 4) {
        c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
        c = table[(c ^ p[i + 1]) & 0xff] ^ (c >> 8);
        c = table[(c ^ p[i + 2]) & 0xff] ^ (c >> 8);
        c = table[(c ^ p[i + 3]) & 0xff] ^ (c >> 8);
    }
#endif
    for (; i < n; i++)
        c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c;
}
#else
static void make_table(void) {}

static uint32_t crc(const unsigned char *p, size_t n, uint32_t c) {
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c;
}
#endif

int main(int argc, char **argv) {
    long blocks = 64;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--blocks"))
            blocks = atol(argv[i + 1]);
    static unsigned char buffer[BLOCK];
    uint32_t seed = 12345;
    for (size_t i = 0; i < BLOCK; i++) {
        seed = seed * 1103515245u + 12345u;
        buffer[i] = (unsigned char)(seed >> 16);
    }
    make_table();
    uint32_t sum = 0;
    for (long b = 0; b < blocks; b++) {
        buffer[b % BLOCK] ^= (unsigned char)b;
        uint32_t c = crc(buffer, BLOCK, 0xFFFFFFFFu);
#ifdef VERIFY
        if (crc(buffer, BLOCK, 0xFFFFFFFFu) != c) {
            fprintf(stderr, "checksum mismatch in block %ld\n", b);
            return 1;
        }
#endif
        sum ^= c;
    }
    printf("%08x\n", sum);
    return 0;
}
