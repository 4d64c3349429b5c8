/* Charts: each PNG is decoded with libpng and checked as a reader would
 * see it: its size and resolution chunks, its text chunks, that bars stand
 * where their values say (pixel columns of the bar colour inside the plot,
 * heights in proportion), that roofline points fall on their side of the
 * knee, and that nothing is drawn on the image's outer border (a clipped
 * label would be). Set EDGEFIT_CHART_OUT=DIR to keep the PNGs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edgefit/artifacts.h"

static char tmpdir[] = "/tmp/edgefit-chart-XXXXXX";

struct image {
    unsigned w, h;
    unsigned char *rgb; /* w * h * 3 */
    png_uint_32 res_x, res_y;
    int res_unit;
    char title[256];
    char software[64];
};

static void image_free(struct image *im)
{
    free(im->rgb);
    im->rgb = NULL;
}

/* Decode an RGB or RGBA 8-bit PNG completely with libpng. */
static void decode(const char *path, struct image *im)
{
    memset(im, 0, sizeof *im);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL,
                                             NULL, NULL);
    assert_non_null(png);
    png_infop info = png_create_info_struct(png);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(png))) {
        fail_msg("libpng could not decode %s", path);
    }
    png_init_io(png, f);
    png_read_info(png, info);
    im->w = png_get_image_width(png, info);
    im->h = png_get_image_height(png, info);
    assert_int_equal(png_get_bit_depth(png, info), 8);
    assert_int_equal(png_get_color_type(png, info), PNG_COLOR_TYPE_RGB);
    assert_true(png_get_pHYs(png, info, &im->res_x, &im->res_y,
                             &im->res_unit) != 0);
    png_textp text;
    int n_text = 0;
    png_get_text(png, info, &text, &n_text);
    for (int i = 0; i < n_text; i++) {
        if (strcmp(text[i].key, "Title") == 0) {
            snprintf(im->title, sizeof im->title, "%s", text[i].text);
        } else if (strcmp(text[i].key, "Software") == 0) {
            snprintf(im->software, sizeof im->software, "%s", text[i].text);
        }
    }
    im->rgb = malloc((size_t)im->w * im->h * 3);
    assert_non_null(im->rgb);
    for (unsigned y = 0; y < im->h; y++) {
        png_read_row(png, im->rgb + (size_t)y * im->w * 3, NULL);
    }
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
}

static const unsigned char *px(const struct image *im, unsigned x,
                               unsigned y)
{
    return im->rgb + ((size_t)y * im->w + x) * 3;
}

static bool is_color(const struct image *im, unsigned x, unsigned y,
                     const unsigned char rgb[3])
{
    const unsigned char *p = px(im, x, y);
    return p[0] == rgb[0] && p[1] == rgb[1] && p[2] == rgb[2];
}

/* Nothing on the two outermost rows and columns: no text runs off. */
static void assert_border_white(const struct image *im)
{
    for (unsigned y = 0; y < im->h; y++) {
        for (unsigned x = 0; x < im->w; x++) {
            if (x >= 2 && x + 2 < im->w && y >= 2 && y + 2 < im->h) {
                continue;
            }
            const unsigned char *p = px(im, x, y);
            if (p[0] != 255 || p[1] != 255 || p[2] != 255) {
                fail_msg("ink on the border at (%u, %u)", x, y);
            }
        }
    }
}

/* Write the chart, decode it and check what every chart has. */
static void save_and_decode(const struct art_chart *c, const char *name,
                            struct image *im)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    assert_int_equal(art_chart_save(c, path, NULL), ART_OK);
    const char *keep = getenv("EDGEFIT_CHART_OUT");
    if (keep && *keep) {
        char dst[512];
        snprintf(dst, sizeof dst, "%s/%s", keep, name);
        art_chart_save(c, dst, NULL);
    }
    decode(path, im);
    unlink(path);
    const unsigned w = c->width_px ? c->width_px : 1260;
    const unsigned h = c->height_px ? c->height_px : 900;
    assert_int_equal(im->w, w);
    assert_int_equal(im->h, h);
    /* 180 DPI = 180 / 0.0254 = 7086.6 -> 7087 pixels per metre */
    assert_int_equal(im->res_unit, PNG_RESOLUTION_METER);
    assert_int_equal(im->res_x, 7087);
    assert_int_equal(im->res_y, 7087);
    assert_string_equal(im->title, c->title);
    assert_true(strncmp(im->software, "edgefit ", 8) == 0);
    assert_border_white(im);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    return rmdir(tmpdir);
}

