/*
 * The inference arena: tensor lifetimes in execution order and offsets from
 * a greedy planner, the idea of TensorFlow Lite Micro's
 * GreedyMemoryPlanner: take the buffers one by one, biggest first, each at
 * the lowest offset where it overlaps no buffer already placed that is
 * alive at a common step. The order matters and no order is best on every
 * graph (on MobileNetV1 the biggest-first order leaves a hole that
 * execution order does not), so the model's plan tries four and keeps the
 * smallest: never above TensorFlow Lite Micro's. It is still a heuristic
 * (the problem is NP-hard), which is why the plan also reports the
 * live-set lower bound: the most bytes alive at one step, below which no
 * placement can go.
 */
#include "internal.h"
#include "op.h"

#include <stdlib.h>
#include <string.h>
#include "alloc_rec.h" /* last: it wraps malloc and co. */

/* The orders in which buffers are placed: TensorFlow Lite Micro's (sizes
 * decreasing) and three others that win on some graphs; every one breaks
 * ties by size, then index, so that plans are the same on every C
 * library. */
enum order {
    ORDER_SIZE,          /* biggest first */
    ORDER_BIRTH,         /* in execution order */
    ORDER_LIFE,          /* longest-lived first */
    ORDER_AREA,          /* biggest size x lifetime first */
    ORDER_COUNT
};

struct order_ctx {
    const struct memest_buffer_req *reqs;
    enum order order;
};

static int cmp_u64(uint64_t a, uint64_t b)
{
    return a < b ? -1 : (a > b);
}

static int by_order(const void *a, const void *b, void *ctx)
{
    const struct order_ctx *oc = ctx;
    const struct memest_buffer_req *r = oc->reqs;
    const size_t i = *(const size_t *)a;
    const size_t j = *(const size_t *)b;
    const uint64_t li = r[i].last - r[i].first + 1;
    const uint64_t lj = r[j].last - r[j].first + 1;
    int c = 0;
    switch (oc->order) {
    case ORDER_BIRTH:
        c = cmp_u64(r[i].first, r[j].first);
        break;
    case ORDER_LIFE:
        c = -cmp_u64(li, lj);
        break;
    case ORDER_AREA: {
        /* A product that overflows 64 bits (a buffer of more than 2^64 /
         * steps bytes, which no arena holds) compares equal, and the size
         * below decides. */
        uint64_t ai, aj;
        if (__builtin_mul_overflow(r[i].size, li, &ai) ||
            __builtin_mul_overflow(r[j].size, lj, &aj)) {
            c = 0;
        } else {
            c = -cmp_u64(ai, aj);
        }
        break;
    }
    default:
        break;
    }
    if (c == 0) {
        c = -cmp_u64(r[i].size, r[j].size);
    }
    return c != 0 ? c : (i < j ? -1 : (i > j));
}

/* A stable merge sort with a context (qsort has none in C11): n log n, so
 * that a model of 10^6 layers is planned in seconds. The orders compare
 * ties by index, so any correct sort gives the same permutation. */
static void sort_idx(size_t *v, size_t n,
                     int (*cmp)(const void *, const void *, void *),
                     void *ctx, size_t *tmp)
{
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            const size_t mid = lo + w < n ? lo + w : n;
            const size_t hi = mid + w < n ? mid + w : n;
            size_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                tmp[k++] = cmp(&v[b], &v[a], ctx) < 0 ? v[b++] : v[a++];
            }
            while (a < mid) {
                tmp[k++] = v[a++];
            }
            while (b < hi) {
                tmp[k++] = v[b++];
            }
        }
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* The placed buffers by lifetime: a segment tree over the steps, each
 * buffer listed at the O(log steps) nodes that cover its [first, last],
 * so the ones alive at a common step with a new buffer are found in
 * O(its lifetime + log steps + found x log steps) instead of a scan of
 * every placed buffer. Lists are linked through one pool. */
struct live_tree {
    size_t leaves;  /* a power of two > the last step */
    size_t *head;   /* 2 * leaves list heads, SIZE_MAX: empty */
    size_t *next;   /* pool: next entry, buffer id */
    size_t *id;
    size_t used, cap;
    size_t *stamp;  /* per buffer: the query that last reported it */
    size_t query;
};

