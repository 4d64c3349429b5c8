/* qdq-outputs: a model's static int8 outputs on ONNX test data, as NumPy
 * files, for scripts/check-qdq-ort.sh, which runs the same inputs through
 * ONNX Runtime and compares. Not a test and not installed.
 *
 * usage: qdq-outputs MODEL WEIGHTS|- CALIBRATION|- DATA INPUTS.npy OUTPUTS.npy
 *                    [TENSORS_DIR]
 *
 * MODEL (with WEIGHTS, a safetensors file, or - for none) runs at static
 * int8 with the ranges of CALIBRATION (a calibration file), or with the
 * quantisation the model carries (a QDQ ONNX file) for -. DATA is one
 * test_data_set_N folder or a folder of them, or an IDX or NumPy folder
 * (its training split); the first $SAMPLES samples when set;
 * $INT8_REQUANT (fixed, float or model: the default) the output stage
 * (prof_exec_opts.int8_requant). INPUTS.npy receives the
 * inputs as read ([N, ...] float32), OUTPUTS.npy edgefit's outputs
 * ([N, ...] float32, one sample at a time). Prints the output tensor's
 * int8 scale and zero point and the sample count as JSON on stdout. With
 * TENSORS_DIR, every tensor as the int8 run holds it (dequantised, NCHW)
 * goes to TENSORS_DIR/NAME.npy ([N, elements]; '/' in NAME as '%') and
 * its scale and zero
 * point to the line "NAME SCALE ZERO_POINT" of TENSORS_DIR/tensors.txt. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "data.h"
#include "model.h"
#include "edgefit/memest.h"
#include "edgefit/profile.h"

/* A float32 C-order .npy of shape [n, dims...] (NumPy's format 1.0: the
 * header padded with spaces to a multiple of 64 bytes, ending in \n). */
static int write_npy(const char *path, const float *x, uint64_t n,
                     const uint64_t *dims, unsigned rank, size_t count)
{
    char shape[256];
    int at = snprintf(shape, sizeof shape, "(%" PRIu64 ",", n);
    for (unsigned i = 0; i < rank; i++) {
        at += snprintf(shape + at, sizeof shape - (size_t)at, " %" PRIu64 ",",
                       dims[i]);
    }
    if (rank > 0) {
        shape[at - 1] = '\0';
    }
    char head[512];
    int len = snprintf(head, sizeof head,
                       "{'descr': '<f4', 'fortran_order': False, 'shape': "
                       "%s), }", shape);
    const int total = 10 + len + 1;
    const int pad = (64 - total % 64) % 64;
    memset(head + len, ' ', (size_t)pad);
    len += pad;
    head[len++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) {
        perror(path);
        return 1;
    }
    const unsigned char magic[8] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0};
    const unsigned char hl[2] = {(unsigned char)(len & 0xff),
                                 (unsigned char)(len >> 8)};
    const int bad = fwrite(magic, 1, 8, f) != 8 || fwrite(hl, 1, 2, f) != 2 ||
                    fwrite(head, 1, (size_t)len, f) != (size_t)len ||
                    fwrite(x, sizeof *x, count, f) != count;
    if (fclose(f) != 0 || bad) {
        perror(path);
        return 1;
    }
    return 0;
}

/* Every tensor of every sample, kept for TENSORS_DIR. */
struct keep {
    size_t nt;
    float **buf;      /* nt buffers of count * per[t] floats */
    size_t *per;
    uint64_t sample;
};

static int observe(void *ctx, const struct prof_exec_tensor *t)
{
    struct keep *k = ctx;
    if (t->tensor >= k->nt || t->count != k->per[t->tensor]) {
        return 1;
    }
    memcpy(k->buf[t->tensor] + k->sample * t->count, t->data,
           t->count * sizeof(float));
    return 0;
}

