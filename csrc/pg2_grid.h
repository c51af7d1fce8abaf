/* pg2_grid.h -- internal to the C core (not part of the Python-facing API): the helpers pg2.c and
 * pg2_grid.c share, and the grid path of PG2's pair sums for oblivious trees (pg2_grid.c), which
 * pg2.c calls per (row, set) instead of its leaf-pair loop when that is cheaper. */
#ifndef XAI_PG2_GRID_H
#define XAI_PG2_GRID_H

#include <stdint.h>
#include <stdlib.h>

#include "xai.h"

/* Makes *buf hold at least need elements of elem bytes (doubling), without overflowing the size. */
static inline int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return XAI_OK;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need) {
        if (cap2 > SIZE_MAX / 2)
            return XAI_E_NOMEM;
        cap2 *= 2;
    }
    if (elem != 0 && cap2 > SIZE_MAX / elem)
        return XAI_E_NOMEM;
    void *p = realloc(*buf, cap2 * elem);
    if (p == NULL)
        return XAI_E_NOMEM;
    *buf = p;
    *cap = cap2;
    return XAI_OK;
}

/* Mass of the interval (lo, hi] from F and S at its ends: F(hi) - F(lo) when it lies below the
 * median, S(lo) - S(hi) above it, and the mass on each side when it contains the median. */
static inline double interval_mass(double f_lo, double f_hi, double s_lo, double s_hi)
{
    double p;
    if (f_hi <= 0.5) {
        p = f_hi - f_lo;
    } else if (s_lo <= 0.5) {
        p = s_lo - s_hi;
    } else {
        const double below = 0.5 - f_lo, above = 0.5 - s_hi;
        p = (below > 0.0 ? below : 0.0) + (above > 0.0 ? above : 0.0);
    }
    return p > 0.0 ? p : 0.0;
}

/* Index of the lowest set bit of b != 0. */
static inline int lowest_bit(uint64_t b)
{
#if defined(__GNUC__) || defined(__clang__)
    return __builtin_ctzll(b);
#else
    int c = 0;
    while (!(b & 1)) {
        b >>= 1;
        c++;
    }
    return c;
#endif
}

/* sum of p[a] over the atoms a of set a & b (cw words each; b NULL: the atoms of a). */
static inline double atom_sum(const uint64_t *a, const uint64_t *b, int32_t cw, const double *p)
{
    double sum = 0.0;
    for (int32_t q = 0; q < cw; q++)
        for (uint64_t bits = b != NULL ? a[q] & b[q] : a[q]; bits; bits &= bits - 1)
            sum += p[64 * q + lowest_bit(bits)];
    return sum;
}

/* The grid path's state of one call: the oblivious trees' levels, leaves and cells (built once per
 * call, they depend on the forest and the table layout only), and the per-(row, set) records and
 * scratch. Opaque to pg2.c. */
typedef struct grid_state grid_state;

/* What the grid path reads of the current (row, set) and where it writes: pg2.c's records (trees with
 * perturbed features that matter, by target then index), their means E[c_t], and pair_acc[i * W + o]
 * = sum over the later records u of record i's target sharing a perturbed feature with it of
 * E[c_t c_u] - E[c_t] E[c_u] (pairs sharing none are independent: 0). */
typedef struct {
    const double *x;            /* the row */
    const int32_t *s_pos;       /* [n_features]: a feature's position in S, or -1 */
    int32_t n_s;
    const double *cdf_row, *sf_row; /* the row's tables (xai_pg2) */
    const int64_t *x_leaf;      /* [n_trees]: the row's leaf in each tree */
    int32_t n_rec;
    const int32_t *rec_tree;    /* [n_rec]: each record's tree */
    const double *mean;         /* [n_rec * leaf_width]: E[c_t] */
    double *pair_acc;           /* out [n_rec * leaf_width] */
    int64_t terms;              /* out (added to): products of the contractions */
} grid_row;

/* A new grid state for forest f (ranks needed) and the table layout cdf_offset; cw: 64-bit words of
 * the widest atom set (pg2.c's). *out is NULL only on XAI_E_NOMEM. */
int grid_new(const xai_forest *f, const int64_t *cdf_offset, int32_t cw, grid_state **out);
void grid_free(grid_state *g);
/* 1 when every tree is oblivious within the grid path's limits (see grid_new in pg2_grid.c). */
int grid_usable(const grid_state *g);
/* The records of the current (row, set) (first stage, cheap) and the estimated cost of grid_pairs in
 * the units of pg2.c's cost model (seconds). */
int grid_records(grid_state *g, grid_row *r, double *cost);
/* The pair sums of the records grid_records prepared, into r->pair_acc. */
int grid_pairs(grid_state *g, grid_row *r);

#endif /* XAI_PG2_GRID_H */
