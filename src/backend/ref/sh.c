/* sh.c — spherical harmonics colour (degree 0..3) and its backward, float entry points of the
 * shared math in stage_math.h. */
#include "backend/ref/stages.h"

#define SP_REAL float
#define SP_SUFFIX f
#include "backend/ref/stage_math.h"

void sp_sh_eval(int degree, const float *sh, const float dir[3], float out[3]) {
    sp_m_sh_eval_f(degree, sh, dir, out);
}

void sp_sh_eval_back(int degree, const float *sh, const float dir[3], const float dl_dout[3], float *dl_dsh,
                     float dl_ddir[3]) {
    sp_m_sh_eval_back_f(degree, sh, dir, dl_dout, dl_dsh, dl_ddir);
}
