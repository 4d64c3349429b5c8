/* edgefit's forward pass against ONNX Runtime's, both called from C in one
 * process on the same ONNX files and the same input, fp32.
 *
 *   bench-vs-ort [--ort-lib PATH] [--threads N] [--batch N] [--rounds N]
 *                [--runs N] [--layers] [--ort-profile PREFIX] MODEL.onnx...
 *
 * ONNX Runtime is loaded at run time (dlopen) from --ort-lib (default: the
 * Meson option ort_lib, else libonnxruntime.so.1 on the loader's path) and
 * called through its C API (ort_slots.h), so nothing of it is needed to
 * build this program. Node's binding is not used: its asynchronous run
 * adds 0.02-0.1 ms a call, a large share of a small model's time.
 *
 * For each model: edgefit loads it (memest_model_load_onnx) and runs it
 * (prof_exec, batch --batch, --threads threads); ONNX Runtime opens a
 * session with --threads intra-op threads, one inter-op thread, sequential
 * execution, every graph optimisation, and its threads' spinning stopped
 * at the end of each run (session.force_spinning_stop: else they spin on
 * through edgefit's turn). Both read the same input buffers
 * (sin(0.37 i) / 2, a fixed non-trivial input) and must agree: the largest
 * difference of edgefit's output from ONNX Runtime's first output, over
 * that output's largest magnitude, at most 1e-4 (fp32 sums in a different
 * order differ by a few ulps per step; a wrong layer is off by far more).
 * Then, after a warm-up, --rounds rounds each run edgefit --runs times,
 * then ONNX Runtime --runs times (alternating, so a machine whose speed
 * drifts slows both alike), each run timed alone; --runs 0 picks the
 * count that gives each engine about 10 ms a round. The table gives the
 * median over all runs of each one's time per forward pass and edgefit's
 * over ONNX Runtime's (below 1: edgefit is faster). When that ratio is
 * above 1 (or with --layers), the five operators of edgefit that cost the
 * most, each timed alone (prof_exec_profile), follow the model's row.
 * --ort-profile PREFIX turns on ONNX Runtime's own profiler: each
 * session writes its per-node times of every run (warm-up and timed
 * rounds, Chrome trace JSON) to PREFIX_DATE.json when it closes, to set
 * against edgefit's per-operator view (--layers, edgefit-layerwise).
 *
 * With --int8 DIR, static int8 instead: edgefit at MEMEST_INT8 (the
 * ranges of prof_ranges_calibrate, min-max, over --calibration-samples
 * inputs drawn uniformly from [-1, 1]) against ONNX Runtime on the QDQ
 * file DIR/LABEL.onnx of the same network (LABEL: the model's folder
 * name; scripts/bench-int8-vs-onnxruntime.sh writes them with
 * scripts/qdq_onnx.py, calibrated by ONNX Runtime on inputs drawn the
 * same way, so the two scale sets are close, not equal) and against
 * edgefit's own fp32, the three alternated as above. The int8 outputs are
 * not held to the fp32 tolerance: the table shows their largest
 * difference from ONNX Runtime's int8 and from edgefit's fp32, over the
 * output's largest magnitude. --int8-requant float runs edgefit's int8
 * with ONNX Runtime's output stage (prof_exec_opts.int8_requant; default
 * fixed).
 *
 * Exit status: 0 when every model ran and agreed, 1 when one did not, 2
 * for a bad command line or an ONNX Runtime that cannot be loaded. A
 * benchmark, not a test: scripts/bench-vs-onnxruntime-c.sh runs it. */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgefit/memest.h"
#include "edgefit/profile.h"
#include "ort_slots.h"

#ifndef EDGEFIT_ORT_LIB
#define EDGEFIT_ORT_LIB "libonnxruntime.so.1"
#endif

#define TOLERANCE 1e-4
#define ROUND_TARGET_MS 10.0 /* each engine's share of a round */
#define MAX_RUNS 10000u
#define WARMUP_MS 200.0
#define TOP_LAYERS 5

/* ---- ONNX Runtime ------------------------------------------------------ */

/* The API table: slot i is the i-th function pointer of struct OrtApi. */
typedef void (*any_fn)(void);
static const any_fn *ort_api;
static const char *ort_version = "?";
static ort_env *ort_environment;
static ort_memory_info *ort_cpu;
static ort_allocator *ort_alloc;

#define ORT(type, slot) ((type)ort_api[slot])

static void ort_release(enum ort_slot slot, void *object)
{
    if (object) {
        ORT(ort_release_fn, slot)(object);
    }
}

/* 0 when st is success; else prints "what: ONNX Runtime's message" under
 * the model's name, frees st and returns -1. */
static int ort_ok(ort_status *st, const char *model, const char *what)
{
    if (!st) {
        return 0;
    }
    fprintf(stderr, "bench-vs-ort: %s: %s: %s\n", model, what,
            ORT(ort_get_error_message_fn, ORT_GET_ERROR_MESSAGE)(st));
    ort_release(ORT_RELEASE_STATUS, st);
    return -1;
}

/* Load the library, get API version ORT_BENCH_API_VERSION, and create
 * what every session shares. 0 or -1 with a message. */
