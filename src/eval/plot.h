/* plot.h — training curves as a PNG: up to SP_PLOT_MAX_PANELS panels stacked vertically
 * (e.g. loss, PSNR and Gaussian count against the step), each with axes, ticks with numeric
 * labels and a title, drawn with a small built-in bitmap font. Non-finite points (and, on a
 * log axis, values ≤ 0) are skipped and break the line. No dependency beyond io/image. */
#ifndef SPLAT_PLOT_H
#define SPLAT_PLOT_H

#include <stdint.h>

#define SP_PLOT_MAX_PANELS 4

typedef struct {
    const char *title; /* may be NULL */
    const double *x, *y; /* n points each; may be NULL when n is 0 */
    int n;
    int log_y; /* nonzero: logarithmic y axis */
} sp_plot_series;

/* Draws the panels into rgb [height][width][3] (8-bit). Returns 0, or -1 with an error
 * (bad panel count, image too small for the panels). */
int sp_plot_render(const sp_plot_series *panels, int num_panels, int width, int height, uint8_t *rgb);
/* Renders and writes a PNG atomically; errors name the path. */
int sp_plot_write_png(const char *path, const sp_plot_series *panels, int num_panels, int width, int height);

/* Draws text with the built-in 5×7 font (each glyph cell 6×8 units, `scale` pixels per unit) at
 * (x, y) = top-left, clipped to the image. Characters without a glyph are drawn as '?'. Returns
 * the width drawn in pixels. */
int sp_plot_text(uint8_t *rgb, int width, int height, int x, int y, int scale, const char *text,
                 const uint8_t color[3]);
/* Width in pixels of text drawn at `scale`. */
int sp_plot_text_width(const char *text, int scale);

#endif
