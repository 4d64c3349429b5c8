/* PNG encoding of a drawn chart with libpng: RGB, a pHYs chunk with the
 * chart's resolution and the Title and Software text chunks. cairo can
 * write PNGs itself, but it writes neither pHYs nor text chunks, and a
 * print-ready chart has to say its resolution. */
#include <png.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chart.h"
#include "alloc_rec.h" /* last: it wraps malloc and co. */

#ifndef ART_VERSION_STRING
#define ART_VERSION_STRING "unknown"
#endif

/* Pixels per metre for dpi: 180 DPI is 7087 px/m (rounded). */
static png_uint_32 dpi_to_ppm(unsigned dpi)
{
    return (png_uint_32)(dpi / 0.0254 + 0.5);
}

/* libpng reports errors through longjmp; keep the status beside it. */
static void on_png_error(png_structp png, png_const_charp msg)
{
    (void)msg;
    png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

int art_png_write_argb(FILE *f, const unsigned char *data, unsigned width,
                       unsigned height, size_t stride, const char *title)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL,
                                              on_png_error, on_png_warning);
    if (!png) {
        return ART_E_NOMEM;
    }
    png_infop info = png_create_info_struct(png);
    /* volatile: modified between setjmp and a possible longjmp */
    unsigned char *volatile row = NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return ART_E_NOMEM;
    }
    if (setjmp(png_jmpbuf(png))) {
        free(row);
        png_destroy_write_struct(&png, &info);
        return ART_E_IO;
    }
    row = malloc((size_t)width * 3);
    if (!row) {
        png_destroy_write_struct(&png, &info);
        return ART_E_NOMEM;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    const png_uint_32 ppm = dpi_to_ppm(ART_CHART_DPI);
    png_set_pHYs(png, info, ppm, ppm, PNG_RESOLUTION_METER);
    png_text text[2];
    memset(text, 0, sizeof text);
    text[0].compression = PNG_TEXT_COMPRESSION_NONE;
    text[0].key = (png_charp) "Title";
    text[0].text = (png_charp)(title ? title : "");
    text[1].compression = PNG_TEXT_COMPRESSION_NONE;
    text[1].key = (png_charp) "Software";
    text[1].text = (png_charp) "edgefit " ART_VERSION_STRING;
    png_set_text(png, info, text, 2);
    png_write_info(png, info);
    for (unsigned y = 0; y < height; y++) {
        /* cairo's ARGB32 is a native-endian uint32 per pixel, alpha
         * premultiplied; the chart is painted on opaque white, so every
         * pixel has alpha 255 and the colour bytes are the colour. */
        const uint32_t *src = (const uint32_t *)(data + y * stride);
        for (unsigned x = 0; x < width; x++) {
            row[3 * x] = (unsigned char)(src[x] >> 16);
            row[3 * x + 1] = (unsigned char)(src[x] >> 8);
            row[3 * x + 2] = (unsigned char)src[x];
        }
        png_write_row(png, row);
    }
    png_write_end(png, info);
    free(row);
    png_destroy_write_struct(&png, &info);
    return ferror(f) ? ART_E_IO : ART_OK;
}
