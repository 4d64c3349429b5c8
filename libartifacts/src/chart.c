/* Charts drawn with cairo: bars, lines, scatters and a log-log roofline.
 *
 * Everything is laid out before anything is drawn: the axis ranges and
 * ticks, then the margins that the title, legend, tick labels and axis
 * labels need (measured with the chart font), so that no text leaves the
 * image. Sizes are in pixels scaled with the image height, so a chart of
 * another size keeps its proportions. */
#include <cairo.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "internal.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

#define FONT "DejaVu Sans"
#define DEFAULT_W 1260u
#define DEFAULT_H 900u
#define MAX_TICKS 64
#define LABEL_MAX 160
#define PI 3.14159265358979323846 /* M_PI is not C11 */

/* The palette of the series: readable on white, told apart in print. */
static const unsigned char palette[][3] = {
    {31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
    {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
    {188, 189, 34}, {23, 190, 207},
};
#define PALETTE_N (sizeof palette / sizeof palette[0])

ART_API void art_chart_color(int i, unsigned char rgb[3])
{
    size_t k = (size_t)(i < 0 ? -(long)i : i) % PALETTE_N;
    memcpy(rgb, palette[k], 3);
}

static void set_color(cairo_t *cr, int i)
{
    unsigned char rgb[3];
    art_chart_color(i, rgb);
    cairo_set_source_rgb(cr, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
}

static int series_color(const struct art_series *s, size_t idx)
{
    return s->color > 0 ? s->color - 1 : (int)idx;
}

/* ---- Ticks --------------------------------------------------------------- */

/* The 1-2-5 step giving at most about `want` intervals over span. */
static double nice_step(double span, double want)
{
    const double raw = span / want;
    const double p = pow(10.0, floor(log10(raw)));
    const double m = raw / p;
    if (m <= 1.0) {
        return p;
    }
    if (m <= 2.0) {
        return 2.0 * p;
    }
    if (m <= 5.0) {
        return 5.0 * p;
    }
    return 10.0 * p;
}

ART_API size_t art_chart_ticks(double lo, double hi, enum art_scale scale,
                               double *out, size_t cap)
{
    if (!isfinite(lo) || !isfinite(hi) || hi <= lo) {
        return 0;
    }
    size_t n = 0;
    if (scale == ART_SCALE_LOG) {
        if (lo <= 0) {
            return 0;
        }
        /* Every decade, or every k-th when there are more than ten. */
        const int e0 = (int)ceil(log10(lo) - 1e-9);
        const int e1 = (int)floor(log10(hi) + 1e-9);
        const int k = (e1 - e0) / 10 + 1;
        for (int e = e0; e <= e1; e += k) {
            if (n < cap) {
                out[n] = pow(10.0, e);
            }
            n++;
        }
        return n;
    }
    const double step = nice_step(hi - lo, 6.0);
    const double first = ceil(lo / step - 1e-9);
    const double last = floor(hi / step + 1e-9);
    for (double k = first; k <= last; k += 1.0) {
        if (n < cap) {
            /* k * step, not an accumulated sum: no drift (0.30000004) */
            double v = k * step;
            out[n] = fabs(v) < step * 1e-9 ? 0.0 : v;
        }
        n++;
    }
    return n;
}

/* A tick value as text: as few decimals as the step needs on a linear
 * axis; on a log axis plain numbers from 0.001 to 100000, else 1e6. */
static void tick_text(double v, enum art_scale scale, double step, char *buf,
                      size_t len)
{
    if (scale == ART_SCALE_LOG) {
        const int e = (int)lround(log10(v));
        if (e >= -3 && e <= 5) {
            snprintf(buf, len, "%.*f", e < 0 ? -e : 0, v);
        } else {
            snprintf(buf, len, "1e%d", e);
        }
        return;
    }
    const double a = fabs(v);
    if (a != 0 && (a >= 1e7 || step < 1e-5)) {
        snprintf(buf, len, "%g", v);
        return;
    }
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    /* a step of 2.5 or 0.25 never occurs (1-2-5), so this is exact */
    snprintf(buf, len, "%.*f", dec, v);
}

/* A value printed above a bar: three significant digits. */
static void value_text(double v, char *buf, size_t len)
{
    if (fabs(v) >= 1000 && fabs(v) < 1e9) {
        snprintf(buf, len, "%.0f", v);
    } else {
        snprintf(buf, len, "%.3g", v);
    }
}

/* ---- Layout -------------------------------------------------------------- */

struct axis {
    enum art_scale scale;
    double lo, hi;
    double ticks[MAX_TICKS];
    size_t n_ticks;
    double step; /* linear tick step */
};

struct legend_item {
    const char *text;
    int color;
    enum art_marker marker;
    bool hollow, dashed, line, bar, roof;
};

struct plan {
    const struct art_chart *c;
    double w, h, s;           /* image size, scale against 900 px */
    double f_title, f_label, f_tick, f_small; /* font sizes in px */
    struct axis x, y;
    double px, py, pw, ph;    /* plot rectangle */
    /* bar category labels as drawn (maybe shortened), and their angle */
    char (*cats)[LABEL_MAX];
    bool rotate;
    /* legend */
    struct legend_item *items;
    size_t n_items;
    double legend_y, legend_row_h;
    size_t legend_rows;
};

static void font(cairo_t *cr, double px, bool bold)
{
    cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL,
                           bold ? CAIRO_FONT_WEIGHT_BOLD
                                : CAIRO_FONT_WEIGHT_NORMAL);
    cairo_set_font_size(cr, px);
}

static double text_w(cairo_t *cr, const char *t)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, t, &e);
    return e.x_advance;
}

static bool usable(double v, enum art_scale scale)
{
    return isfinite(v) && (scale != ART_SCALE_LOG || v > 0);
}

/* Widen [lo, hi] (data) to round values on the axis's scale. */
static void axis_round(struct axis *a, double lo, double hi, bool from_zero)
{
    if (a->scale == ART_SCALE_LOG) {
        if (!(lo > 0)) {
            lo = hi > 0 ? hi / 10 : 1;
        }
        double l = pow(10.0, floor(log10(lo) + 1e-9));
        double u = pow(10.0, ceil(log10(hi) - 1e-9));
        if (u <= l) {
            u = l * 10;
        }
        a->lo = l;
        a->hi = u;
    } else {
        if (from_zero) {
            lo = fmin(lo, 0);
        }
        if (hi <= lo) {
            const double d = lo == 0 ? 1 : fabs(lo) * 0.1;
            lo -= from_zero && lo == 0 ? 0 : d;
            hi += d;
        }
        const double step = nice_step(hi - lo, 6.0);
        a->lo = floor(lo / step + 1e-9) * step;
        a->hi = ceil(hi / step - 1e-9) * step;
        if (a->hi <= a->lo) {
            a->hi = a->lo + step;
        }
        a->step = step;
    }
    size_t n = art_chart_ticks(a->lo, a->hi, a->scale, a->ticks, MAX_TICKS);
    a->n_ticks = n < MAX_TICKS ? n : MAX_TICKS;
}

