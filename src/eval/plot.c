/* plot.c — renders training curves to an RGB image (and a PNG): stacked panels sharing one x
 * range, with axes, grid lines at "nice" tick values, numeric tick labels, a title, an x-axis
 * label, several lines with a legend, or a note when a panel has too few points; text in a
 * built-in 5×7 font.
 * Lines are plain Bresenham segments; points that are not finite or beyond ±1e300 (or ≤ 0 on a
 * log axis) are skipped and break the line; a lone valid point is drawn as a small square. */
#include "eval/plot.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core.h"
#include "io/image.h"

/* ---- font: 5 columns × 7 rows per glyph, '#' = ink ---- */

typedef struct {
    char c;
    const char *rows[7];
} glyph;

static const glyph font[] = {
    {' ', {".....", ".....", ".....", ".....", ".....", ".....", "....."}},
    {'0', {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."}},
    {'1', {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'2', {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"}},
    {'3', {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."}},
    {'4', {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."}},
    {'5', {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."}},
    {'6', {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."}},
    {'7', {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."}},
    {'8', {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."}},
    {'9', {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."}},
    {'A', {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'B', {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."}},
    {'C', {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."}},
    {'D', {"###..", "#..#.", "#...#", "#...#", "#...#", "#..#.", "###.."}},
    {'E', {"#####", "#....", "#....", "####.", "#....", "#....", "#####"}},
    {'F', {"#####", "#....", "#....", "####.", "#....", "#....", "#...."}},
    {'G', {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"}},
    {'H', {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"}},
    {'I', {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'J', {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."}},
    {'K', {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"}},
    {'L', {"#....", "#....", "#....", "#....", "#....", "#....", "#####"}},
    {'M', {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"}},
    {'N', {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"}},
    {'O', {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'P', {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."}},
    {'Q', {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"}},
    {'R', {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"}},
    {'S', {".####", "#....", "#....", ".###.", "....#", "....#", "####."}},
    {'T', {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."}},
    {'U', {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."}},
    {'V', {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'W', {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."}},
    {'X', {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"}},
    {'Y', {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."}},
    {'Z', {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"}},
    {'a', {".....", ".....", ".###.", "....#", ".####", "#...#", ".####"}},
    {'b', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "####."}},
    {'c', {".....", ".....", ".###.", "#....", "#....", "#...#", ".###."}},
    {'d', {"....#", "....#", ".##.#", "#..##", "#...#", "#...#", ".####"}},
    {'e', {".....", ".....", ".###.", "#...#", "#####", "#....", ".###."}},
    {'f', {"..##.", ".#..#", ".#...", "###..", ".#...", ".#...", ".#..."}},
    {'g', {".....", ".....", ".####", "#...#", ".####", "....#", ".###."}},
    {'h', {"#....", "#....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
    {'i', {"..#..", ".....", ".##..", "..#..", "..#..", "..#..", ".###."}},
    {'j', {"...#.", ".....", "..##.", "...#.", "...#.", "#..#.", ".##.."}},
    {'k', {"#....", "#....", "#..#.", "#.#..", "##...", "#.#..", "#..#."}},
    {'l', {".##..", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."}},
    {'m', {".....", ".....", "##.#.", "#.#.#", "#.#.#", "#...#", "#...#"}},
    {'n', {".....", ".....", "#.##.", "##..#", "#...#", "#...#", "#...#"}},
    {'o', {".....", ".....", ".###.", "#...#", "#...#", "#...#", ".###."}},
    {'p', {".....", ".....", "####.", "#...#", "####.", "#....", "#...."}},
    {'q', {".....", ".....", ".####", "#...#", ".####", "....#", "....#"}},
    {'r', {".....", ".....", "#.##.", "##..#", "#....", "#....", "#...."}},
    {'s', {".....", ".....", ".####", "#....", ".###.", "....#", "####."}},
    {'t', {".#...", ".#...", "###..", ".#...", ".#...", ".#..#", "..##."}},
    {'u', {".....", ".....", "#...#", "#...#", "#...#", "#..##", ".##.#"}},
    {'v', {".....", ".....", "#...#", "#...#", "#...#", ".#.#.", "..#.."}},
    {'w', {".....", ".....", "#...#", "#...#", "#.#.#", "#.#.#", ".#.#."}},
    {'x', {".....", ".....", "#...#", ".#.#.", "..#..", ".#.#.", "#...#"}},
    {'y', {".....", ".....", "#...#", "#...#", ".####", "....#", ".###."}},
    {'z', {".....", ".....", "#####", "...#.", "..#..", ".#...", "#####"}},
    {'.', {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."}},
    {',', {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."}},
    {'-', {".....", ".....", ".....", ".###.", ".....", ".....", "....."}},
    {'+', {".....", "..#..", "..#..", "#####", "..#..", "..#..", "....."}},
    {':', {".....", ".##..", ".##..", ".....", ".##..", ".##..", "....."}},
    {'(', {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."}},
    {')', {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."}},
    {'[', {".###.", ".#...", ".#...", ".#...", ".#...", ".#...", ".###."}},
    {']', {".###.", "...#.", "...#.", "...#.", "...#.", "...#.", ".###."}},
    {'/', {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."}},
    {'%', {"##...", "##..#", "...#.", "..#..", ".#...", "#..##", "...##"}},
    {'=', {".....", ".....", "#####", ".....", "#####", ".....", "....."}},
    {'_', {".....", ".....", ".....", ".....", ".....", ".....", "#####"}},
    {'\'', {"..#..", "..#..", ".#...", ".....", ".....", ".....", "....."}},
    {'?', {".###.", "#...#", "....#", "...#.", "..#..", ".....", "..#.."}},
};

static const glyph *find_glyph(char c) {
    for (size_t i = 0; i < sizeof font / sizeof *font; i++)
        if (font[i].c == c) return &font[i];
    return find_glyph('?');
}

/* ---- raster helpers ---- */

typedef struct {
    uint8_t *rgb;
    int w, h;
} canvas;

static void put(const canvas *cv, int x, int y, const uint8_t c[3]) {
    if (x < 0 || y < 0 || x >= cv->w || y >= cv->h) return;
    uint8_t *p = cv->rgb + ((size_t)y * cv->w + x) * 3;
    p[0] = c[0];
    p[1] = c[1];
    p[2] = c[2];
}

static void fill_rect(const canvas *cv, int x0, int y0, int x1, int y1, const uint8_t c[3]) {
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) put(cv, x, y, c);
}

/* Bresenham segment, `thick` pixels square pen. */
static void line(const canvas *cv, int x0, int y0, int x1, int y1, int thick, const uint8_t c[3]) {
    int dx = abs(x1 - x0), sx = x0 < x1 ? 1 : -1, dy = -abs(y1 - y0), sy = y0 < y1 ? 1 : -1;
    int err = dx + dy, o = thick / 2;
    for (;;) {
        fill_rect(cv, x0 - o, y0 - o, x0 - o + thick, y0 - o + thick, c);
        if (x0 == x1 && y0 == y1) break;
        int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

int sp_plot_text_width(const char *text, int scale) {
    int n = text ? (int)strlen(text) : 0;
    return n ? (6 * n - 1) * scale : 0;
}

int sp_plot_text(uint8_t *rgb, int width, int height, int x, int y, int scale, const char *text,
                 const uint8_t color[3]) {
    if (!text) return 0;
    canvas cv = {rgb, width, height};
    for (const char *s = text; *s; s++, x += 6 * scale) {
        const glyph *g = find_glyph(*s);
        for (int r = 0; r < 7; r++)
            for (int col = 0; col < 5; col++)
                if (g->rows[r][col] == '#')
                    fill_rect(&cv, x + col * scale, y + r * scale, x + (col + 1) * scale, y + (r + 1) * scale, color);
    }
    return sp_plot_text_width(text, scale);
}

void sp_plot_label(uint8_t *rgb, int width, int height, int x, int y, int scale, const char *text,
                   const uint8_t color[3], const uint8_t box[3]) {
    canvas cv = {rgb, width, height};
    int m = scale;
    fill_rect(&cv, x - m, y - m, x + sp_plot_text_width(text, scale) + m, y + 7 * scale + m, box);
    sp_plot_text(rgb, width, height, x, y, scale, text, color);
}

/* ---- axes ---- */

#define MAX_TICKS 16

typedef struct {
    double lo, hi;      /* axis range in plot space (log10 of the value on a log axis) */
    int log;
    int n;
    double pos[MAX_TICKS];   /* tick positions in plot space */
    char label[MAX_TICKS][24];
} axis;

/* 1, 2 or 5 times a power of ten, near raw; *exp10 receives the power. */
static double nice_step(double raw, int *exp10) {
    int e = (int)floor(log10(raw));
    double f = raw / pow(10.0, e), n = f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10;
    if (n == 10) {
        n = 1;
        e++;
    }
    *exp10 = e;
    return n * pow(10.0, e);
}

static void format_value(char *buf, size_t size, double v, double step, int e) {
    double a = fabs(v);
    if (a < 1e6 && step >= 1) snprintf(buf, size, "%.0f", v);
    else if (a < 1e6 && e >= -5) snprintf(buf, size, "%.*f", -e, v);
    else snprintf(buf, size, "%.3g", v);
}

/* Linear ticks of value range [lo, hi]; `map` turns them into plot space (log10 on log axes). */
static void linear_ticks(axis *ax, double lo, double hi, int target, int to_log) {
    int e;
    double step = nice_step((hi - lo) / target, &e);
    double first = ceil(lo / step - 1e-9);
    ax->n = 0;
    for (int i = 0; i < MAX_TICKS; i++) {
        double t = (first + i) * step;
        if (t > hi + step * 1e-9) break;
        double v = fabs(t) < step * 1e-9 ? 0.0 : t;
        if (to_log && v <= 0) continue;
        ax->pos[ax->n] = to_log ? log10(v) : v;
        format_value(ax->label[ax->n], sizeof ax->label[0], v, step, e);
        ax->n++;
    }
}

/* The nearest value of the form {1, 2, 5} x 10^k below (up = 0) or above (up = 1) v > 0. */
static double snap_125(double v, int up) {
    double e = pow(10.0, floor(log10(v))), m = v / e;
    if (up) return (m <= 1.0000001 ? 1 : m <= 2.0000001 ? 2 : m <= 5.0000001 ? 5 : 10) * e;
    return (m >= 4.9999999 ? 5 : m >= 1.9999999 ? 2 : 1) * e;
}

/* Range [lo, hi] of finite values in plot space, widened when degenerate, padded by `pad`. */
static void make_axis(axis *ax, double lo, double hi, int log, double pad, int target) {
    ax->log = log;
    if (!(lo <= hi)) { /* no data */
        lo = 0;
        hi = 1;
    }
    if (hi - lo < 1e-12 * fmax(1.0, fabs(lo))) {
        double d = log ? 0.5 : fmax(0.5, fabs(lo) * 0.05);
        lo -= d;
        hi += d;
    }
    double p = (hi - lo) * pad;
    ax->lo = lo - p;
    ax->hi = hi + p;
    if (log && ax->hi - ax->lo >= 0.7) { /* end on labelled 1-2-5 values */
        ax->lo = log10(snap_125(pow(10.0, ax->lo), 0));
        ax->hi = log10(snap_125(pow(10.0, ax->hi), 1));
    }
    if (log && ax->hi - ax->lo >= 0.7) {
        /* Decades (every k-th when there are many); with few decades also 2 and 5 times them. */
        static const double mult[3] = {1, 2, 5};
        int k0 = (int)floor(ax->lo), k1 = (int)ceil(ax->hi);
        int dense = ax->hi - ax->lo < 2.5, every = dense ? 1 : (k1 - k0) / target + 1;
        ax->n = 0;
        for (int k = k0; k <= k1 && ax->n < MAX_TICKS; k += every)
            for (int j = 0; j < (dense ? 3 : 1) && ax->n < MAX_TICKS; j++) {
                double v = mult[j] * pow(10.0, k), lv = log10(v);
                if (lv < ax->lo - 1e-9 || lv > ax->hi + 1e-9) continue;
                ax->pos[ax->n] = lv;
                snprintf(ax->label[ax->n], sizeof ax->label[0], "%g", v);
                ax->n++;
            }
    } else if (log) {
        linear_ticks(ax, pow(10.0, ax->lo), pow(10.0, ax->hi), target, 1);
    } else {
        linear_ticks(ax, ax->lo, ax->hi, target, 0);
    }
}

/* Points beyond ±1e300 are skipped too, so that ranges and their paddings stay finite. */
static int valid_xy(double x, double y, int log_y) { return fabs(x) <= 1e300 && fabs(y) <= 1e300 && (!log_y || y > 0); }
static int valid_point(const sp_plot_series *s, int i, int log_y) { return valid_xy(s->x[i], s->y[i], log_y); }

/* The lines of a panel: the series itself, then its extra lines. */
static int panel_lines(const sp_plot_series *s, const sp_plot_series **out) {
    int k = 0;
    out[k++] = s;
    for (int i = 0; s->lines && i < s->num_lines && k < SP_PLOT_MAX_LINES; i++) out[k++] = &s->lines[i];
    return k;
}

static const uint8_t WHITE[3] = {255, 255, 255}, BLACK[3] = {0, 0, 0}, GRID[3] = {225, 225, 225},
                     GREY[3] = {90, 90, 90};
static const uint8_t LINE_COLORS[SP_PLOT_MAX_LINES][3] = {{31, 90, 180}, {200, 60, 40},  {40, 150, 70},
                                                          {140, 70, 170}, {230, 140, 20}, {20, 150, 160},
                                                          {130, 90, 50},  {210, 80, 150}};

typedef struct {
    axis ax, ay;
    int valid;         /* number of points drawn */
    double xlo, xhi;   /* range of the valid x values */
} panel_axes;

static void panel_axes_make(const sp_plot_series *s, panel_axes *pa) {
    const sp_plot_series *ls[SP_PLOT_MAX_LINES];
    int nl = panel_lines(s, ls);
    double xlo = INFINITY, xhi = -INFINITY, ylo = INFINITY, yhi = -INFINITY;
    pa->valid = 0;
    for (int l = 0; l < nl; l++) {
        int n = (ls[l]->x && ls[l]->y) ? ls[l]->n : 0;
        for (int i = 0; i < n; i++) {
            if (!valid_point(ls[l], i, s->log_y)) continue;
            double y = s->log_y ? log10(ls[l]->y[i]) : ls[l]->y[i];
            xlo = fmin(xlo, ls[l]->x[i]);
            xhi = fmax(xhi, ls[l]->x[i]);
            ylo = fmin(ylo, y);
            yhi = fmax(yhi, y);
            pa->valid++;
        }
    }
    pa->xlo = xlo;
    pa->xhi = xhi;
    make_axis(&pa->ax, xlo, xhi, 0, 0.0, 5);
    make_axis(&pa->ay, ylo, yhi, s->log_y, 0.05, 4);
}

static int y_label_width(const panel_axes *pa, int scale) {
    int w = 0;
    for (int i = 0; i < pa->ay.n; i++) w = sp_maxi(w, sp_plot_text_width(pa->ay.label[i], scale));
    return w;
}

/* Draws one panel in rows [top, bottom); `label_w` is the widest y label of all panels, so that
 * the plot areas line up. */
static void draw_panel(const canvas *cv, const sp_plot_series *s, const panel_axes *pa, int index, int top,
                       int bottom, int scale, int label_w) {
    int valid = pa->valid;
    const axis ax = pa->ax, ay = pa->ay;
    int ch = 8 * scale; /* text line height */
    int tick = 3 * scale;
    int left = label_w + tick + 4 * scale;
    int right = cv->w - 1 - sp_maxi(6 * scale, sp_plot_text_width(ax.n ? ax.label[ax.n - 1] : "", scale) / 2 + 2);
    int ptop = top + ch + 6 * scale;
    int pbottom = bottom - ch - tick - 12 * scale - (s->x_label ? ch + 2 * scale : 0);
    int sparse = valid < 2 && s->note; /* the note replaces the curve and the y axis */
    if (right <= left + 2) right = left + 2;
    if (pbottom <= ptop + 2) pbottom = ptop + 2;

    /* Title, centred. */
    const char *title = s->title ? s->title : "";
    int tw = sp_plot_text_width(title, scale);
    sp_plot_text(cv->rgb, cv->w, cv->h, (left + right - tw) / 2, top + 4 * scale, scale, title, BLACK);

    double sx = (right - left) / (ax.hi - ax.lo), sy = (pbottom - ptop) / (ay.hi - ay.lo);
#define PX(v) ((int)lround(left + ((v) - ax.lo) * sx))
#define PY(v) ((int)lround(pbottom - ((v) - ay.lo) * sy))

    /* Grid, ticks and labels. */
    for (int i = 0; i < ax.n; i++) {
        int x = PX(ax.pos[i]);
        line(cv, x, ptop, x, pbottom, 1, GRID);
        line(cv, x, pbottom, x, pbottom + tick, 1, BLACK);
        int lw = sp_plot_text_width(ax.label[i], scale);
        int lx = sp_maxi(0, sp_mini(cv->w - lw, x - lw / 2));
        sp_plot_text(cv->rgb, cv->w, cv->h, lx, pbottom + tick + 2 * scale, scale, ax.label[i], GREY);
    }
    if (s->x_label) {
        int xw = sp_plot_text_width(s->x_label, scale);
        sp_plot_text(cv->rgb, cv->w, cv->h, (left + right - xw) / 2, pbottom + tick + ch + 4 * scale, scale,
                     s->x_label, BLACK);
    }
    for (int i = 0; i < ay.n && !sparse; i++) {
        int y = PY(ay.pos[i]);
        line(cv, left, y, right, y, 1, GRID);
        line(cv, left - tick, y, left, y, 1, BLACK);
        int lw = sp_plot_text_width(ay.label[i], scale);
        sp_plot_text(cv->rgb, cv->w, cv->h, left - tick - 2 * scale - lw, y - 3 * scale, scale, ay.label[i], GREY);
    }
    line(cv, left, ptop, left, pbottom, 1, BLACK);
    line(cv, left, pbottom, right, pbottom, 1, BLACK);

    if (!valid || sparse) {
        const char *msg = sparse ? s->note : "no data";
        int mw = sp_plot_text_width(msg, scale);
        sp_plot_text(cv->rgb, cv->w, cv->h, sp_maxi(left + 2, (left + right - mw) / 2), (ptop + pbottom) / 2 - 3 * scale,
                     scale, msg, GREY);
        return;
    }

    /* The curves: segments between consecutive valid points; a lone point gets a square. */
    const sp_plot_series *ls[SP_PLOT_MAX_LINES];
    int nl = panel_lines(s, ls), pen = scale > 1 ? 2 : 1;
    for (int l = 0; l < nl; l++) {
        const sp_plot_series *c = ls[l];
        int n = (c->x && c->y) ? c->n : 0;
        const uint8_t *col = LINE_COLORS[(nl > 1 ? l : index) % SP_PLOT_MAX_LINES];
        int have_prev = 0, px0 = 0, py0 = 0;
        for (int i = 0; i < n; i++) {
            if (!valid_point(c, i, s->log_y)) {
                have_prev = 0;
                continue;
            }
            int x = PX(c->x[i]), y = PY(s->log_y ? log10(c->y[i]) : c->y[i]);
            int next_valid = i + 1 < n && valid_point(c, i + 1, s->log_y);
            if (have_prev) line(cv, px0, py0, x, y, pen, col);
            else if (!next_valid) fill_rect(cv, x - 2 * pen, y - 2 * pen, x + 2 * pen + 1, y + 2 * pen + 1, col);
            px0 = x;
            py0 = y;
            have_prev = 1;
        }
        /* legend of the extra lines, top right inside the plot */
        if (l > 0 && c->title) {
            int ly = ptop + 4 * scale + (l - 1) * (ch + 2 * scale);
            int lx = right - sp_plot_text_width(c->title, scale) - 20 * scale;
            sp_plot_label(cv->rgb, cv->w, cv->h, lx, ly, scale, c->title, BLACK, WHITE);
            fill_rect(cv, lx - 14 * scale, ly + 3 * scale, lx - 4 * scale, ly + 3 * scale + pen, col);
        }
    }
#undef PX
#undef PY
}

int sp_plot_render(const sp_plot_series *panels, int num_panels, int width, int height, uint8_t *rgb) {
    if (!panels || !rgb || num_panels < 1 || num_panels > SP_PLOT_MAX_PANELS)
        return sp_error("plot: %d panels (1 to %d can be drawn)", num_panels, SP_PLOT_MAX_PANELS);
    if (width < 160 || height < 100 * num_panels)
        return sp_error("plot: %dx%d is too small for %d panel%s (at least 160x%d)", width, height, num_panels,
                        num_panels == 1 ? "" : "s", 100 * num_panels);
    canvas cv = {rgb, width, height};
    fill_rect(&cv, 0, 0, width, height, WHITE);
    int panel_h = height / num_panels;
    int scale = sp_maxi(1, sp_mini(width / 640, panel_h / 240));
    panel_axes pa[SP_PLOT_MAX_PANELS];
    int label_w = 0;
    double xlo = INFINITY, xhi = -INFINITY;
    for (int p = 0; p < num_panels; p++) {
        panel_axes_make(&panels[p], &pa[p]);
        label_w = sp_maxi(label_w, y_label_width(&pa[p], scale));
        xlo = fmin(xlo, pa[p].xlo);
        xhi = fmax(xhi, pa[p].xhi);
    }
    /* one x range for every panel, so that a step lines up across them */
    if (xlo > 0 && xlo < 0.1 * (xhi - xlo)) xlo = 0; /* steps: start the axis at 0 */
    axis ax;
    make_axis(&ax, xlo, xhi, 0, 0.0, 5);
    for (int p = 0; p < num_panels; p++) pa[p].ax = ax;
    for (int p = 0; p < num_panels; p++)
        draw_panel(&cv, &panels[p], &pa[p], p, p * panel_h, p == num_panels - 1 ? height : (p + 1) * panel_h, scale,
                   label_w);
    return 0;
}

int sp_plot_write_png(const char *path, const sp_plot_series *panels, int num_panels, int width, int height) {
    if (width < 1 || height < 1 || width > 16384 || height > 16384)
        return sp_error("%s: cannot draw a %dx%d plot", path, width, height);
    uint8_t *rgb = sp_malloc((size_t)width * height * 3);
    if (sp_plot_render(panels, num_panels, width, height, rgb) != 0) {
        free(rgb);
        return sp_error_prefix("%s", path);
    }
    sp_image img = {width, height, 3, rgb};
    int rc = sp_image_save_png(path, &img);
    free(rgb);
    return rc;
}
