/* knobs dynamic taint runtime (Comprex §III–§IV): label sets, shadow memory, the control-taint
 * stack and the decision records, linked into programs instrumented by `frontend::taint`.
 *
 * Labels: a label is a 32-bit id of a set of options. 0 is the empty set; 1..=N are the
 * singletons {option k-1} of the N options the instrumenter registered; larger ids are sets
 * interned here (sorted option arrays in a hash table), so a program may have any number of
 * options. Unions go through a direct-mapped cache keyed by the (ordered) pair of labels; the
 * instrumented code handles the trivial cases (equal labels, an empty side) inline.
 *
 * Shadow memory: one label per byte of application memory, in a two-level page table keyed
 * by address (2^27 first-level slots of 2^20-byte pages; addresses at or above 2^47 have no
 * shadow). Pages are mmap'ed on the first non-empty store; a load of an unmapped page is the
 * empty label. A load's label is the union of its bytes' labels.
 *
 * Control taint: a per-thread stack of (decision id, frame depth, label) entries. A decision
 * with a non-empty condition label pushes its entry (replacing the entry of the same id in the
 * current frame: a loop header's previous iteration); the instrumenter pops it at the decision's immediate
 * post-dominator and drops every entry of a frame when the function returns. `ctrl` is the union
 * of the whole stack (callees inherit their callers' control taint); `fctrl` the union of the
 * current frame's entries (used for phis and returns: implicit flows out of this frame's
 * branches).
 *
 * Calls: instrumented callers store argument labels in the thread-local `__knobs_taint_args`
 * and read the result's label from `__knobs_taint_ret`.
 *
 * Output: at exit, when KNOBS_TAINT_OUT names a file, a `knobs-taint-run` JSON object
 * (docs/comprex-records.md) with an empty `configuration` (the caller fills it), the option
 * names, and one decision per distinct (site, data label, control label) of the run.
 *
 * Architecture invariant: no dependencies beyond libc; never prints. Label interning, shadow
 * memory and the record table are not locked: the control stack and call labels are
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

_Thread_local label_t __knobs_taint_args[KT_MAX_ARGS];
_Thread_local label_t __knobs_taint_ret;
_Thread_local label_t __knobs_taint_ctrl;
_Thread_local label_t __knobs_taint_fctrl;

/* ---------- label sets ---------- */

struct kt_set {
  uint32_t n;
  uint32_t *opts;
  uint64_t hash;
};

static uint32_t kt_nopts;
static char **kt_names;
static struct kt_set *kt_sets;
static uint32_t kt_nsets, kt_capsets;
static label_t *kt_table; /* open addressing: set hash -> label (0 = free) */
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

static void kt_table_insert(label_t l) {
  uint64_t mask = kt_table_cap - 1;
  uint64_t i = kt_sets[l].hash & mask;
  while (kt_table[i])
    i = (i + 1) & mask;
  kt_table[i] = l;
}

static void kt_table_grow(void) {
  uint64_t cap = kt_table_cap ? kt_table_cap * 2 : 1024;
  free(kt_table);
  kt_table = calloc(cap, sizeof(label_t));
  if (!kt_table)
    abort();
  kt_table_cap = cap;
  for (label_t l = 1; l < kt_nsets; l++)
    kt_table_insert(l);
}