static double map(const struct axis *a, double v, double p0, double len)
{
    double t;
    if (a->scale == ART_SCALE_LOG) {
        t = (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    } else {
        t = (v - a->lo) / (a->hi - a->lo);
    }
    return p0 + t * len;
}

static double map_x(const struct plan *p, double v)
{
    return map(&p->x, v, p->px, p->pw);
}

static double map_y(const struct plan *p, double v)
{
    return p->py + p->ph - (map(&p->y, v, 0, p->ph));
}

static int check_spec(const struct art_chart *c)
{
    if (!c || !c->title || !*c->title) {
        return ART_E_INVALID;
    }
    if (c->kind < ART_CHART_BAR || c->kind > ART_CHART_ROOFLINE) {
        return ART_E_INVALID;
    }
    if (c->n_series > 0 && !c->series) {
        return ART_E_INVALID;
    }
    if (c->kind != ART_CHART_ROOFLINE && c->n_series == 0) {
        return ART_E_INVALID;
    }
    const unsigned w = c->width_px ? c->width_px : DEFAULT_W;
    const unsigned h = c->height_px ? c->height_px : DEFAULT_H;
    if (w < 200 || h < 150 || w > 8000 || h > 8000) {
        return ART_E_RANGE;
    }
    if (c->kind == ART_CHART_BAR) {
        if (c->n_categories == 0 || !c->categories) {
            return ART_E_INVALID;
        }
        for (size_t i = 0; i < c->n_categories; i++) {
            if (!c->categories[i]) {
                return ART_E_INVALID;
            }
        }
    }
    for (size_t i = 0; i < c->n_series; i++) {
        const struct art_series *s = &c->series[i];
        if (s->n > 0 && !s->y) {
            return ART_E_INVALID;
        }
        if (c->kind == ART_CHART_BAR) {
            if (s->n != c->n_categories) {
                return ART_E_INVALID;
            }
            for (size_t k = 0; k < s->n; k++) {
                if (!isfinite(s->y[k]) || s->y[k] < 0) {
                    return ART_E_RANGE;
                }
            }
        } else if (s->n > 0 && !s->x) {
            return ART_E_INVALID;
        }
    }
    if (c->kind == ART_CHART_ROOFLINE) {
        if (c->n_roofs == 0 || !c->roofs) {
            return ART_E_INVALID;
        }
        for (size_t i = 0; i < c->n_roofs; i++) {
            const struct art_roof *r = &c->roofs[i];
            if (!isfinite(r->slope) || !isfinite(r->ceiling) ||
                r->slope <= 0 || r->ceiling <= 0) {
                return ART_E_RANGE;
            }
        }
    }
    return ART_OK;
}

/* The data ranges of the axes, before rounding. */
static int data_ranges(struct plan *p)
{
    const struct art_chart *c = p->c;
    double xl = INFINITY, xh = -INFINITY, yl = INFINITY, yh = -INFINITY;
    if (c->kind == ART_CHART_BAR) {
        for (size_t i = 0; i < c->n_series; i++) {
            for (size_t k = 0; k < c->series[i].n; k++) {
                const double v = c->series[i].y[k];
                if (usable(v, p->y.scale)) {
                    yl = fmin(yl, v);
                    yh = fmax(yh, v);
                }
            }
        }
        if (!(yh >= yl)) {
            /* every bar 0 on a linear axis still plots (at zero) */
            if (p->y.scale == ART_SCALE_LOG) {
                return ART_E_RANGE;
            }
            yl = yh = 0;
        }
        p->x.scale = ART_SCALE_LINEAR;
        p->x.lo = 0;
        p->x.hi = (double)c->n_categories;
        p->x.n_ticks = 0;
        /* room above the tallest bar for its value */
        if (c->value_labels && p->y.scale == ART_SCALE_LINEAR) {
            yh *= 1.08;
        }
        axis_round(&p->y, yl, yh, p->y.scale == ART_SCALE_LINEAR);
        return ART_OK;
    }
    for (size_t i = 0; i < c->n_series; i++) {
        const struct art_series *s = &c->series[i];
        for (size_t k = 0; k < s->n; k++) {
            if (usable(s->x[k], p->x.scale) && usable(s->y[k], p->y.scale)) {
                xl = fmin(xl, s->x[k]);
                xh = fmax(xh, s->x[k]);
                yl = fmin(yl, s->y[k]);
                yh = fmax(yh, s->y[k]);
                /* an error bar is data too: the axis holds it whole */
                const double e = s->y_err ? fabs(s->y_err[k]) : NAN;
                if (isfinite(e) && usable(s->y[k] - e, p->y.scale)) {
                    yl = fmin(yl, s->y[k] - e);
                    yh = fmax(yh, s->y[k] + e);
                }
            }
        }
    }
    if (c->kind == ART_CHART_ROOFLINE) {
        /* show each knee with a decade either side, and the ceilings */
        for (size_t i = 0; i < c->n_roofs; i++) {
            const double knee = c->roofs[i].ceiling / c->roofs[i].slope;
            xl = fmin(xl, knee / 10);
            xh = fmax(xh, knee * 10);
            yh = fmax(yh, c->roofs[i].ceiling * 1.5);
        }
        for (size_t i = 0; i < c->n_roofs; i++) {
            /* the slope enters the plot inside the y range */
            yl = fmin(yl, c->roofs[i].slope * xl);
        }
    }
    if (!(xh >= xl) || !(yh >= yl)) {
        return ART_E_RANGE;
    }
    /* On a log axis a point just above a decade would sit on the frame
     * (1024 on [1000, 10000]): keep half a decade's room either side. */
    if (c->kind != ART_CHART_ROOFLINE) {
        if (p->x.scale == ART_SCALE_LOG) {
            xl /= 1.6;
            xh *= 1.6;
        }
        if (p->y.scale == ART_SCALE_LOG) {
            yl /= 1.6;
            yh *= 1.6;
        }
        /* on a linear axis, 4 % of the span, so that no point sits on
         * the frame when the span ends on a round value */
        if (p->x.scale == ART_SCALE_LINEAR && c->kind == ART_CHART_SCATTER) {
            const double m = (xh - xl) * 0.04;
            xl -= m;
            xh += m;
        }
        if (p->y.scale == ART_SCALE_LINEAR) {
            const double m = (yh - yl) * 0.04;
            yl -= m;
            yh += m;
        }
    }
    axis_round(&p->x, xl, xh, false);
    axis_round(&p->y, yl, yh, false);
    return ART_OK;
}

/* Shorten s in the middle with an ellipsis until it is at most max_w
 * wide; writes into out. */
static void shorten(cairo_t *cr, const char *s, double max_w, char *out,
                    size_t len)
{
    snprintf(out, len, "%s", s);
    if (text_w(cr, out) <= max_w) {
        return;
    }
    size_t n = strlen(s);
    for (size_t keep = n > 2 ? n - 1 : 1; keep >= 2; keep--) {
        /* keep the head and tail bytes, cut at UTF-8 boundaries */
        size_t head = (keep + 1) / 2, tail = keep / 2;
        while (head > 0 && ((unsigned char)s[head] & 0xC0) == 0x80) {
            head--;
        }
        size_t t0 = n - tail;
        while (t0 < n && ((unsigned char)s[t0] & 0xC0) == 0x80) {
            t0++;
        }
        snprintf(out, len, "%.*s\xE2\x80\xA6%s", (int)head, s, s + t0);
        if (text_w(cr, out) <= max_w) {
            return;
        }
    }
}

static void legend_items(struct plan *p)
{
    const struct art_chart *c = p->c;
    p->n_items = 0;
    for (size_t i = 0; i < c->n_roofs && c->kind == ART_CHART_ROOFLINE; i++) {
        if (c->roofs[i].name) {
            p->items[p->n_items++] = (struct legend_item){
                .text = c->roofs[i].name, .color = -1, .roof = true,
                .dashed = i > 0, .line = true,
                .marker = (enum art_marker)-1};
        }
    }
    size_t named = 0;
    for (size_t i = 0; i < c->n_series; i++) {
        named += c->series[i].name != NULL;
    }
    for (size_t i = 0; i < c->n_series; i++) {
        const struct art_series *s = &c->series[i];
        if (!s->name) {
            continue;
        }
        if (named < 2 && c->kind != ART_CHART_ROOFLINE &&
            c->kind != ART_CHART_SCATTER) {
            break; /* one series: the axis labels say it all */
        }
        enum art_style st = s->style;
        if (st == ART_STYLE_DEFAULT) {
            st = c->kind == ART_CHART_LINE ? ART_STYLE_LINE
                                           : ART_STYLE_POINTS;
        }
        p->items[p->n_items++] = (struct legend_item){
            .text = s->name, .color = series_color(s, i),
            .marker = s->marker, .hollow = s->hollow, .dashed = s->dashed,
            .line = st == ART_STYLE_LINE || st == ART_STYLE_STEP,
            .bar = c->kind == ART_CHART_BAR};
        if (st == ART_STYLE_STEP) {
            p->items[p->n_items - 1].marker = (enum art_marker)-1;
        }
    }
}

/* Width of one legend entry: swatch, gap, text, gap after. */
static double item_w(cairo_t *cr, const struct plan *p,
                     const struct legend_item *it)
{
    return 2.2 * p->f_tick + 0.4 * p->f_tick + text_w(cr, it->text) +
           1.5 * p->f_tick;
}

static size_t legend_layout(cairo_t *cr, const struct plan *p, double avail,
                            double *row_starts)
{
    size_t rows = p->n_items ? 1 : 0;
    double x = 0;
    font(cr, p->f_tick, false);
    for (size_t i = 0; i < p->n_items; i++) {
        const double w = item_w(cr, p, &p->items[i]);
        if (x > 0 && x + w > avail) {
            rows++;
            x = 0;
        }
        if (row_starts) {
            row_starts[i] = (double)(rows - 1);
        }
        x += w;
    }
    return rows;
}

/* Lay c out in a w x h area (0: the chart's own size) with text scaled by
 * s (0: by the size against 1260 x 900). */
static int plan_chart(struct plan *p, const struct art_chart *c, cairo_t *cr,
                      double w, double h, double s)
{
    memset(p, 0, sizeof *p);
    p->c = c;
    int st = check_spec(c);
    if (st != ART_OK) {
        return st;
    }
    p->w = w > 0 ? w : c->width_px ? c->width_px : DEFAULT_W;
    p->h = h > 0 ? h : c->height_px ? c->height_px : DEFAULT_H;
    p->s = s > 0 ? s
                 : fmin(p->w / (double)DEFAULT_W, p->h / (double)DEFAULT_H);
    /* 180 DPI: a point is 2.5 px */
    p->f_title = 13 * 2.5 * p->s;
    p->f_label = 10 * 2.5 * p->s;
    p->f_tick = 8.5 * 2.5 * p->s;
    p->f_small = 7.5 * 2.5 * p->s;
    if (c->kind == ART_CHART_ROOFLINE) {
        p->x.scale = p->y.scale = ART_SCALE_LOG;
    } else {
        p->x.scale = c->kind == ART_CHART_BAR ? ART_SCALE_LINEAR
                                              : c->x_scale;
        p->y.scale = c->y_scale;
    }
    st = data_ranges(p);
    if (st != ART_OK) {
        return st;
    }
    p->items = calloc(c->n_series + c->n_roofs + 1, sizeof *p->items);
    if (!p->items) {
        return ART_E_NOMEM;
    }
    if (c->kind == ART_CHART_BAR) {
        p->cats = calloc(c->n_categories, sizeof *p->cats);
        if (!p->cats) {
            return ART_E_NOMEM;
        }
    }
    legend_items(p);

    const double pad = 0.8 * p->f_tick;
    const double tick_len = 0.35 * p->f_tick;
    char buf[64];

    /* top: title, then the legend rows */
    double top = pad + p->f_title * 1.25;
    p->legend_y = top + 0.3 * p->f_tick;
    p->legend_row_h = 1.5 * p->f_tick;
    p->legend_rows = legend_layout(cr, p, p->w - 2 * pad, NULL);
    top = p->legend_y + p->legend_rows * p->legend_row_h + pad;

    /* left: the y label (rotated) and the widest y tick label */
    font(cr, p->f_tick, false);
    double ytw = 0;
    for (size_t i = 0; i < p->y.n_ticks; i++) {
        tick_text(p->y.ticks[i], p->y.scale, p->y.step, buf, sizeof buf);
        ytw = fmax(ytw, text_w(cr, buf));
    }
    double left = pad + (c->y_label ? p->f_label * 1.3 : 0) + ytw +
                  tick_len + 0.4 * p->f_tick;
    double right = pad * 2;
    if (c->kind != ART_CHART_BAR && p->x.n_ticks > 0) {
        tick_text(p->x.ticks[p->x.n_ticks - 1], p->x.scale, p->x.step, buf,
                  sizeof buf);
        right = fmax(right, text_w(cr, buf) / 2 + pad);
    }
    double bottom_labels = p->f_tick * 1.4;
    if (c->kind == ART_CHART_BAR) {
        /* Category names: horizontal when they fit their slot, else at 45
         * degrees, shortened only when even so they would take more than
         * a third of the image height. Two passes: the slot width depends
         * on the left margin, which a long first name can widen. */
        for (int pass = 0; pass < 2; pass++) {
            const double slot = (p->w - left - right) / c->n_categories;
            double maxw = 0;
            for (size_t i = 0; i < c->n_categories; i++) {
                maxw = fmax(maxw, text_w(cr, c->categories[i]));
            }
            p->rotate = maxw > slot * 0.92;
            const double limit = p->rotate
                ? (p->h / 3) / sin(PI / 4) - p->f_tick
                : slot * 0.92;
            double ext = 0, first_over = 0;
            for (size_t i = 0; i < c->n_categories; i++) {
                shorten(cr, c->categories[i], limit, p->cats[i], LABEL_MAX);
                const double tw = text_w(cr, p->cats[i]);
                ext = fmax(ext, tw);
                if (p->rotate) {
                    /* the text ends at the slot's centre and runs down to
                     * the left: how far it reaches left of the plot */
                    const double reach = (tw + p->f_tick) * cos(PI / 4) -
                                         (i + 0.5) * slot;
                    first_over = fmax(first_over, reach);
                }
            }
            bottom_labels = p->rotate
                ? (ext + p->f_tick) * sin(PI / 4) + p->f_tick * 0.5
                : p->f_tick * 1.4;
            left = fmax(left, first_over + pad);
        }
    }
    double bottom = tick_len + 0.3 * p->f_tick + bottom_labels +
                    (c->x_label ? p->f_label * 1.4 : 0) + pad;
    p->px = left;
    p->py = top;
    p->pw = p->w - left - right;
    p->ph = p->h - top - bottom;
    if (p->pw < 40 * p->s || p->ph < 40 * p->s) {
        return ART_E_RANGE; /* the text leaves no room to plot */
    }
    return ART_OK;
}

static void plan_finish(struct plan *p)
{
    free(p->cats);
    free(p->items);
}

/* A scratch context for measuring text when only the layout is wanted. */
static cairo_t *measure_context(cairo_surface_t **surf)
{
    *surf = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
    cairo_t *cr = cairo_create(*surf);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_destroy(cr);
        cairo_surface_destroy(*surf);
        return NULL;
    }
    return cr;
}

