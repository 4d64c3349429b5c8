/* An LD_PRELOAD shim that fails one chosen allocation of a run and keeps
 * count of the ones that are never freed: the allocation-failure sweep's
 * instrument (tests/faults/sweep.c drives it).
 *
 * Counted: the calls to malloc, calloc, realloc, aligned_alloc,
 * posix_memalign, memalign, strdup and strndup made by the program itself
 * or by one of the edgefit libraries (the caller's return address lies in
 * the executable or in a libedgefit-* object). The C library's own
 * allocations (stdio buffers, locale, dlopen) and the third-party
 * libraries' (cairo, fontconfig, libpng, libcsv) pass through uncounted:
 * their failure handling is not ours to test, and a failure inside them is
 * reported to us as their own error.
 *
 * Environment:
 *   FAILALLOC_FAIL=N    the Nth counted allocation (from 1) returns NULL
 *                       (ENOMEM); 0 or unset: none fails
 *   FAILALLOC_ALSO=K    the Kth counted allocation fails too (K < N: a
 *                       failure the program may survive before the one
 *                       reported); fail_at and fail_size stay the Nth's
 *   FAILALLOC_TRAP=N    the Nth counted allocation raises SIGTRAP (for a
 *                       debugger: where a leaked block was made)
 *   FAILALLOC_REPORT=P  at exit, write one line to P:
 *                       "count C failed F live L leak_seq S leak_size Z
 *                        fail_at OBJECT+0xOFFSET fail_size B"
 *                        also_size A"
 *                       (B: the bytes the failed call asked for; A:
 *                       FAILALLOC_ALSO's)
 *                       (live: counted blocks never freed; leak_seq/size:
 *                       the first of them, in allocation order)
 *
 * The real allocator is glibc's __libc_* entry points, so that no dlsym()
 * (which itself allocates) is needed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

/* ---- whose call is it ---- */

#define RANGES_MAX 32
static struct range {
    uintptr_t lo, hi;
    const char *name;
    uintptr_t base;
} ranges[RANGES_MAX];
static int n_ranges;
static atomic_int ready; /* set once the ranges are known */

static int is_ours(const char *name)
{
    if (name[0] == '\0') {
        return 1; /* the executable */
    }
    return strstr(name, "libedgefit-") != NULL;
}

static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    (void)data;
    if (!is_ours(info->dlpi_name)) {
        return 0;
    }
    for (int i = 0; i < info->dlpi_phnum && n_ranges < RANGES_MAX; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            ranges[n_ranges].lo = info->dlpi_addr + ph->p_vaddr;
            ranges[n_ranges].hi = ranges[n_ranges].lo + ph->p_memsz;
            ranges[n_ranges].name =
                info->dlpi_name[0] ? info->dlpi_name : "exe";
            ranges[n_ranges].base = info->dlpi_addr;
            n_ranges++;
        }
    }
    return 0;
}

static int range_of(const void *ret)
{
    const uintptr_t a = (uintptr_t)ret;
    for (int i = 0; i < n_ranges; i++) {
        if (a >= ranges[i].lo && a < ranges[i].hi) {
            return i;
        }
    }
    return -1;
}

/* ---- the live table: counted blocks not yet freed ---- */

/* Open addressing with linear probing and backward-shift deletion, in
 * mmap'd memory (never through the allocator it watches). */
#define SLOTS (1u << 22)
struct slot {
    void *p;
    uint64_t seq;
    size_t size;
};
static struct slot *table;
static atomic_flag lock = ATOMIC_FLAG_INIT;
static uint64_t live;

static void take(void)
{
    while (atomic_flag_test_and_set_explicit(&lock, memory_order_acquire)) {
    }
}
static void give(void)
{
    atomic_flag_clear_explicit(&lock, memory_order_release);
}

static size_t hash(const void *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return (size_t)x & (SLOTS - 1);
}

static void table_add(void *p, uint64_t seq, size_t size)
{
    if (!table || !p) {
        return;
    }
    take();
    size_t i = hash(p);
    while (table[i].p) {
        i = (i + 1) & (SLOTS - 1);
    }
    table[i] = (struct slot){p, seq, size};
    live++;
    give();
}

/* 1 once the report is written: a block freed later (by a library's
 * destructor that runs after ours) rewrites it. */
static atomic_int finished;
static void write_report(void);

static int table_remove(void *p)
{
    int removed = 0;
    if (!table || !p) {
        return 0;
    }
    take();
    size_t i = hash(p);
    while (table[i].p && table[i].p != p) {
        i = (i + 1) & (SLOTS - 1);
    }
    if (table[i].p) {
        removed = 1;
        live--;
        /* backward shift: later entries of the run move into the hole */
        size_t hole = i, j = i;
        for (;;) {
            j = (j + 1) & (SLOTS - 1);
            if (!table[j].p) {
                break;
            }
            const size_t home = hash(table[j].p);
            const int movable = hole <= j ? (home <= hole || home > j)
                                          : (home <= hole && home > j);
            if (movable) {
                table[hole] = table[j];
                hole = j;
            }
        }
        table[hole].p = NULL;
    }
    give();
    return removed;
}

/* ---- counting and failing ---- */

static atomic_ulong counted;
static unsigned long fail_at;
static unsigned long also_at;
static unsigned long trap_at;
static int fail_range = -1;
static uintptr_t fail_addr;
static unsigned long long fail_size; /* the failed call's request */
static unsigned long long also_size; /* FAILALLOC_ALSO's request */

static void env_number(const char *s, unsigned long *out)
{
    unsigned long v = 0;
    for (; s && *s >= '0' && *s <= '9'; s++) {
        v = v * 10 + (unsigned long)(*s - '0');
    }
    *out = v;
}

