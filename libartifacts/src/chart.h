/* Private to libartifacts: the chart renderer's PNG encoder. */
#ifndef EDGEFIT_ARTIFACTS_CHART_H
#define EDGEFIT_ARTIFACTS_CHART_H

#include <stddef.h>
#include <stdio.h>

#include "edgefit/artifacts.h"

/* Write width x height pixels of cairo ARGB32 data (rows stride bytes
 * apart, opaque) to f as an RGB PNG with the chart's pHYs and the Title
 * and Software text chunks. ART_E_NOMEM or ART_E_IO. */
int art_png_write_argb(FILE *f, const unsigned char *data, unsigned width,
                       unsigned height, size_t stride, const char *title);

#endif