ART_API int art_chart_layout(const struct art_chart *c,
                             struct art_chart_layout *out)
{
    if (!out) {
        return ART_E_INVALID;
    }
    cairo_surface_t *surf;
    cairo_t *cr = measure_context(&surf);
    if (!cr) {
        return ART_E_NOMEM;
    }
    struct plan p;
    int st = plan_chart(&p, c, cr, 0, 0, 0);
    if (st == ART_OK) {
        *out = (struct art_chart_layout){
            .width_px = (unsigned)p.w, .height_px = (unsigned)p.h,
            .plot_x = p.px, .plot_y = p.py, .plot_w = p.pw, .plot_h = p.ph,
            .x_lo = p.x.lo, .x_hi = p.x.hi, .y_lo = p.y.lo, .y_hi = p.y.hi};
    }
    plan_finish(&p);
    cairo_destroy(cr);
    cairo_surface_destroy(surf);
    return st;
}

/* ---- Drawing ------------------------------------------------------------- */

/* Text with its left end at x (align 0), centre (0.5) or right end (1),
 * its vertical middle at y, turned by angle radians about that point. */
static void text_at(cairo_t *cr, const char *t, double x, double y,
                    double align, double angle)
{
    cairo_text_extents_t e;
    cairo_font_extents_t fe;
    cairo_text_extents(cr, t, &e);
    cairo_font_extents(cr, &fe);
    cairo_save(cr);
    cairo_translate(cr, x, y);
    cairo_rotate(cr, angle);
    cairo_move_to(cr, -align * e.x_advance, (fe.ascent - fe.descent) / 2);
    cairo_show_text(cr, t);
    cairo_restore(cr);
}