static int tree_push(struct live_tree *t, size_t node, size_t buf)
{
    if (t->used == t->cap) {
        const size_t cap = t->cap ? t->cap * 2 : 256;
        size_t *nx = realloc(t->next, cap * sizeof *nx);
        if (nx == NULL) {
            return MEMEST_E_NOMEM;
        }
        t->next = nx;
        size_t *id = realloc(t->id, cap * sizeof *id);
        if (id == NULL) {
            return MEMEST_E_NOMEM;
        }
        t->id = id;
        t->cap = cap;
    }
    t->next[t->used] = t->head[node];
    t->id[t->used] = buf;
    t->head[node] = t->used++;
    return MEMEST_OK;
}

/* Node `node` covers steps [lo, hi). */
static int tree_insert(struct live_tree *t, size_t node, size_t lo, size_t hi,
                       uint64_t first, uint64_t last, size_t buf)
{
    if (last < lo || first >= hi) {
        return MEMEST_OK;
    }
    if (first <= lo && hi - 1 <= last) {
        return tree_push(t, node, buf);
    }
    const size_t mid = lo + (hi - lo) / 2;
    int st = tree_insert(t, 2 * node, lo, mid, first, last, buf);
    return st ? st : tree_insert(t, 2 * node + 1, mid, hi, first, last, buf);
}

/* Append to out every placed buffer alive at a step of [first, last],
 * once each. */
static void tree_query(struct live_tree *t, size_t node, size_t lo,
                       size_t hi, uint64_t first, uint64_t last, size_t *out,
                       size_t *n)
{
    if (last < lo || first >= hi) {
        return;
    }
    for (size_t e = t->head[node]; e != SIZE_MAX; e = t->next[e]) {
        const size_t b = t->id[e];
        if (t->stamp[b] != t->query) {
            t->stamp[b] = t->query;
            out[(*n)++] = b;
        }
    }
    if (hi - lo > 1) {
        const size_t mid = lo + (hi - lo) / 2;
        tree_query(t, 2 * node, lo, mid, first, last, out, n);
        tree_query(t, 2 * node + 1, mid, hi, first, last, out, n);
    }
}

static void tree_free(struct live_tree *t)
{
    free(t->head);
    free(t->next);
    free(t->id);
    free(t->stamp);
}

/* Conflicts by offset, for the lowest gap (place()). */
struct by_offset_ctx {
    const uint64_t *offsets;
};

static int by_offset(const void *a, const void *b, void *ctx)
{
    const struct by_offset_ctx *c = ctx;
    const size_t i = *(const size_t *)a;
    const size_t j = *(const size_t *)b;
    const int r = cmp_u64(c->offsets[i], c->offsets[j]);
    return r != 0 ? r : (i < j ? -1 : (i > j));
}

static int round_up(uint64_t v, uint64_t a, uint64_t *out)
{
    uint64_t r;
    if (add_ovf(v, a - 1, &r)) {
        return MEMEST_E_OVERFLOW;
    }
    *out = r & ~(a - 1);
    return MEMEST_OK;
}

/* Place the buffers in the given order, each at the lowest offset where
 * it overlaps no placed buffer alive at a common step: 0 or the (aligned)
 * end of one of those. In n log n for a model whose tensors each live a
 * few steps (a chain of 10^6 layers plans in seconds): the buffers alive
 * with it come from a segment tree over the steps (struct live_tree); the
 * candidates are tried lowest first against the conflicts sorted by
 * offset, a candidate x clashing when some conflict with offset below
 * x + size ends above x (the prefix maximum of their ends). */