static void test_ticks(void **state)
{
    (void)state;
    double t[64];
    /* 0..1: step 0.2 (1/6 = 0.167 rounds up to the 1-2-5 step 0.2) */
    size_t n = art_chart_ticks(0, 1, ART_SCALE_LINEAR, t, 64);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_true(t[i] == 0.2 * (double)i || fabs(t[i] - 0.2 * i) < 1e-15);
    }
    /* 0..730: step 200 (121.7 -> 200), ticks 0 200 400 600 */
    n = art_chart_ticks(0, 730, ART_SCALE_LINEAR, t, 64);
    assert_int_equal(n, 4);
    assert_true(t[3] == 600);
    /* -3..12: step 5 (2.5 -> 5): -0 is 0 */
    n = art_chart_ticks(-3, 12, ART_SCALE_LINEAR, t, 64);
    assert_int_equal(n, 3);
    assert_true(t[0] == 0 && t[1] == 5 && t[2] == 10);
    /* log: the decades inside, each exactly a power of ten */
    n = art_chart_ticks(0.01, 1000, ART_SCALE_LOG, t, 64);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++) {
        assert_true(fabs(t[i] / pow(10, (double)i - 2) - 1) < 1e-12);
    }
    n = art_chart_ticks(3, 700, ART_SCALE_LOG, t, 64);
    assert_int_equal(n, 2);
    assert_true(t[0] == 10 && t[1] == 100);
    /* 30 decades: every third, so never more than ten ticks */
    n = art_chart_ticks(1e-15, 1e15, ART_SCALE_LOG, t, 64);
    assert_true(n <= 11 && n >= 5);
    assert_int_equal(art_chart_ticks(0, 10, ART_SCALE_LOG, t, 64), 0);
    assert_int_equal(art_chart_ticks(5, 5, ART_SCALE_LINEAR, t, 64), 0);
}

/* Runs of columns holding the colour inside the plot: one per bar. For
 * each, the highest pixel row of the colour. */
struct bar_px {
    unsigned x0, x1, top, bottom;
};

static size_t find_bars(const struct image *im,
                        const struct art_chart_layout *l,
                        const unsigned char rgb[3], struct bar_px *out,
                        size_t cap)
{
    size_t n = 0;
    bool in = false;
    const unsigned y0 = (unsigned)ceil(l->plot_y);
    const unsigned y1 = (unsigned)floor(l->plot_y + l->plot_h);
    for (unsigned x = (unsigned)ceil(l->plot_x);
         x < (unsigned)(l->plot_x + l->plot_w); x++) {
        unsigned top = UINT32_MAX, bottom = 0;
        for (unsigned y = y0; y <= y1; y++) {
            if (is_color(im, x, y, rgb)) {
                top = y < top ? y : top;
                bottom = y;
            }
        }
        if (top != UINT32_MAX) {
            if (!in) {
                assert_true(n < cap);
                out[n++] = (struct bar_px){x, x, top, bottom};
                in = true;
            }
            struct bar_px *b = &out[n - 1];
            b->x1 = x;
            b->top = top < b->top ? top : b->top;
            b->bottom = bottom > b->bottom ? bottom : b->bottom;
        } else {
            in = false;
        }
    }
    return n;
}

