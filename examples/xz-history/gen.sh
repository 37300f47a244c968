#!/bin/sh
# Writes 2 MB of deterministic, compressible data to $1: lines of words and numbers drawn
# by a fixed Park-Miller generator (exact in awk's doubles; no randomness from the machine),
# so every run and every machine compresses the same bytes.
set -eu
awk 'BEGIN {
    n = split("the of and to in is that for it as with was on be by at this from or have an "\
          "which one had not but what all were when we there can more if out so said", w, " ");
    x = 12345;
    while (bytes < 2097152) {
        line = "";
        for (i = 0; i < 12; i++) {
            x = (x * 16807) % 2147483647;
            line = line w[1 + x % n] " ";
        }
        x = (x * 16807) % 2147483647;
        line = line x % 100000;
        print line;
        bytes += length(line) + 1;
    }
}' > "$1"
