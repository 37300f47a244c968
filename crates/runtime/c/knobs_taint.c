/* knobs dynamic taint runtime (Comprex §III–§IV): label sets, shadow memory and the decision
 * records, linked into programs instrumented by `llvm::taint_pass`. The hot paths (unions,
 * shadow loads and stores of up to 32 bytes, the per-site "already recorded" check, the
 * control taint) are inlined by the instrumenter; this file has their slow paths.
 *
 * Labels: a label is a 32-bit id of a set of options. With bit 31 clear it is a bit set of the
 * options 0..30 (0 is the empty set; option k < 31 alone is 1 << k), so the union of two such
 * labels is their bitwise or. With bit 31 set it is KT_BIG | i, the set kt_sets[i] interned
 * here (sorted option arrays in a hash table); every interned set holds an option >= 31, so
 * each set has exactly one label. The singletons {k} of options k >= 31 are interned first at
 * init: option k alone is KT_BIG | (k - 30). Unions involving interned sets go through a
 * direct-mapped cache keyed by the (ordered) pair of labels.
 *
 * Shadow memory: one label per byte of application memory, in a two-level page table keyed
 * by address: __knobs_taint_l1 (2^27 slots, mapped by a constructor) points to pages of
 * 2^20 labels; addresses at or above 2^47 have no shadow. Pages are mmap'ed on the first
 * non-empty store; a load of an unmapped page is the empty label. A load's label is the union
 * of its bytes' labels.
 *
 * Control taint: kept by the instrumented code (per function, one slot per decision in SSA
 * values or, for functions with many decisions, in an array __knobs_taint_union_all unions;
 * see llvm::taint_pass);
 * the thread-local __knobs_taint_ctrl is the control taint of the running code (the union of
 * the open tainted decisions of every frame), which callees inherit and stores union in.
 *
 * Calls: instrumented callers store argument labels in the thread-local `__knobs_taint_args`
 * and read the result's label from `__knobs_taint_ret`.
 *
 * Output: at exit, when KNOBS_TAINT_OUT names a file, a `knobs-taint-run` JSON object
 * (docs/comprex-records.md) with an empty `configuration` (the caller fills it), the option
 * names, one decision per distinct (site, data label, control label) of the run, and two
 * orders SPLat explores by: the options in the order the program first read them (a source
 * load or call, __knobs_taint_read) and in the order they first reached a decision's data
 * taint.
 *
 * Architecture invariant: no dependencies beyond libc; never prints. Label interning, shadow
 * memory and the record table are not locked: the control taint and call labels are
 * thread-local, but programs that create threads are not supported.
 */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef uint32_t label_t;

#define KT_MAX_ARGS 64
#define KT_BIG 0x80000000u
#define KT_SMALL_OPTS 31

_Thread_local label_t __knobs_taint_args[KT_MAX_ARGS];
_Thread_local label_t __knobs_taint_ret;
_Thread_local label_t __knobs_taint_ctrl;

/* ---------- label sets ---------- */

struct kt_set {
  uint32_t n;
  uint32_t *opts;
  uint64_t hash;
};

static uint32_t kt_nopts;
static char **kt_names;
static struct kt_set *kt_sets; /* by index i of label KT_BIG | i; index 0 unused */
static uint32_t kt_nsets, kt_capsets;
static uint32_t *kt_table; /* open addressing: set hash -> index (0 = free) */
static uint64_t kt_table_cap;

static void *kt_xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q)
    abort();
  return q;
}

static uint64_t kt_hash(const uint32_t *opts, uint32_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint32_t i = 0; i < n; i++) {
    h ^= opts[i];
    h *= 0x100000001b3ull;
  }
  return h ^ n;
}

static void kt_table_insert(uint32_t k) {
  uint64_t mask = kt_table_cap - 1;
  uint64_t i = kt_sets[k].hash & mask;
  while (kt_table[i])
    i = (i + 1) & mask;
  kt_table[i] = k;
}

static void kt_table_grow(void) {
  uint64_t cap = kt_table_cap ? kt_table_cap * 2 : 1024;
  free(kt_table);
  kt_table = calloc(cap, sizeof(uint32_t));
  if (!kt_table)
    abort();
  kt_table_cap = cap;
  for (uint32_t k = 1; k < kt_nsets; k++)
    kt_table_insert(k);
}