static int ort_open(const char *path)
{
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "bench-vs-ort: cannot load ONNX Runtime from %s: "
                "%s (install the npm package onnxruntime-node, or give "
                "--ort-lib PATH/libonnxruntime.so.1)\n", path, dlerror());
        return -1;
    }
    /* The POSIX way to turn dlsym's object pointer into a function
     * pointer (ISO C has no conversion between the two). */
    ort_get_api_base_fn get_base;
    *(void **)&get_base = dlsym(lib, "OrtGetApiBase");
    const struct ort_api_base *base = get_base ? get_base() : NULL;
    if (!base) {
        fprintf(stderr, "bench-vs-ort: %s has no OrtGetApiBase: not an "
                "ONNX Runtime library\n", path);
        return -1;
    }
    ort_version = base->get_version_string();
    ort_api = base->get_api(ORT_BENCH_API_VERSION);
    if (!ort_api) {
        fprintf(stderr, "bench-vs-ort: ONNX Runtime %s (%s) does not serve "
                "C API version %u, the version whose function slots this "
                "program calls\n", ort_version, path, ORT_BENCH_API_VERSION);
        return -1;
    }
    /* A wrong slot table would call the wrong functions; a status made
     * and read back through three of the slots catches a library whose
     * table is not the documented one before anything else is called. */
    static const char probe[] = "edgefit slot probe";
    ort_status *st = ORT(ort_create_status_fn, ORT_CREATE_STATUS)(
        ORT_BENCH_ERROR_FAIL, probe);
    const char *back =
        st ? ORT(ort_get_error_message_fn, ORT_GET_ERROR_MESSAGE)(st) : NULL;
    const int same = back && strcmp(back, probe) == 0;
    ort_release(ORT_RELEASE_STATUS, st);
    if (!same) {
        fprintf(stderr, "bench-vs-ort: ONNX Runtime %s (%s): its C API "
                "table does not behave as documented (status round trip "
                "failed)\n", ort_version, path);
        return -1;
    }
    if (ort_ok(ORT(ort_create_env_fn, ORT_CREATE_ENV)(
                   ORT_BENCH_LOG_WARNING, "bench-vs-ort", &ort_environment),
               "ONNX Runtime", "CreateEnv") ||
        ort_ok(ORT(ort_create_cpu_memory_info_fn, ORT_CREATE_CPU_MEMORY_INFO)(
                   ORT_BENCH_DEVICE_ALLOCATOR, ORT_BENCH_MEM_DEFAULT,
                   &ort_cpu),
               "ONNX Runtime", "CreateCpuMemoryInfo") ||
        ort_ok(ORT(ort_get_default_allocator_fn, ORT_GET_DEFAULT_ALLOCATOR)(
                   &ort_alloc),
               "ONNX Runtime", "GetAllocatorWithDefaultOptions")) {
        return -1;
    }
    return 0;
}

static void ort_close(void)
{
    if (ort_api) {
        ort_release(ORT_RELEASE_MEMORY_INFO, ort_cpu);
        ort_release(ORT_RELEASE_ENV, ort_environment);
    }
}

/* ---- One model ---------------------------------------------------------- */

struct opts {
    const char *ort_lib;
    unsigned threads;
    uint64_t batch;
    unsigned rounds;
    unsigned runs; /* 0: automatic */
    int layers;    /* always print the costliest layers */
    const char *ort_profile; /* --ort-profile: ORT's profile file prefix */
    const char *qdq_dir;  /* --int8: the folder of the QDQ files */
    unsigned calib_samples;
    enum prof_int8_requant requant; /* --int8-requant */
};

struct bench {
    const char *label;
    memest_model *model;
    prof_exec *ex;
    prof_exec *ex8;     /* --int8: the static int8 executor */
    float *out8;        /* its output */
    size_t n_in;
    float **in;         /* edgefit's input k, batch * its elements */
    size_t *in_count;
    float *out;         /* edgefit's output */
    size_t out_count;
    ort_session *sess;
    size_t ort_n_in, ort_n_out;
    char **ort_in_names, **ort_out_names;
    ort_value **ort_in;   /* over edgefit's input buffers */
    ort_value **ort_out;  /* over ort_out_data, after the first run */
    float **ort_out_data;
};

static void bench_free(struct bench *b)
{
    for (size_t i = 0; i < b->ort_n_in; i++) {
        if (b->ort_in) {
            ort_release(ORT_RELEASE_VALUE, b->ort_in[i]);
        }
        if (b->ort_in_names && b->ort_in_names[i]) {
            ort_status *st = ORT(ort_allocator_free_fn, ORT_ALLOCATOR_FREE)(
                ort_alloc, b->ort_in_names[i]);
            ort_release(ORT_RELEASE_STATUS, st);
        }
    }
    for (size_t i = 0; i < b->ort_n_out; i++) {
        if (b->ort_out) {
            ort_release(ORT_RELEASE_VALUE, b->ort_out[i]);
        }
        if (b->ort_out_data) {
            free(b->ort_out_data[i]);
        }
        if (b->ort_out_names && b->ort_out_names[i]) {
            ort_status *st = ORT(ort_allocator_free_fn, ORT_ALLOCATOR_FREE)(
                ort_alloc, b->ort_out_names[i]);
            ort_release(ORT_RELEASE_STATUS, st);
        }
    }
    free(b->ort_in);
    free(b->ort_out);
    free(b->ort_out_data);
    free(b->ort_in_names);
    free(b->ort_out_names);
    ort_release(ORT_RELEASE_SESSION, b->sess);
    for (size_t k = 0; k < b->n_in; k++) {
        free(b->in ? b->in[k] : NULL);
    }
    free(b->in);
    free(b->in_count);
    free(b->out);
    free(b->out8);
    prof_exec_destroy(b->ex8);
    prof_exec_destroy(b->ex);
    memest_model_destroy(b->model);
}

/* "resnet8" for .../resnet8/model.onnx, else the file's name. */
static const char *label_of(const char *path, char *buf, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strcmp(base, "model.onnx") != 0 || base == path) {
        return base;
    }
    size_t end = (size_t)(base - 1 - path);
    size_t start = end;
    while (start > 0 && path[start - 1] != '/') {
        start--;
    }
    size_t n = end - start < cap - 1 ? end - start : cap - 1;
    memcpy(buf, path + start, n);
    buf[n] = '\0';
    return buf;
}