int main(int argc, char **argv)
{
    cli_set_program("qdq-outputs");
    if (argc != 7 && argc != 8) {
        fprintf(stderr, "usage: qdq-outputs MODEL WEIGHTS|- CALIBRATION|- "
                        "DATA INPUTS.npy OUTPUTS.npy [TENSORS_DIR]\n");
        return 2;
    }
    const char *weights = strcmp(argv[2], "-") ? argv[2] : NULL;
    const char *calfile = strcmp(argv[3], "-") ? argv[3] : NULL;
    memest_model *m = NULL;
    if (cli_model_load(argv[1], weights, &m) != CLI_EXIT_OK) {
        return 2;
    }
    struct prof_dataset d = {0};
    /* ONNX test data, else the training split of an IDX or NumPy folder
     * (the calibration's samples), else its test split */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/train%s", argv[4], DATA_NPY_INPUTS);
    FILE *pf = fopen(probe, "rb");
    if (!pf) {
        snprintf(probe, sizeof probe, "%s/train-images-idx3-ubyte",
                 argv[4]);
        pf = fopen(probe, "rb");
    }
    const bool split = pf != NULL;
    if (pf) {
        fclose(pf);
    }
    const uint64_t limit = getenv("SAMPLES") ? strtoull(getenv("SAMPLES"),
                                                        NULL, 10) : 0;
    if ((split ? data_load(argv[4], DATA_TRAIN, limit, &d)
               : data_load_reference(argv[4], limit, NULL, &d)) != CLI_EXIT_OK) {
        memest_model_destroy(m);
        return 2;
    }
    struct prof_ranges r = {0};
    bool have_ranges = calfile != NULL; /* r holds the ranges */
    struct prof_diag pd = {0};
    int st = calfile ? prof_ranges_load(calfile, m, &r, &pd) : PROF_OK;
    /* Without a calibration file the executor reads the params a QDQ
     * file carries itself (ranges NULL). */
    prof_exec *ex = NULL;
    struct prof_exec_opts eo;
    prof_exec_opts_init(&eo);
    eo.precision = MEMEST_INT8;
    eo.channel_blocked = 0; /* tensors in NCHW, as ONNX Runtime's */
    eo.ranges = have_ranges ? &r : NULL;
    const char *rq = getenv("INT8_REQUANT");
    if (rq && prof_int8_requant_parse(rq, &eo.int8_requant) != 0) {
        fprintf(stderr, "qdq-outputs: INT8_REQUANT=%s: fixed, float or "
                "model\n", rq);
        st = PROF_E_RANGE;
    }
    if (st == PROF_OK) {
        st = prof_exec_create(m, &eo, &ex, &pd);
    }
    float *out = NULL;
    size_t n_out = 0;
    if (st == PROF_OK) {
        n_out = prof_exec_output_count(ex);
        out = malloc((size_t)d.count * n_out * sizeof *out);
        st = out ? PROF_OK : PROF_E_NOMEM;
    }
    const char *tdir = argc == 8 ? argv[7] : NULL;
    struct keep k = {0};
    if (st == PROF_OK && tdir) {
        k.nt = memest_model_tensor_count(m);
        k.buf = calloc(k.nt, sizeof *k.buf);
        k.per = calloc(k.nt, sizeof *k.per);
        st = k.buf && k.per ? PROF_OK : PROF_E_NOMEM;
        const size_t ni = memest_model_input_count(m);
        for (size_t t = 0; st == PROF_OK && t < k.nt; t++) {
            const struct memest_shape sh =
                t < ni ? memest_model_input_shape_at(m, t)
                       : memest_model_layer(m, t - ni)->out_shape;
            k.per[t] = 1;
            for (unsigned a = 0; a < sh.rank; a++) {
                k.per[t] *= (size_t)sh.dim[a];
            }
            k.buf[t] = malloc((size_t)d.count * k.per[t] * sizeof(float));
            st = k.buf[t] ? PROF_OK : PROF_E_NOMEM;
        }
    }
    for (uint64_t s = 0; st == PROF_OK && s < d.count; s++) {
        const float *in = d.x + s * d.sample_count;
        const size_t n_in = (size_t)d.sample_count;
        k.sample = s;
        st = tdir ? prof_exec_run_observed(ex, &in, &n_in, 1, observe, &k)
                  : PROF_OK;
        if (st == PROF_OK) {
            st = prof_exec_run(ex, in, n_in, out + s * n_out, n_out);
        }
    }
    if (st == PROF_OK && tdir) {
        char path[4200];
        snprintf(path, sizeof path, "%s/tensors.txt", tdir);
        FILE *lf = fopen(path, "w");
        st = lf ? PROF_OK : PROF_E_IO;
        const size_t ni = memest_model_input_count(m);
        for (size_t t = 0; st == PROF_OK && t < k.nt; t++) {
            const char *name = t < ni ? memest_model_input_name(m, t)
                                      : memest_model_layer(m, t - ni)->name;
            float sc = 0;
            int32_t zp = 0;
            struct memest_quant q;
            if (have_ranges) {
                sc = r.tensors[t].scale;
                zp = r.tensors[t].zero_point;
            } else if (memest_model_tensor_quant(m, t, &q) == MEMEST_OK) {
                sc = q.scale;
                zp = q.zero_point;
            }
            fprintf(lf, "%s %.9g %d\n", name, (double)sc, (int)zp);
            /* a name may hold '/' (PyTorch's exporter: /conv1/Conv): the
             * file takes '%' there */
            const int at = snprintf(path, sizeof path, "%s/", tdir);
            snprintf(path + at, sizeof path - (size_t)at, "%s.npy", name);
            for (char *c = path + at; *c; c++) {
                *c = *c == '/' ? '%' : *c;
            }
            const uint64_t per = k.per[t];
            if (write_npy(path, k.buf[t], d.count, &per, 1,
                          (size_t)d.count * k.per[t]) != 0) {
                st = PROF_E_IO;
            }
        }
        if (lf && fclose(lf) != 0) {
            st = PROF_E_IO;
        }
    }
    for (size_t t = 0; k.buf && t < k.nt; t++) {
        free(k.buf[t]);
    }
    free(k.buf);
    free(k.per);
    int rc = st == PROF_OK ? 0 : cli_prof_failed("static int8", st, &pd);
    /* the output tensor: the last of the model's tensors */
    const size_t last = memest_model_tensor_count(m) - 1;
    float scale = 0;
    int32_t zero = 0;
    if (rc == 0) {
        if (have_ranges) {
            scale = r.tensors[last].scale;
            zero = r.tensors[last].zero_point;
        } else {
            struct memest_quant q;
            if (memest_model_tensor_quant(m, last, &q) == MEMEST_OK) {
                scale = q.scale;
                zero = q.zero_point;
            }
        }
        const struct memest_shape os = memest_model_output_shape(m);
        uint64_t odims[MEMEST_TENSOR_MAX_RANK];
        for (unsigned i = 0; i < os.rank; i++) {
            odims[i] = os.dim[i];
        }
        /* the inputs in the model's shape (the data's may differ by axes
         * of size 1), as ONNX Runtime is fed */
        const struct memest_shape is = memest_model_input_shape_at(m, 0);
        uint64_t idims[MEMEST_TENSOR_MAX_RANK];
        for (unsigned i = 0; i < is.rank; i++) {
            idims[i] = is.dim[i];
        }
        rc = write_npy(argv[5], d.x, d.count, idims, is.rank,
                       (size_t)(d.count * d.sample_count)) ||
             write_npy(argv[6], out, d.count, odims, os.rank,
                       (size_t)d.count * n_out);
    }
    if (rc == 0) {
        printf("{\"samples\": %" PRIu64 ", \"output_scale\": %.9g, "
               "\"output_zero_point\": %d, \"output\": \"%s\"}\n",
               d.count, (double)scale, (int)zero,
               memest_model_layer(m, last - memest_model_input_count(m))
                   ->name);
    }
    free(out);
    prof_exec_destroy(ex);
    prof_ranges_finish(&r);
    prof_dataset_finish(&d);
    memest_model_destroy(m);
    return rc;
}
