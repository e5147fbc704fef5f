/* plot.h — training curves as a PNG: up to SP_PLOT_MAX_PANELS panels stacked vertically
 * (e.g. loss, PSNR and Gaussian count against the step), sharing one x range, each with axes,
 * ticks with numeric labels, a title, an optional x-axis label and optional extra lines with a
 * legend, drawn with a small built-in bitmap font. Non-finite points (and, on a log axis,
 * values ≤ 0) are skipped and break the line. No dependency beyond io/image. */
#ifndef SPLAT_PLOT_H
#define SPLAT_PLOT_H

#include <stdint.h>

#define SP_PLOT_MAX_PANELS 4

typedef struct sp_plot_series {
    const char *title; /* may be NULL; an extra line's title is its legend entry */
    const double *x, *y; /* n points each; may be NULL when n is 0 */
    int n;
    int log_y; /* nonzero: logarithmic y axis */
    const char *x_label; /* drawn under the x axis; NULL = none */
    const char *note;    /* shown instead of the curve when the panel has fewer than 2 points */
    const struct sp_plot_series *lines; /* more lines in this panel (their log_y is the panel's) */
    int num_lines;                      /* at most SP_PLOT_MAX_LINES - 1; a legend names them all */
} sp_plot_series;

#define SP_PLOT_MAX_LINES 8

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
/* Draws text on a filled box (1-pixel margin at `scale` 1) so it reads on any picture. */
void sp_plot_label(uint8_t *rgb, int width, int height, int x, int y, int scale, const char *text,
                   const uint8_t color[3], const uint8_t box[3]);

#endif