/* --int8: min-max ranges over o->calib_samples inputs uniform in [-1, 1]
 * (xorshift from a fixed state, as scripts/onnx_ranges.mjs draws them),
 * and the static int8 executor on them. */
static int edgefit_open_int8(struct bench *b, const struct opts *o)
{
    if (b->n_in != 1) {
        fprintf(stderr, "bench-vs-ort: %s: --int8 calibrates models of one "
                "input\n", b->label);
        return -1;
    }
    const struct memest_shape sh = memest_model_input_shape(b->model);
    struct prof_dataset data;
    memset(&data, 0, sizeof data);
    data.rank = sh.rank;
    data.sample_count = 1;
    for (unsigned i = 0; i < sh.rank; i++) {
        data.shape[i] = sh.dim[i];
        data.sample_count *= sh.dim[i];
    }
    data.count = o->calib_samples;
    data.x = malloc((size_t)(data.count * data.sample_count) * sizeof(float));
    if (!data.x) {
        fprintf(stderr, "bench-vs-ort: %s: out of memory\n", b->label);
        return -1;
    }
    uint32_t r = 2463534242u;
    for (uint64_t i = 0; i < data.count * data.sample_count; i++) {
        r ^= r << 13;
        r ^= r >> 17;
        r ^= r << 5;
        data.x[i] = (float)(2.0 * ((double)r / 4294967296.0) - 1.0);
    }
    struct prof_ranges_opts ro;
    prof_ranges_opts_init(&ro);
    ro.samples = 0;
    struct prof_ranges ranges;
    struct prof_diag pd;
    memset(&pd, 0, sizeof pd);
    int st = prof_ranges_calibrate(b->model, &data, &ro, &ranges, &pd);
    free(data.x);
    if (st != PROF_OK) {
        fprintf(stderr, "bench-vs-ort: %s: calibration: %s (%s)\n",
                b->label, pd.message, prof_strerror(st));
        return -1;
    }
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = o->batch;
    eo.precision = MEMEST_INT8;
    eo.threads = o->threads;
    eo.ranges = &ranges;
    eo.int8_requant = o->requant;
    st = prof_exec_create(b->model, &eo, &b->ex8, &pd);
    prof_ranges_finish(&ranges);
    if (st != PROF_OK) {
        fprintf(stderr, "bench-vs-ort: %s: edgefit's int8 executor: %s "
                "(%s)\n", b->label, pd.message, prof_strerror(st));
        return -1;
    }
    b->out8 = malloc(b->out_count * sizeof *b->out8);
    if (!b->out8 || prof_exec_output_count(b->ex8) != b->out_count) {
        fprintf(stderr, "bench-vs-ort: %s: int8 output buffer\n", b->label);
        return -1;
    }
    return 0;
}

/* edgefit's side: the model, the executor and the input buffers. */
static int edgefit_open(struct bench *b, const char *path,
                        const struct opts *o)
{
    struct memest_diag d;
    memset(&d, 0, sizeof d);
    int st = memest_model_load_onnx(path, NULL, &b->model, &d);
    if (st != MEMEST_OK) {
        char msg[600];
        memest_diag_format(&d, msg, sizeof msg);
        fprintf(stderr, "bench-vs-ort: %s: edgefit cannot import it: %s "
                "(%s)\n", b->label, msg, memest_strerror(st));
        return -1;
    }
    const uint64_t fixed = memest_model_fixed_batch(b->model);
    if (fixed && fixed != o->batch) {
        fprintf(stderr, "bench-vs-ort: %s: the file fixes batch %llu; run "
                "with --batch %llu\n", b->label, (unsigned long long)fixed,
                (unsigned long long)fixed);
        return -1;
    }
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.batch = o->batch;
    eo.precision = MEMEST_FP32;
    eo.threads = o->threads;
    struct prof_diag pd;
    memset(&pd, 0, sizeof pd);
    st = prof_exec_create(b->model, &eo, &b->ex, &pd);
    if (st != PROF_OK) {
        fprintf(stderr, "bench-vs-ort: %s: edgefit's executor: %s (%s)\n",
                b->label, pd.message, prof_strerror(st));
        return -1;
    }
    b->n_in = prof_exec_input_tensors(b->ex);
    b->in = calloc(b->n_in, sizeof *b->in);
    b->in_count = calloc(b->n_in, sizeof *b->in_count);
    b->out_count = prof_exec_output_count(b->ex);
    b->out = malloc(b->out_count * sizeof *b->out);
    if (!b->in || !b->in_count || !b->out) {
        fprintf(stderr, "bench-vs-ort: %s: out of memory\n", b->label);
        return -1;
    }
    for (size_t k = 0; k < b->n_in; k++) {
        const size_t n = prof_exec_input_count_at(b->ex, k);
        b->in_count[k] = n;
        b->in[k] = malloc(n * sizeof(float));
        if (!b->in[k]) {
            fprintf(stderr, "bench-vs-ort: %s: out of memory\n", b->label);
            return -1;
        }
        /* Each input its own phase, so two inputs are not the same. */
        for (size_t i = 0; i < n; i++) {
            b->in[k][i] = (float)(0.5 * sin(0.37 * (double)i + (double)k));
        }
    }
    return o->qdq_dir ? edgefit_open_int8(b, o) : 0;
}

/* The element count of dims[0..rank-1]; -1 for a dimension that is not
 * positive or a product that overflows size_t. */
static int dims_count(const int64_t *dims, size_t rank, size_t *out)
{
    size_t n = 1;
    for (size_t i = 0; i < rank; i++) {
        if (dims[i] <= 0 || (uint64_t)dims[i] > SIZE_MAX / n) {
            return -1;
        }
        n *= (size_t)dims[i];
    }
    *out = n;
    return 0;
}