/* The label of the set `opts[0..n]` (sorted, distinct); takes ownership of `opts`. */
static label_t kt_intern(uint32_t *opts, uint32_t n) {
  if (n == 0) {
    free(opts);
    return 0;
  }
  uint64_t h = kt_hash(opts, n);
  if (kt_table_cap) {
    uint64_t mask = kt_table_cap - 1;
    for (uint64_t i = h & mask; kt_table[i]; i = (i + 1) & mask) {
      struct kt_set *s = &kt_sets[kt_table[i]];
      if (s->hash == h && s->n == n && memcmp(s->opts, opts, n * sizeof(uint32_t)) == 0) {
        free(opts);
        return kt_table[i];
      }
    }
  }
  if (kt_nsets == kt_capsets) {
    kt_capsets = kt_capsets ? kt_capsets * 2 : 256;
    kt_sets = kt_xrealloc(kt_sets, kt_capsets * sizeof(struct kt_set));
  }
  label_t l = kt_nsets++;
  kt_sets[l].n = n;
  kt_sets[l].opts = opts;
  kt_sets[l].hash = h;
  if ((uint64_t)kt_nsets * 2 > kt_table_cap)
    kt_table_grow();
  else
    kt_table_insert(l);
  return l;
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
  if (a > b) {
    label_t t = a;
    a = b;
    b = t;
  }
  if (a >= kt_nsets || b >= kt_nsets)
    return a < kt_nsets ? a : 0; /* labels from before init: cannot happen in practice */
  uint32_t slot = (uint32_t)(((uint64_t)a * 0x9e3779b1u) ^ ((uint64_t)b * 0x85ebca6bu)) &
                  ((1u << KT_CACHE_BITS) - 1);
  if (kt_cache[slot].a == a && kt_cache[slot].b == b)
    return kt_cache[slot].r;
  struct kt_set *x = &kt_sets[a], *y = &kt_sets[b];
  uint32_t *out = kt_xrealloc(NULL, (x->n + y->n) * sizeof(uint32_t));
  uint32_t i = 0, j = 0, n = 0;
  while (i < x->n || j < y->n) {
    if (j >= y->n || (i < x->n && x->opts[i] < y->opts[j]))
      out[n++] = x->opts[i++];
    else if (i >= x->n || y->opts[j] < x->opts[i])
      out[n++] = y->opts[j++];
    else {
      out[n++] = x->opts[i++];
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
  if (a == b || b == 0)
    return a;
  if (a == 0)
    return b;
  return __knobs_taint_union_slow(a, b);
}

/* ---------- shadow memory ---------- */

#define KT_PAGE_BITS 20
#define KT_ADDR_BITS 47
#define KT_L1 (1ull << (KT_ADDR_BITS - KT_PAGE_BITS))
static label_t **kt_l1;

static label_t *kt_page(uintptr_t a, int create) {
  if (a >> KT_ADDR_BITS)
    return NULL;
  if (!kt_l1) {
    if (!create)
      return NULL;
    void *m = mmap(NULL, KT_L1 * sizeof(label_t *), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      abort();
    kt_l1 = m;
  }
  label_t **slot = &kt_l1[a >> KT_PAGE_BITS];
  if (!*slot && create) {
    void *m = mmap(NULL, (1ull << KT_PAGE_BITS) * sizeof(label_t), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
      abort();
    *slot = m;
  }
  return *slot;
}

label_t __knobs_taint_load(const void *p, uint64_t n) {
  uintptr_t a = (uintptr_t)p;
  label_t l = 0;
  if (n <= 16 && kt_l1 && !(a >> KT_ADDR_BITS) &&
      ((a & ((1ull << KT_PAGE_BITS) - 1)) + n <= (1ull << KT_PAGE_BITS))) {
    label_t *pg = kt_l1[a >> KT_PAGE_BITS];
    if (!pg)
      return 0;
    label_t *s = pg + (a & ((1ull << KT_PAGE_BITS) - 1));
    l = s[0];
    for (uint64_t i = 1; i < n; i++)
      if (s[i] != l)
        l = kt_union(l, s[i]);
    return l;
  }
  while (n) {
    uint64_t off = a & ((1ull << KT_PAGE_BITS) - 1);
    uint64_t chunk = (1ull << KT_PAGE_BITS) - off;
    if (chunk > n)
      chunk = n;
    label_t *pg = kt_page(a, 0);
    if (pg) {
      label_t *s = pg + off;
      for (uint64_t i = 0; i < chunk; i++)
        if (s[i] != l)
          l = kt_union(l, s[i]);
    }
    a += chunk;
    n -= chunk;
  }
  return l;
}

void __knobs_taint_store(void *p, uint64_t n, label_t l) {
  uintptr_t a = (uintptr_t)p;
  while (n) {
    uint64_t off = a & ((1ull << KT_PAGE_BITS) - 1);
    uint64_t chunk = (1ull << KT_PAGE_BITS) - off;
    if (chunk > n)
      chunk = n;
    label_t *pg = kt_page(a, l != 0);
    if (pg) {
      label_t *s = pg + off;
      for (uint64_t i = 0; i < chunk; i++)
        s[i] = l;
    }
    a += chunk;
    n -= chunk;
  }
}

/* Copies the shadow of `n` bytes from `src` to `dst` (memcpy, memmove), unioned with `extra`
 * (the control taint). Overlap-safe (goes through a temporary buffer when needed). */
void __knobs_taint_copy(void *dst, const void *src, uint64_t n, label_t extra) {
  uintptr_t d = (uintptr_t)dst, s = (uintptr_t)src;
  if (n == 0 || d == s) {
    if (extra && n)
      for (uint64_t i = 0; i < n; i++) {
        label_t l = __knobs_taint_load((void *)(d + i), 1);
        __knobs_taint_store((void *)(d + i), 1, kt_union(l, extra));
      }
    return;
  }
  int backwards = d > s && d < s + n;
  for (uint64_t k = 0; k < n; k++) {
    uint64_t i = backwards ? n - 1 - k : k;
    label_t l = kt_union(__knobs_taint_load((void *)(s + i), 1), extra);
    if (l || kt_page(d + i, 0))
      __knobs_taint_store((void *)(d + i), 1, l);
  }
}

/* Copies the shadow of the C string at `src` (with its terminator) to `dst`: strcpy, strdup. */
void __knobs_taint_strcopy(void *dst, const void *src, label_t extra) {
  if (dst && src)
    __knobs_taint_copy(dst, src, strlen((const char *)src) + 1, extra);
}

/* ---------- control taint ---------- */

struct kt_entry {
  uint32_t id, depth;
  label_t label;
  label_t cum;  /* union of the labels of this entry and every entry below it */
  label_t fcum; /* the same within this entry's frame */
};
static _Thread_local struct kt_entry *kt_stack;
static _Thread_local uint32_t kt_depth, kt_nstack, kt_capstack;
static _Thread_local label_t *kt_saved; /* per frame: the caller's fctrl */
static _Thread_local uint32_t kt_capsaved;

/* Recomputes the cumulative labels from entry `from` up, then ctrl and fctrl. */
static void kt_recompute(uint32_t from) {
  for (uint32_t i = from; i < kt_nstack; i++) {
    struct kt_entry *e = &kt_stack[i];
    label_t below = i ? kt_stack[i - 1].cum : 0;
    label_t fbelow = i && kt_stack[i - 1].depth == e->depth ? kt_stack[i - 1].fcum : 0;
    e->cum = kt_union(below, e->label);
    e->fcum = kt_union(fbelow, e->label);
  }
  if (kt_nstack == 0) {
    __knobs_taint_ctrl = 0;
    __knobs_taint_fctrl = 0;
  } else {
    struct kt_entry *top = &kt_stack[kt_nstack - 1];
    __knobs_taint_ctrl = top->cum;
    __knobs_taint_fctrl = top->depth == kt_depth ? top->fcum : 0;
  }
}

void __knobs_taint_enter(void) {
  if (kt_depth + 1 >= kt_capsaved) {
    kt_capsaved = kt_capsaved ? kt_capsaved * 2 : 256;
    kt_saved = kt_xrealloc(kt_saved, kt_capsaved * sizeof(label_t));
  }
  kt_saved[kt_depth] = __knobs_taint_fctrl;
  kt_depth++;
  __knobs_taint_fctrl = 0;
}

/* Leaves the current frame: returns `ret` unioned with the frame's control taint (a value
 * returned under this frame's tainted branches carries them), drops the frame's entries. */
label_t __knobs_taint_leave(label_t ret) {
  ret = kt_union(ret, __knobs_taint_fctrl);
  uint32_t n = kt_nstack;
  while (n && kt_stack[n - 1].depth >= kt_depth)
    n--;
  kt_nstack = n;
  if (kt_depth)
    kt_depth--;
  __knobs_taint_fctrl = kt_saved ? kt_saved[kt_depth] : 0;
  __knobs_taint_ctrl = n ? kt_stack[n - 1].cum : 0;
  return ret;
}

void __knobs_taint_pop(uint32_t id) {
  for (uint32_t i = kt_nstack; i > 0 && kt_stack[i - 1].depth == kt_depth; i--) {
    if (kt_stack[i - 1].id == id) {
      memmove(&kt_stack[i - 1], &kt_stack[i], (kt_nstack - i) * sizeof(struct kt_entry));
      kt_nstack--;
      kt_recompute(i - 1);
      return;
    }
  }
}

static void kt_push(uint32_t id, label_t l) {
  if (kt_nstack == kt_capstack) {
    kt_capstack = kt_capstack ? kt_capstack * 2 : 64;
    kt_stack = kt_xrealloc(kt_stack, kt_capstack * sizeof(struct kt_entry));
  }
  struct kt_entry *e = &kt_stack[kt_nstack];
  e->id = id;
  e->depth = kt_depth;
  e->label = l;
  e->cum = kt_union(__knobs_taint_ctrl, l);
  e->fcum = kt_union(__knobs_taint_fctrl, l);
  kt_nstack++;
  __knobs_taint_ctrl = e->cum;
  __knobs_taint_fctrl = e->fcum;
}

/* ---------- decisions ---------- */

struct kt_record {
  uint32_t id;
  label_t data, ctrl;
};
static uint32_t kt_nsites;
static const char *kt_sites_text;
static uint64_t *kt_last; /* per site: last (data, ctrl) recorded, +1 so 0 = none */
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

/* A decision site `id` executes with condition label `data`: record it, then push. */
void __knobs_taint_decision(uint32_t id, label_t data) {
  /* A decision executing again in the same frame (a loop header) replaces its entry: it is
   * not control dependent on its own previous outcome. */
  if (kt_nstack && kt_stack[kt_nstack - 1].depth == kt_depth)
    __knobs_taint_pop(id);
  label_t c = __knobs_taint_ctrl;
  if (id < kt_nsites) {
    uint64_t key = (((uint64_t)data << 32) | c) + 1;
    if (kt_last[id] != key) {
      kt_last[id] = key;
      kt_record(id, data, c);
    }
  }
  if (data)
    kt_push(id, data);
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
  fputc('[', f);
  if (l < kt_nsets)
    for (uint32_t i = 0; i < kt_sets[l].n; i++) {
      if (i)
        fputc(',', f);
      const char *name = kt_names[kt_sets[l].opts[i]];
      kt_json_string(f, name, strlen(name));
    }
  fputc(']', f);
}

/* Site `id`'s line in the sites text: "method\tfile\tline\tcolumn\n" per site. */
static void kt_json_site(FILE *f, uint32_t id) {
  const char *p = kt_sites_text;
  for (uint32_t k = 0; k < id && p; k++) {
    p = strchr(p, '\n');
    if (p)
      p++;
  }
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

static void kt_write(void) {
  const char *path = getenv("KNOBS_TAINT_OUT");
  if (!path || !*path)
    return;
  FILE *f = fopen(path, "w");
  if (!f)
    return;
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
  fputs("]}\n", f);
  fclose(f);
}

/* Called once at the start of `main`: the options ("name\n" each) and the decision sites. */
void __knobs_taint_init(uint32_t nopts, const char *names, uint32_t nsites, const char *sites) {
  if (kt_names)
    return;
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
  kt_nsets = 1; /* label 0: the empty set */
  kt_capsets = nopts + 256;
  kt_sets = kt_xrealloc(NULL, kt_capsets * sizeof(struct kt_set));
  kt_sets[0].n = 0;
  kt_sets[0].opts = NULL;
  kt_sets[0].hash = 0;
  for (uint32_t k = 0; k < nopts; k++) {
    uint32_t *one = kt_xrealloc(NULL, sizeof(uint32_t));
    one[0] = k;
    kt_intern(one, 1); /* label k + 1 */
  }
  kt_nsites = nsites;
  kt_sites_text = sites;
  kt_last = calloc(nsites + 1, sizeof(uint64_t));
  if (!kt_last)
    abort();
  atexit(kt_write);
}
