/* pg2.c -- exact squared prediction gap PG2(x, S) = E[(f(x') - f(x))^2] on a tree ensemble
 * (Gajewski et al.), with x'_j = x_j + noise_j for j in S and independent noise.
 *
 * Each tree is centred on its own value at x: c_t(x') = tree_t(x') - tree_t(x), so that
 * PG2 = scale^2 * sum_{t,u} E[c_t c_u] without cancellation. Only leaves reachable when the
 * features outside S follow x matter. A reachable leaf is a box; its probability is the
 * product over the perturbed features it constrains of cdf[hi] - cdf[lo] (a difference of
 * two entries of the per-row CDF table filled by Python). Pairs of trees that constrain no
 * common perturbed feature factorise, E[c_t c_u] = E[c_t] E[c_u], so
 *   sum_{t,u} E[c_t c_u] = sum_t (E[c_t^2] - E[c_t]^2) + (sum_t E[c_t])^2
 *                        + sum_{t != u dependent} (E[c_t c_u] - E[c_t] E[c_u]),
 * and only the dependent pairs pay the leaf-pair loop, over their shared features only. */
#include <stdlib.h>
#include <string.h>

#include "xai.h"

/* The leaf-pair loop is compiled twice on x86-64 Linux (glibc ifunc): for AVX2 and for the
 * baseline ISA, chosen at load time. Without -ffast-math the vectoriser keeps every IEEE
 * operation and its order (the partial sums are written out), so both clones give the same bits. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define XAI_VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#endif
#endif
#ifndef XAI_VECTOR_CLONES
#define XAI_VECTOR_CLONES
#endif

typedef struct {
    int32_t tree;         /* tree index */
    int32_t n_leaf;       /* reachable leaves with non-zero probability */
    int64_t leaf_start;   /* first leaf in the leaf arrays */
    int64_t box_start;    /* this tree's boxes start at box[2 * box_start]: feature-major, the CDF
                             values at the lower ends of used feature q at [q * n_leaf + l], the
                             upper ends at [(n_used + q) * n_leaf + l] */
    int32_t n_used;       /* perturbed features (S positions) this tree constrains */
    int32_t used_start;   /* their S positions, sorted, in ws->used_pos */
} tree_rec;

/* Growable buffers reused across rows and sets of one call. */
typedef struct {
    const xai_forest *f;
    const double *x;        /* current row */
    const double *cdf_row;  /* current row's CDF table */
    const int64_t *cdf_offset;
    int32_t width;          /* leaf_width */
    /* the current set S */
    int32_t n_s;
    int32_t *s_pos;         /* [n_features]: position in S or -1 */
    int32_t *s_feat;        /* [n_features]: feature at a position */
    int32_t *box_lo, *box_hi; /* [n_features]: current interval of each S position during a walk */
    int32_t *local;         /* [n_features]: S position -> index within the current tree's used list */
    uint8_t *used;          /* [n_features]: S position constrained by the current tree */
    int32_t n_words;        /* 64-bit words of a tree's used-position bitset */
    /* per-tree records */
    tree_rec *rec; size_t rec_cap; int32_t n_rec;
    double *mean; size_t mean_cap;        /* [n_rec * width] E[c_t] */
    uint64_t *bits; size_t bits_cap;      /* [n_rec * n_words] */
    int32_t *used_pos; size_t used_cap; int64_t n_used_total;
    /* reachable leaves */
    double *leaf_c; size_t leaf_c_cap;    /* [n_leaf * width] centred values */
    double *leaf_p; size_t leaf_p_cap;    /* [n_leaf] probabilities */
    int64_t n_leaf;
    double *box; size_t box_cap; int64_t n_box; /* dense boxes: CDF values at each used interval's (lo, hi] ends */
    double *scratch; size_t scratch_cap;  /* one tree's boxes while they are transposed */
    /* pair scratch */
    double *sum_mean;       /* [n_outputs]: sum of E[c_t] over trees */
    double *pair;           /* [leaf_width]: one dependent pair's covariance */
    double *a_t; size_t a_t_cap;
    double *a_u; size_t a_u_cap;
    const double **shared; /* [4 * n_features]: per shared feature, lower / upper ends of tree t, then of u */
    double *prob; size_t prob_cap;        /* [n_leaf of u]: P(box_l ∩ box_m) over the shared features */
    int64_t pair_terms;
    int status;
} workspace;

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return XAI_OK;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need)
        cap2 *= 2;
    void *p = realloc(*buf, cap2 * elem);
    if (p == NULL)
        return XAI_E_NOMEM;
    *buf = p;
    *cap = cap2;
    return XAI_OK;
}

