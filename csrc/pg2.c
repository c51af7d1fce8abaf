/* pg2.c -- exact squared prediction gap PG2(x, S) = E[(f(x') - f(x))^2] on a tree ensemble
 * (Gajewski et al.), with x'_j = x_j + noise_j for j in S and independent noise.
 *
 * Each tree is centred on its own value at x: c_t(x') = tree_t(x') - tree_t(x), so that
 * PG2 = scale^2 * sum_{t,u} E[c_t c_u] without cancellation. Only leaves reachable when the
 * features outside S follow x matter, and of those only the ones whose value differs from x's.
 * A reachable leaf is a box: per perturbed feature an interval between two split boundaries,
 * whose mass comes from the per-row tables filled by Python, the CDF F and the survival
 * function S at every boundary. A mass is a difference of F values below the median of x'_j and
 * of S values above it (an interval around the median adds the mass on each side), so that an
 * interval far in either tail keeps its full relative precision (1 - F would lose it). The leaf
 * probability p is the product of its masses. Pairs of trees that constrain no common perturbed
 * feature factorise, E[c_t c_u] = E[c_t] E[c_u], so
 *   sum_{t,u} E[c_t c_u] = sum_t (E[c_t^2] - E[c_t]^2) + (sum_t E[c_t])^2
 *                        + sum_{t != u dependent} (E[c_t c_u] - E[c_t] E[c_u]),
 * and for a dependent pair, with C_l the perturbed features leaf l of t constrains,
 *   E[c_t c_u] = sum_l c_l sum_m c_m p_m prod_{k in C_l} frac_k(l, m),
 * frac_k(l, m) being the share of leaf m's mass in feature k that falls in l's interval (m's mass
 * is 1 in a feature it leaves whole). The leaves of all of t's partners u are laid end to end in
 * chunks, so that each leaf l of t costs one vector pass per feature of C_l over many m. */
#include <float.h>
#include <stdlib.h>
#include <string.h>

#include "xai.h"

/* The leaf-pair loop is compiled for AVX-512, AVX2 and the baseline ISA on x86-64 Linux (glibc
 * ifunc), chosen at load time. Without -ffast-math the vectoriser keeps every IEEE operation and
 * its order (the partial sums are written out), so all clones give the same bits. */
#if defined(__x86_64__) && defined(__linux__) && defined(__GLIBC__) && defined(__has_attribute)
#if __has_attribute(target_clones)
#define XAI_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef XAI_VECTOR_CLONES
#define XAI_VECTOR_CLONES
#endif
/* The loops called from a cloned function are inlined into each clone to get its ISA. */
#if defined(__GNUC__) || defined(__clang__)
#define XAI_INLINE static inline __attribute__((always_inline))
#else
#define XAI_INLINE static inline
#endif

/* Per (leaf, used feature) of a tree, with (lo, hi] the leaf's interval in that feature:
 * F(lo), F(hi), -S(lo), -S(hi) (all four increase with the boundary), the interval's mass and
 * its reciprocal (finite: a kept leaf's probability, and so each of its masses, is >= DBL_MIN),
 * and (g, h), the interval as an outer leaf of the leaf-pair loop uses it (see band). */
enum { BOX_FLO, BOX_FHI, BOX_NSLO, BOX_NSHI, BOX_MASS, BOX_INV, BOX_G, BOX_H, BOX_BLOCKS };

/* The columns of an inner leaf in a chunk of the leaf-pair loop, per feature. */
enum { COL_FLO, COL_FHI, COL_NSLO, COL_NSHI, COL_INV, COL_BLOCKS };

/* The cases of an outer interval (lo, hi] in the leaf-pair loop: bit 0 set when its differences
 * are taken in -S values (it lies above the median), bit 1 when it contains the median and has
 * one infinite end, so that the loop takes 1 less the share of each inner leaf beyond its finite
 * end; CASE_AROUND: it contains the median and both ends are finite. */
enum { CASE_F = 0, CASE_S = 1, CASE_F_KEEP = 2, CASE_S_KEEP = 3, CASE_AROUND = 4 };

/* Inner leaves per chunk (its columns stay in the first cache levels), and the padding of a
 * chunk (entries that add nothing), so that the vector loops need no tails. */
enum { CHUNK = 256, PAD = 8 };

typedef struct {
    int32_t tree;         /* tree index */
    int32_t n_leaf;       /* reachable leaves with probability >= DBL_MIN and a centred value != 0 */
    int64_t leaf_start;   /* first leaf in the leaf arrays */
    int64_t box_start;    /* this tree's boxes start at box[BOX_BLOCKS * box_start] and kind[box_start]:
                             feature-major, block c of used feature q at [(c * n_used + q) * n_leaf + l] */
    int32_t n_used;       /* perturbed features (S positions) this tree constrains */
    int32_t used_start;   /* their S positions, sorted, in ws->used_pos */
} tree_rec;

/* A leaf (global index) and its pruning key. */
typedef struct {
    double key;
    int64_t leaf;
} leaf_key;