/* ONNX Runtime's input i: its name, its shape at the batch, and a tensor
 * over the buffer of edgefit's input of the same name. */
static int ort_bind_input(struct bench *b, size_t i, const struct opts *o)
{
    char *name = NULL;
    if (ort_ok(ORT(ort_session_name_fn, ORT_SESSION_GET_INPUT_NAME)(
                   b->sess, i, ort_alloc, &name),
               b->label, "SessionGetInputName")) {
        return -1;
    }
    b->ort_in_names[i] = name;
    size_t k = 0;
    while (k < b->n_in &&
           strcmp(memest_model_input_name(b->model, k), name) != 0) {
        k++;
    }
    if (k == b->n_in) {
        fprintf(stderr, "bench-vs-ort: %s: ONNX Runtime's input '%s' is "
                "not one of edgefit's inputs\n", b->label, name);
        return -1;
    }
    ort_type_info *ti = NULL;
    const ort_tensor_info *tinfo = NULL;
    int type = 0;
    size_t rank = 0;
    int64_t dims[16];
    int rc = -1;
    if (ort_ok(ORT(ort_session_type_info_fn, ORT_SESSION_GET_INPUT_TYPE_INFO)(
                   b->sess, i, &ti),
               b->label, "SessionGetInputTypeInfo") ||
        ort_ok(ORT(ort_cast_type_info_fn, ORT_CAST_TYPE_INFO_TO_TENSOR_INFO)(
                   ti, &tinfo),
               b->label, "CastTypeInfoToTensorInfo")) {
        goto done;
    }
    if (!tinfo) {
        fprintf(stderr, "bench-vs-ort: %s: input '%s' is not a tensor\n",
                b->label, name);
        goto done;
    }
    if (ort_ok(ORT(ort_get_element_type_fn, ORT_GET_TENSOR_ELEMENT_TYPE)(
                   tinfo, &type),
               b->label, "GetTensorElementType") ||
        ort_ok(ORT(ort_get_dimensions_count_fn, ORT_GET_DIMENSIONS_COUNT)(
                   tinfo, &rank),
               b->label, "GetDimensionsCount")) {
        goto done;
    }
    if (type != ORT_BENCH_FLOAT) {
        fprintf(stderr, "bench-vs-ort: %s: input '%s' is not float32 (ONNX "
                "type %d)\n", b->label, name, type);
        goto done;
    }
    if (rank == 0 || rank > sizeof dims / sizeof dims[0]) {
        fprintf(stderr, "bench-vs-ort: %s: input '%s' has rank %zu\n",
                b->label, name, rank);
        goto done;
    }
    if (ort_ok(ORT(ort_get_dimensions_fn, ORT_GET_DIMENSIONS)(tinfo, dims,
                                                              rank),
               b->label, "GetDimensions")) {
        goto done;
    }
    /* A free batch dimension (the first, or the second of a time-major
     * LSTM input, memest_model_input_batch_axis) is the batch; any other
     * free dimension has no value this program could know. At batch 1 a
     * time-major [T, 1, D] holds its floats as edgefit's 1 x T x D; a
     * larger batch would order them differently, so it is refused. */
    const unsigned bax = memest_model_input_batch_axis(b->model, k);
    if (bax != 0 && o->batch != 1) {
        fprintf(stderr, "bench-vs-ort: %s: input '%s' holds its batch on "
                "axis %u; only batch 1 is compared\n", b->label, name, bax);
        goto done;
    }
    if (bax < rank && dims[bax] <= 0) {
        dims[bax] = (int64_t)o->batch;
    }
    size_t n = 0;
    if (dims_count(dims, rank, &n) != 0) {
        fprintf(stderr, "bench-vs-ort: %s: input '%s' has a free or absurd "
                "dimension other than the batch\n", b->label, name);
        goto done;
    }
    if (n != b->in_count[k]) {
        fprintf(stderr, "bench-vs-ort: %s: input '%s' holds %zu floats in "
                "ONNX Runtime and %zu in edgefit\n", b->label, name, n,
                b->in_count[k]);
        goto done;
    }
    if (ort_ok(ORT(ort_create_tensor_with_data_fn,
                   ORT_CREATE_TENSOR_WITH_DATA)(
                   ort_cpu, b->in[k], n * sizeof(float), dims, rank,
                   ORT_BENCH_FLOAT, &b->ort_in[i]),
               b->label, "CreateTensorWithDataAsOrtValue")) {
        goto done;
    }
    rc = 0;
done:
    ort_release(ORT_RELEASE_TYPE_INFO, ti);
    return rc;
}

/* Output j of a run ONNX Runtime allocated: a float buffer of its size
 * with its contents and a tensor over it, so that the timed runs write
 * into memory the caller owns, as edgefit's do. */