static void marker_path(cairo_t *cr, enum art_marker m, double x, double y,
                        double r)
{
    switch (m) {
    case ART_MARKER_SQUARE:
        cairo_rectangle(cr, x - r * 0.85, y - r * 0.85, 1.7 * r, 1.7 * r);
        break;
    case ART_MARKER_TRIANGLE:
        cairo_move_to(cr, x, y - 1.1 * r);
        cairo_line_to(cr, x + r, y + 0.75 * r);
        cairo_line_to(cr, x - r, y + 0.75 * r);
        cairo_close_path(cr);
        break;
    case ART_MARKER_DIAMOND:
        cairo_move_to(cr, x, y - 1.2 * r);
        cairo_line_to(cr, x + r, y);
        cairo_line_to(cr, x, y + 1.2 * r);
        cairo_line_to(cr, x - r, y);
        cairo_close_path(cr);
        break;
    case ART_MARKER_CROSS:
        cairo_move_to(cr, x - r, y - r);
        cairo_line_to(cr, x + r, y + r);
        cairo_move_to(cr, x - r, y + r);
        cairo_line_to(cr, x + r, y - r);
        break;
    case ART_MARKER_CIRCLE:
    default:
        cairo_new_sub_path(cr);
        cairo_arc(cr, x, y, r, 0, 2 * PI);
        break;
    }
}

static void draw_marker(cairo_t *cr, enum art_marker m, bool hollow,
                        double x, double y, double r, double lw)
{
    marker_path(cr, m, x, y, r);
    if (m == ART_MARKER_CROSS) {
        cairo_set_line_width(cr, lw * 1.4);
        cairo_stroke(cr);
    } else if (hollow) {
        cairo_save(cr);
        cairo_set_source_rgb(cr, 1, 1, 1);
        cairo_fill_preserve(cr);
        cairo_restore(cr);
        cairo_set_line_width(cr, lw * 1.2);
        cairo_stroke(cr);
    } else {
        cairo_fill(cr);
    }
}