static void test_bars(void **state)
{
    (void)state;
    const char *cats[] = {"input", "conv1", "pool1", "conv2", "dense1"};
    const double mb[] = {0.75, 2.0, 0.5, 1.25, 0.0390625};
    struct art_series s = {.name = "batch 32", .n = 5, .y = mb};
    struct art_chart c = {
        .kind = ART_CHART_BAR, .title = "Layer-wise Activation Memory",
        .x_label = "Layer", .y_label = "Activation Memory (MB)",
        .categories = cats, .n_categories = 5, .series = &s, .n_series = 1,
        .value_labels = true};
    struct art_chart_layout l;
    assert_int_equal(art_chart_layout(&c, &l), ART_OK);
    /* 2.0 rounds to an axis from 0 to 2.0 exactly (step 0.5) */
    assert_true(l.y_lo == 0);
    assert_true(l.y_hi >= 2.0 && l.y_hi <= 2.5);
    struct image im;
    save_and_decode(&c, "bars.png", &im);
    unsigned char rgb[3];
    art_chart_color(0, rgb);
    struct bar_px bars[16];
    const size_t n = find_bars(&im, &l, rgb, bars, 16);
    assert_int_equal(n, 5);
    const double slot = l.plot_w / 5;
    const double base = l.plot_y + l.plot_h;
    for (size_t i = 0; i < n; i++) {
        /* centred in its category */
        const double centre = (bars[i].x0 + bars[i].x1 + 1) / 2.0;
        assert_true(fabs(centre - (l.plot_x + (i + 0.5) * slot)) < 2.0);
        /* height in proportion to the value on the axis: plot height *
         * value / y_hi, to a pixel */
        const double want = l.plot_h * mb[i] / l.y_hi;
        const double got = base - bars[i].top;
        if (fabs(got - want) > 1.5) {
            fail_msg("bar %zu: %.1f px tall, want %.1f", i, got, want);
        }
    }
    image_free(&im);

    /* Two series side by side, heights in proportion within each */
    const double macs[] = {0, 1.8, 0, 9.6, 0.05};
    struct art_series two[] = {
        {.name = "fp32", .n = 5, .y = mb},
        {.name = "int8", .n = 5, .y = macs}};
    c.series = two;
    c.n_series = 2;
    c.value_labels = false;
    c.title = "Two series";
    assert_int_equal(art_chart_layout(&c, &l), ART_OK);
    save_and_decode(&c, "bars2.png", &im);
    unsigned char rgb1[3];
    art_chart_color(1, rgb1);
    const size_t n1 = find_bars(&im, &l, rgb1, bars, 16);
    assert_int_equal(n1, 3); /* the zero bars have no height */
    const double v1[] = {1.8, 9.6, 0.05};
    for (size_t i = 0; i < n1; i++) {
        const double got = l.plot_y + l.plot_h - bars[i].top;
        assert_true(fabs(got - l.plot_h * v1[i] / l.y_hi) <= 1.5);
    }
    image_free(&im);
}

static void test_long_names(void **state)
{
    (void)state;
    /* Names far wider than their slot: rotated, never off the image. */
    const char *cats[] = {
        "input", "features.0.depthwise_conv_with_a_long_name",
        "features.0.pointwise", "classifier.dense_output_projection",
        "x", "features.1.depthwise_conv_with_a_much_much_longer_name_still",
        "pool", "head"};
    const double v[] = {1, 2, 3, 4, 5, 6, 7, 8};
    struct art_series s = {.n = 8, .y = v};
    struct art_chart c = {
        .kind = ART_CHART_BAR, .title = "Layer-wise Compute Estimate",
        .x_label = "Layer", .y_label = "MACs (Millions)",
        .categories = cats, .n_categories = 8, .series = &s, .n_series = 1,
        .value_labels = true};
    struct image im;
    save_and_decode(&c, "long_names.png", &im);
    image_free(&im);
    /* A long first name widens the left margin instead of leaving. */
    const char *first[] = {"a_first_layer_with_an_extremely_long_name_x", "b"};
    struct art_series s2 = {.n = 2, .y = v};
    c.categories = first;
    c.n_categories = 2;
    c.series = &s2;
    c.width_px = 600;
    c.height_px = 400;
    save_and_decode(&c, "long_first.png", &im);
    image_free(&im);
}