static int ort_bind_output(struct bench *b, size_t j, ort_value *v)
{
    ort_tensor_info *ti = NULL;
    int type = 0;
    size_t rank = 0, n = 0;
    int64_t dims[16];
    void *data = NULL;
    int rc = -1;
    if (ort_ok(ORT(ort_get_tensor_type_and_shape_fn,
                   ORT_GET_TENSOR_TYPE_AND_SHAPE)(v, &ti),
               b->label, "GetTensorTypeAndShape") ||
        ort_ok(ORT(ort_get_element_type_fn, ORT_GET_TENSOR_ELEMENT_TYPE)(
                   ti, &type),
               b->label, "GetTensorElementType") ||
        ort_ok(ORT(ort_get_dimensions_count_fn, ORT_GET_DIMENSIONS_COUNT)(
                   ti, &rank),
               b->label, "GetDimensionsCount")) {
        goto done;
    }
    if (type != ORT_BENCH_FLOAT || rank > sizeof dims / sizeof dims[0]) {
        fprintf(stderr, "bench-vs-ort: %s: output '%s' is not a float32 "
                "tensor of rank <= 16\n", b->label, b->ort_out_names[j]);
        goto done;
    }
    if (ort_ok(ORT(ort_get_dimensions_fn, ORT_GET_DIMENSIONS)(ti, dims, rank),
               b->label, "GetDimensions") ||
        ort_ok(ORT(ort_get_tensor_mutable_data_fn,
                   ORT_GET_TENSOR_MUTABLE_DATA)(v, &data),
               b->label, "GetTensorMutableData")) {
        goto done;
    }
    if (dims_count(dims, rank, &n) != 0) {
        fprintf(stderr, "bench-vs-ort: %s: output '%s' is empty\n", b->label,
                b->ort_out_names[j]);
        goto done;
    }
    b->ort_out_data[j] = malloc(n * sizeof(float));
    if (!b->ort_out_data[j]) {
        fprintf(stderr, "bench-vs-ort: %s: out of memory\n", b->label);
        goto done;
    }
    memcpy(b->ort_out_data[j], data, n * sizeof(float));
    if (j == 0 && n != b->out_count) {
        fprintf(stderr, "bench-vs-ort: %s: edgefit's output holds %zu "
                "floats, ONNX Runtime's '%s' %zu\n", b->label, b->out_count,
                b->ort_out_names[0], n);
        goto done;
    }
    if (ort_ok(ORT(ort_create_tensor_with_data_fn,
                   ORT_CREATE_TENSOR_WITH_DATA)(
                   ort_cpu, b->ort_out_data[j], n * sizeof(float), dims,
                   rank, ORT_BENCH_FLOAT, &b->ort_out[j]),
               b->label, "CreateTensorWithDataAsOrtValue")) {
        goto done;
    }
    rc = 0;
done:
    ort_release(ORT_RELEASE_TENSOR_INFO, ti);
    return rc;
}

static int ort_run(struct bench *b, ort_value **outs)
{
    return ort_ok(ORT(ort_run_fn, ORT_RUN)(
                      b->sess, NULL, (const char *const *)b->ort_in_names,
                      (const ort_value *const *)b->ort_in, b->ort_n_in,
                      (const char *const *)b->ort_out_names, b->ort_n_out,
                      outs),
                  b->label, "Run");
}

/* ONNX Runtime's side: the session, its inputs over edgefit's buffers,
 * one run whose outputs fix the output buffers. */
static int ort_open_session(struct bench *b, const char *path,
                            const struct opts *o)
{
    ort_session_options *so = NULL;
    int rc = -1;
    if (ort_ok(ORT(ort_create_session_options_fn,
                   ORT_CREATE_SESSION_OPTIONS)(&so),
               b->label, "CreateSessionOptions") ||
        ort_ok(ORT(ort_options_int_fn, ORT_SET_INTRA_OP_NUM_THREADS)(
                   so, (int)o->threads),
               b->label, "SetIntraOpNumThreads") ||
        ort_ok(ORT(ort_options_int_fn, ORT_SET_INTER_OP_NUM_THREADS)(so, 1),
               b->label, "SetInterOpNumThreads") ||
        ort_ok(ORT(ort_options_int_fn, ORT_SET_SESSION_EXECUTION_MODE)(
                   so, ORT_BENCH_SEQUENTIAL),
               b->label, "SetSessionExecutionMode") ||
        ort_ok(ORT(ort_options_int_fn, ORT_SET_GRAPH_OPTIMIZATION_LEVEL)(
                   so, ORT_BENCH_OPT_ALL),
               b->label, "SetSessionGraphOptimizationLevel") ||
        /* ONNX Runtime's pool keeps its threads spinning after a run
         * unless told: they would hold the second core through edgefit's
         * next run (ResNet-18, 2 threads: edgefit 28 ms, 14 ms without
         * them). Stopped at the end of each run, they spin during runs as
         * before, as edgefit's do (which spin 0.2 ms after their last
         * piece, then sleep). */
        ort_ok(ORT(ort_options_entry_fn, ORT_ADD_SESSION_CONFIG_ENTRY)(
                   so, "session.force_spinning_stop", "1"),
               b->label, "AddSessionConfigEntry") ||
        (o->ort_profile &&
         ort_ok(ORT(ort_options_str_fn, ORT_ENABLE_PROFILING)(
                    so, o->ort_profile),
                b->label, "EnableProfiling")) ||
        ort_ok(ORT(ort_create_session_fn, ORT_CREATE_SESSION)(
                   ort_environment, path, so, &b->sess),
               b->label, "CreateSession") ||
        ort_ok(ORT(ort_session_count_fn, ORT_SESSION_GET_INPUT_COUNT)(
                   b->sess, &b->ort_n_in),
               b->label, "SessionGetInputCount") ||
        ort_ok(ORT(ort_session_count_fn, ORT_SESSION_GET_OUTPUT_COUNT)(
                   b->sess, &b->ort_n_out),
               b->label, "SessionGetOutputCount")) {
        goto done;
    }
    if (b->ort_n_in != b->n_in || b->ort_n_out == 0) {
        fprintf(stderr, "bench-vs-ort: %s: ONNX Runtime sees %zu inputs "
                "and %zu outputs, edgefit %zu inputs\n", b->label,
                b->ort_n_in, b->ort_n_out, b->n_in);
        goto done;
    }
    b->ort_in_names = calloc(b->ort_n_in, sizeof *b->ort_in_names);
    b->ort_in = calloc(b->ort_n_in, sizeof *b->ort_in);
    b->ort_out_names = calloc(b->ort_n_out, sizeof *b->ort_out_names);
    b->ort_out = calloc(b->ort_n_out, sizeof *b->ort_out);
    b->ort_out_data = calloc(b->ort_n_out, sizeof *b->ort_out_data);
    if (!b->ort_in_names || !b->ort_in || !b->ort_out_names || !b->ort_out ||
        !b->ort_out_data) {
        fprintf(stderr, "bench-vs-ort: %s: out of memory\n", b->label);
        goto done;
    }
    for (size_t i = 0; i < b->ort_n_in; i++) {
        if (ort_bind_input(b, i, o) != 0) {
            goto done;
        }
    }
    for (size_t j = 0; j < b->ort_n_out; j++) {
        if (ort_ok(ORT(ort_session_name_fn, ORT_SESSION_GET_OUTPUT_NAME)(
                       b->sess, j, ort_alloc, &b->ort_out_names[j]),
                   b->label, "SessionGetOutputName")) {
            goto done;
        }
    }
    ort_value **first = calloc(b->ort_n_out, sizeof *first);
    if (!first) {
        fprintf(stderr, "bench-vs-ort: %s: out of memory\n", b->label);
        goto done;
    }
    rc = ort_run(b, first);
    for (size_t j = 0; j < b->ort_n_out && rc == 0; j++) {
        rc = ort_bind_output(b, j, first[j]);
    }
    for (size_t j = 0; j < b->ort_n_out; j++) {
        ort_release(ORT_RELEASE_VALUE, first[j]);
    }
    free(first);
done:
    ort_release(ORT_RELEASE_SESSION_OPTIONS, so);
    return rc;
}