/* Growable buffers reused across rows and sets of one call. */
typedef struct {
    const xai_forest *f;
    const double *x;        /* current row */
    int64_t row;            /* its index in X */
    const double *cdf_row;  /* current row's CDF table */
    const double *sf_row;   /* current row's survival table */
    const int64_t *cdf_offset;
    uint8_t *checked;       /* [n_features]: the current row's tables of feature j were validated */
    int32_t width;          /* leaf_width */
    /* the current set S */
    int32_t n_s;
    int32_t *s_pos;         /* [n_features]: position in S or -1 */
    int32_t *s_feat;        /* [n_features]: feature at a position */
    int32_t *box_lo, *box_hi; /* [n_features]: current interval of each S position during a walk */
    int32_t *top;           /* [n_features]: an S position's last rank (box_hi of the whole line) */
    uint8_t *used;          /* [n_features]: S position constrained by the current tree */
    int32_t n_words;        /* 64-bit words of a position bitset */
    /* per-tree records */
    tree_rec *rec; size_t rec_cap; int32_t n_rec;
    double *mean; size_t mean_cap;        /* [n_rec * width] E[c_t] */
    uint64_t *bits; size_t bits_cap;      /* [n_rec * n_words] positions each tree constrains */
    int32_t *used_pos; size_t used_cap; int64_t n_used_total;
    /* reachable leaves */
    double *leaf_c; size_t leaf_c_cap;    /* [n_leaf * width] centred values */
    double *leaf_p; size_t leaf_p_cap;    /* [n_leaf] probabilities */
    double *leaf_b; size_t leaf_b_cap;    /* [n_leaf * width] centred value times probability */
    uint64_t *leaf_bits; size_t leaf_bits_cap; /* [n_leaf * n_words] positions whose interval is not the whole line */
    int64_t n_leaf;
    double *box; size_t box_cap; int64_t n_box; /* BOX_BLOCKS values per (leaf, used feature) */
    uint8_t *kind; size_t kind_cap;       /* [n_box] the CASE_ of each (leaf, used feature) */
    int32_t *rank; size_t rank_cap;       /* [2 * n_box]: (lo, hi] ranks per (leaf, used feature) */
    double *sq; size_t sq_cap;            /* [n_rec * width] E[c_t^2] */
    double *bound_max;      /* [n_outputs]: sum over trees of max |c| (prune_leaves) */
    leaf_key *order; size_t order_cap;    /* [n_leaf]: the leaves by pruning key */
    double prune_rtol;      /* 0: every leaf pair; > 0: certified relative error bound (prune_leaves) */
    int64_t n_pruned;       /* leaves dropped by prune_leaves over the call */
    /* the leaf-pair loop */
    int32_t *partner;       /* [n_trees]: the partners of the current tree */
    int32_t *slot;          /* [n_features]: a position's slot in the current chunk's columns, or -1 */
    uint64_t *chunk_bits;   /* [n_words]: positions of t some tree of the chunk constrains */
    double *col; size_t col_cap;          /* [n_slots * COL_BLOCKS * chunk]: the chunk's columns */
    double *chunk_b; size_t chunk_b_cap;  /* [chunk * width]: c_m p_m of its leaves */
    double *prob; size_t prob_cap;        /* [chunk]: prod over C_l of frac_k(l, m) */
    double *sum_mean;       /* [n_outputs]: sum of E[c_t] over trees */
    double *pair;           /* [leaf_width]: the covariances of one tree with its partners */
    double *vec;            /* [3 * leaf_width]: sums over a chunk, over the partners' means, one leaf's weight */
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
    free(w->checked); free(w->s_pos); free(w->s_feat); free(w->box_lo); free(w->box_hi); free(w->top); free(w->used);
    free(w->rec); free(w->mean); free(w->bits); free(w->used_pos);
    free(w->leaf_c); free(w->leaf_p); free(w->leaf_b); free(w->leaf_bits); free(w->box); free(w->kind); free(w->rank);
    free(w->partner); free(w->slot); free(w->chunk_bits); free(w->col); free(w->chunk_b); free(w->prob);
    free(w->sum_mean); free(w->pair); free(w->vec); free(w->sq); free(w->bound_max); free(w->order);
}

static int ws_init(workspace *w, const xai_forest *f, const int64_t *cdf_offset, double prune_rtol)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->prune_rtol = prune_rtol;
    w->cdf_offset = cdf_offset;
    w->row = -1;
    w->width = f->leaf_width;
    const size_t d = (size_t)f->n_features, W = (size_t)f->leaf_width;
    w->checked = malloc(d);
    w->s_pos = malloc(d * sizeof(int32_t));
    w->s_feat = malloc(d * sizeof(int32_t));
    w->box_lo = malloc(d * sizeof(int32_t));
    w->box_hi = malloc(d * sizeof(int32_t));
    w->top = malloc(d * sizeof(int32_t));
    w->used = malloc(d);
    w->partner = malloc((size_t)f->n_trees * sizeof(int32_t));
    w->slot = malloc(d * sizeof(int32_t));
    w->chunk_bits = malloc((d + 63) / 64 * sizeof(uint64_t));
    w->sum_mean = malloc((size_t)f->n_outputs * sizeof(double));
    w->pair = malloc(W * sizeof(double));
    w->vec = malloc(3 * W * sizeof(double));
    w->bound_max = malloc((size_t)f->n_outputs * sizeof(double));
    if (!w->bound_max || !w->checked || !w->s_pos || !w->s_feat || !w->box_lo || !w->box_hi || !w->top || !w->used || !w->partner ||
        !w->slot || !w->chunk_bits || !w->sum_mean || !w->pair || !w->vec)
        return XAI_E_NOMEM;
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

/* Walk tree t from local node k: features outside S follow x, features in S take both
 * children while their interval stays non-empty. mode 0 marks constrained S positions,
 * mode 1 records every reachable leaf whose value differs from x's, with its intervals (ranks). */