static void ws_free(workspace *w)
{
    free(w->s_pos); free(w->s_feat); free(w->box_lo); free(w->box_hi); free(w->local); free(w->used);
    free(w->rec); free(w->mean); free(w->bits); free(w->used_pos);
    free(w->leaf_c); free(w->leaf_p); free(w->box); free(w->sum_mean); free(w->pair);
    free(w->a_t); free(w->a_u); free(w->scratch); free(w->shared); free(w->prob);
}

static int ws_init(workspace *w, const xai_forest *f, const int64_t *cdf_offset)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->cdf_offset = cdf_offset;
    w->width = f->leaf_width;
    const size_t d = (size_t)f->n_features;
    w->s_pos = malloc(d * sizeof(int32_t));
    w->s_feat = malloc(d * sizeof(int32_t));
    w->box_lo = malloc(d * sizeof(int32_t));
    w->box_hi = malloc(d * sizeof(int32_t));
    w->local = malloc(d * sizeof(int32_t));
    w->used = malloc(d);
    w->shared = malloc(4 * d * sizeof(const double *));
    w->sum_mean = malloc((size_t)f->n_outputs * sizeof(double));
    w->pair = malloc((size_t)f->leaf_width * sizeof(double));
    if (!w->sum_mean || !w->pair || !w->s_pos || !w->s_feat || !w->box_lo || !w->box_hi || !w->local || !w->used || !w->shared)
        return XAI_E_NOMEM;
    return XAI_OK;
}

/* Probability that the perturbed feature at S position k lands in (lo, hi] (rank indices). */
static inline double interval_prob(const workspace *w, int32_t k, int32_t lo, int32_t hi)
{
    const double *table = w->cdf_row + w->cdf_offset[w->s_feat[k]];
    const double p = table[hi] - table[lo];
    return p > 0.0 ? p : 0.0;
}

/* Walk tree t from local node k: features outside S follow x, features in S take both
 * children while their interval stays non-empty. mode 0 marks constrained S positions,
 * mode 1 records every reachable leaf with its dense box. */
