/* bench_cpu_stages.c — times the CPU stages project, bin, rasterize, backward_raster and
 * project_back on a random scene shaped like a fresh 3DGS initialization: N Gaussians uniform in a
 * cube of side 2.6, isotropic scales near the mean neighbour distance, opacity 0.1, SH degree 3,
 * seen by a 200x200 camera at distance 4 (field of view 0.69 rad).
 *
 *   make BUILD=build lib && cc -O3 -fopenmp -Isrc -o build/bench_cpu_stages bench/bench_cpu_stages.c \
 *       build/libsplat.a -lm && OMP_NUM_THREADS=2 build/bench_cpu_stages [N] [opacity] [reps] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/ref/stages.h"
#include "core/core.h"
#include "scene/gaussians.h"

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    float opacity = argc > 2 ? (float)atof(argv[2]) : 0.1f;
    int reps = argc > 3 ? atoi(argv[3]) : 10, W = 200, H = 200;
    sp_camera cam;
    memset(&cam, 0, sizeof cam);
    cam.width = W, cam.height = H;
    cam.fx = cam.fy = 0.5f * W / tanf(0.5f * 0.6911f);
    cam.cx = W / 2.0f, cam.cy = H / 2.0f;
    float c2w[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, -4, 0, 0, 0, 1};
    sp_camera_set_c2w_opencv(&cam, c2w);

    sp_gaussians g, gr;
    sp_gaussians_init(&g, n, 3);
    sp_gaussians_init(&gr, n, 3);
    g.n = gr.n = n;
    sp_rng r;
    sp_rng_seed(&r, 1, 0);
    float nn = 2.6f / cbrtf((float)n);
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) g.means[3 * i + k] = 2.6f * (sp_rng_uniform(&r) - 0.5f);
        float s = logf(nn * (0.5f + sp_rng_uniform(&r)));
        for (int k = 0; k < 3; k++) g.log_scales[3 * i + k] = s;
        for (int k = 0; k < 4; k++) g.quats[4 * i + k] = sp_rng_normal(&r);
        g.opacity_logits[i] = sp_logitf(opacity);
        for (int k = 0; k < 3 * g.K; k++) g.sh[(size_t)i * g.K * 3 + k] = 0.3f * sp_rng_normal(&r);
    }
    sp_params p = {n, g.K, g.means, g.log_scales, g.quats, g.opacity_logits, g.sh};
    sp_params_grad pgr = {n, gr.K, gr.means, gr.log_scales, gr.quats, gr.opacity_logits, gr.sh};
    sp_proj proj;
    sp_proj_alloc(&proj, n);
    sp_proj_grad pg;
    sp_proj_grad_alloc(&pg, n);
    sp_bins bins = {0};
    sp_raster_out ro;
    sp_raster_out_alloc(&ro, W, H);
    float bg[3] = {1, 1, 1}, *dl = SP_NEW(float, 3 * W * H);
    for (int i = 0; i < 3 * W * H; i++) dl[i] = 1e-3f * (sp_rng_uniform(&r) - 0.5f);

    double t[5] = {0}, cpu0 = 0;
    for (int rep = 0; rep <= reps; rep++) {
        double t0 = sp_now();
        cpu_project(&p, &cam, 3, &proj);
        double t1 = sp_now();
        cpu_bin(&proj, n, &cam, &bins);
        double t2 = sp_now();
        cpu_rasterize(&proj, &bins, &cam, bg, &ro);
        double t3 = sp_now();
        sp_proj_grad_zero(&pg, n);
        cpu_backward_raster(&proj, &bins, &cam, bg, &ro, dl, &pg);
        double t4 = sp_now();
        sp_gaussians_zero(&gr);
        cpu_project_back(&p, &cam, 3, &proj, &pg, &pgr);
        double t5 = sp_now();
        if (rep == 0) { /* warm-up */
            cpu0 = (double)clock() / CLOCKS_PER_SEC;
            continue;
        }
        t[0] += t1 - t0, t[1] += t2 - t1, t[2] += t3 - t2, t[3] += t4 - t3, t[4] += t5 - t4;
    }
    double mean_nc = 0;
    for (int i = 0; i < W * H; i++) mean_nc += ro.n_contrib[i];
    printf("N=%d opacity=%.2f pairs=%ld mean n_contrib=%.1f\n", n, opacity, (long)bins.num_pairs, mean_nc / (W * H));
    const char *names[5] = {"project", "bin", "rasterize", "backward_raster", "project_back"};
    double total = 0;
    for (int k = 0; k < 5; k++) {
        printf("%-16s %8.2f ms\n", names[k], 1e3 * t[k] / reps);
        total += t[k];
    }
    printf("%-16s %8.2f ms  (process CPU time %.2f ms per step)\n", "total", 1e3 * total / reps,
           1e3 * ((double)clock() / CLOCKS_PER_SEC - cpu0) / reps);
    return 0;
}