static void draw_axes(cairo_t *cr, const struct plan *p)
{
    const struct art_chart *c = p->c;
    const double lw = fmax(1.0, 1.2 * p->s);
    const double tick_len = 0.35 * p->f_tick;
    char buf[64];

    /* grid at the ticks (and faint minor lines in each log decade) */
    cairo_set_line_width(cr, fmax(1.0, p->s));
    for (int axis = 0; axis < 2; axis++) {
        const struct axis *a = axis ? &p->y : &p->x;
        if (axis == 0 && c->kind == ART_CHART_BAR) {
            continue;
        }
        if (a->scale == ART_SCALE_LOG) {
            cairo_set_source_rgb(cr, 0.95, 0.95, 0.95);
            for (double d = a->lo; d < a->hi; d *= 10) {
                for (int k = 2; k <= 9; k++) {
                    const double v = d * k;
                    if (v >= a->hi) {
                        break;
                    }
                    if (axis) {
                        const double y = map_y(p, v);
                        cairo_move_to(cr, p->px, y);
                        cairo_line_to(cr, p->px + p->pw, y);
                    } else {
                        const double x = map_x(p, v);
                        cairo_move_to(cr, x, p->py);
                        cairo_line_to(cr, x, p->py + p->ph);
                    }
                }
            }
            cairo_stroke(cr);
        }
        cairo_set_source_rgb(cr, 0.87, 0.87, 0.87);
        for (size_t i = 0; i < a->n_ticks; i++) {
            if (axis) {
                const double y = map_y(p, a->ticks[i]);
                cairo_move_to(cr, p->px, y);
                cairo_line_to(cr, p->px + p->pw, y);
            } else {
                const double x = map_x(p, a->ticks[i]);
                cairo_move_to(cr, x, p->py);
                cairo_line_to(cr, x, p->py + p->ph);
            }
        }
        cairo_stroke(cr);
    }

    /* the frame, tick marks and tick labels */
    cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
    cairo_set_line_width(cr, lw);
    cairo_rectangle(cr, p->px, p->py, p->pw, p->ph);
    cairo_stroke(cr);
    font(cr, p->f_tick, false);
    for (size_t i = 0; i < p->y.n_ticks; i++) {
        const double y = map_y(p, p->y.ticks[i]);
        cairo_move_to(cr, p->px - tick_len, y);
        cairo_line_to(cr, p->px, y);
        cairo_stroke(cr);
        tick_text(p->y.ticks[i], p->y.scale, p->y.step, buf, sizeof buf);
        text_at(cr, buf, p->px - tick_len - 0.3 * p->f_tick, y, 1, 0);
    }
    const double ty = p->py + p->ph + tick_len + 0.3 * p->f_tick;
    if (c->kind == ART_CHART_BAR) {
        const double slot = p->pw / c->n_categories;
        for (size_t i = 0; i < c->n_categories; i++) {
            const double x = p->px + (i + 0.5) * slot;
            cairo_move_to(cr, x, p->py + p->ph);
            cairo_line_to(cr, x, p->py + p->ph + tick_len);
            cairo_stroke(cr);
            if (p->rotate) {
                text_at(cr, p->cats[i], x + 0.2 * p->f_tick,
                        ty + 0.3 * p->f_tick, 1, -PI / 4);
            } else {
                text_at(cr, p->cats[i], x, ty + 0.6 * p->f_tick, 0.5, 0);
            }
        }
    } else {
        for (size_t i = 0; i < p->x.n_ticks; i++) {
            const double x = map_x(p, p->x.ticks[i]);
            cairo_move_to(cr, x, p->py + p->ph);
            cairo_line_to(cr, x, p->py + p->ph + tick_len);
            cairo_stroke(cr);
            tick_text(p->x.ticks[i], p->x.scale, p->x.step, buf, sizeof buf);
            text_at(cr, buf, x, ty + 0.6 * p->f_tick, 0.5, 0);
        }
    }
    /* minor tick marks on log axes */
    cairo_set_line_width(cr, fmax(1.0, p->s));
    for (int axis = 0; axis < 2; axis++) {
        const struct axis *a = axis ? &p->y : &p->x;
        if (a->scale != ART_SCALE_LOG) {
            continue;
        }
        for (double d = a->lo; d < a->hi; d *= 10) {
            for (int k = 2; k <= 9 && d * k < a->hi; k++) {
                if (axis) {
                    const double y = map_y(p, d * k);
                    cairo_move_to(cr, p->px - tick_len / 2, y);
                    cairo_line_to(cr, p->px, y);
                } else {
                    const double x = map_x(p, d * k);
                    cairo_move_to(cr, x, p->py + p->ph);
                    cairo_line_to(cr, x, p->py + p->ph + tick_len / 2);
                }
            }
        }
        cairo_stroke(cr);
    }

    /* title and axis labels */
    font(cr, p->f_title, true);
    text_at(cr, c->title, p->w / 2, 0.8 * p->f_tick + p->f_title * 0.6, 0.5,
            0);
    font(cr, p->f_label, false);
    if (c->x_label) {
        text_at(cr, c->x_label, p->px + p->pw / 2,
                p->h - 0.8 * p->f_tick - p->f_label * 0.6, 0.5, 0);
    }
    if (c->y_label) {
        text_at(cr, c->y_label, 0.8 * p->f_tick + p->f_label * 0.6,
                p->py + p->ph / 2, 0.5, -PI / 2);
    }
}

/* ART_OK, or ART_E_NOMEM: a chart without its legend is not the chart
 * asked for, so no memory fails the drawing. */
static int draw_legend(cairo_t *cr, const struct plan *p)
{
    if (p->n_items == 0) {
        return ART_OK;
    }
    double *row = calloc(p->n_items, sizeof *row);
    if (!row) {
        return ART_E_NOMEM;
    }
    const double pad = 0.8 * p->f_tick;
    legend_layout(cr, p, p->w - 2 * pad, row);
    font(cr, p->f_tick, false);
    const double lw = fmax(1.0, 2.0 * p->s);
    /* centre each row */
    for (size_t r = 0; r < p->legend_rows; r++) {
        double total = 0;
        for (size_t i = 0; i < p->n_items; i++) {
            if (row[i] == (double)r) {
                total += item_w(cr, p, &p->items[i]);
            }
        }
        double x = (p->w - total) / 2;
        const double y = p->legend_y + (r + 0.5) * p->legend_row_h;
        for (size_t i = 0; i < p->n_items; i++) {
            if (row[i] != (double)r) {
                continue;
            }
            const struct legend_item *it = &p->items[i];
            const double sw = 2.2 * p->f_tick;
            if (it->roof) {
                cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
            } else {
                set_color(cr, it->color);
            }
            if (it->bar) {
                cairo_rectangle(cr, x, y - 0.4 * p->f_tick, sw,
                                0.8 * p->f_tick);
                cairo_fill(cr);
            } else {
                if (it->line) {
                    if (it->dashed) {
                        const double d[] = {6 * p->s, 4 * p->s};
                        cairo_set_dash(cr, d, 2, 0);
                    }
                    cairo_set_line_width(cr, lw);
                    cairo_move_to(cr, x, y);
                    cairo_line_to(cr, x + sw, y);
                    cairo_stroke(cr);
                    cairo_set_dash(cr, NULL, 0, 0);
                }
                if ((int)it->marker >= 0) {
                    draw_marker(cr, it->marker, it->hollow, x + sw / 2, y,
                                0.3 * p->f_tick, lw);
                }
            }
            cairo_set_source_rgb(cr, 0.1, 0.1, 0.1);
            text_at(cr, it->text, x + sw + 0.4 * p->f_tick, y, 0, 0);
            x += item_w(cr, p, it);
        }
    }
    free(row);
    return ART_OK;
}

/* Rectangles already taken by markers and labels, for placing labels. */
struct rects {
    double (*r)[4]; /* x0, y0, x1, y1 */
    size_t n, cap;
    bool nomem; /* a rectangle could not be kept: the drawing fails */
};