/* Centre of the pixels of a colour inside the plot. */
static bool centroid(const struct image *im, const struct art_chart_layout *l,
                     const unsigned char rgb[3], double *cx, double *cy)
{
    double sx = 0, sy = 0;
    size_t n = 0;
    for (unsigned y = (unsigned)l->plot_y; y < l->plot_y + l->plot_h; y++) {
        for (unsigned x = (unsigned)l->plot_x; x < l->plot_x + l->plot_w;
             x++) {
            if (is_color(im, x, y, rgb)) {
                sx += x + 0.5;
                sy += y + 0.5;
                n++;
            }
        }
    }
    if (n == 0) {
        return false;
    }
    *cx = sx / n;
    *cy = sy / n;
    return true;
}

static double log_px(double v, double lo, double hi, double p0, double len)
{
    return p0 + (log10(v) - log10(lo)) / (log10(hi) - log10(lo)) * len;
}

static void test_roofline(void **state)
{
    (void)state;
    /* Roof: 4 GB/s, 13.5 GMAC/s: knee 3.375 MAC/byte. One point each side
     * of it per series, in separate series so each has its own colour. */
    const struct art_roof roof = {"device: 4 GB/s, 13.5 GMAC/s", 4, 13.5};
    const double hx[] = {0.25}, hy[] = {0.8};
    const double dx[] = {20}, dy[] = {13.5};
    const char *hl[] = {"dense2 (host)"}, *dl[] = {"conv1 (device)"};
    struct art_series s[] = {
        {.name = "measured on the host", .n = 1, .x = hx, .y = hy,
         .labels = hl, .marker = ART_MARKER_CIRCLE},
        {.name = "predicted on the device", .n = 1, .x = dx, .y = dy,
         .labels = dl, .marker = ART_MARKER_SQUARE}};
    struct art_chart c = {
        .kind = ART_CHART_ROOFLINE, .title = "Roofline",
        .x_label = "Arithmetic intensity (MAC/byte)",
        .y_label = "Throughput (GMAC/s)", .series = s, .n_series = 2,
        .roofs = &roof, .n_roofs = 1};
    struct art_chart_layout l;
    assert_int_equal(art_chart_layout(&c, &l), ART_OK);
    /* log axes on decades around the knee and every point */
    assert_true(fabs(log10(l.x_lo) - round(log10(l.x_lo))) < 1e-12);
    assert_true(l.x_lo <= 0.25 && l.x_hi >= 33.75);
    assert_true(l.y_hi >= 13.5);
    struct image im;
    save_and_decode(&c, "roofline.png", &im);
    const double knee_px = log_px(13.5 / 4, l.x_lo, l.x_hi, l.plot_x,
                                  l.plot_w);
    unsigned char c0[3], c1[3];
    art_chart_color(0, c0);
    art_chart_color(1, c1);
    double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    assert_true(centroid(&im, &l, c0, &x0, &y0));
    assert_true(centroid(&im, &l, c1, &x1, &y1));
    assert_true(x0 < knee_px);
    assert_true(x1 > knee_px);
    /* and where the log scale puts them */
    assert_true(fabs(x0 - log_px(0.25, l.x_lo, l.x_hi, l.plot_x, l.plot_w)) <
                2);
    assert_true(fabs(x1 - log_px(20, l.x_lo, l.x_hi, l.plot_x, l.plot_w)) <
                2);
    const double ypx = l.plot_y + l.plot_h -
                       (log_px(0.8, l.y_lo, l.y_hi, 0, l.plot_h));
    assert_true(fabs(y0 - ypx) < 2);
    /* The roof's flat part starts at the knee: along the ceiling's row,
     * the dark roof pixels begin within two pixels of knee_px. */
    const unsigned ceil_y = (unsigned)lround(
        l.plot_y + l.plot_h - log_px(13.5, l.y_lo, l.y_hi, 0, l.plot_h) -
        0.5);
    unsigned first = 0;
    for (unsigned x = (unsigned)l.plot_x + 2; x < l.plot_x + l.plot_w; x++) {
        const unsigned char *p = px(&im, x, ceil_y);
        if (p[0] < 90 && p[0] == p[1] && p[1] == p[2]) {
            first = x;
            break;
        }
    }
    assert_true(first > 0);
    assert_true(fabs(first - knee_px) < 4);
    image_free(&im);
}