/* The label of the set `opts[0..n]` (sorted, distinct); takes ownership of `opts`. */
static label_t kt_intern(uint32_t *opts, uint32_t n) {
  if (n == 0 || opts[n - 1] < KT_SMALL_OPTS) {
    label_t l = 0;
    for (uint32_t i = 0; i < n; i++)
      l |= 1u << opts[i];
    free(opts);
    return l;
  }
  uint64_t h = kt_hash(opts, n);
  if (kt_table_cap) {
    uint64_t mask = kt_table_cap - 1;
    for (uint64_t i = h & mask; kt_table[i]; i = (i + 1) & mask) {
      struct kt_set *s = &kt_sets[kt_table[i]];
      if (s->hash == h && s->n == n && memcmp(s->opts, opts, n * sizeof(uint32_t)) == 0) {
        free(opts);
        return KT_BIG | kt_table[i];
      }
    }
  }
  if (kt_nsets == kt_capsets) {
    kt_capsets = kt_capsets ? kt_capsets * 2 : 256;
    kt_sets = kt_xrealloc(kt_sets, kt_capsets * sizeof(struct kt_set));
  }
  uint32_t k = kt_nsets++;
  if (kt_nsets >= KT_BIG)
    abort(); /* 2^31 distinct sets */
  kt_sets[k].n = n;
  kt_sets[k].opts = opts;
  kt_sets[k].hash = h;
  if ((uint64_t)kt_nsets * 2 > kt_table_cap)
    kt_table_grow();
  else
    kt_table_insert(k);
  return KT_BIG | k;
}

/* The options of label `l` (sorted) into `buf` (room for 31), or a pointer into kt_sets;
 * their number in `*n`. */
static const uint32_t *kt_decode(label_t l, uint32_t *buf, uint32_t *n) {
  if (l & KT_BIG) {
    uint32_t k = l & ~KT_BIG;
    if (k >= kt_nsets) { /* cannot happen */
      *n = 0;
      return buf;
    }
    *n = kt_sets[k].n;
    return kt_sets[k].opts;
  }
  uint32_t m = 0;
  for (uint32_t k = 0; k < KT_SMALL_OPTS; k++)
    if (l & (1u << k))
      buf[m++] = k;
  *n = m;
  return buf;
}

#define KT_CACHE_BITS 16
static struct {
  label_t a, b, r;
} kt_cache[1u << KT_CACHE_BITS];

label_t __knobs_taint_union_slow(label_t a, label_t b) {
  if (a == b || b == 0)
    return a;
  if (a == 0)
    return b;
  if (!((a | b) & KT_BIG))
    return a | b;
  if (a > b) {
    label_t t = a;
    a = b;
    b = t;
  }
  uint32_t slot = (uint32_t)(((uint64_t)a * 0x9e3779b1u) ^ ((uint64_t)b * 0x85ebca6bu)) &
                  ((1u << KT_CACHE_BITS) - 1);
  if (kt_cache[slot].a == a && kt_cache[slot].b == b)
    return kt_cache[slot].r;
  uint32_t xb[KT_SMALL_OPTS], yb[KT_SMALL_OPTS], xn, yn;
  const uint32_t *x = kt_decode(a, xb, &xn), *y = kt_decode(b, yb, &yn);
  uint32_t *out = kt_xrealloc(NULL, (xn + yn) * sizeof(uint32_t));
  uint32_t i = 0, j = 0, n = 0;
  while (i < xn || j < yn) {
    if (j >= yn || (i < xn && x[i] < y[j]))
      out[n++] = x[i++];
    else if (i >= xn || y[j] < x[i])
      out[n++] = y[j++];
    else {
      out[n++] = x[i++];
      j++;
    }
  }
  label_t r = kt_intern(out, n);
  kt_cache[slot].a = a;
  kt_cache[slot].b = b;
  kt_cache[slot].r = r;
  return r;
}

static inline label_t kt_union(label_t a, label_t b) {
  if (!((a | b) & KT_BIG))
    return a | b;
  return __knobs_taint_union_slow(a, b);
}

/* The union of the `n` labels at `l`: the control taint of a function with many decisions,
 * whose entries (0 when closed) the instrumented code keeps in an array. */
label_t __knobs_taint_union_all(const label_t *l, uint64_t n) {
  label_t or = 0;
  for (uint64_t i = 0; i < n; i++)
    or |= l[i];
  if (!(or & KT_BIG))
    return or;
  label_t u = 0;
  for (uint64_t i = 0; i < n; i++)
    u = kt_union(u, l[i]);
  return u;
}