static void rects_add(struct rects *rs, double x0, double y0, double x1,
                      double y1)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 64;
        void *r = realloc(rs->r, cap * sizeof *rs->r);
        if (!r) {
            /* labels placed without it would overlap where the run
             * with memory's do not: the chart is refused instead */
            rs->nomem = true;
            return;
        }
        rs->r = r;
        rs->cap = cap;
    }
    rs->r[rs->n][0] = x0;
    rs->r[rs->n][1] = y0;
    rs->r[rs->n][2] = x1;
    rs->r[rs->n][3] = y1;
    rs->n++;
}

static double overlap(const struct rects *rs, double x0, double y0,
                      double x1, double y1)
{
    double sum = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const double w = fmin(x1, rs->r[i][2]) - fmax(x0, rs->r[i][0]);
        const double h = fmin(y1, rs->r[i][3]) - fmax(y0, rs->r[i][1]);
        if (w > 0 && h > 0) {
            sum += w * h;
        }
    }
    return sum;
}

/* Place a point label next to (x, y): the first of eight positions around
 * the marker that stays inside the plot and overlaps nothing placed, else
 * the one that overlaps least. */
static void place_label(cairo_t *cr, const struct plan *p, struct rects *rs,
                        const char *t, double x, double y, double r,
                        int color)
{
    cairo_text_extents_t e;
    cairo_text_extents(cr, t, &e);
    const double w = e.x_advance, h = p->f_small * 1.1, g = r + 3 * p->s;
    const double cand[8][2] = {
        {x + g, y - h / 2},         {x - g - w, y - h / 2},
        {x - w / 2, y - g - h},     {x - w / 2, y + g},
        {x + g * 0.7, y - g * 0.7 - h}, {x - g * 0.7 - w, y - g * 0.7 - h},
        {x + g * 0.7, y + g * 0.7}, {x - g * 0.7 - w, y + g * 0.7},
    };
    double best = INFINITY;
    size_t pick = 0;
    for (size_t i = 0; i < 8; i++) {
        const double x0 = cand[i][0], y0 = cand[i][1];
        double cost = overlap(rs, x0, y0, x0 + w, y0 + h);
        if (x0 < p->px || x0 + w > p->px + p->pw || y0 < p->py ||
            y0 + h > p->py + p->ph) {
            cost += 1e9; /* outside the plot: only if nothing else */
            if (x0 < 0 || x0 + w > p->w || y0 < 0 || y0 + h > p->h) {
                cost += 1e12;
            }
        }
        if (cost < best) {
            best = cost;
            pick = i;
            if (cost == 0) {
                break;
            }
        }
    }
    const double x0 = cand[pick][0], y0 = cand[pick][1];
    rects_add(rs, x0, y0, x0 + w, y0 + h);
    /* in the point's colour, darkened: a crowded label still says whose
     * it is */
    unsigned char rgb[3];
    art_chart_color(color, rgb);
    cairo_set_source_rgb(cr, rgb[0] / 255.0 * 0.7, rgb[1] / 255.0 * 0.7,
                         rgb[2] / 255.0 * 0.7);
    text_at(cr, t, x0, y0 + h / 2, 0, 0);
}

static void draw_bars(cairo_t *cr, const struct plan *p)
{
    const struct art_chart *c = p->c;
    const double slot = p->pw / c->n_categories;
    const double group = slot * 0.8;
    const double bw = group / c->n_series;
    char buf[64];
    const double base = map_y(p, p->y.scale == ART_SCALE_LOG ? p->y.lo : 0);
    for (size_t s = 0; s < c->n_series; s++) {
        const struct art_series *se = &c->series[s];
        for (size_t i = 0; i < c->n_categories; i++) {
            const double v = se->y[i];
            if (!usable(v, p->y.scale)) {
                continue;
            }
            /* whole pixels: crisp edges, and a bar's height in pixels is
             * its value to within one pixel */
            const double x0 = round(p->px + i * slot + (slot - group) / 2 +
                                    s * bw);
            const double x1 = round(x0 + bw - (c->n_series > 1 ? 1 : 0));
            const double y0 = round(map_y(p, v));
            set_color(cr, series_color(se, s));
            cairo_rectangle(cr, x0, y0, x1 - x0, round(base) - y0);
            cairo_fill(cr);
            if (!c->value_labels && !se->labels) {
                continue;
            }
            const char *t = NULL;
            if (se->labels && se->labels[i]) {
                t = se->labels[i];
            } else if (c->value_labels) {
                value_text(v, buf, sizeof buf);
                t = buf;
            }
            if (!t) {
                continue;
            }
            font(cr, p->f_small, false);
            const double tw = text_w(cr, t);
            const bool vertical = tw > (x1 - x0) * 1.05;
            const double need = (vertical ? tw : p->f_small) + 4 * p->s;
            const double xc = (x0 + x1) / 2;
            if (y0 - need >= p->py) {
                cairo_set_source_rgb(cr, 0.12, 0.12, 0.12);
                if (vertical) {
                    text_at(cr, t, xc, y0 - 3 * p->s, 0, -PI / 2);
                } else {
                    text_at(cr, t, xc, y0 - need / 2, 0.5, 0);
                }
            } else {
                /* no room above: inside the top of the bar, in white */
                cairo_set_source_rgb(cr, 1, 1, 1);
                if (vertical) {
                    text_at(cr, t, xc, y0 + 3 * p->s, 1, -PI / 2);
                } else {
                    text_at(cr, t, xc, y0 + need / 2, 0.5, 0);
                }
            }
        }
    }
}

static void draw_roofs(cairo_t *cr, const struct plan *p)
{
    const struct art_chart *c = p->c;
    char buf[96];
    cairo_save(cr);
    cairo_rectangle(cr, p->px, p->py, p->pw, p->ph);
    cairo_clip(cr);
    for (size_t i = 0; i < c->n_roofs; i++) {
        const struct art_roof *r = &c->roofs[i];
        const double knee = r->ceiling / r->slope;
        const double shade = i == 0 ? 0.2 : 0.45;
        cairo_set_source_rgb(cr, shade, shade, shade);
        cairo_set_line_width(cr, fmax(1.0, 2.5 * p->s));
        if (i > 0) {
            const double d[] = {9 * p->s, 6 * p->s};
            cairo_set_dash(cr, d, 2, 0);
        }
        cairo_move_to(cr, map_x(p, p->x.lo), map_y(p, r->slope * p->x.lo));
        cairo_line_to(cr, map_x(p, knee), map_y(p, r->ceiling));
        cairo_line_to(cr, map_x(p, p->x.hi), map_y(p, r->ceiling));
        cairo_stroke(cr);
        /* the knee: a thin dotted drop to the axis, labelled */
        const double d2[] = {2 * p->s, 4 * p->s};
        cairo_set_dash(cr, d2, 2, 0);
        cairo_set_line_width(cr, fmax(1.0, 1.2 * p->s));
        cairo_move_to(cr, map_x(p, knee), map_y(p, r->ceiling));
        cairo_line_to(cr, map_x(p, knee), p->py + p->ph);
        cairo_stroke(cr);
        cairo_set_dash(cr, NULL, 0, 0);
        font(cr, p->f_small, false);
        snprintf(buf, sizeof buf, "knee %.3g", knee);
        text_at(cr, buf, map_x(p, knee) + 4 * p->s,
                p->py + p->ph - (1.0 + 1.3 * i) * p->f_small, 0, 0);
    }
    cairo_restore(cr);
}