static void walk(workspace *w, int32_t t, int32_t k, int mode, const double *x_value)
{
    const xai_forest *f = w->f;
    const int64_t g = f->tree_offset[t] + k;
    if (f->left_child[g] < 0) {
        if (mode == 0)
            return;
        tree_rec *r = &w->rec[w->n_rec];
        int nonzero = 0;
        for (int32_t o = 0; o < w->width; o++)
            nonzero |= f->value[g * w->width + o] - x_value[o] != 0.0;
        if (!nonzero)
            return; /* adds nothing to any sum */
        const int64_t k_box = w->n_box; /* (leaf, used) entries so far, over all trees */
        if (grow((void **)&w->leaf_c, &w->leaf_c_cap, (size_t)(w->n_leaf + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->rank, &w->rank_cap, (size_t)2 * (k_box + r->n_used), sizeof(int32_t))) {
            w->status = XAI_E_NOMEM;
            return;
        }
        for (int32_t o = 0; o < w->width; o++)
            w->leaf_c[w->n_leaf * w->width + o] = f->value[g * w->width + o] - x_value[o];
        for (int32_t u = 0; u < r->n_used; u++) {
            const int32_t pos = w->used_pos[r->used_start + u];
            w->rank[2 * (k_box + u)] = w->box_lo[pos];
            w->rank[2 * (k_box + u) + 1] = w->box_hi[pos];
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

/* After the walk of tree r: each leaf's probability (leaves below DBL_MIN are dropped: too small
 * to matter, and it keeps every 1 / mass finite), the tree's E[c_t] and E[c_t^2], and the largest
 * |c| of its leaves per output, added into w->bound_max (for prune_leaves). */
static int tree_moments(workspace *w, tree_rec *r)
{
    const int32_t W = w->width, n_used = r->n_used, L0 = r->n_leaf;
    if (grow((void **)&w->leaf_p, &w->leaf_p_cap, (size_t)(r->leaf_start + L0), sizeof(double)))
        return XAI_E_NOMEM;
    double *p = w->leaf_p + r->leaf_start, *c = w->leaf_c + r->leaf_start * W;
    int32_t *rank = w->rank + 2 * r->box_start;
    for (int32_t l = 0; l < L0; l++)
        p[l] = 1.0;
    for (int32_t q = 0; q < n_used; q++) {
        const int64_t off = w->cdf_offset[w->s_feat[w->used_pos[r->used_start + q]]];
        const double *F = w->cdf_row + off, *S = w->sf_row + off;
        for (int32_t l = 0; l < L0; l++) {
            const int32_t lo = rank[2 * ((size_t)l * n_used + q)], hi = rank[2 * ((size_t)l * n_used + q) + 1];
            p[l] *= interval_mass(F[lo], F[hi], S[lo], S[hi]);
        }
    }
    double *bound_max = w->bound_max + w->f->tree_target[r->tree];
    for (int32_t o = 0; o < W; o++) {
        double largest = 0.0;
        for (int32_t l = 0; l < L0; l++)
            largest = fmax(largest, fabs(c[(size_t)l * W + o]));
        bound_max[o] += largest;
    }
    int32_t L = 0; /* drop the improbable leaves, moving the others down */
    for (int32_t l = 0; l < L0; l++) {
        if (!(p[l] >= DBL_MIN))
            continue;
        if (L != l) {
            p[L] = p[l];
            memmove(c + (size_t)L * W, c + (size_t)l * W, (size_t)W * sizeof(double));
            memmove(rank + 2 * (size_t)L * n_used, rank + 2 * (size_t)l * n_used, 2 * (size_t)n_used * sizeof(int32_t));
        }
        L++;
    }
    r->n_leaf = L;
    double *m = w->mean + (size_t)w->n_rec * W, *sq = w->sq + (size_t)w->n_rec * W;
    for (int32_t o = 0; o < W; o++) {
        m[o] = 0.0;
        sq[o] = 0.0;
    }
    for (int32_t l = 0; l < L; l++)
        for (int32_t o = 0; o < W; o++) {
            const double cp = c[(size_t)l * W + o] * p[l];
            m[o] += cp;
            sq[o] += c[(size_t)l * W + o] * cp;
        }
    w->n_leaf = r->leaf_start + L;
    w->n_box = r->box_start + (int64_t)L * n_used;
    return XAI_OK;
}

/* The box columns of tree r's leaves from their ranks (feature-major), their cases, bits and c * p. */
static int tree_boxes(workspace *w, const tree_rec *r)
{
    const int32_t W = w->width, n_words = w->n_words, n_used = r->n_used, L = r->n_leaf;
    const int64_t n_leaf = r->leaf_start + L;
    if (grow((void **)&w->leaf_b, &w->leaf_b_cap, (size_t)n_leaf * W, sizeof(double)) ||
        grow((void **)&w->leaf_bits, &w->leaf_bits_cap, (size_t)n_leaf * n_words, sizeof(uint64_t)) ||
        grow((void **)&w->box, &w->box_cap, (size_t)BOX_BLOCKS * (size_t)(r->box_start + (int64_t)L * n_used),
             sizeof(double)) ||
        grow((void **)&w->kind, &w->kind_cap, (size_t)(r->box_start + (int64_t)L * n_used), 1))
        return XAI_E_NOMEM;
    const double *p = w->leaf_p + r->leaf_start, *c = w->leaf_c + r->leaf_start * W;
    const int32_t *rank = w->rank + 2 * r->box_start;
    double *b = w->leaf_b + r->leaf_start * W, *box = w->box + (size_t)BOX_BLOCKS * r->box_start;
    uint8_t *kind = w->kind + r->box_start;
    uint64_t *bits = w->leaf_bits + (size_t)r->leaf_start * n_words;
    memset(bits, 0, (size_t)L * n_words * sizeof(uint64_t));
    for (int32_t q = 0; q < n_used; q++) {
        const int32_t pos = w->used_pos[r->used_start + q];
        const int64_t off = w->cdf_offset[w->s_feat[pos]];
        const double *F = w->cdf_row + off, *S = w->sf_row + off;
        double *col[BOX_BLOCKS];
        for (int k = 0; k < BOX_BLOCKS; k++)
            col[k] = box + ((size_t)k * n_used + q) * L;
        uint8_t *kq = kind + (size_t)q * L;
        for (int32_t l = 0; l < L; l++) {
            const int32_t lo = rank[2 * ((size_t)l * n_used + q)], hi = rank[2 * ((size_t)l * n_used + q) + 1];
            const double f_lo = F[lo], f_hi = F[hi], s_lo = S[lo], s_hi = S[hi];
            const double mass = interval_mass(f_lo, f_hi, s_lo, s_hi);
            col[BOX_FLO][l] = f_lo;
            col[BOX_FHI][l] = f_hi;
            col[BOX_NSLO][l] = -s_lo;
            col[BOX_NSHI][l] = -s_hi;
            col[BOX_MASS][l] = mass;
            col[BOX_INV][l] = 1.0 / mass;
            if (f_hi <= 0.5) {
                kq[l] = CASE_F;
                col[BOX_G][l] = f_lo;
                col[BOX_H][l] = f_hi;
            } else if (s_lo <= 0.5) {
                kq[l] = CASE_S;
                col[BOX_G][l] = -s_lo;
                col[BOX_H][l] = -s_hi;
            } else if (f_lo == 0.0) { /* (-inf, hi]: 1 less the share above hi */
                kq[l] = CASE_S_KEEP;
                col[BOX_G][l] = -s_hi;
                col[BOX_H][l] = 0.0;
            } else if (s_hi == 0.0) { /* (lo, inf): 1 less the share at or below lo */
                kq[l] = CASE_F_KEEP;
                col[BOX_G][l] = 0.0;
                col[BOX_H][l] = f_lo;
            } else {
                kq[l] = CASE_AROUND;
                col[BOX_G][l] = f_lo;
                col[BOX_H][l] = -s_hi;
            }
            if (lo > 0 || hi < w->top[pos])
                bits[(size_t)l * n_words + (pos >> 6)] |= (uint64_t)1 << (pos & 63);
        }
    }
    for (int32_t l = 0; l < L; l++)
        for (int32_t o = 0; o < W; o++)
            b[(size_t)l * W + o] = c[(size_t)l * W + o] * p[l];
    return XAI_OK;
}

static int by_key(const void *a, const void *b)
{
    const leaf_key *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->leaf > y->leaf) - (x->leaf < y->leaf);
}

/* Certified pruning of the leaf-pair sums. Write C = sum_t c_t, and let D = sum_t d_t be the part
 * of C carried by a set of dropped leaves (d_t = c_t when t's leaf is dropped, else 0). The
 * diagonal terms and the means E[c_t] keep every leaf; only the dependent-pair sums use the kept
 * leaves, replacing E[c_t c_u] by E[(c_t - d_t)(c_u - d_u)]. Over the pairs t != u that changes the
 * result by sum_{t != u} E[d_t c_u + (c_t - d_t) d_u], whose size is at most
 *   sum_t E|d_t| * sum_u max|c_u| + sum_u E|d_u| * sum_t max|c_t| = 2 M sum_{dropped l} |c_l| p_l,
 * M = sum_t max_l |c_l| (per output). By Jensen, PG2 = E[C^2] >= (E[C])^2 = (sum_t E[c_t])^2, so
 * dropping the leaves of smallest |c_l| p_l while 2 M sum |c_l| p_l <= rtol (sum_t E[c_t])^2
 * keeps the relative error of every output below rtol. Rows where sum_t E[c_t] = 0 prune nothing.
 * Each leaf's key is its share of the budget of its worst output; the leaves are dropped in
 * increasing key order (ties by position, so the choice is deterministic) while the keys add up
 * to at most 1, then the kept leaves are moved down. */
static int prune_leaves(workspace *w)
{
    const xai_forest *f = w->f;
    const int32_t W = w->width;
    double *inv_budget = w->sum_mean; /* per output: 1 / its budget of sum |c_l| p_l */
    for (int32_t o = 0; o < f->n_outputs; o++)
        inv_budget[o] = 0.0;
    for (int32_t i = 0; i < w->n_rec; i++)
        for (int32_t o = 0; o < W; o++)
            inv_budget[f->tree_target[w->rec[i].tree] + o] += w->mean[(size_t)i * W + o];
    for (int32_t o = 0; o < f->n_outputs; o++) {
        const double lower = inv_budget[o] * inv_budget[o];
        inv_budget[o] = lower > 0.0 ? 2.0 * w->bound_max[o] / (w->prune_rtol * lower) : INFINITY;
    }
    if (grow((void **)&w->order, &w->order_cap, (size_t)w->n_leaf, sizeof(leaf_key)))
        return XAI_E_NOMEM;
    int64_t n = 0;
    for (int32_t i = 0; i < w->n_rec; i++) {
        const tree_rec *r = &w->rec[i];
        const double *inv = inv_budget + f->tree_target[r->tree];
        for (int32_t l = 0; l < r->n_leaf; l++) {
            const int64_t g = r->leaf_start + l;
            double key = 0.0;
            for (int32_t o = 0; o < W; o++) {
                const double a = fabs(w->leaf_c[g * W + o]) * w->leaf_p[g];
                if (a > 0.0)
                    key = fmax(key, a * inv[o]);
            }
            w->order[n++] = (leaf_key){key, g};
        }
    }
    qsort(w->order, (size_t)n, sizeof(leaf_key), by_key);
    double spent = 0.0;
    for (int64_t k = 0; k < n && spent + w->order[k].key <= 1.0; k++) {
        spent += w->order[k].key;
        w->leaf_p[w->order[k].leaf] = 0.0; /* kept leaves have p >= DBL_MIN */
    }
    int64_t leaf_at = 0, box_at = 0;
    for (int32_t i = 0; i < w->n_rec; i++) {
        tree_rec *r = &w->rec[i];
        const int32_t n_used = r->n_used;
        int32_t L = 0;
        for (int32_t l = 0; l < r->n_leaf; l++) {
            const int64_t g = r->leaf_start + l;
            if (w->leaf_p[g] == 0.0)
                continue;
            const int64_t to = leaf_at + L;
            w->leaf_p[to] = w->leaf_p[g];
            memmove(w->leaf_c + to * W, w->leaf_c + g * W, (size_t)W * sizeof(double));
            memmove(w->rank + 2 * (box_at + (int64_t)L * n_used), w->rank + 2 * (r->box_start + (int64_t)l * n_used),
                    2 * (size_t)n_used * sizeof(int32_t));
            L++;
        }
        w->n_pruned += r->n_leaf - L;
        r->leaf_start = leaf_at;
        r->box_start = box_at;
        r->n_leaf = L;
        leaf_at += L;
        box_at += (int64_t)L * n_used;
    }
    w->n_leaf = leaf_at;
    w->n_box = box_at;
    return XAI_OK;
}

/* Collect every tree's reachable leaves for the current (x, S), with their moments; drop trees
 * whose centred values are all zero (they add nothing); prune (see prune_leaves); lay out the
 * kept leaves' boxes. */
static int collect(workspace *w)
{
    const xai_forest *f = w->f;
    w->n_rec = 0;
    w->n_leaf = 0;
    w->n_box = 0;
    w->n_used_total = 0;
    for (int32_t o = 0; o < f->n_outputs; o++)
        w->bound_max[o] = 0.0;
    for (int32_t t = 0; t < f->n_trees && w->status == XAI_OK; t++) {
        if (grow((void **)&w->rec, &w->rec_cap, (size_t)w->n_rec + 1, sizeof(tree_rec)) ||
            grow((void **)&w->used_pos, &w->used_cap, (size_t)(w->n_used_total + w->n_s), sizeof(int32_t)) ||
            grow((void **)&w->mean, &w->mean_cap, (size_t)(w->n_rec + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->sq, &w->sq_cap, (size_t)(w->n_rec + 1) * w->width, sizeof(double)) ||
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
        if (r->n_leaf > 0) {
            const int status = tree_moments(w, r);
            if (status != XAI_OK)
                return status;
        }
        if (r->n_leaf == 0) { /* every reachable leaf has x's value, or is too improbable */
            w->n_leaf = r->leaf_start;
            w->n_box = r->box_start;
            continue;
        }
        w->n_used_total += r->n_used;
        w->n_rec++;
    }
    if (w->status == XAI_OK && w->prune_rtol > 0.0)
        w->status = prune_leaves(w);
    for (int32_t i = 0; i < w->n_rec && w->status == XAI_OK; i++)
        w->status = tree_boxes(w, &w->rec[i]);
    return w->status;
}

/* Mass of the intersection of (lo_a, hi_a] and (lo_b, hi_b], given as values of one increasing
 * function whose differences are masses: F, or -S. */
XAI_INLINE double overlap(double lo_a, double hi_a, double lo_b, double hi_b)
{
    const double hi = hi_b < hi_a ? hi_b : hi_a;
    const double lo = lo_b > lo_a ? lo_b : lo_a;
    return hi - lo > 0.0 ? hi - lo : 0.0;
}

/* The leaf-pair loop needs, for an outer leaf l and a feature k it constrains, the share of each
 * inner leaf m's mass in k that falls in l's interval (lo, hi]: frac(m) = mass((lo, hi] ∩
 * (lo_m, hi_m]) / mass_m, every difference taken on the side of the median where it lies:
 *   (lo, hi] below the median (CASE_F):      frac = overlap in F values * inv_m;
 *   (lo, hi] above it (CASE_S):              the same in -S values;
 *   (-inf, hi], hi above it (CASE_S_KEEP):   frac = 1 - (overlap of m with (hi, inf) in -S values) * inv_m;
 *   (lo, inf), lo below it (CASE_F_KEEP):    frac = 1 - (overlap of m with (-inf, lo] in F values) * inv_m;
 *   (lo, hi] around it (CASE_AROUND):        band_around.
 * The first four share one loop, frac = keep + sign * overlap((g, h], (x_m, y_m]) * inv_m, with
 * (x, y) the F or -S columns of the inner leaves and (g, h) precomputed by finish_tree. */
XAI_INLINE void band(double *restrict prob, int first, double keep, double sign, double g, double h,
                     const double *restrict x, const double *restrict y, const double *restrict inv, int32_t n)
{
    if (first)
        for (int32_t m = 0; m < n; m++)
            prob[m] = keep + sign * (overlap(g, h, x[m], y[m]) * inv[m]);
    else
        for (int32_t m = 0; m < n; m++)
            prob[m] *= keep + sign * (overlap(g, h, x[m], y[m]) * inv[m]);
}

/* frac for an outer interval (lo, hi] with lo below the median and hi above it: 1 less the
 * shares of m at or below lo (F values) and above hi (-S values). */
XAI_INLINE void band_around(double *restrict prob, int first, double f_lo, double ns_hi, const double *restrict col,
                            int32_t n)
{
    const double *restrict a = col + (size_t)COL_FLO * n, *restrict b = col + (size_t)COL_FHI * n;
    const double *restrict c = col + (size_t)COL_NSLO * n, *restrict d = col + (size_t)COL_NSHI * n;
    const double *restrict inv = col + (size_t)COL_INV * n;
    if (first)
        for (int32_t m = 0; m < n; m++)
            prob[m] = 1.0 - overlap(0.0, f_lo, a[m], b[m]) * inv[m] - overlap(ns_hi, 0.0, c[m], d[m]) * inv[m];
    else
        for (int32_t m = 0; m < n; m++)
            prob[m] *= 1.0 - overlap(0.0, f_lo, a[m], b[m]) * inv[m] - overlap(ns_hi, 0.0, c[m], d[m]) * inv[m];
}

/* sum_m a[m] * b[m], n a multiple of PAD, in eight partial sums: independent chains the compiler
 * can put in vectors, in an order that does not depend on the vector width. */
XAI_INLINE double dot(const double *restrict a, const double *restrict b, int32_t n)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, s6 = 0.0, s7 = 0.0;
    for (int32_t m = 0; m < n; m += 8) {
        s0 += a[m] * b[m];
        s1 += a[m + 1] * b[m + 1];
        s2 += a[m + 2] * b[m + 2];
        s3 += a[m + 3] * b[m + 3];
        s4 += a[m + 4] * b[m + 4];
        s5 += a[m + 5] * b[m + 5];
        s6 += a[m + 6] * b[m + 6];
        s7 += a[m + 7] * b[m + 7];
    }
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
}

/* Lays the leaves of partners part[0 .. n_part) end to end: for each position of tree t some of
 * them constrains (chunk_bits), a slot of COL_BLOCKS columns (a partner leaving that feature whole
 * gets the whole line: F 0 .. 1, -S -1 .. 0, inv 1), and their c * p. Returns the padded length. */
static int64_t lay_chunk(workspace *w, const tree_rec *rt, const int32_t *part, int32_t n_part)
{
    const int32_t W = w->width, n_words = w->n_words;
    const uint64_t *bt = w->bits + (size_t)(rt - w->rec) * n_words;
    int64_t n = 0;
    for (int32_t q = 0; q < n_words; q++)
        w->chunk_bits[q] = 0;
    for (int32_t i = 0; i < n_part; i++) {
        n += w->rec[part[i]].n_leaf;
        for (int32_t q = 0; q < n_words; q++)
            w->chunk_bits[q] |= w->bits[(size_t)part[i] * n_words + q] & bt[q];
    }
    const int64_t np = (n + PAD - 1) / PAD * PAD;
    int32_t k = 0;
    for (int32_t q = 0; q < rt->n_used; q++) {
        const int32_t pos = w->used_pos[rt->used_start + q];
        w->slot[pos] = w->chunk_bits[pos >> 6] >> (pos & 63) & 1 ? k++ : -1;
    }
    if (grow((void **)&w->col, &w->col_cap, (size_t)k * COL_BLOCKS * np, sizeof(double)) ||
        grow((void **)&w->chunk_b, &w->chunk_b_cap, (size_t)np * W, sizeof(double)) ||
        grow((void **)&w->prob, &w->prob_cap, (size_t)np, sizeof(double))) {
        w->status = XAI_E_NOMEM;
        return 0;
    }
    int64_t at = 0;
    for (int32_t i = 0; i < n_part; i++) {
        const tree_rec *ru = &w->rec[part[i]];
        const int32_t L = ru->n_leaf, n_used = ru->n_used;
        const double *box = w->box + (size_t)BOX_BLOCKS * ru->box_start;
        memcpy(w->chunk_b + at * W, w->leaf_b + ru->leaf_start * W, (size_t)L * W * sizeof(double));
        int32_t j = 0; /* merge t's slots (increasing positions) with u's used list */
        for (int32_t q = 0; q < rt->n_used; q++) {
            const int32_t pos = w->used_pos[rt->used_start + q], s = w->slot[pos];
            if (s < 0)
                continue;
            while (j < n_used && w->used_pos[ru->used_start + j] < pos)
                j++;
            double *col = w->col + (size_t)s * COL_BLOCKS * np + at;
            if (j < n_used && w->used_pos[ru->used_start + j] == pos) {
                memcpy(col + COL_FLO * np, box + ((size_t)BOX_FLO * n_used + j) * L, (size_t)L * sizeof(double));
                memcpy(col + COL_FHI * np, box + ((size_t)BOX_FHI * n_used + j) * L, (size_t)L * sizeof(double));
                memcpy(col + COL_NSLO * np, box + ((size_t)BOX_NSLO * n_used + j) * L, (size_t)L * sizeof(double));
                memcpy(col + COL_NSHI * np, box + ((size_t)BOX_NSHI * n_used + j) * L, (size_t)L * sizeof(double));
                memcpy(col + COL_INV * np, box + ((size_t)BOX_INV * n_used + j) * L, (size_t)L * sizeof(double));
            } else {
                for (int32_t l = 0; l < L; l++) {
                    col[COL_FLO * np + l] = 0.0;
                    col[COL_FHI * np + l] = 1.0;
                    col[COL_NSLO * np + l] = -1.0;
                    col[COL_NSHI * np + l] = 0.0;
                    col[COL_INV * np + l] = 1.0;
                }
            }
        }
        at += L;
    }
    for (; at < np; at++) { /* padding: c * p = 0, any finite frac */
        for (int32_t o = 0; o < W; o++)
            w->chunk_b[at * W + o] = 0.0;
        for (int32_t s = 0; s < k; s++) {
            double *col = w->col + (size_t)s * COL_BLOCKS * np + at;
            col[COL_FLO * np] = 0.0;
            col[COL_FHI * np] = 1.0;
            col[COL_NSLO * np] = -1.0;
            col[COL_NSHI * np] = 0.0;
            col[COL_INV * np] = 1.0;
        }
    }
    return np;
}

/* sum over the leaves l of t of c_l * prod(masses of l in features no tree of the chunk
 * constrains) * sum_m c_m p_m prod_{k in C_l, in the chunk} frac_k(l, m), added into acc. */
XAI_VECTOR_CLONES
static void chunk_pairs(workspace *w, const tree_rec *rt, int32_t np, double *acc)
{
    const int32_t W = w->width, n_words = w->n_words, n_used = rt->n_used, Lt = rt->n_leaf;
    const double *box = w->box + (size_t)BOX_BLOCKS * rt->box_start;
    const uint8_t *kind = w->kind + rt->box_start;
    const uint64_t *leaf_bits = w->leaf_bits + (size_t)rt->leaf_start * n_words;
    const double *c = w->leaf_c + rt->leaf_start * W, *b = w->chunk_b;
    double *restrict prob = w->prob, *sum_b = w->vec, *a = w->vec + 2 * W;
    for (int32_t o = 0; o < W; o++) {
        sum_b[o] = 0.0;
        for (int64_t m = 0; m < np; m++)
            sum_b[o] += b[m * W + o];
    }
    double acc0 = 0.0; /* W == 1: the sum over l in a register */
    for (int32_t l = 0; l < Lt; l++) {
        double weight = 1.0;
        int first = 1;
        for (int32_t q = 0; q < n_used; q++) {
            const int32_t pos = w->used_pos[rt->used_start + q];
            if (!(leaf_bits[(size_t)l * n_words + (pos >> 6)] >> (pos & 63) & 1))
                continue; /* l leaves the feature whole */
            const size_t at = (size_t)q * Lt + l;
            const int32_t s = w->slot[pos];
            if (s < 0) { /* no inner leaf constrains it: frac = l's own mass there */
                weight *= box[(size_t)BOX_MASS * n_used * Lt + at];
                continue;
            }
            const double *col = w->col + (size_t)s * COL_BLOCKS * np;
            const double g = box[(size_t)BOX_G * n_used * Lt + at], h = box[(size_t)BOX_H * n_used * Lt + at];
            const int k = kind[at];
            if (k != CASE_AROUND) { /* the columns and signs chosen without branches */
                const int in_s = k & 1, keep = k >> 1;
                band(prob, first, keep ? 1.0 : 0.0, keep ? -1.0 : 1.0, g, h, col + (in_s ? COL_NSLO : COL_FLO) * np,
                     col + (in_s ? COL_NSHI : COL_FHI) * np, col + COL_INV * np, (int32_t)np);
            } else {
                band_around(prob, first, g, h, col, (int32_t)np);
            }
            first = 0;
        }
        for (int32_t o = 0; o < W; o++)
            a[o] = c[(size_t)l * W + o] * weight;
        if (first) { /* no feature in common with the chunk: frac = 1 for every m */
            for (int32_t o = 0; o < W; o++)
                acc[o] += a[o] * sum_b[o];
        } else if (W == 1) {
            acc0 += a[0] * dot(b, prob, (int32_t)np);
        } else {
            for (int64_t m = 0; m < np; m++)
                for (int32_t o = 0; o < W; o++)
                    acc[o] += a[o] * b[m * W + o] * prob[m];
        }
    }
    acc[0] += acc0;
}

/* sum over the partners u of t (later trees with its target that share a perturbed feature with
 * it) of E[c_t c_u] - E[c_t] E[c_u], into acc[0 .. width). */
static int partners(workspace *w, int32_t it, double *acc)
{
    const xai_forest *f = w->f;
    const int32_t W = w->width, n_words = w->n_words;
    const tree_rec *rt = &w->rec[it];
    const uint64_t *bt = w->bits + (size_t)it * n_words;
    const int32_t target = f->tree_target[rt->tree];
    int32_t n_part = 0;
    for (int32_t k = it + 1; k < w->n_rec; k++) {
        if (f->tree_target[w->rec[k].tree] != target)
            continue;
        const uint64_t *bk = w->bits + (size_t)k * n_words;
        int shares = 0;
        for (int32_t q = 0; q < n_words && !shares; q++)
            shares = (bt[q] & bk[q]) != 0;
        if (shares)
            w->partner[n_part++] = k;
    }
    for (int32_t o = 0; o < W; o++)
        acc[o] = 0.0;
    if (n_part == 0)
        return XAI_OK;
    double *mean_u = w->vec + W;
    for (int32_t o = 0; o < W; o++)
        mean_u[o] = 0.0;
    for (int32_t i = 0; i < n_part; i++) {
        for (int32_t o = 0; o < W; o++)
            mean_u[o] += w->mean[(size_t)w->partner[i] * W + o];
        w->pair_terms += (int64_t)rt->n_leaf * w->rec[w->partner[i]].n_leaf;
    }
    for (int32_t o = 0; o < W; o++)
        acc[o] -= w->mean[(size_t)it * W + o] * mean_u[o];
    if (rt->n_leaf == 0)
        return XAI_OK; /* every leaf of t was pruned */
    for (int32_t a = 0; a < n_part;) { /* chunks of whole partners, about CHUNK leaves each */
        int32_t b = a + 1;
        int64_t n = w->rec[w->partner[a]].n_leaf;
        while (b < n_part && n + w->rec[w->partner[b]].n_leaf <= CHUNK)
            n += w->rec[w->partner[b++]].n_leaf;
        const int64_t np = lay_chunk(w, rt, w->partner + a, b - a);
        if (w->status != XAI_OK)
            return w->status;
        if (np > INT32_MAX)
            return XAI_E_SIZE;
        chunk_pairs(w, rt, (int32_t)np, acc);
        a = b;
    }
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
        w->box_hi[k] = w->top[k] = (int32_t)(w->cdf_offset[j + 1] - w->cdf_offset[j]) - 1;
    }
    int status = collect(w);
    if (status != XAI_OK)
        return status;
    /* sum_t (E[c_t^2] - E[c_t]^2) + (sum_t E[c_t])^2 per output */
    for (int32_t i = 0; i < w->n_rec; i++) {
        double *y = out + f->tree_target[w->rec[i].tree];
        const double *m = w->mean + (size_t)i * W, *sq = w->sq + (size_t)i * W;
        for (int32_t o = 0; o < W; o++)
            y[o] += sq[o] - m[o] * m[o];
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
        status = partners(w, i, pair);
        const int32_t target = f->tree_target[w->rec[i].tree];
        for (int32_t o = 0; o < W; o++)
            out[target + o] += 2.0 * pair[o];
    }
    if (f->aggregate == XAI_AGGREGATE_MEAN) {
        const double scale = xai_mean_scale(f) * xai_mean_scale(f);
        for (int32_t o = 0; o < f->n_outputs; o++)
            out[o] *= scale;
    }
    return status;
}

/* Shared argument checks: sizes, and every split's rank against its feature's table. */
static int check_call(const xai_forest *f, const double *X, int64_t n_rows, const double *cdf,
                      const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol)
{
    if (f == NULL || X == NULL || cdf == NULL || cdf_offset == NULL || n_rows < 0 || cdf_len < 0)
        return XAI_E_SIZE;
    if (!(prune_rtol >= 0.0 && prune_rtol < 1.0))
        return XAI_E_VALUE;
    if (f->threshold_rank == NULL || f->rank_count == NULL)
        return XAI_E_UNSUPPORTED;
    /* two halves (CDF, then survival) of cdf_offset[n_features] entries each */
    if (cdf_offset[0] < 0 || cdf_offset[f->n_features] > cdf_len / 2)
        return XAI_E_SIZE;
    for (int32_t j = 0; j < f->n_features; j++)
        if (cdf_offset[j + 1] - cdf_offset[j] < 2)
            return XAI_E_SIZE;
    /* every rank of feature j is in 1 .. rank_count[j] (xai_validate checked that once): it indexes
     * inside the feature's table, excluding the two end entries, when rank_count[j] fits the table */
    for (int32_t j = 0; j < f->n_features; j++)
        if (f->rank_count[j] > cdf_offset[j + 1] - cdf_offset[j] - 2)
            return XAI_E_INDEX;
    return XAI_OK;
}

/* Moves the workspace to row i of X and its tables (validated lazily, per perturbed feature). */
static void set_row(workspace *w, const double *X, const double *cdf, int64_t cdf_len, int64_t i)
{
    w->row = i;
    w->x = X + i * w->f->n_features;
    w->cdf_row = cdf + i * cdf_len;
    w->sf_row = w->cdf_row + w->cdf_offset[w->f->n_features];
    memset(w->checked, 0, (size_t)w->f->n_features);
}

/* 1 when feature j's tables of the current row are a CDF (0 .. 1, non-decreasing) and a survival
 * function (1 .. 0, non-increasing) that add up to 1 (up to rounding: they are computed apart). */
static int tables_valid(const workspace *w, int32_t j)
{
    const double *F = w->cdf_row + w->cdf_offset[j], *S = w->sf_row + w->cdf_offset[j];
    const int64_t len = w->cdf_offset[j + 1] - w->cdf_offset[j];
    if (F[0] != 0.0 || F[len - 1] != 1.0 || S[0] != 1.0 || S[len - 1] != 0.0)
        return 0;
    for (int64_t r = 1; r < len; r++)
        if (!(F[r] >= F[r - 1]) || !(S[r] <= S[r - 1]) || !(fabs(F[r] + S[r] - 1.0) <= 1e-6))
            return 0;
    return 1;
}

/* Sets w->s_pos / s_feat from a mask row; checks the tables and x of the perturbed features. */
static int set_from_mask(workspace *w, const uint8_t *mask)
{
    const xai_forest *f = w->f;
    w->n_s = 0;
    for (int32_t j = 0; j < f->n_features; j++) {
        w->s_pos[j] = -1;
        if (!mask[j])
            continue;
        if (!w->checked[j]) {
            if (!isfinite(w->x[j]) || !tables_valid(w, j)) {
                xai_error_at(-1, -1, w->row);
                return XAI_E_VALUE;
            }
            w->checked[j] = 1;
        }
        w->s_pos[j] = w->n_s;
        w->s_feat[w->n_s++] = j;
    }
    return XAI_OK;
}

static int pg2_rows(const xai_forest *f, const double *X, int64_t n_rows,
                    const uint8_t *mask, int64_t n_sets,
                    const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol,
                    double *out, int64_t *pair_terms)
{
    int status = check_call(f, X, n_rows, cdf, cdf_offset, cdf_len, prune_rtol);
    if (status != XAI_OK)
        return status;
    if (mask == NULL || out == NULL || n_sets < 0)
        return XAI_E_SIZE;
    workspace w;
    status = ws_init(&w, f, cdf_offset, prune_rtol);
    for (int64_t i = 0; i < n_rows && status == XAI_OK; i++) {
        set_row(&w, X, cdf, cdf_len, i);
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

int xai_pg2(const xai_forest *f, const double *X, int64_t n_rows,
            const uint8_t *mask, int64_t n_sets,
            const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol,
            double *out, int64_t *pair_terms)
{
    xai_error_clear();
    return xai_error_return(pg2_rows(f, X, n_rows, mask, n_sets, cdf, cdf_offset, cdf_len, prune_rtol, out,
                                     pair_terms));
}

static int greedy_rows(const xai_forest *f, const double *X, int64_t n_rows,
                       const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol,
                       const double *output_weight, int32_t *ranking, double *path)
{
    int status = check_call(f, X, n_rows, cdf, cdf_offset, cdf_len, prune_rtol);
    if (status != XAI_OK)
        return status;
    if (output_weight == NULL || ranking == NULL || path == NULL)
        return XAI_E_SIZE;
    const int32_t d = f->n_features;
    workspace w;
    status = ws_init(&w, f, cdf_offset, prune_rtol);
    uint8_t *mask = calloc((size_t)d, 1);
    double *value = malloc((size_t)f->n_outputs * sizeof(double));
    if (status == XAI_OK && (mask == NULL || value == NULL))
        status = XAI_E_NOMEM;
    for (int64_t i = 0; i < n_rows && status == XAI_OK; i++) {
        set_row(&w, X, cdf, cdf_len, i);
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

int xai_greedy_pg2(const xai_forest *f, const double *X, int64_t n_rows,
                   const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol,
                   const double *output_weight, int32_t *ranking, double *path)
{
    xai_error_clear();
    return xai_error_return(greedy_rows(f, X, n_rows, cdf, cdf_offset, cdf_len, prune_rtol, output_weight, ranking,
                                        path));
}