static int place(const struct memest_buffer_req *reqs, size_t count,
                 uint64_t alignment, enum order order, uint64_t *offsets,
                 uint64_t *arena_bytes)
{
    size_t *idx = NULL;
    size_t *conf = NULL;   /* placed buffers alive with the current one */
    size_t *tmp = NULL;    /* the sorts' scratch */
    uint64_t *cand = NULL; /* candidate offsets */
    uint64_t *maxend = NULL; /* prefix maxima of the conflicts' ends */
    struct live_tree tree;
    uint64_t arena = 0;
    uint64_t steps = 0;
    struct order_ctx oc = {reqs, order};
    int st = MEMEST_OK;

    memset(&tree, 0, sizeof tree);
    if (count > SIZE_MAX / 2 / sizeof *idx) {
        return MEMEST_E_NOMEM;
    }
    for (size_t i = 0; i < count; i++) {
        if (reqs[i].last >= steps) {
            steps = reqs[i].last + 1;
        }
    }
    /* lifetimes are steps of the model (inputs and layers, at most a
     * buffer's count each); beyond that the tree would be sparse: clamp
     * (a buffer that lives to a later step is listed at the last leaf) */
    tree.leaves = 1;
    while (tree.leaves < steps && tree.leaves < count * 2 + 2) {
        tree.leaves *= 2;
    }
    idx = malloc(count * sizeof *idx);
    conf = malloc(count * sizeof *conf);
    tmp = malloc(count * sizeof *tmp);
    cand = malloc((count + 1) * sizeof *cand);
    maxend = malloc(count * sizeof *maxend);
    tree.head = malloc(2 * tree.leaves * sizeof *tree.head);
    tree.stamp = malloc(count * sizeof *tree.stamp);
    if (idx == NULL || conf == NULL || tmp == NULL || cand == NULL ||
        maxend == NULL || tree.head == NULL || tree.stamp == NULL) {
        st = MEMEST_E_NOMEM;
        goto out;
    }
    for (size_t k = 0; k < 2 * tree.leaves; k++) {
        tree.head[k] = SIZE_MAX;
    }
    for (size_t i = 0; i < count; i++) {
        idx[i] = i;
        tree.stamp[i] = 0;
    }
    sort_idx(idx, count, by_order, &oc, tmp);
    for (size_t n = 0; n < count; n++) {
        const size_t i = idx[n];
        const struct memest_buffer_req *r = &reqs[i];
        const uint64_t first =
            r->first < tree.leaves ? r->first : tree.leaves - 1;
        const uint64_t last = r->last < tree.leaves ? r->last : tree.leaves - 1;
        struct by_offset_ctx bc = {offsets};
        size_t nconf = 0;
        size_t ncand = 0;
        uint64_t best = UINT64_MAX;

        tree.query++;
        tree_query(&tree, 1, 0, tree.leaves, first, last, conf, &nconf);
        /* the tree is by clamped steps: keep the true conflicts */
        size_t kept = 0;
        for (size_t k = 0; k < nconf; k++) {
            const struct memest_buffer_req *q = &reqs[conf[k]];
            if (q->first <= r->last && r->first <= q->last) {
                conf[kept++] = conf[k];
            }
        }
        nconf = kept;
        /* 0 and the aligned end of each conflict; any overflow fails the
         * plan, as when each is tried */
        for (size_t c = 0; c <= nconf; c++) {
            uint64_t off = 0;
            uint64_t end;
            if (c > 0 && add_ovf(offsets[conf[c - 1]], reqs[conf[c - 1]].size,
                                 &off)) {
                st = MEMEST_E_OVERFLOW;
                goto out;
            }
            if (round_up(off, alignment, &off) != MEMEST_OK ||
                add_ovf(off, r->size, &end)) {
                st = MEMEST_E_OVERFLOW;
                goto out;
            }
            cand[ncand++] = off;
        }
        sort_idx(conf, nconf, by_offset, &bc, tmp);
        for (size_t k = 0; k < nconf; k++) {
            const uint64_t e = offsets[conf[k]] + reqs[conf[k]].size;
            maxend[k] = k > 0 && maxend[k - 1] > e ? maxend[k - 1] : e;
        }
        /* the lowest candidate that clashes with no conflict */
        for (size_t c = 0; c < ncand; c++) {
            const uint64_t off = cand[c];
            const uint64_t end = off + r->size;
            /* conflicts whose offset is below end: a prefix */
            size_t lo = 0, hi = nconf;
            if (off >= best) {
                continue;
            }
            while (lo < hi) {
                const size_t mid = lo + (hi - lo) / 2;
                if (offsets[conf[mid]] < end) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            if (lo == 0 || maxend[lo - 1] <= off) {
                best = off;
            }
        }
        offsets[i] = best;
        st = tree_insert(&tree, 1, 0, tree.leaves, first, last, i);
        if (st != MEMEST_OK) {
            goto out;
        }
        if (best + r->size > arena) {
            arena = best + r->size;
        }
    }
    *arena_bytes = arena;
out:
    free(idx);
    free(conf);
    free(tmp);
    free(cand);
    free(maxend);
    tree_free(&tree);
    return st;
}

static int check_reqs(const struct memest_buffer_req *reqs, size_t count,
                      uint64_t alignment, const uint64_t *offsets,
                      const uint64_t *arena_bytes)
{
    if (arena_bytes == NULL ||
        (count > 0 && (reqs == NULL || offsets == NULL)) || alignment == 0 ||
        (alignment & (alignment - 1)) != 0) {
        return MEMEST_E_INVALID;
    }
    for (size_t i = 0; i < count; i++) {
        if (reqs[i].first > reqs[i].last) {
            return MEMEST_E_INVALID;
        }
    }
    return MEMEST_OK;
}

int memest_plan_buffers(const struct memest_buffer_req *reqs, size_t count,
                        uint64_t alignment, uint64_t *offsets,
                        uint64_t *arena_bytes)
{
    int st = check_reqs(reqs, count, alignment, offsets, arena_bytes);
    if (st != MEMEST_OK) {
        return st;
    }
    *arena_bytes = 0;
    return count ? place(reqs, count, alignment, ORDER_SIZE, offsets,
                         arena_bytes)
                 : MEMEST_OK;
}

int memest_plan_buffers_best(const struct memest_buffer_req *reqs,
                             size_t count, uint64_t alignment,
                             uint64_t *offsets, uint64_t *arena_bytes,
                             uint64_t *greedy_bytes)
{
    uint64_t *trial;
    int st = check_reqs(reqs, count, alignment, offsets, arena_bytes);
    if (st != MEMEST_OK) {
        return st;
    }
    *arena_bytes = 0;
    if (greedy_bytes != NULL) {
        *greedy_bytes = 0;
    }
    if (count == 0) {
        return MEMEST_OK;
    }
    trial = malloc(count * sizeof *trial);
    if (trial == NULL) {
        return MEMEST_E_NOMEM;
    }
    for (int o = 0; o < ORDER_COUNT; o++) {
        uint64_t a = 0;
        st = place(reqs, count, alignment, (enum order)o,
                   o == ORDER_SIZE ? offsets : trial, &a);
        if (st != MEMEST_OK) {
            break;
        }
        if (o == ORDER_SIZE) {
            *arena_bytes = a;
            if (greedy_bytes != NULL) {
                *greedy_bytes = a;
            }
        } else if (a < *arena_bytes) {
            *arena_bytes = a;
            memcpy(offsets, trial, count * sizeof *offsets);
        }
    }
    free(trial);
    return st;
}

void memest_arena_plan_free(struct memest_arena_plan *plan)
{
    if (plan == NULL) {
        return;
    }
    free(plan->offset);
    free(plan->bytes);
    free(plan->first);
    free(plan->last);
    free(plan->alias);
    free(plan->work_offset);
    free(plan->work_bytes);
    memset(plan, 0, sizeof *plan);
}

int memest_plan_arena(const memest_model *model, uint64_t batch,
                      enum memest_precision precision,
                      struct memest_arena_plan *out)
{
    struct memest_arena_plan p;
    struct memest_buffer_req *reqs = NULL;
    uint64_t *roff = NULL;
    size_t *root_of = NULL; /* request index of each root tensor */
    size_t *work_of = NULL; /* request index of each layer's work block */
    size_t nreq = 0;
    const struct memest_op_def *def;
    size_t T;
    size_t I;
    uint64_t eb;
    int st = MEMEST_OK;

    if (out == NULL) {
        return MEMEST_E_INVALID;
    }
    memset(out, 0, sizeof *out);
    if (model == NULL || (eb = memest_precision_bytes(precision)) == 0) {
        return MEMEST_E_INVALID;
    }
    if (batch == 0) {
        return MEMEST_E_RANGE;
    }
    memset(&p, 0, sizeof p);
    I = model->input_count;
    T = I + model->count;
    p.batch = batch;
    p.precision = precision;
    p.tensor_count = T;
    p.offset = calloc(T, sizeof *p.offset);
    p.bytes = calloc(T, sizeof *p.bytes);
    p.first = calloc(T, sizeof *p.first);
    p.last = calloc(T, sizeof *p.last);
    p.alias = calloc(T, sizeof *p.alias);
    p.layer_count = model->count;
    p.work_offset = calloc(model->count, sizeof *p.work_offset);
    p.work_bytes = calloc(model->count, sizeof *p.work_bytes);
    /* a request per tensor and per layer's working block at most */
    reqs = calloc(T + model->count, sizeof *reqs);
    roff = calloc(T + model->count, sizeof *roff);
    root_of = calloc(T, sizeof *root_of);
    work_of = calloc(model->count, sizeof *work_of);
    if (p.offset == NULL || p.bytes == NULL || p.first == NULL ||
        p.last == NULL || p.alias == NULL || reqs == NULL || roff == NULL ||
        root_of == NULL || p.work_offset == NULL || p.work_bytes == NULL ||
        work_of == NULL) {
        st = MEMEST_E_NOMEM;
        goto fail;
    }
    /* Sizes, births and aliases. Step i runs layer i; inputs are born
     * before step 0 and so alive at it. */
    for (size_t t = 0; t < T; t++) {
        const struct memest_shape *sh = model_tensor_shape(model, t);
        uint64_t e = shape_elements(sh);
        if (mul_ovf(e, batch, &e) || mul_ovf(e, eb, &p.bytes[t])) {
            st = MEMEST_E_OVERFLOW;
            goto fail;
        }
        p.alias[t] = t;
        p.first[t] = t < I ? 0 : t - I;
        p.last[t] = p.first[t];
        if (t < I) {
            continue;
        }
        /* a view's output is its input's buffer (the operator says so:
         * op.h, memest_kind_is_view()) */
        def = op_def(model->layers[t - I].kind);
        if (def == NULL) {
            st = MEMEST_E_INVALID;
            goto fail;
        }
        if (def->is_view) {
            p.alias[t] = p.alias[model->layers[t - I].inputs[0]];
        }
    }
    /* Deaths: the last step that reads a tensor; the output lives to the
     * end. A view's reads keep its root alive. */
    for (size_t i = 0; i < model->count; i++) {
        const struct memest_layer *L = &model->layers[i];
        for (size_t k = 0; k < L->input_count; k++) {
            const size_t t = L->inputs[k];
            if (i > p.last[t]) {
                p.last[t] = i;
            }
        }
    }
    p.last[T - 1] = model->count - 1;
    for (size_t t = 0; t < T; t++) {
        const size_t r = p.alias[t];
        if (p.last[t] > p.last[r]) {
            p.last[r] = p.last[t];
        }
    }
    /* Views share the root's placement: only roots are planned. */
    for (size_t t = 0; t < T; t++) {
        if (p.alias[t] == t) {
            root_of[t] = nreq;
            reqs[nreq].size = p.bytes[t];
            reqs[nreq].first = p.first[t];
            reqs[nreq].last = p.last[t];
            nreq++;
        }
    }
    /* A layer's working memory (an attention's score matrix of one
     * head) is alive during its step alone. */
    for (size_t i = 0; i < model->count; i++) {
        uint64_t e = model->layers[i].work_elements;
        if (e == 0) {
            continue;
        }
        if (mul_ovf(e, batch, &e) || mul_ovf(e, eb, &p.work_bytes[i])) {
            st = MEMEST_E_OVERFLOW;
            goto fail;
        }
        work_of[i] = nreq;
        reqs[nreq].size = p.work_bytes[i];
        reqs[nreq].first = i;
        reqs[nreq].last = i;
        nreq++;
    }
    st = memest_plan_buffers_best(reqs, nreq, 1, roff, &p.arena_bytes,
                                  &p.greedy_bytes);
    if (st != MEMEST_OK) {
        goto fail;
    }
    for (size_t t = 0; t < T; t++) {
        p.offset[t] = roff[root_of[p.alias[t]]];
    }
    for (size_t i = 0; i < model->count; i++) {
        if (p.work_bytes[i] != 0) {
            p.work_offset[i] = roff[work_of[i]];
        }
    }
    /* The live set at each step, a sweep over births and deaths (roff
     * is free again and holds the births). The sums
     * cannot overflow: every live set fits in the arena just planned. */
    memset(roff, 0, (T + model->count) * sizeof *roff);
    {
        uint64_t *died = calloc(T, sizeof *died);
        uint64_t live = 0;
        if (died == NULL) {
            st = MEMEST_E_NOMEM;
            goto fail;
        }
        for (size_t k = 0; k < nreq; k++) {
            roff[reqs[k].first] += reqs[k].size;
            died[reqs[k].last] += reqs[k].size;
        }
        for (size_t s = 0; s < model->count; s++) {
            live += roff[s];
            if (live > p.live_lower_bound_bytes) {
                p.live_lower_bound_bytes = live;
            }
            live -= died[s];
        }
        free(died);
    }
    free(reqs);
    free(roff);
    free(root_of);
    free(work_of);
    *out = p;
    return MEMEST_OK;

fail:
    free(reqs);
    free(roff);
    free(root_of);
    free(work_of);
    memest_arena_plan_free(&p);
    return st;
}