/* ---------- shadow memory ---------- */

#define KT_PAGE_BITS 20
#define KT_PAGE (1ull << KT_PAGE_BITS)
#define KT_ADDR_BITS 47
#define KT_L1 (1ull << (KT_ADDR_BITS - KT_PAGE_BITS))
/* The first level, read by the instrumented code's inline shadow accesses (null until the
 * constructor below runs: those go to the functions here then). */
label_t **__knobs_taint_l1;

static void kt_map_l1(void) {
  if (__knobs_taint_l1)
    return;
  void *m = mmap(NULL, KT_L1 * sizeof(label_t *), PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED)
    abort();
  __knobs_taint_l1 = m;
}

/* Before the program's own constructors (priority 101 is the first one not reserved). */
__attribute__((constructor(101))) static void kt_construct(void) { kt_map_l1(); }

static inline label_t *kt_page(uintptr_t a, int create) {
  if (a >> KT_ADDR_BITS)
    return NULL;
  if (!__knobs_taint_l1) {
    if (!create)
      return NULL;
    kt_map_l1();
  }
  label_t **slot = &__knobs_taint_l1[a >> KT_PAGE_BITS];
  if (!*slot && create) {
    void *m = mmap(NULL, KT_PAGE * sizeof(label_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      abort();
    *slot = m;
  }
  return *slot;
}

/* The bytes from `a` to the end of its shadow page, at most `n`. */
static uint64_t kt_chunk(uintptr_t a, uint64_t n) {
  uint64_t chunk = KT_PAGE - (a & (KT_PAGE - 1));
  return chunk < n ? chunk : n;
}

label_t __knobs_taint_load(const void *p, uint64_t n) {
  uintptr_t a = (uintptr_t)p;
  label_t small = 0, big = 0;
  while (n) {
    uint64_t chunk = kt_chunk(a, n);
    label_t *pg = kt_page(a, 0);
    if (pg) {
      label_t *s = pg + (a & (KT_PAGE - 1));
      for (uint64_t i = 0; i < chunk; i++) {
        if (s[i] & KT_BIG) {
          if (s[i] != big)
            big = kt_union(big, s[i]);
        } else
          small |= s[i];
      }
    }
    a += chunk;
    n -= chunk;
  }
  return kt_union(small, big);
}

void __knobs_taint_store(void *p, uint64_t n, label_t l) {
  uintptr_t a = (uintptr_t)p;
  while (n) {
    uint64_t chunk = kt_chunk(a, n);
    label_t *pg = kt_page(a, l != 0);
    if (pg) {
      label_t *s = pg + (a & (KT_PAGE - 1));
      if (l == 0)
        memset(s, 0, chunk * sizeof(label_t));
      else
        for (uint64_t i = 0; i < chunk; i++)
          s[i] = l;
    }
    a += chunk;
    n -= chunk;
  }
}

/* Unions `extra` into the shadow of `n` bytes at `a`. */
static void kt_taint_range(uintptr_t a, uint64_t n, label_t extra) {
  while (n) {
    uint64_t chunk = kt_chunk(a, n);
    label_t *pg = kt_page(a, 1);
    if (pg) {
      label_t *s = pg + (a & (KT_PAGE - 1));
      for (uint64_t i = 0; i < chunk; i++)
        s[i] = kt_union(s[i], extra);
    }
    a += chunk;
    n -= chunk;
  }
}

/* One chunk of a copy: `n` bytes that lie in one shadow page at both ends. */
static void kt_copy_chunk(uintptr_t d, uintptr_t s, uint64_t n, label_t extra) {
  label_t *sp = kt_page(s, 0);
  label_t *dp = kt_page(d, sp != NULL || extra != 0);
  if (!dp)
    return; /* every label is 0 and so is the destination's shadow */
  label_t *dd = dp + (d & (KT_PAGE - 1));
  if (!sp) {
    for (uint64_t i = 0; i < n; i++)
      dd[i] = extra;
    return;
  }
  memmove(dd, sp + (s & (KT_PAGE - 1)), n * sizeof(label_t));
  if (!extra)
    return;
  if (!(extra & KT_BIG)) {
    /* Bit sets only (the usual case): an or, in loops the compiler vectorises. */
    label_t any = 0;
    for (uint64_t i = 0; i < n; i++)
      any |= dd[i];
    if (!(any & KT_BIG)) {
      for (uint64_t i = 0; i < n; i++)
        dd[i] |= extra;
      return;
    }
  }
  for (uint64_t i = 0; i < n; i++)
    dd[i] = kt_union(dd[i], extra);
}

/* Copies the shadow of `n` bytes from `src` to `dst` (memcpy, memmove), unioned with `extra`
 * (the control taint). Overlap-safe: copies chunk by chunk, from the end when `dst` lies
 * inside the source. */
void __knobs_taint_copy(void *dst, const void *src, uint64_t n, label_t extra) {
  uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  if (n == 0)
    return;
  if (d == s) {
    if (extra)
      kt_taint_range(d, n, extra);
    return;
  }
  if (!(d > s && d < s + n)) {
    while (n) {
      uint64_t chunk = kt_chunk(d, kt_chunk(s, n));
      kt_copy_chunk(d, s, chunk, extra);
      d += chunk;
      s += chunk;
      n -= chunk;
    }
    return;
  }
  while (n) {
    /* The last bytes: back to the start of the page of the last byte, at both ends. */
    uintptr_t ds = d + n - 1, ss = s + n - 1;
    uint64_t chunk = n;
    if ((ds & (KT_PAGE - 1)) + 1 < chunk)
      chunk = (ds & (KT_PAGE - 1)) + 1;
    if ((ss & (KT_PAGE - 1)) + 1 < chunk)
      chunk = (ss & (KT_PAGE - 1)) + 1;
    kt_copy_chunk(d + n - chunk, s + n - chunk, chunk, extra);
    n -= chunk;
  }
}

/* Copies the shadow of the C string at `src` (with its terminator) to `dst`: strcpy, strdup. */
void __knobs_taint_strcopy(void *dst, const void *src, label_t extra) {
  if (dst && src)
    __knobs_taint_copy(dst, src, strlen((const char *)src) + 1, extra);
}

/* ---------- first reads and first decisions ---------- */

struct kt_order {
  uint32_t *opts; /* in order of first appearance */
  uint32_t n;
  unsigned char *seen; /* per option */
};
static struct kt_order kt_reads, kt_decided;

static void kt_order_init(struct kt_order *o) {
  o->opts = kt_xrealloc(NULL, (kt_nopts + 1) * sizeof(uint32_t));
  o->seen = calloc(kt_nopts + 1, 1);
  if (!o->seen)
    abort();
  o->n = 0;
}

/* Appends the options of `l` not seen before (a set's options in index order). */
static void kt_order_note(struct kt_order *o, label_t l) {
  if (!l || !o->seen)
    return;
  uint32_t buf[KT_SMALL_OPTS], n;
  const uint32_t *opts = kt_decode(l, buf, &n);
  for (uint32_t i = 0; i < n; i++)
    if (opts[i] < kt_nopts && !o->seen[opts[i]]) {
      o->seen[opts[i]] = 1;
      o->opts[o->n++] = opts[i];
    }
}

/* The program read the options of `l` (called after every source load or call). */
void __knobs_taint_read(label_t l) { kt_order_note(&kt_reads, l); }

/* ---------- decisions ---------- */

struct kt_record {
  uint32_t id;
  label_t data, ctrl;
};
static uint32_t kt_nsites;
static const char *kt_sites_text;
static uint64_t *kt_last; /* per site: last (data, ctrl) recorded, +1 so 0 = none */
/* per site: the ways its conditional branch went (bit 0: false, bit 1: true), written by the
 * instrumented code; bit 7: one-way, set at init from KNOBS_TAINT_ONE_WAY, and such a branch
 * opens no control entry */
static uint8_t *kt_ways;
static struct kt_record *kt_records;
static uint64_t kt_nrecords, kt_caprecords;
static uint64_t *kt_rtable; /* open addressing: record index + 1 */
static uint64_t kt_rtable_cap;

static uint64_t kt_rhash(uint32_t id, label_t d, label_t c) {
  uint64_t h = ((uint64_t)id * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)d * 0xc2b2ae3d27d4eb4full) ^
               ((uint64_t)c * 0x165667b19e3779f9ull);
  return h ^ (h >> 29);
}

static void kt_rinsert(uint64_t k) {
  uint64_t mask = kt_rtable_cap - 1;
  struct kt_record *r = &kt_records[k];
  uint64_t i = kt_rhash(r->id, r->data, r->ctrl) & mask;
  while (kt_rtable[i])
    i = (i + 1) & mask;
  kt_rtable[i] = k + 1;
}

static void kt_record(uint32_t id, label_t d, label_t c) {
  if (kt_rtable_cap) {
    uint64_t mask = kt_rtable_cap - 1;
    for (uint64_t i = kt_rhash(id, d, c) & mask; kt_rtable[i]; i = (i + 1) & mask) {
      struct kt_record *r = &kt_records[kt_rtable[i] - 1];
      if (r->id == id && r->data == d && r->ctrl == c)
        return;
    }
  }
  kt_order_note(&kt_decided, d);
  if (kt_nrecords == kt_caprecords) {
    kt_caprecords = kt_caprecords ? kt_caprecords * 2 : 256;
    kt_records = kt_xrealloc(kt_records, kt_caprecords * sizeof(struct kt_record));
  }
  kt_records[kt_nrecords].id = id;
  kt_records[kt_nrecords].data = d;
  kt_records[kt_nrecords].ctrl = c;
  kt_nrecords++;
  if (kt_nrecords * 2 > kt_rtable_cap) {
    kt_rtable_cap = kt_rtable_cap ? kt_rtable_cap * 2 : 1024;
    free(kt_rtable);
    kt_rtable = calloc(kt_rtable_cap, sizeof(uint64_t));
    if (!kt_rtable)
      abort();
    for (uint64_t k = 0; k < kt_nrecords; k++)
      kt_rinsert(k);
  } else {
    kt_rinsert(kt_nrecords - 1);
  }
}

/* Decision site `id` executes with condition label `data` under control taint `ctrl`. The
 * instrumented code calls this only when (data, ctrl) differs from the site's last entry in
 * the array given to __knobs_taint_init (its key is ((data << 32) | ctrl) + 1). Decisions
 * before init (in constructors) are not recorded. */
void __knobs_taint_record(uint32_t id, label_t data, label_t ctrl) {
  if (id >= kt_nsites)
    return;
  kt_last[id] = (((uint64_t)data << 32) | ctrl) + 1;
  kt_record(id, data, ctrl);
}

/* ---------- output ---------- */

static void kt_json_string(FILE *f, const char *s, size_t n) {
  fputc('"', f);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch == '"' || ch == '\\')
      fprintf(f, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(f, "\\u%04x", ch);
    else
      fputc(ch, f);
  }
  fputc('"', f);
}