static int edgefit_run(struct bench *b)
{
    int st = prof_exec_run_inputs(b->ex, (const float *const *)b->in,
                                  b->in_count, b->n_in, b->out,
                                  b->out_count);
    if (st != PROF_OK) {
        fprintf(stderr, "bench-vs-ort: %s: edgefit's run: %s\n", b->label,
                prof_strerror(st));
        return -1;
    }
    return 0;
}

static int edgefit_run8(struct bench *b)
{
    int st = prof_exec_run_inputs(b->ex8, (const float *const *)b->in,
                                  b->in_count, b->n_in, b->out8,
                                  b->out_count);
    if (st != PROF_OK) {
        fprintf(stderr, "bench-vs-ort: %s: edgefit's int8 run: %s\n",
                b->label, prof_strerror(st));
        return -1;
    }
    return 0;
}

/* max |out - ref| / max |ref| over out_count values. */
static double rel_diff_of(const struct bench *b, const float *out,
                          const float *ref)
{
    double dmax = 0.0, rmax = 0.0;
    for (size_t i = 0; i < b->out_count; i++) {
        const double d = fabs((double)out[i] - (double)ref[i]);
        /* NaN is never <= the tolerance: keep it. */
        if (!(d <= dmax)) {
            dmax = d;
        }
        if (fabs((double)ref[i]) > rmax) {
            rmax = fabs((double)ref[i]);
        }
    }
    return rmax > 0.0 ? dmax / rmax : dmax;
}

/* max |edgefit - ORT| / max |ORT| over ORT's first output. */
static double rel_diff(const struct bench *b)
{
    return rel_diff_of(b, b->out, b->ort_out_data[0]);
}

/* The engines: edgefit (fp32), ONNX Runtime, edgefit's static int8. */
enum { ENG_EDGEFIT, ENG_ORT, ENG_INT8, ENG_COUNT };