static void test_lines(void **state)
{
    (void)state;
    const double ep[] = {1, 2, 3, 4, 5};
    const double tr[] = {0.61, 0.42, 0.37, 0.33, 0.31};
    const double te[] = {0.48, 0.41, 0.40, NAN, 0.36};
    struct art_series s[] = {
        {.name = "train loss", .n = 5, .x = ep, .y = tr},
        {.name = "test loss", .n = 5, .x = ep, .y = te, .dashed = true,
         .marker = ART_MARKER_SQUARE}};
    struct art_chart c = {
        .kind = ART_CHART_LINE, .title = "Training loss", .x_label = "Epoch",
        .y_label = "Loss (cross-entropy)", .series = s, .n_series = 2};
    struct image im;
    save_and_decode(&c, "lines.png", &im);
    image_free(&im);
    /* Loss scale on a log axis with skipped steps marked. */
    const double step[] = {0, 120, 121, 400, 2000, 2001};
    const double scale[] = {1024, 512, 256, 512, 1024, 512};
    const double skx[] = {120, 121, 2001}, sky[] = {1024, 512, 1024};
    struct art_series ls[] = {
        {.name = "loss scale", .n = 6, .x = step, .y = scale,
         .style = ART_STYLE_STEP},
        {.name = "skipped step (overflow)", .n = 3, .x = skx, .y = sky,
         .style = ART_STYLE_POINTS, .marker = ART_MARKER_CROSS, .color = 4}};
    struct art_chart lc = {
        .kind = ART_CHART_LINE, .title = "fp16 loss scale",
        .x_label = "Training step", .y_label = "Loss scale",
        .y_scale = ART_SCALE_LOG, .series = ls, .n_series = 2};
    struct art_chart_layout l;
    assert_int_equal(art_chart_layout(&lc, &l), ART_OK);
    assert_true(l.y_lo == 100 && l.y_hi == 10000);
    save_and_decode(&lc, "loss_scale.png", &im);
    /* the red crosses are there */
    unsigned char red[3];
    art_chart_color(3, red);
    double cx, cy;
    assert_true(centroid(&im, &l, red, &cx, &cy));
    image_free(&im);
}

static void test_scatter(void **state)
{
    (void)state;
    const double lat[] = {0.02, 0.11, 0.35, 0.05, 0.3};
    const double acc[] = {0.861, 0.862, 0.861, 0.855, 0.82};
    const char *lab[] = {"fp32 b1", "fp32 b8", "fp32 b32", "int8 b1",
                         "int8 b32"};
    const double rl[] = {0.9, 1.4}, ra[] = {0.86, 0.79};
    const char *rlab[] = {"bf16 b32", "int8 b8"};
    struct art_series s[] = {
        {.name = "accepted", .n = 5, .x = lat, .y = acc, .labels = lab},
        {.name = "rejected", .n = 2, .x = rl, .y = ra, .labels = rlab,
         .hollow = true, .color = 4}};
    struct art_chart c = {
        .kind = ART_CHART_SCATTER, .title = "Precision trade-offs",
        .x_label = "Latency per batch (ms)", .y_label = "Test accuracy",
        .x_scale = ART_SCALE_LOG, .series = s, .n_series = 2};
    struct image im;
    save_and_decode(&c, "scatter.png", &im);
    image_free(&im);
}

/* Error bars are data: the y axis holds every bar whole (two accuracies
 * 0.0015 apart with a standard error of 0.01 are not drawn on an axis of
 * 0.0015), and they are drawn (a bar's pixels in the series' colour
 * above the marker, where nothing else is). */