static void kt_json_set(FILE *f, label_t l) {
  uint32_t buf[KT_SMALL_OPTS], n;
  const uint32_t *opts = kt_decode(l, buf, &n);
  fputc('[', f);
  for (uint32_t i = 0, first = 1; i < n; i++) {
    if (opts[i] >= kt_nopts)
      continue; /* cannot happen */
    if (!first)
      fputc(',', f);
    first = 0;
    const char *name = kt_names[opts[i]];
    kt_json_string(f, name, strlen(name));
  }
  fputc(']', f);
}

/* Where each site's line starts in the sites text ("method\tfile\tline\tcolumn\n" per
 * site; NULL past its end), indexed once at exit: finding a line by scanning from the start
 * made writing the records quadratic (SQLite: 11,000 records × 19,000 sites, 3/4 of a taint
 * run's time). */
static const char **kt_site_lines;

static void kt_index_sites(void) {
  kt_site_lines = calloc(kt_nsites ? kt_nsites : 1, sizeof(const char *));
  if (!kt_site_lines)
    abort();
  const char *p = kt_sites_text;
  for (uint32_t k = 0; k < kt_nsites && p && *p; k++) {
    kt_site_lines[k] = p;
    p = strchr(p, '\n');
    if (p)
      p++;
  }
}