__attribute__((constructor)) static void start(void)
{
    env_number(getenv("FAILALLOC_FAIL"), &fail_at);
    env_number(getenv("FAILALLOC_ALSO"), &also_at);
    env_number(getenv("FAILALLOC_TRAP"), &trap_at);
    void *t = mmap(NULL, SLOTS * sizeof(struct slot), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    table = t == MAP_FAILED ? NULL : t;
    dl_iterate_phdr(add_object, NULL);
    atomic_store(&ready, 1);
}

/* The sequence number of a counted call (0: not counted), and whether it
 * is the one to fail (1) or the other one (2, FAILALLOC_ALSO). */
static uint64_t count(const void *ret, int *fail)
{
    *fail = 0;
    if (!atomic_load(&ready)) {
        return 0;
    }
    const int r = range_of(ret);
    if (r < 0) {
        return 0;
    }
    const uint64_t seq = atomic_fetch_add(&counted, 1) + 1;
    if (trap_at != 0 && seq == trap_at) {
        raise(SIGTRAP);
    }
    if (fail_at != 0 && seq == fail_at) {
        *fail = 1;
        fail_range = r;
        fail_addr = (uintptr_t)ret;
    } else if (also_at != 0 && seq == also_at) {
        *fail = 2;
    }
    return seq;
}

static void *do_malloc(size_t n, const void *ret)
{
    int fail;
    const uint64_t seq = count(ret, &fail);
    if (fail) {
        *(fail == 1 ? &fail_size : &also_size) = n;
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_malloc(n);
    if (seq) {
        table_add(p, seq, n);
    }
    return p;
}

void *malloc(size_t n)
{
    return do_malloc(n, __builtin_return_address(0));
}

void *calloc(size_t k, size_t n)
{
    int fail;
    const uint64_t seq = count(__builtin_return_address(0), &fail);
    if (fail) {
        *(fail == 1 ? &fail_size : &also_size) = (unsigned long long)k * n;
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_calloc(k, n);
    if (seq) {
        table_add(p, seq, k * n);
    }
    return p;
}

void *realloc(void *old, size_t n)
{
    int fail;
    const uint64_t seq = count(__builtin_return_address(0), &fail);
    if (fail) {
        *(fail == 1 ? &fail_size : &also_size) = n;
        errno = ENOMEM;
        return NULL; /* the old block stays the caller's */
    }
    void *p = __libc_realloc(old, n);
    if (p || n == 0) {
        table_remove(old);
        if (seq && p) {
            table_add(p, seq, n);
        }
    }
    return p;
}

void free(void *p)
{
    const int removed = table_remove(p);
    __libc_free(p);
    if (removed && atomic_load(&finished)) {
        write_report();
    }
}

static void *do_memalign(size_t align, size_t n, const void *ret)
{
    int fail;
    const uint64_t seq = count(ret, &fail);
    if (fail) {
        *(fail == 1 ? &fail_size : &also_size) = n;
        errno = ENOMEM;
        return NULL;
    }
    void *p = __libc_memalign(align, n);
    if (seq) {
        table_add(p, seq, n);
    }
    return p;
}

void *aligned_alloc(size_t align, size_t n)
{
    return do_memalign(align, n, __builtin_return_address(0));
}

void *memalign(size_t align, size_t n)
{
    return do_memalign(align, n, __builtin_return_address(0));
}

int posix_memalign(void **out, size_t align, size_t n)
{
    if (align < sizeof(void *) || (align & (align - 1)) != 0) {
        return EINVAL;
    }
    void *p = do_memalign(align, n, __builtin_return_address(0));
    if (!p) {
        return ENOMEM;
    }
    *out = p;
    return 0;
}

char *strdup(const char *s)
{
    const size_t n = strlen(s) + 1;
    char *p = do_malloc(n, __builtin_return_address(0));
    if (p) {
        memcpy(p, s, n);
    }
    return p;
}

char *strndup(const char *s, size_t max)
{
    const size_t n = strnlen(s, max);
    char *p = do_malloc(n + 1, __builtin_return_address(0));
    if (p) {
        memcpy(p, s, n);
        p[n] = '\0';
    }
    return p;
}

/* ---- the report ---- */

__attribute__((destructor)) static void finish(void)
{
    write_report();
    atomic_store(&finished, 1);
}

static void write_report(void)
{
    const char *path = getenv("FAILALLOC_REPORT");
    if (!path) {
        return;
    }
    uint64_t leak_seq = 0;
    size_t leak_size = 0;
    take();
    const uint64_t nlive = live;
    for (size_t i = 0; table && nlive && i < SLOTS; i++) {
        if (table[i].p && (leak_seq == 0 || table[i].seq < leak_seq)) {
            leak_seq = table[i].seq;
            leak_size = table[i].size;
        }
    }
    give();
    char line[1024];
    const char *obj = fail_range >= 0 ? ranges[fail_range].name : "-";
    const uintptr_t off =
        fail_range >= 0 ? fail_addr - ranges[fail_range].base : 0;
    const int len = snprintf(
        line, sizeof line,
        "count %lu failed %d live %llu leak_seq %llu leak_size %zu "
        "fail_at %s+0x%lx fail_size %llu also_size %llu\n",
        (unsigned long)atomic_load(&counted), fail_range >= 0 ? 1 : 0,
        (unsigned long long)nlive, (unsigned long long)leak_seq, leak_size,
        obj, (unsigned long)off, fail_size, also_size);
    const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0 && len > 0) {
        (void)!write(fd, line, (size_t)len);
        close(fd);
    }
}