static int draw_points(cairo_t *cr, const struct plan *p)
{
    const struct art_chart *c = p->c;
    const double r = 0.32 * p->f_tick;
    const double lw = fmax(1.0, 2.0 * p->s);
    struct rects rs = {0};
    /* every marker is an obstacle for every label */
    for (size_t s = 0; s < c->n_series; s++) {
        const struct art_series *se = &c->series[s];
        for (size_t k = 0; k < se->n; k++) {
            if (usable(se->x[k], p->x.scale) &&
                usable(se->y[k], p->y.scale)) {
                const double x = map_x(p, se->x[k]), y = map_y(p, se->y[k]);
                rects_add(&rs, x - r, y - r, x + r, y + r);
            }
        }
    }
    /* and the roofs, as small boxes along their path */
    for (size_t i = 0; c->kind == ART_CHART_ROOFLINE && i < c->n_roofs;
         i++) {
        const struct art_roof *rf = &c->roofs[i];
        const double knee = rf->ceiling / rf->slope;
        const double lx0 = log10(p->x.lo), lx1 = log10(p->x.hi);
        for (int k = 0; k <= 200; k++) {
            const double xv = pow(10.0, lx0 + (lx1 - lx0) * k / 200.0);
            const double yv = xv < knee ? rf->slope * xv : rf->ceiling;
            if (yv < p->y.lo || yv > p->y.hi) {
                continue;
            }
            const double x = map_x(p, xv), y = map_y(p, yv);
            rects_add(&rs, x - 3 * p->s, y - 3 * p->s, x + 3 * p->s,
                      y + 3 * p->s);
        }
    }
    cairo_save(cr);
    cairo_rectangle(cr, p->px - r, p->py - r, p->pw + 2 * r, p->ph + 2 * r);
    cairo_clip(cr);
    for (size_t s = 0; s < c->n_series; s++) {
        const struct art_series *se = &c->series[s];
        enum art_style st = se->style;
        if (st == ART_STYLE_DEFAULT) {
            st = c->kind == ART_CHART_LINE ? ART_STYLE_LINE
                                           : ART_STYLE_POINTS;
        }
        set_color(cr, series_color(se, s));
        if (st == ART_STYLE_LINE || st == ART_STYLE_STEP) {
            if (se->dashed) {
                const double d[] = {8 * p->s, 5 * p->s};
                cairo_set_dash(cr, d, 2, 0);
            }
            cairo_set_line_width(cr, lw);
            bool open = false;
            double prev_y = 0;
            for (size_t k = 0; k < se->n; k++) {
                if (!usable(se->x[k], p->x.scale) ||
                    !usable(se->y[k], p->y.scale)) {
                    open = false;
                    continue;
                }
                const double x = map_x(p, se->x[k]), y = map_y(p, se->y[k]);
                if (!open) {
                    cairo_move_to(cr, x, y);
                    open = true;
                } else if (st == ART_STYLE_STEP) {
                    cairo_line_to(cr, x, prev_y);
                    cairo_line_to(cr, x, y);
                } else {
                    cairo_line_to(cr, x, y);
                }
                prev_y = y;
            }
            cairo_stroke(cr);
            cairo_set_dash(cr, NULL, 0, 0);
        }
        if (st == ART_STYLE_STEP) {
            continue;
        }
        for (size_t k = 0; se->y_err && k < se->n; k++) {
            const double e = fabs(se->y_err[k]);
            if (!isfinite(e) || !usable(se->x[k], p->x.scale) ||
                !usable(se->y[k] - e, p->y.scale) ||
                !usable(se->y[k] + e, p->y.scale)) {
                continue;
            }
            /* a vertical bar with caps as wide as the marker */
            const double x = map_x(p, se->x[k]);
            const double y0 = map_y(p, se->y[k] - e);
            const double y1 = map_y(p, se->y[k] + e);
            cairo_set_line_width(cr, lw);
            cairo_move_to(cr, x, y0);
            cairo_line_to(cr, x, y1);
            cairo_move_to(cr, x - r, y0);
            cairo_line_to(cr, x + r, y0);
            cairo_move_to(cr, x - r, y1);
            cairo_line_to(cr, x + r, y1);
            cairo_stroke(cr);
        }
        for (size_t k = 0; k < se->n; k++) {
            if (usable(se->x[k], p->x.scale) &&
                usable(se->y[k], p->y.scale)) {
                draw_marker(cr, se->marker, se->hollow,
                            map_x(p, se->x[k]), map_y(p, se->y[k]), r, lw);
            }
        }
    }
    cairo_restore(cr);
    font(cr, p->f_small, false);
    for (size_t s = 0; s < c->n_series; s++) {
        const struct art_series *se = &c->series[s];
        for (size_t k = 0; se->labels && k < se->n; k++) {
            if (se->labels[k] && usable(se->x[k], p->x.scale) &&
                usable(se->y[k], p->y.scale)) {
                place_label(cr, p, &rs, se->labels[k], map_x(p, se->x[k]),
                            map_y(p, se->y[k]), r, series_color(se, s));
            }
        }
    }
    free(rs.r);
    return rs.nomem ? ART_E_NOMEM : ART_OK;
}

/* Draw a planned chart with its top-left corner at the origin of cr:
 * ART_OK or ART_E_NOMEM. */
static int draw_chart(cairo_t *cr, const struct plan *p)
{
    const struct art_chart *c = p->c;
    draw_axes(cr, p);
    int st = draw_legend(cr, p);
    if (c->kind == ART_CHART_BAR) {
        draw_bars(cr, p);
        /* the frame's bottom over the bars' feet */
        cairo_set_source_rgb(cr, 0.15, 0.15, 0.15);
        cairo_set_line_width(cr, fmax(1.0, 1.2 * p->s));
        cairo_move_to(cr, p->px, p->py + p->ph);
        cairo_line_to(cr, p->px + p->pw, p->py + p->ph);
        cairo_stroke(cr);
    } else {
        if (c->kind == ART_CHART_ROOFLINE) {
            draw_roofs(cr, p);
        }
        const int pst = draw_points(cr, p);
        st = st != ART_OK ? st : pst;
    }
    return st;
}

/* Draw n charts side by side on one w x h image (n 1: a chart alone at
 * its own size). */