/* Site `id`'s fields from its line in the sites text. */
static void kt_json_site(FILE *f, uint32_t id) {
  const char *p = id < kt_nsites ? kt_site_lines[id] : NULL;
  const char *fields[4] = {"", "", "0", "0"};
  size_t lens[4] = {0, 0, 1, 1};
  for (int k = 0; k < 4 && p && *p && *p != '\n'; k++) {
    size_t n = strcspn(p, "\t\n");
    fields[k] = p;
    lens[k] = n;
    p += n;
    if (*p == '\t')
      p++;
  }
  fprintf(f, "{\"id\":%u,\"method\":", id);
  kt_json_string(f, fields[0], lens[0]);
  fputs(",\"file\":", f);
  kt_json_string(f, fields[1], lens[1]);
  fprintf(f, ",\"line\":%.*s,\"column\":%.*s}", (int)lens[2], fields[2], (int)lens[3],
          fields[3]);
}

static void kt_json_order(FILE *f, const struct kt_order *o) {
  fputc('[', f);
  for (uint32_t i = 0; i < o->n; i++) {
    if (i)
      fputc(',', f);
    const char *name = kt_names[o->opts[i]];
    kt_json_string(f, name, strlen(name));
  }
  fputc(']', f);
}

static void kt_write(void) {
  const char *path = getenv("KNOBS_TAINT_OUT");
  if (!path || !*path)
    return;
  FILE *f = fopen(path, "w");
  if (!f)
    return;
  kt_index_sites();
  fputs("{\"format\":\"knobs-taint-run\",\"version\":1,\"configuration\":{},\"options\":[", f);
  for (uint32_t k = 0; k < kt_nopts; k++) {
    if (k)
      fputc(',', f);
    kt_json_string(f, kt_names[k], strlen(kt_names[k]));
  }
  fputs("],\"decisions\":[", f);
  for (uint64_t k = 0; k < kt_nrecords; k++) {
    fputs(k ? ",\n" : "\n", f);
    fputs("{\"decision\":", f);
    kt_json_site(f, kt_records[k].id);
    fputs(",\"data_flow\":", f);
    kt_json_set(f, kt_records[k].data);
    fputs(",\"control_flow\":", f);
    kt_json_set(f, kt_records[k].ctrl);
    fputc('}', f);
  }
  fputs("],\n\"branch_ways\":[", f);
  for (uint32_t k = 0, first = 1; k < kt_nsites; k++) {
    if (!(kt_ways[k] & 3))
      continue;
    fprintf(f, "%s[%u,%u]", first ? "" : ",", k, kt_ways[k] & 3);
    first = 0;
  }
  fputs("],\n\"reads\":", f);
  kt_json_order(f, &kt_reads);
  fputs(",\n\"decided\":", f);
  kt_json_order(f, &kt_decided);
  fputs("}\n", f);
  fclose(f);
}