static void test_error_bars(void **state)
{
    (void)state;
    const double lat[] = {0.1, 1.0}, acc[] = {0.8600, 0.8615};
    const double se[] = {0.01, 0.01};
    struct art_series s = {.name = "fp32", .n = 2, .x = lat, .y = acc};
    struct art_chart c = {
        .kind = ART_CHART_SCATTER, .title = "Precision trade-offs",
        .x_label = "Latency per batch (ms)", .y_label = "Test accuracy",
        .x_scale = ART_SCALE_LOG, .series = &s, .n_series = 1};
    struct art_chart_layout bare, l;
    assert_int_equal(art_chart_layout(&c, &bare), ART_OK);
    assert_true(bare.y_hi - bare.y_lo < 0.005);
    s.y_err = se;
    assert_int_equal(art_chart_layout(&c, &l), ART_OK);
    assert_true(l.y_lo <= 0.8600 - 0.01 && l.y_hi >= 0.8615 + 0.01);
    struct image im;
    save_and_decode(&c, "errorbars.png", &im);
    /* halfway up the first point's upper bar */
    const double ym = 0.8600 + 0.006;
    const double x = l.plot_x + l.plot_w * (log10(0.1) - log10(l.x_lo)) /
                                    (log10(l.x_hi) - log10(l.x_lo));
    const double y = l.plot_y + l.plot_h * (l.y_hi - ym) / (l.y_hi - l.y_lo);
    bool inked = false;
    for (int dx = -1; dx <= 1; dx++) {
        const unsigned char *px =
            im.rgb + 3 * ((size_t)y * im.w + (size_t)(x + dx));
        inked = inked || px[0] < 200 || px[1] < 200 || px[2] < 200;
    }
    assert_true(inked);
    image_free(&im);
}

/* Two panels side by side: one image of the figure's size and title, each
 * panel's series drawn in its own half. */
static void test_figure(void **state)
{
    (void)state;
    const double ep[] = {1, 2, 3}, loss[] = {0.9, 0.5, 0.4},
                 acc[] = {0.7, 0.8, 0.85};
    struct art_series ls = {.name = "train", .n = 3, .x = ep, .y = loss};
    struct art_series as = {.name = "train", .n = 3, .x = ep, .y = acc,
                            .color = 2}; /* palette 1 */
    const struct art_chart panels[] = {
        {.kind = ART_CHART_LINE, .title = "Loss", .x_label = "Epoch",
         .y_label = "Loss", .series = &ls, .n_series = 1},
        {.kind = ART_CHART_LINE, .title = "Accuracy", .x_label = "Epoch",
         .y_label = "Accuracy", .series = &as, .n_series = 1},
    };
    const struct art_figure fig = {.title = "Training curves",
                                   .panels = panels, .n_panels = 2};
    char path[512];
    snprintf(path, sizeof path, "%s/figure.png", tmpdir);
    assert_int_equal(art_figure_save(&fig, path, NULL), ART_OK);
    const char *keep = getenv("EDGEFIT_CHART_OUT");
    if (keep && *keep) {
        char dst[512];
        snprintf(dst, sizeof dst, "%s/figure.png", keep);
        art_figure_save(&fig, dst, NULL);
    }
    struct image im;
    decode(path, &im);
    unlink(path);
    assert_int_equal(im.w, 1260);
    assert_int_equal(im.h, 900);
    assert_int_equal(im.res_x, 7087);
    assert_string_equal(im.title, "Training curves");
    assert_border_white(&im);
    unsigned char c0[3], c1[3];
    art_chart_color(0, c0);
    art_chart_color(1, c1);
    size_t left0 = 0, right0 = 0, left1 = 0, right1 = 0;
    for (unsigned y = 0; y < im.h; y++) {
        for (unsigned x = 0; x < im.w; x++) {
            const bool left = x < im.w / 2;
            if (is_color(&im, x, y, c0)) {
                left ? left0++ : right0++;
            }
            if (is_color(&im, x, y, c1)) {
                left ? left1++ : right1++;
            }
        }
    }
    assert_true(left0 > 50 && right0 == 0);
    assert_true(right1 > 50 && left1 == 0);
    image_free(&im);
    /* panels narrower than 200 px are refused */
    const struct art_figure narrow = {.title = "t", .panels = panels,
                                      .n_panels = 2, .width_px = 300};
    assert_int_equal(art_figure_save(&narrow, path, NULL), ART_E_RANGE);
    assert_int_equal(access(path, F_OK), -1);
}

