/* SPDX-License-Identifier: GPL-3.0-or-later
 * Copyright (C) 2026 The fabric-monitor authors
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "clock.h"
#include "clock_private.h"

/* The fit, in brief (doc/clock.md has the argument): with y = d for "out"
 * points and y = -d for "in" points, a line theta = c + b t with margin D is
 * feasible when every out point lies at least D above it and every in point at
 * least D below it. For a slope b the widest gap is
 *     G(b) = U(b) - L(b),  U(b) = min_out (y - b t),  L(b) = max_in (y - b t),
 * U concave and L convex, so G is concave and piecewise linear; its breakpoints
 * are the edge slopes of the lower hull of the out points and of the upper hull
 * of the in points. G'(b) = t_in*(b) - t_out*(b) (the times of the touching
 * hull vertices) falls as b rises, so one merge of the two sorted slope lists
 * finds the b where it changes sign: the exact optimum, O(n) after sorting.
 */

#define FIT_K_MAX 64

/* cross product of (b - a) x (c - a) on points (t, y) */
static double cross (double at, double ay, double bt, double by, double ct, double cy)
{
    return (bt - at) * (cy - ay) - (by - ay) * (ct - at);
}

/* Indices of the lower convex hull of the points (t, d), left to right, into h.
 * Returns the vertex count. Of points sharing one t only the lowest counts.
 */
static size_t hull (const fm_clock_point_t *p, size_t n, size_t *h)
{
    size_t m = 0;

    for (size_t i = 0; i < n; i++) {
        if (m > 0 && p[h[m - 1]].t == p[i].t) {
            if (p[h[m - 1]].d <= p[i].d) {
                continue;
            }
            m--;
        }
        /* keep only counter-clockwise turns */
        while (m >= 2
               && cross (p[h[m - 2]].t,
                         p[h[m - 2]].d,
                         p[h[m - 1]].t,
                         p[h[m - 1]].d,
                         p[i].t,
                         p[i].d)
                      <= 0) {
            m--;
        }
        h[m++] = i;
    }
    return m;
}

static double slope (const fm_clock_point_t *p, size_t i, size_t j, double ysign)
{
    return ysign * (p[j].d - p[i].d) / (p[j].t - p[i].t);
}

static bool sorted (const fm_clock_point_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isfinite (p[i].t) || !isfinite (p[i].d)
            || (i > 0 && p[i].t < p[i - 1].t)) {
            return false;
        }
    }
    return true;
}

/* k-th smallest residual of one direction against its support line */
static double thickness (
    const fm_clock_point_t *p, size_t n, double ysign, double c, double b, unsigned k)
{
    double best[FIT_K_MAX];
    unsigned m = 0;

    for (size_t i = 0; i < n; i++) {
        fm_clock_keep_smallest (
            best, &m, k, ysign * (ysign * p[i].d - (c + b * p[i].t)));
    }
    return best[m - 1];
}

int fm_clock_fit (const fm_clock_point_t *out,
                  size_t n_out,
                  const fm_clock_point_t *in,
                  size_t n_in,
                  unsigned k,
                  fm_clock_fit_t *fit)
{
    size_t *hf, *hr, mf, mr, i, j;
    double b, gd, u, l;
    int rc = -1;

    if (!out || !in || !fit || n_out == 0 || n_in == 0 || k == 0 || !sorted (out, n_out)
        || !sorted (in, n_in)) {
        errno = EINVAL;
        return -1;
    }
    if (k > FIT_K_MAX) {
        k = FIT_K_MAX;
    }
    if (!(hf = malloc ((n_out + n_in) * sizeof (*hf)))) {
        return -1;
    }
    hr = hf + n_out;
    /* the upper hull of the in points' y = -d has the vertices of the lower
     * hull of their d, with slopes negated
     */
    mf = hull (out, n_out, hf);
    mr = hull (in, n_in, hr);

    /* Sweep b upward from -inf. At -inf the out contact is the leftmost out
     * vertex and the in contact the rightmost in vertex.
     */
    i = 0;
    j = mr - 1;
    b = -INFINITY;
    gd = in[hr[j]].t - out[hf[i]].t;
    if (gd <= 0) {
        errno = EINVAL; /* unbounded as b -> -inf: no in point after an out point */
        goto done;
    }
    while (gd > 0) {
        /* next out breakpoint: slope of out hull edge i -> i + 1 (ascending);
         * next in breakpoint: slope of in upper hull edge j - 1 -> j, which
         * descends left to right, so walking j leftward ascends
         */
        double nf = i + 1 < mf ? slope (out, hf[i], hf[i + 1], 1.) : INFINITY;
        double nr = j > 0 ? slope (in, hr[j - 1], hr[j], -1.) : INFINITY;

        b = nf < nr ? nf : nr;
        if (isinf (b)) {
            errno = EINVAL; /* unbounded as b -> +inf */
            goto done;
        }
        if (nf <= nr) {
            i++;
        }
        if (nr <= nf) {
            j--;
        }
        gd = in[hr[j]].t - out[hf[i]].t;
    }
    if (gd == 0) {
        /* G is flat up to the next breakpoint: the contacts share one t, which
         * pins theta there but not the slope; take the middle of the flat part
         */
        double nf = i + 1 < mf ? slope (out, hf[i], hf[i + 1], 1.) : INFINITY;
        double nr = j > 0 ? slope (in, hr[j - 1], hr[j], -1.) : INFINITY;
        double next = nf < nr ? nf : nr;

        if (isfinite (next)) {
            b = (b + next) / 2;
        }
    }
    u = out[hf[i]].d - b * out[hf[i]].t;
    l = -in[hr[j]].d - b * in[hr[j]].t;
    fit->b = b;
    fit->a = (u + l) / 2;
    fit->margin = (u - l) / 2;
    /* residual of an out point above theta + D, of an in point above D - theta */
    fit->thick[FM_CLOCK_DIR_OUT] = thickness (out, n_out, 1., u, b, k);
    fit->thick[FM_CLOCK_DIR_IN] = thickness (in, n_in, -1., l, b, k);
    fit->t_lo = out[0].t > in[0].t ? out[0].t : in[0].t;
    fit->t_hi = out[n_out - 1].t < in[n_in - 1].t ? out[n_out - 1].t : in[n_in - 1].t;
    rc = 0;
done:
    free (hf);
    return rc;
}