static int render(const struct art_chart *const *charts, size_t n,
                  unsigned w, unsigned h, cairo_surface_t **out)
{
    *out = NULL;
    if (n == 0 || n > 8) {
        return ART_E_INVALID;
    }
    cairo_surface_t *ms;
    cairo_t *mcr = measure_context(&ms);
    if (!mcr) {
        return ART_E_NOMEM;
    }
    struct plan p[8];
    memset(p, 0, sizeof p);
    int st = ART_OK;
    /* panels keep the figure's text size, a little smaller so that two
     * or three fit across */
    const double s = n == 1 ? 0
        : fmin(w / (double)DEFAULT_W, h / (double)DEFAULT_H) *
              (n == 2 ? 0.8 : 0.7);
    for (size_t i = 0; i < n && st == ART_OK; i++) {
        st = plan_chart(&p[i], charts[i], mcr, n == 1 ? 0 : (double)w / n,
                        n == 1 ? 0 : h, s);
    }
    cairo_destroy(mcr);
    cairo_surface_destroy(ms);
    if (st != ART_OK) {
        for (size_t i = 0; i < n; i++) {
            plan_finish(&p[i]);
        }
        return st;
    }
    const int iw = n == 1 ? (int)p[0].w : (int)w;
    const int ih = n == 1 ? (int)p[0].h : (int)h;
    cairo_surface_t *surf =
        cairo_image_surface_create(CAIRO_FORMAT_ARGB32, iw, ih);
    cairo_t *cr = cairo_create(surf);
    if (cairo_status(cr) != CAIRO_STATUS_SUCCESS) {
        cairo_destroy(cr);
        cairo_surface_destroy(surf);
        for (size_t i = 0; i < n; i++) {
            plan_finish(&p[i]);
        }
        return ART_E_NOMEM;
    }
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    int drawn = ART_OK;
    for (size_t i = 0; i < n; i++) {
        cairo_save(cr);
        cairo_translate(cr, round(i * p[i].w), 0);
        cairo_rectangle(cr, 0, 0, p[i].w, p[i].h);
        cairo_clip(cr);
        const int dst = draw_chart(cr, &p[i]);
        drawn = drawn != ART_OK ? drawn : dst;
        cairo_restore(cr);
        plan_finish(&p[i]);
    }
    st = cairo_status(cr) == CAIRO_STATUS_SUCCESS ? drawn : ART_E_NOMEM;
    cairo_destroy(cr);
    if (st != ART_OK) {
        cairo_surface_destroy(surf);
        return st;
    }
    cairo_surface_flush(surf);
    *out = surf;
    return ART_OK;
}

static int write_surface(cairo_surface_t *surf, const char *title, FILE *f)
{
    return art_png_write_argb(f, cairo_image_surface_get_data(surf),
                              (unsigned)cairo_image_surface_get_width(surf),
                              (unsigned)cairo_image_surface_get_height(surf),
                              (size_t)cairo_image_surface_get_stride(surf),
                              title);
}

ART_API int art_chart_write_png(const struct art_chart *c, FILE *f)
{
    if (!f) {
        return ART_E_INVALID;
    }
    cairo_surface_t *surf;
    int st = render(&c, 1, 0, 0, &surf);
    if (st != ART_OK) {
        return st;
    }
    st = write_surface(surf, c->title, f);
    cairo_surface_destroy(surf);
    return st;
}

static int write_chart(const void *obj, FILE *f)
{
    return art_chart_write_png(obj, f);
}

ART_API int art_chart_save(const struct art_chart *c, const char *path,
                           struct art_diag *diag)
{
    if (!path) {
        return ART_E_INVALID;
    }
    struct art_chart_layout l;
    int st = art_chart_layout(c, &l);
    if (st != ART_OK) {
        return st;
    }
    return art_save_with(path, write_chart, c, diag);
}

ART_API int art_bundle_add_chart(art_bundle *b, const char *name,
                                 const struct art_chart *c)
{
    struct art_chart_layout l;
    int st = art_chart_layout(c, &l);
    if (st != ART_OK) {
        return st;
    }
    return art_bundle_add(b, name, write_chart, c);
}

/* ---- Figures: charts side by side ---------------------------------------- */

static int check_figure(const struct art_figure *fig, unsigned *w,
                        unsigned *h)
{
    if (!fig || !fig->title || !*fig->title || !fig->panels ||
        fig->n_panels == 0 || fig->n_panels > 8) {
        return ART_E_INVALID;
    }
    *w = fig->width_px ? fig->width_px : DEFAULT_W;
    *h = fig->height_px ? fig->height_px : DEFAULT_H;
    if (*w < 200 * fig->n_panels || *h < 150 || *w > 8000 || *h > 8000) {
        return ART_E_RANGE;
    }
    cairo_surface_t *ms;
    cairo_t *cr = measure_context(&ms);
    if (!cr) {
        return ART_E_NOMEM;
    }
    const double s = fmin(*w / (double)DEFAULT_W, *h / (double)DEFAULT_H) *
                     (fig->n_panels == 1 ? 1 : fig->n_panels == 2 ? 0.8
                                                                : 0.7);
    int st = ART_OK;
    for (size_t i = 0; i < fig->n_panels && st == ART_OK; i++) {
        struct plan p;
        st = plan_chart(&p, &fig->panels[i], cr,
                        (double)*w / fig->n_panels, *h, s);
        plan_finish(&p);
    }
    cairo_destroy(cr);
    cairo_surface_destroy(ms);
    return st;
}

ART_API int art_figure_write_png(const struct art_figure *fig, FILE *f)
{
    unsigned w, h;
    int st = f ? check_figure(fig, &w, &h) : ART_E_INVALID;
    if (st != ART_OK) {
        return st;
    }
    const struct art_chart *charts[8];
    for (size_t i = 0; i < fig->n_panels; i++) {
        charts[i] = &fig->panels[i];
    }
    cairo_surface_t *surf;
    st = fig->n_panels == 1
        ? render(charts, 1, 0, 0, &surf)
        : render(charts, fig->n_panels, w, h, &surf);
    if (st != ART_OK) {
        return st;
    }
    st = write_surface(surf, fig->title, f);
    cairo_surface_destroy(surf);
    return st;
}

static int write_figure(const void *obj, FILE *f)
{
    return art_figure_write_png(obj, f);
}

ART_API int art_figure_save(const struct art_figure *fig, const char *path,
                            struct art_diag *diag)
{
    unsigned w, h;
    int st = path ? check_figure(fig, &w, &h) : ART_E_INVALID;
    return st != ART_OK ? st : art_save_with(path, write_figure, fig, diag);
}

ART_API int art_bundle_add_figure(art_bundle *b, const char *name,
                                  const struct art_figure *fig)
{
    unsigned w, h;
    int st = check_figure(fig, &w, &h);
    return st != ART_OK ? st : art_bundle_add(b, name, write_figure, fig);
}