static void test_errors(void **state)
{
    (void)state;
    struct art_chart_layout l;
    const char *cats[] = {"a", "b"};
    const double neg[] = {1, -1}, ok[] = {1, 2}, inf[] = {1, INFINITY};
    struct art_series s = {.n = 2, .y = neg};
    struct art_chart c = {.kind = ART_CHART_BAR, .title = "t",
                          .categories = cats, .n_categories = 2,
                          .series = &s, .n_series = 1};
    assert_int_equal(art_chart_layout(&c, &l), ART_E_RANGE);
    s.y = inf;
    assert_int_equal(art_chart_layout(&c, &l), ART_E_RANGE);
    s.y = ok;
    assert_int_equal(art_chart_layout(&c, &l), ART_OK);
    s.n = 1;
    assert_int_equal(art_chart_layout(&c, &l), ART_E_INVALID);
    s.n = 2;
    c.title = NULL;
    assert_int_equal(art_chart_layout(&c, &l), ART_E_INVALID);
    c.title = "t";
    c.width_px = 100;
    assert_int_equal(art_chart_layout(&c, &l), ART_E_RANGE);
    c.width_px = 0;
    c.kind = (enum art_chart_kind)99;
    assert_int_equal(art_chart_layout(&c, &l), ART_E_INVALID);
    /* a roofline needs sane roofs */
    const struct art_roof bad = {"r", 0, 10};
    struct art_chart r = {.kind = ART_CHART_ROOFLINE, .title = "r",
                          .roofs = &bad, .n_roofs = 1};
    assert_int_equal(art_chart_layout(&r, &l), ART_E_RANGE);
    r.n_roofs = 0;
    assert_int_equal(art_chart_layout(&r, &l), ART_E_INVALID);
    /* points that cannot be drawn on log axes: nothing to plot */
    const double x[] = {-1, 0}, y[] = {1, 2};
    struct art_series ls = {.n = 2, .x = x, .y = y};
    struct art_chart lc = {.kind = ART_CHART_LINE, .title = "l",
                           .x_scale = ART_SCALE_LOG, .series = &ls,
                           .n_series = 1};
    assert_int_equal(art_chart_layout(&lc, &l), ART_E_RANGE);
    /* a failed save leaves no file; a bundle refuses a bad chart now */
    char path[512];
    snprintf(path, sizeof path, "%s/bad.png", tmpdir);
    assert_int_equal(art_chart_save(&lc, path, NULL), ART_E_RANGE);
    assert_int_equal(access(path, F_OK), -1);
    art_bundle *b = NULL;
    assert_int_equal(art_bundle_create(tmpdir, &b), ART_OK);
    assert_int_equal(art_bundle_add_chart(b, "bad.png", &lc), ART_E_RANGE);
    c.kind = ART_CHART_BAR;
    assert_int_equal(art_bundle_add_chart(b, "good.png", &c), ART_OK);
    assert_int_equal(art_bundle_commit(b, NULL), ART_OK);
    snprintf(path, sizeof path, "%s/good.png", tmpdir);
    struct image im;
    decode(path, &im);
    assert_int_equal(im.w, 1260);
    image_free(&im);
    unlink(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ticks),
        cmocka_unit_test(test_bars),
        cmocka_unit_test(test_long_names),
        cmocka_unit_test(test_roofline),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_scatter),
        cmocka_unit_test(test_error_bars),
        cmocka_unit_test(test_figure),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