/* The sites KNOBS_TAINT_ONE_WAY lists (a file of site ids, written by knobs for this build) get
 * bit 7 of their way byte: their branches open no control entry. An unreadable file or an id
 * past the sites ends the run with status 125 (the runtime never prints): a silently ignored
 * list would give another analysis than the one asked for. */
static void kt_read_one_way(void) {
  const char *path = getenv("KNOBS_TAINT_ONE_WAY");
  if (!path || !*path)
    return;
  FILE *f = fopen(path, "r");
  if (!f)
    exit(125);
  unsigned long id;
  while (fscanf(f, "%lu", &id) == 1) {
    if (id >= kt_nsites)
      exit(125);
    kt_ways[id] |= 0x80;
  }
  fclose(f);
}

/* Called once at the start of `main`: the options ("name\n" each), the decision sites, and
 * the per-site arrays the instrumented code uses (`nsites` entries each): the last recorded
 * keys and the branch ways. */
void __knobs_taint_init(uint32_t nopts, const char *names, uint32_t nsites, const char *sites,
                        uint64_t *last, uint8_t *ways) {
  if (kt_names)
    return;
  kt_map_l1();
  kt_nopts = nopts;
  kt_names = kt_xrealloc(NULL, (nopts + 1) * sizeof(char *));
  const char *p = names;
  for (uint32_t k = 0; k < nopts; k++) {
    size_t n = strcspn(p, "\n");
    kt_names[k] = kt_xrealloc(NULL, n + 1);
    memcpy(kt_names[k], p, n);
    kt_names[k][n] = 0;
    p += n;
    if (*p)
      p++;
  }
  kt_nsets = 1; /* index 0 is unused */
  kt_capsets = nopts + 256;
  kt_sets = kt_xrealloc(NULL, kt_capsets * sizeof(struct kt_set));
  kt_sets[0].n = 0;
  kt_sets[0].opts = NULL;
  kt_sets[0].hash = 0;
  for (uint32_t k = KT_SMALL_OPTS; k < nopts; k++) {
    uint32_t *one = kt_xrealloc(NULL, sizeof(uint32_t));
    one[0] = k;
    kt_intern(one, 1); /* label KT_BIG | (k - 30) */
  }
  kt_nsites = nsites;
  kt_sites_text = sites;
  kt_last = last;
  kt_ways = ways;
  kt_read_one_way();
  kt_order_init(&kt_reads);
  kt_order_init(&kt_decided);
  atexit(kt_write);
}