static void walk(workspace *w, int32_t t, int32_t k, int mode, const double *x_value)
{
    const xai_forest *f = w->f;
    const int64_t g = f->tree_offset[t] + k;
    if (f->left_child[g] < 0) {
        if (mode == 0)
            return;
        tree_rec *r = &w->rec[w->n_rec];
        double p = 1.0;
        for (int32_t u = 0; u < r->n_used; u++) {
            const int32_t pos = w->used_pos[r->used_start + u];
            p *= interval_prob(w, pos, w->box_lo[pos], w->box_hi[pos]);
        }
        if (p == 0.0)
            return;
        if (grow((void **)&w->leaf_c, &w->leaf_c_cap, (size_t)(w->n_leaf + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->leaf_p, &w->leaf_p_cap, (size_t)(w->n_leaf + 1), sizeof(double)) ||
            grow((void **)&w->box, &w->box_cap, (size_t)2 * (w->n_box + r->n_used), sizeof(double))) {
            w->status = XAI_E_NOMEM;
            return;
        }
        for (int32_t o = 0; o < w->width; o++)
            w->leaf_c[w->n_leaf * w->width + o] = f->value[g * w->width + o] - x_value[o];
        w->leaf_p[w->n_leaf] = p;
        for (int32_t u = 0; u < r->n_used; u++) {
            const int32_t pos = w->used_pos[r->used_start + u];
            const double *table = w->cdf_row + w->cdf_offset[w->s_feat[pos]];
            w->box[2 * (w->n_box + u)] = table[w->box_lo[pos]];
            w->box[2 * (w->n_box + u) + 1] = table[w->box_hi[pos]];
        }
        w->n_box += r->n_used;
        w->n_leaf++;
        r->n_leaf++;
        return;
    }
    const int32_t j = f->feature[g];
    const int32_t pos = w->s_pos[j];
    if (pos < 0) {
        walk(w, t, xai_goes_left(f, g, w->x[j]) ? f->left_child[g] : f->right_child[g], mode, x_value);
        return;
    }
    if (mode == 0)
        w->used[pos] = 1;
    const int32_t rank = f->threshold_rank[g];
    const int32_t lo = w->box_lo[pos], hi = w->box_hi[pos];
    if (rank > lo) { /* left: x' below the boundary */
        w->box_hi[pos] = rank < hi ? rank : hi;
        walk(w, t, f->left_child[g], mode, x_value);
        w->box_hi[pos] = hi;
    }
    if (rank < hi) { /* right */
        w->box_lo[pos] = rank > lo ? rank : lo;
        walk(w, t, f->right_child[g], mode, x_value);
        w->box_lo[pos] = lo;
    }
}

/* Collect every tree's reachable leaves for the current (x, S); drop trees whose centred
 * values are all zero (they add nothing). */
static int collect(workspace *w)
{
    const xai_forest *f = w->f;
    w->n_rec = 0;
    w->n_leaf = 0;
    w->n_box = 0;
    w->n_used_total = 0;
    for (int32_t t = 0; t < f->n_trees && w->status == XAI_OK; t++) {
        if (grow((void **)&w->rec, &w->rec_cap, (size_t)w->n_rec + 1, sizeof(tree_rec)) ||
            grow((void **)&w->used_pos, &w->used_cap, (size_t)(w->n_used_total + w->n_s), sizeof(int32_t)) ||
            grow((void **)&w->mean, &w->mean_cap, (size_t)(w->n_rec + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->bits, &w->bits_cap, (size_t)(w->n_rec + 1) * w->n_words, sizeof(uint64_t)))
            return XAI_E_NOMEM;
        const int64_t x_leaf = xai_leaf_of(f, t, w->x);
        const double *x_value = f->value + x_leaf * w->width;
        memset(w->used, 0, (size_t)w->n_s);
        walk(w, t, 0, 0, x_value);
        tree_rec *r = &w->rec[w->n_rec];
        r->tree = t;
        r->n_leaf = 0;
        r->leaf_start = w->n_leaf;
        r->box_start = w->n_box;
        r->used_start = (int32_t)w->n_used_total;
        r->n_used = 0;
        uint64_t *bits = w->bits + (size_t)w->n_rec * w->n_words;
        memset(bits, 0, (size_t)w->n_words * sizeof(uint64_t));
        for (int32_t pos = 0; pos < w->n_s; pos++)
            if (w->used[pos]) {
                w->used_pos[r->used_start + r->n_used++] = pos;
                bits[pos >> 6] |= (uint64_t)1 << (pos & 63);
            }
        if (r->n_used == 0)
            continue; /* a single reachable leaf: x's own, centred value 0 */
        walk(w, t, 0, 1, x_value);
        if (w->status != XAI_OK)
            return w->status;
        int nonzero = 0;
        double *m = w->mean + (size_t)w->n_rec * w->width;
        for (int32_t o = 0; o < w->width; o++)
            m[o] = 0.0;
        for (int32_t l = 0; l < r->n_leaf; l++) {
            const double *c = w->leaf_c + (r->leaf_start + l) * w->width;
            const double p = w->leaf_p[r->leaf_start + l];
            for (int32_t o = 0; o < w->width; o++) {
                m[o] += c[o] * p;
                nonzero |= c[o] != 0.0;
            }
        }
        if (!nonzero) { /* forget the tree's leaves */
            w->n_leaf = r->leaf_start;
            w->n_box = r->box_start;
            continue;
        }
        /* leaf-major (lo, hi) pairs as the walk wrote them -> feature-major lower ends, then upper ends */
        const size_t n_vals = (size_t)2 * r->n_leaf * r->n_used;
        if (grow((void **)&w->scratch, &w->scratch_cap, n_vals, sizeof(double)))
            return XAI_E_NOMEM;
        double *box = w->box + 2 * r->box_start;
        memcpy(w->scratch, box, n_vals * sizeof(double));
        for (int32_t l = 0; l < r->n_leaf; l++)
            for (int32_t q = 0; q < r->n_used; q++) {
                box[(size_t)q * r->n_leaf + l] = w->scratch[2 * ((size_t)l * r->n_used + q)];
                box[(size_t)(r->n_used + q) * r->n_leaf + l] = w->scratch[2 * ((size_t)l * r->n_used + q) + 1];
            }
        w->n_used_total += r->n_used;
        w->n_rec++;
    }
    return w->status;
}

/* CDF mass of the intersection of (lo_a, hi_a] and (lo_b, hi_b], given as CDF values. */
static inline double overlap(double lo_a, double hi_a, double lo_b, double hi_b)
{
    const double hi = hi_b < hi_a ? hi_b : hi_a;
    const double lo = lo_b > lo_a ? lo_b : lo_a;
    return hi - lo > 0.0 ? hi - lo : 0.0;
}

/* E[c_t c_u] - E[c_t] E[c_u] for two trees that share perturbed features, added into acc. */
__attribute__((target_clones("avx512f", "avx2", "default")))
static int dependent_pair(workspace *w, const tree_rec *rt, const tree_rec *ru, int32_t it, int32_t iu, double *acc)
{
    const int32_t W = w->width;
    const int32_t *pt = w->used_pos + rt->used_start, *pu = w->used_pos + ru->used_start;
    /* local[pos]: index among the shared positions, or -1; set by merging the sorted used lists */
    int32_t k_sh = 0;
    for (int32_t q = 0; q < rt->n_used; q++)
        w->local[pt[q]] = -1;
    for (int32_t q = 0; q < ru->n_used; q++)
        w->local[pu[q]] = -1;
    for (int32_t a = 0, b = 0; a < rt->n_used && b < ru->n_used;) {
        if (pt[a] == pu[b]) {
            w->local[pt[a]] = k_sh++;
            a++;
            b++;
        } else if (pt[a] < pu[b]) {
            a++;
        } else {
            b++;
        }
    }
    if (grow((void **)&w->a_t, &w->a_t_cap, (size_t)rt->n_leaf * W, sizeof(double)) ||
        grow((void **)&w->a_u, &w->a_u_cap, (size_t)ru->n_leaf * W, sizeof(double)) ||
        grow((void **)&w->prob, &w->prob_cap, (size_t)(rt->n_leaf > ru->n_leaf ? rt->n_leaf : ru->n_leaf),
             sizeof(double)))
        return XAI_E_NOMEM;
    /* per-leaf weights a_l = c_l * product of the non-shared factors; pointers to the shared ends
     * (the CDF is monotone: CDF(min(hi)) = min(CDF(hi)), the same for max(lo)) */
    const tree_rec *side[2] = {rt, ru};
    double *weights[2] = {w->a_t, w->a_u};
    for (int s = 0; s < 2; s++) {
        const tree_rec *r = side[s];
        const int32_t *used = w->used_pos + r->used_start;
        const double *box = w->box + 2 * r->box_start;
        const int32_t L = r->n_leaf;
        double *restrict p = w->prob;
        for (int32_t l = 0; l < L; l++)
            p[l] = 1.0;
        for (int32_t q = 0; q < r->n_used; q++) {
            const double *lo = box + (size_t)q * L, *hi = box + (size_t)(r->n_used + q) * L;
            const int32_t idx = w->local[used[q]];
            if (idx >= 0) {
                w->shared[4 * idx + 2 * s] = lo;
                w->shared[4 * idx + 2 * s + 1] = hi;
                continue;
            }
            for (int32_t l = 0; l < L; l++) {
                const double width = hi[l] - lo[l];
                p[l] *= width > 0.0 ? width : 0.0;
            }
        }
        const double *c = w->leaf_c + r->leaf_start * W;
        for (int32_t l = 0; l < L; l++)
            for (int32_t o = 0; o < W; o++)
                weights[s][(size_t)l * W + o] = c[(size_t)l * W + o] * p[l];
    }
    const int32_t Lt = rt->n_leaf, Lu = ru->n_leaf;
    const double *mt = w->mean + (size_t)it * W, *mu = w->mean + (size_t)iu * W;
    double *restrict prob = w->prob;
    for (int32_t o = 0; o < W; o++)
        acc[o] -= mt[o] * mu[o];
    for (int32_t l = 0; l < Lt; l++) {
        /* prob[m] = P(box_l ∩ box_m) over the shared features (a dependent pair shares at least
         * one): one vectorisable pass per feature, the first one writing */
        for (int32_t k = 0; k < k_sh; k++) {
            const double lo_l = w->shared[4 * k][l], hi_l = w->shared[4 * k + 1][l];
            const double *restrict lo_u = w->shared[4 * k + 2];
            const double *restrict hi_u = w->shared[4 * k + 3];
            if (k == 0)
                for (int32_t m = 0; m < Lu; m++)
                    prob[m] = overlap(lo_l, hi_l, lo_u[m], hi_u[m]);
            else
                for (int32_t m = 0; m < Lu; m++)
                    prob[m] *= overlap(lo_l, hi_l, lo_u[m], hi_u[m]);
        }
        if (W == 1) { /* four partial sums: independent chains the compiler can put in one vector */
            double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
            int32_t m = 0;
            for (; m + 4 <= Lu; m += 4) {
                s0 += w->a_u[m] * prob[m];
                s1 += w->a_u[m + 1] * prob[m + 1];
                s2 += w->a_u[m + 2] * prob[m + 2];
                s3 += w->a_u[m + 3] * prob[m + 3];
            }
            for (; m < Lu; m++)
                s0 += w->a_u[m] * prob[m];
            acc[0] += w->a_t[l] * ((s0 + s1) + (s2 + s3));
        } else {
            for (int32_t m = 0; m < Lu; m++)
                for (int32_t o = 0; o < W; o++)
                    acc[o] += w->a_t[(size_t)l * W + o] * w->a_u[(size_t)m * W + o] * prob[m];
        }
    }
    w->pair_terms += (int64_t)Lt * Lu;
    return XAI_OK;
}

/* PG2 of the current row for the set described by w->s_pos / w->s_feat; writes n_outputs values. */
static int pg2_one(workspace *w, double *out)
{
    const xai_forest *f = w->f;
    const int32_t W = w->width;
    for (int32_t o = 0; o < f->n_outputs; o++)
        out[o] = 0.0;
    if (w->n_s == 0)
        return XAI_OK;
    w->n_words = (w->n_s + 63) / 64;
    for (int32_t k = 0; k < w->n_s; k++) {
        const int32_t j = w->s_feat[k];
        w->box_lo[k] = 0;
        w->box_hi[k] = (int32_t)(w->cdf_offset[j + 1] - w->cdf_offset[j]) - 1;
    }
    int status = collect(w);
    if (status != XAI_OK)
        return status;
    /* sum_t (E[c_t^2] - E[c_t]^2) + (sum_t E[c_t])^2 per output */
    for (int32_t i = 0; i < w->n_rec; i++) {
        const tree_rec *r = &w->rec[i];
        double *y = out + f->tree_target[r->tree];
        const double *m = w->mean + (size_t)i * W;
        for (int32_t l = 0; l < r->n_leaf; l++) {
            const double *c = w->leaf_c + (r->leaf_start + l) * W;
            const double p = w->leaf_p[r->leaf_start + l];
            for (int32_t o = 0; o < W; o++)
                y[o] += c[o] * c[o] * p;
        }
        for (int32_t o = 0; o < W; o++)
            y[o] -= m[o] * m[o];
    }
    double *sum_mean = w->sum_mean, *pair = w->pair;
    for (int32_t o = 0; o < f->n_outputs; o++)
        sum_mean[o] = 0.0;
    for (int32_t i = 0; i < w->n_rec; i++)
        for (int32_t o = 0; o < W; o++)
            sum_mean[f->tree_target[w->rec[i].tree] + o] += w->mean[(size_t)i * W + o];
    for (int32_t o = 0; o < f->n_outputs; o++)
        out[o] += sum_mean[o] * sum_mean[o];
    /* dependent pairs, each counted twice */
    for (int32_t i = 0; i < w->n_rec && status == XAI_OK; i++) {
        const uint64_t *bi = w->bits + (size_t)i * w->n_words;
        const int32_t target = f->tree_target[w->rec[i].tree];
        for (int32_t k = i + 1; k < w->n_rec && status == XAI_OK; k++) {
            if (f->tree_target[w->rec[k].tree] != target)
                continue;
            const uint64_t *bk = w->bits + (size_t)k * w->n_words;
            int shares = 0;
            for (int32_t q = 0; q < w->n_words && !shares; q++)
                shares = (bi[q] & bk[q]) != 0;
            if (!shares)
                continue;
            for (int32_t o = 0; o < W; o++)
                pair[o] = 0.0;
            status = dependent_pair(w, &w->rec[i], &w->rec[k], i, k, pair);
            for (int32_t o = 0; o < W; o++)
                out[target + o] += 2.0 * pair[o];
        }
    }
    if (f->aggregate == XAI_AGGREGATE_MEAN) {
        const double scale = 1.0 / ((double)f->n_trees * (double)f->n_trees);
        for (int32_t o = 0; o < f->n_outputs; o++)
            out[o] *= scale;
    }
    return status;
}

/* Shared argument checks; also verifies that each feature's CDF table is a valid CDF. */
static int check_call(const xai_forest *f, const double *X, int64_t n_rows, const double *cdf,
                      const int64_t *cdf_offset, int64_t cdf_len)
{
    if (f == NULL || X == NULL || cdf == NULL || cdf_offset == NULL || n_rows < 0)
        return XAI_E_SIZE;
    if (f->threshold_rank == NULL)
        return XAI_E_UNSUPPORTED;
    if (cdf_offset[0] < 0 || cdf_offset[f->n_features] > cdf_len)
        return XAI_E_SIZE;
    for (int32_t j = 0; j < f->n_features; j++)
        if (cdf_offset[j + 1] - cdf_offset[j] < 2)
            return XAI_E_SIZE;
    /* every node's rank must index inside its feature's table (excluding the two end entries) */
    for (int64_t g = 0; g < f->n_nodes; g++)
        if (f->left_child[g] >= 0) {
            const int32_t j = f->feature[g];
            if (f->threshold_rank[g] < 1 || f->threshold_rank[g] > cdf_offset[j + 1] - cdf_offset[j] - 2)
                return XAI_E_INDEX;
        }
    return XAI_OK;
}

/* Sets w->s_pos / s_feat from a mask row; checks the CDF tables and x of the perturbed features. */
static int set_from_mask(workspace *w, const uint8_t *mask)
{
    const xai_forest *f = w->f;
    w->n_s = 0;
    for (int32_t j = 0; j < f->n_features; j++) {
        w->s_pos[j] = -1;
        if (!mask[j])
            continue;
        if (!isfinite(w->x[j]))
            return XAI_E_VALUE;
        const double *table = w->cdf_row + w->cdf_offset[j];
        const int64_t len = w->cdf_offset[j + 1] - w->cdf_offset[j];
        if (table[0] != 0.0 || table[len - 1] != 1.0)
            return XAI_E_VALUE;
        for (int64_t r = 1; r < len; r++)
            if (!(table[r] >= table[r - 1]) || table[r] > 1.0)
                return XAI_E_VALUE;
        w->s_pos[j] = w->n_s;
        w->s_feat[w->n_s++] = j;
    }
    return XAI_OK;
}

int xai_pg2(const xai_forest *f, const double *X, int64_t n_rows,
            const uint8_t *mask, int64_t n_sets,
            const double *cdf, const int64_t *cdf_offset, int64_t cdf_len,
            double *out, int64_t *pair_terms)
{
    int status = check_call(f, X, n_rows, cdf, cdf_offset, cdf_len);
    if (status != XAI_OK)
        return status;
    if (mask == NULL || out == NULL || n_sets < 0)
        return XAI_E_SIZE;
    workspace w;
    status = ws_init(&w, f, cdf_offset);
    for (int64_t i = 0; i < n_rows && status == XAI_OK; i++) {
        w.x = X + i * f->n_features;
        w.cdf_row = cdf + i * cdf_len;
        for (int64_t s = 0; s < n_sets && status == XAI_OK; s++) {
            const int64_t row_set = i * n_sets + s;
            status = set_from_mask(&w, mask + row_set * f->n_features);
            if (status == XAI_OK)
                status = pg2_one(&w, out + row_set * f->n_outputs);
        }
    }
    if (pair_terms != NULL)
        *pair_terms = w.pair_terms;
    ws_free(&w);
    return status;
}

int xai_greedy_pg2(const xai_forest *f, const double *X, int64_t n_rows,
                   const double *cdf, const int64_t *cdf_offset, int64_t cdf_len,
                   const double *output_weight, int32_t *ranking, double *path)
{
    int status = check_call(f, X, n_rows, cdf, cdf_offset, cdf_len);
    if (status != XAI_OK)
        return status;
    if (output_weight == NULL || ranking == NULL || path == NULL)
        return XAI_E_SIZE;
    const int32_t d = f->n_features;
    workspace w;
    status = ws_init(&w, f, cdf_offset);
    uint8_t *mask = calloc((size_t)d, 1);
    double *value = malloc((size_t)f->n_outputs * sizeof(double));
    if (status == XAI_OK && (mask == NULL || value == NULL))
        status = XAI_E_NOMEM;
    for (int64_t i = 0; i < n_rows && status == XAI_OK; i++) {
        w.x = X + i * d;
        w.cdf_row = cdf + i * cdf_len;
        memset(mask, 0, (size_t)d);
        for (int32_t step = 0; step < d && status == XAI_OK; step++) {
            int32_t best = -1;
            double best_value = 0.0;
            for (int32_t j = 0; j < d && status == XAI_OK; j++) {
                if (mask[j])
                    continue;
                mask[j] = 1;
                status = set_from_mask(&w, mask);
                if (status == XAI_OK)
                    status = pg2_one(&w, value);
                mask[j] = 0;
                double objective = 0.0;
                for (int32_t o = 0; o < f->n_outputs; o++)
                    objective += output_weight[o] * value[o];
                if (best < 0 || objective > best_value) {
                    best = j;
                    best_value = objective;
                }
            }
            mask[best] = 1;
            ranking[i * d + step] = best;
            path[i * d + step] = best_value;
        }
    }
    free(mask);
    free(value);
    ws_free(&w);
    return status;
}