/* One run of one engine, in ms; -1 when it failed. */
static double run_ms(struct bench *b, int engine)
{
    const uint64_t t0 = prof_now_ns();
    const int rc = engine == ENG_ORT       ? ort_run(b, b->ort_out)
                   : engine == ENG_INT8    ? edgefit_run8(b)
                                           : edgefit_run(b);
    if (rc != 0) {
        return -1.0;
    }
    return (double)(prof_now_ns() - t0) / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Alternating rounds of n runs of each, every run timed alone; the
 * median over all runs of each engine. Runs are timed one by one, not as
 * a block: on a machine that other processes share, a block of
 * milliseconds is cut by the scheduler in every round and its mean time
 * grows with the load, while a single pass of a fraction of a millisecond
 * is rarely interrupted, and the median drops those that were. The clock
 * costs some 20 ns, under 0.1% of the smallest of these models. */
static int time_engines(struct bench *b, const struct opts *o, int ne,
                        double *ms, unsigned *runs)
{
    /* Warm-up: caches, page faults, ONNX Runtime's first-run allocations
     * and edgefit's worker threads, until WARMUP_MS have passed. The
     * fastest run of each sizes the rounds (a run that another process
     * interrupted would make them too short). */
    double best[ENG_COUNT];
    for (int e = 0; e < ne; e++) {
        best[e] = HUGE_VAL;
    }
    const uint64_t t0 = prof_now_ns();
    while ((double)(prof_now_ns() - t0) / 1e6 < WARMUP_MS) {
        for (int e = 0; e < ne; e++) {
            const double t = run_ms(b, e);
            if (t < 0.0) {
                return -1;
            }
            best[e] = t < best[e] ? t : best[e];
        }
    }
    unsigned n = o->runs;
    if (n == 0) {
        double slow = 0.0;
        for (int e = 0; e < ne; e++) {
            slow = best[e] > slow ? best[e] : slow;
        }
        const double want = ROUND_TARGET_MS / (slow > 1e-6 ? slow : 1e-6);
        n = want < 1.0 ? 1u : want > MAX_RUNS ? MAX_RUNS : (unsigned)want;
    }
    const size_t total = (size_t)o->rounds * n;
    double *t[ENG_COUNT] = {NULL};
    int rc = 0;
    for (int e = 0; e < ne; e++) {
        t[e] = malloc(total * sizeof *t[e]);
        rc = t[e] ? rc : -1;
    }
    for (unsigned r = 0; r < o->rounds && rc == 0; r++) {
        for (int e = 0; e < ne && rc == 0; e++) {
            for (unsigned i = 0; i < n && rc == 0; i++) {
                t[e][(size_t)r * n + i] = run_ms(b, e);
                rc = t[e][(size_t)r * n + i] < 0.0 ? -1 : 0;
            }
        }
    }
    for (int e = 0; e < ne; e++) {
        if (rc == 0) {
            ms[e] = median(t[e], total);
        }
        free(t[e]);
    }
    if (rc == 0) {
        *runs = n;
    }
    return rc;
}

/* edgefit's operators by time, each timed alone: the TOP_LAYERS costliest
 * with their share of the forward pass. */
static void print_layers(struct bench *b)
{
    if (b->n_in != 1) {
        printf("    (per-layer view: prof_exec_profile takes one input)\n");
        return;
    }
    struct prof_time_opts to;
    prof_time_opts_init(&to);
    to.warmup = 3;
    to.repeats = 15;
    to.min_sample_ms = 0.2; /* operators of a few us timed in groups */
    struct prof_exec_profile p;
    int st = prof_exec_profile(b->ex, b->in[0], b->in_count[0], &to, &p);
    if (st != PROF_OK) {
        printf("    (per-layer view failed: %s)\n", prof_strerror(st));
        return;
    }
    size_t *idx = malloc(p.count * sizeof *idx);
    if (!idx) {
        prof_exec_profile_finish(&p);
        return;
    }
    for (size_t i = 0; i < p.count; i++) {
        idx[i] = i;
    }
    /* A partial selection sort: TOP_LAYERS of a few dozen rows. */
    const size_t top = p.count < TOP_LAYERS ? p.count : TOP_LAYERS;
    for (size_t i = 0; i < top; i++) {
        for (size_t j = i + 1; j < p.count; j++) {
            if (p.ops[idx[j]].latency_ms > p.ops[idx[i]].latency_ms) {
                size_t t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
        }
    }
    printf("    edgefit's costliest operators (forward %.4f ms, operators "
           "alone %.4f ms):\n", p.forward_ms, p.operator_sum_ms);
    for (size_t i = 0; i < top; i++) {
        const struct prof_exec_op_row *r = &p.ops[idx[i]];
        printf("      %-28s %-10s %9.4f ms %5.1f%% %8.2f GMAC/s\n",
               r->info.layer, memest_kind_name(r->info.kind), r->latency_ms,
               p.forward_ms > 0.0 ? 100.0 * r->latency_ms / p.forward_ms
                                  : 0.0,
               r->achieved_gmacs);
    }
    free(idx);
    prof_exec_profile_finish(&p);
}

/* One model: 0 when it ran and agreed, -1 otherwise. */
static int bench_model(const char *path, const struct opts *o)
{
    char buf[128];
    struct bench b;
    memset(&b, 0, sizeof b);
    b.label = label_of(path, buf, sizeof buf);
    int rc = -1;
    if (edgefit_open(&b, path, o) != 0 || ort_open_session(&b, path, o) != 0 ||
        edgefit_run(&b) != 0) {
        goto done;
    }
    const double diff = rel_diff(&b);
    if (!(diff <= TOLERANCE)) {
        printf("%-22s outputs disagree: max |edgefit - ort| / max |ort| = "
               "%.3g > %g\n", b.label, diff, TOLERANCE);
        fflush(stdout);
        goto done;
    }
    double ms[ENG_COUNT] = {0.0};
    unsigned runs = 0;
    if (time_engines(&b, o, ENG_INT8, ms, &runs) != 0) {
        goto done;
    }
    const double e_ms = ms[ENG_EDGEFIT], o_ms = ms[ENG_ORT];
    const double ratio = e_ms / o_ms;
    printf("%-22s %11.4f %11.4f %6.2f %9.1e %7u\n", b.label, e_ms, o_ms,
           ratio, diff, runs);
    if (ratio > 1.0 || o->layers) {
        print_layers(&b);
    }
    fflush(stdout);
    rc = 0;
done:
    bench_free(&b);
    return rc;
}

/* --int8: one model; its QDQ file is o->qdq_dir/LABEL.onnx. */
static int bench_model_int8(const char *path, const struct opts *o)
{
    char buf[128], qdq[4096];
    struct bench b;
    memset(&b, 0, sizeof b);
    b.label = label_of(path, buf, sizeof buf);
    int rc = -1;
    const char *dot = strrchr(b.label, '.');
    const int stem = dot && strcmp(dot, ".onnx") == 0
                         ? (int)(dot - b.label)
                         : (int)strlen(b.label);
    if (snprintf(qdq, sizeof qdq, "%s/%.*s.onnx", o->qdq_dir, stem,
                 b.label) >= (int)sizeof qdq) {
        fprintf(stderr, "bench-vs-ort: %s: QDQ path too long\n", b.label);
        return -1;
    }
    if (edgefit_open(&b, path, o) != 0 || ort_open_session(&b, qdq, o) != 0 ||
        edgefit_run(&b) != 0 || edgefit_run8(&b) != 0) {
        goto done;
    }
    const double d_ort = rel_diff_of(&b, b.out8, b.ort_out_data[0]);
    const double d_fp32 = rel_diff_of(&b, b.out8, b.out);
    double ms[ENG_COUNT] = {0.0};
    unsigned runs = 0;
    if (time_engines(&b, o, ENG_COUNT, ms, &runs) != 0) {
        goto done;
    }
    const double to_fp32 = ms[ENG_INT8] / ms[ENG_EDGEFIT];
    const double to_ort = ms[ENG_INT8] / ms[ENG_ORT];
    printf("%-18s %10.4f %10.4f %11.4f %14.2f %13.2f %8.1e %9.1e %6u\n",
           b.label, ms[ENG_INT8], ms[ENG_EDGEFIT], ms[ENG_ORT], to_fp32,
           to_ort, d_ort, d_fp32, runs);
    if (to_ort > 1.0 || to_fp32 > 0.5 || o->layers) {
        /* the int8 executor's costliest operators */
        prof_exec *fp = b.ex;
        b.ex = b.ex8;
        print_layers(&b);
        b.ex = fp;
    }
    fflush(stdout);
    rc = 0;
done:
    bench_free(&b);
    return rc;
}

/* ---- Command line ------------------------------------------------------- */

static int usage(void)
{
    fprintf(stderr,
            "usage: bench-vs-ort [--ort-lib PATH] [--threads N] [--batch N] "
            "[--rounds N]\n"
            "                    [--runs N] [--layers] [--int8 QDQ_DIR "
            "[--calibration-samples N]\n"
            "                    [--int8-requant fixed|float]] "
            "[--ort-profile PREFIX]\n"
            "                    MODEL.onnx...\n");
    return 2;
}

/* A whole number in [lo, hi] for option name, or -1 with a message. */
static int parse_uint(const char *name, const char *text, unsigned long lo,
                      unsigned long hi, unsigned long *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long v = text ? strtoul(text, &end, 10) : 0;
    if (!text || !*text || *end || errno || text[0] == '-' || v < lo ||
        v > hi) {
        fprintf(stderr, "bench-vs-ort: %s needs a whole number from %lu to "
                "%lu, got '%s'\n", name, lo, hi, text ? text : "");
        return -1;
    }
    *out = v;
    return 0;
}

int main(int argc, char **argv)
{
    struct opts o = {EDGEFIT_ORT_LIB, 1, 1, 15, 0, 0, NULL, NULL, 32,
                     PROF_INT8_REQUANT_FIXED};
    int first = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        unsigned long v = 0;
        /* The option's value, NULL when the command line ends. */
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--ort-lib") == 0 && val) {
            o.ort_lib = argv[++i];
        } else if (strcmp(a, "--int8") == 0 && val) {
            o.qdq_dir = argv[++i];
        } else if (strcmp(a, "--calibration-samples") == 0) {
            if (parse_uint(a, val, 1, 100000, &v) != 0) {
                return 2;
            }
            o.calib_samples = (unsigned)v;
            i++;
        } else if (strcmp(a, "--int8-requant") == 0) {
            if (prof_int8_requant_parse(val, &o.requant) != 0) {
                fprintf(stderr, "bench-vs-ort: --int8-requant needs fixed or "
                        "float, got '%s'\n", val ? val : "");
                return 2;
            }
            i++;
        } else if (strcmp(a, "--layers") == 0) {
            o.layers = 1;
        } else if (strcmp(a, "--ort-profile") == 0 && val) {
            o.ort_profile = argv[++i];
        } else if (strcmp(a, "--threads") == 0) {
            if (parse_uint(a, val, 1, 64, &v) != 0) {
                return 2;
            }
            o.threads = (unsigned)v;
            i++;
        } else if (strcmp(a, "--batch") == 0) {
            if (parse_uint(a, val, 1, 4096, &v) != 0) {
                return 2;
            }
            o.batch = v;
            i++;
        } else if (strcmp(a, "--rounds") == 0) {
            if (parse_uint(a, val, 1, 1000, &v) != 0) {
                return 2;
            }
            o.rounds = (unsigned)v;
            i++;
        } else if (strcmp(a, "--runs") == 0) {
            if (parse_uint(a, val, 0, MAX_RUNS, &v) != 0) {
                return 2;
            }
            o.runs = (unsigned)v;
            i++;
        } else if (a[0] == '-') {
            return usage();
        } else {
            first = i;
            break;
        }
    }
    if (first >= argc) {
        return usage();
    }
    if (!memest_onnx_available()) {
        fprintf(stderr, "bench-vs-ort: this build of edgefit does not read "
                "ONNX (Meson option onnx)\n");
        return 2;
    }
    if (ort_open(o.ort_lib) != 0) {
        ort_close();
        return 2;
    }
    if (o.qdq_dir) {
        printf("# ONNX Runtime %s (C API) on QDQ files, edgefit %s; static "
               "int8 (min-max over %u random inputs, %s output stage), "
               "batch %llu, %u thread%s, %u rounds, medians of ms per "
               "forward pass\n",
               ort_version, prof_version(), o.calib_samples,
               prof_int8_requant_name(o.requant),
               (unsigned long long)o.batch, o.threads,
               o.threads == 1 ? "" : "s", o.rounds);
        printf("%-18s %10s %10s %11s %14s %13s %8s %9s %6s\n", "model",
               "int8_ms", "fp32_ms", "ort_int8_ms", "int8_over_fp32",
               "int8_over_ort", "diff_ort", "diff_fp32", "runs");
    } else {
        printf("# ONNX Runtime %s (C API), edgefit %s; fp32, batch %llu, "
               "%u thread%s, %u rounds, medians of ms per forward pass\n",
               ort_version, prof_version(), (unsigned long long)o.batch,
               o.threads, o.threads == 1 ? "" : "s", o.rounds);
        printf("%-22s %11s %11s %6s %9s %7s\n", "model", "edgefit_ms",
               "ort_ms", "ratio", "max_diff", "runs");
    }
    fflush(stdout);
    int failed = 0;
    for (int i = first; i < argc; i++) {
        if (argv[i][0] == '-') {
            fprintf(stderr, "bench-vs-ort: options go before the models: "
                    "%s\n", argv[i]);
            ort_close();
            return 2;
        }
        failed |= (o.qdq_dir ? bench_model_int8(argv[i], &o)
                             : bench_model(argv[i], &o)) != 0;
    }
    ort_close();
    return failed ? 1 : 0;
}
