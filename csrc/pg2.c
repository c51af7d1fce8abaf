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
 * is 1 in a feature it leaves whole). The pair sums run over every later tree with t's output (an
 * independent pair adds E[c_t] E[c_u] - E[c_t] E[c_u] = 0 up to rounding): the kept leaves of all
 * trees are laid out per block of CHUNK as columns (block_columns); per block of inner leaves m, the
 * shares of each m's mass below or above every boundary the outer leaves use are tabulated once for
 * all outer trees (one row per boundary: rows_prepare, block_rows), so that each frac is a difference
 * of two rows, and the products of an outer leaf's fracs continue those of the leaf before it where
 * their first fracs agree (block_pairs). prune_leaves may first leave out the least weighty leaves
 * under a proven relative error bound.
 *
 * A categorical feature j in S (set-membership splits) is the same product form over a finite law:
 * x'_j takes atom a (a category code, "other", NaN: see xai_forest) with probability p_a from its
 * table. A leaf's box in j is the set A of atoms that reach it (a bitset in a per-call pool, named
 * by its set id in place of the interval's ranks), its mass P(A) = sum_{a in A} p_a, and
 * frac_j(l, m) = P(A_l & A_m) / P(A_m): one table row per distinct outer set (ROW_SET), with V the
 * zero row. Sums of non-negative p_a have no cancellation, so no median split is needed. Equal sets
 * of one position get one id (intern_set: a model has few distinct sets per feature), so P(A) is
 * summed once per set, a set's row is shared by every leaf and tree that has it, as a boundary's is,
 * and a row remembers P(A & A_m) per inner set id within a block (block_rows). Pruning
 * (prune_leaves) uses only E|c|, max |c| and Jensen's inequality, which hold for any law of x',
 * so its bound holds unchanged.
 *
 * When every tree is oblivious (one condition per level: CatBoost's symmetric trees), the sums over
 * pairs of trees may instead be taken as contractions over per-feature grids of the two trees' cells
 * (pg2_grid.c): a pair costs about the entries of two 2^depth tensors rather than the product of their
 * leaf counts. pair_sums takes, per (row, set), the path a cost model says is cheaper (xai_pg2's
 * pairs argument can force either); the records, means and E[c_t^2] come from collect on both paths,
 * and the grid path sums every leaf (pruning drops leaf pairs from the other path only, within its
 * bound: a pair summed in full adds no error). */
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pg2_grid.h"

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

/* Per (leaf, used feature) of a tree, with (lo, hi] the leaf's interval in that feature: the
 * interval's mass (block_pairs' weight of an outer leaf in a feature no inner leaf of a block
 * constrains). */
enum { BOX_MASS, BOX_BLOCKS };

/* The columns of the inner leaves in the leaf-pair loop, per feature: F(lo), F(hi), -S(lo), -S(hi)
 * (all four increase with the boundary) and 1 / mass (finite: a kept leaf's probability, and so
 * each of its masses, is >= DBL_MIN). */
enum { COL_FLO, COL_FHI, COL_NSLO, COL_NSHI, COL_INV, COL_BLOCKS };

/* Entries of block_rows' memory of P(A & A_m) per set id (a power of 2). */
enum { SET_CACHE = 64 };

/* The pruning bound with which a greedy step screens its candidates (greedy_step; a looser one, or a
 * cascade 0.1 then 1e-3, leaves more candidates to evaluate again and costs more on the California
 * models of benchmarks/bench_greedy.py). */
#define SCREEN_RTOL 1e-3

/* Entries per (leaf, used feature) in the rank buffer: lo, hi, depth; rows_prepare then replaces
 * them in place by the leaf's refs: the rows U and V of its frac in that feature and one entry of
 * its border (its constrained features in block_pairs' order). */
enum { RANK_STRIDE = 3 };
enum { REF_U, REF_V, REF_BORDER };

/* Inner leaves per block of the leaf-pair loop (a table row is 2 KiB; one outer tree's rows and the
 * levels of block_pairs stay in the second cache level); chosen by timing 128, 256, 512 and 1024 on
 * the 100 x 6 and 500 x 6 models of benchmarks/bench_pg2_production.py. */
enum { CHUNK = 256 };

typedef struct {
    int32_t tree;         /* tree index */
    int32_t n_leaf;       /* reachable leaves with probability >= DBL_MIN and a centred value != 0 */
    int64_t leaf_start;   /* first leaf in the leaf arrays */
    int64_t box_start;    /* this tree's boxes start at box[BOX_BLOCKS * box_start]:
                             feature-major, block c of used feature q at [(c * n_used + q) * n_leaf + l] */
    int32_t n_used;       /* perturbed features (S positions) this tree constrains */
    int32_t used_start;   /* their S positions, sorted, in ws->used_pos */
} tree_rec;

/* The table rows of the leaf-pair loop (see rows_prepare): their types, and the two constant rows. */
enum { ROW_A, ROW_B, ROW_C, ROW_TYPES, ROW_SET = ROW_TYPES }; /* ROW_SET rows are found by set id (setmap) */
enum { ROW_ZERO, ROW_ONE, ROW_FIRST };

/* A table row: its S position, type and boundary rank, F(r) (A) or -S(r) (B, C), and the block it
 * was last computed for (block_rows; while rows_prepare runs, -2 - the last record that listed it). */
typedef struct {
    double val;
    int64_t block;
    int32_t pos, rank;
    uint8_t type;
} row_def;

/* The two table rows whose difference is the share of an inner leaf's mass inside an outer leaf's
 * interval (see rows_prepare). */
typedef struct {
    const double *u, *v;
} diff_band;

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
    int32_t *box_dep;       /* [n_features]: depth of the node that last narrowed it (-1: none) */
    int32_t *top;           /* [n_features]: an S position's last rank (box_hi of the whole line) */
    int64_t *x_leaf;        /* [n_trees]: the leaf of the current row in each tree */
    int x_leaf_valid;       /* x_leaf is that of the current row */
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
    int32_t *rank; size_t rank_cap;       /* [RANK_STRIDE * n_box]: per (leaf, used feature) the (lo, hi]
                                             ranks and the depth of the node that last narrowed them; after
                                             rows_prepare its refs (REF_U, REF_V, REF_BORDER) in their place */
    double *sq; size_t sq_cap;            /* [n_rec * width] E[c_t^2] */
    double *bound_max;      /* [n_outputs]: sum over trees of max |c| (prune_leaves) */
    leaf_key *order; size_t order_cap;    /* [n_leaf]: the leaves by pruning key */
    leaf_key *order_tmp; size_t order_tmp_cap; /* [n_leaf]: scratch of sort_keys */
    double prune_rtol;      /* 0: every leaf pair; > 0: certified relative error bound (prune_leaves) */
    int64_t n_pruned;       /* leaves dropped by prune_leaves over the call */
    /* the leaf-pair loop */
    int32_t *tree_order;    /* [n_trees]: the trees by target, then index (records follow it) */
    int32_t *slot;          /* [n_features]: an S position's columns in col, or -1 */
    double *col; size_t col_cap;          /* [n_slots * COL_BLOCKS * CHUNK]: one block's columns (block_columns) */
    uint64_t *block_bits; size_t block_bits_cap; /* [blocks * n_words]: positions constrained in a block */
    double *after_mean; size_t after_mean_cap;   /* [n_rec * width]: sum of E[c_u] over later u, same target */
    int64_t *group_end; size_t group_end_cap;    /* [n_rec]: end of the leaves of those later u */
    diff_band *bands;       /* [n_features]: an outer leaf's bands against a block */
    /* the table rows (rows_prepare, block_rows, block_pairs) */
    int32_t max_len;        /* longest table of one feature (ranks 0 .. max_len - 1) */
    int32_t *rowmap;        /* [n_features * ROW_TYPES * max_len]: 1 + row of a (position, type, rank), or 0 */
    int32_t n_rows;
    row_def *rowdef; size_t rowdef_cap;   /* [n_rows] */
    int32_t *nband; size_t nband_cap;     /* [n_leaf]: how many positions a leaf constrains (its border's length) */
    double *level; size_t level_cap;      /* [n_used * CHUNK]: products of the first j + 1 fracs (block_pairs) */
    double *table; size_t table_cap;      /* [n_rows * CHUNK]: the rows over one block */
    int32_t *rec_rows; size_t rec_rows_cap;   /* the rows each record uses, record after record */
    int64_t *rec_rows_at; size_t rec_rows_at_cap; /* [2 * n_rec]: per record, its first row and count */
    double *pair_acc; size_t pair_acc_cap;    /* [n_rec * width]: all_pairs' sums per record */
    int32_t *prev_row;      /* [4 * n_features]: the bands of the last and the current leaf (block_pairs) */
    /* categorical S positions: during the walk box_lo holds the set id of the position's current
     * atom set and top the id of the whole set (every atom); sets are cw words in the pool */
    int32_t cw;
    uint64_t *pool; size_t pool_cap; int32_t n_pool;
    int32_t *setmap; size_t setmap_cap;   /* [n_pool]: 1 + the ROW_SET row of a set, or 0 */
    double *set_p; size_t set_p_cap;      /* [n_pool]: P(A) of each set under the current row's law */
    int32_t *set_of; size_t set_of_cap;   /* [n_pool]: the S position of each set */
    int32_t *set_hash; size_t set_hash_cap; /* open addressing over (position, atoms): 1 + id, or 0 */
    double *sum_mean;       /* [n_outputs]: sum of E[c_t] over trees */
    double *vec;            /* [2 * leaf_width]: sums over a block, one leaf's weighted value */
    /* the grid path of the pair sums (pg2_grid.c), NULL with XAI_PAIRS_LEAVES */
    int32_t pairs;          /* XAI_PAIRS_* */
    grid_state *grid;
    int32_t *rec_tree; size_t rec_tree_cap; /* [n_rec]: the records' trees */
    int64_t pair_terms;
    double *count;          /* NULL, or (xai_pg2_terms) where pg2_one writes its kept leaves and leaf-pair terms
                               in place of summing the pairs */
    int status;
} workspace;

static void ws_free(workspace *w)
{
    free(w->checked); free(w->s_pos); free(w->x_leaf); free(w->used);
    free(w->rec); free(w->mean); free(w->bits); free(w->used_pos);
    free(w->leaf_c); free(w->leaf_p); free(w->leaf_b); free(w->leaf_bits); free(w->box); free(w->rank);
    free(w->tree_order);  free(w->col); free(w->block_bits); free(w->after_mean); free(w->group_end);
    free(w->bands);  free(w->rowmap); free(w->rowdef); free(w->nband); free(w->rec_rows); free(w->rec_rows_at);
    free(w->pair_acc); free(w->level); free(w->table);
    free(w->sum_mean); free(w->vec); free(w->sq); free(w->bound_max); free(w->order); free(w->order_tmp);
    free(w->pool); free(w->setmap); free(w->set_p); free(w->set_of); free(w->set_hash);
    free(w->rec_tree); grid_free(w->grid);
}

static int ws_init(workspace *w, const xai_forest *f, const int64_t *cdf_offset, double prune_rtol, int32_t pairs)
{
    memset(w, 0, sizeof(*w));
    w->f = f;
    w->pairs = pairs;
    w->prune_rtol = prune_rtol;
    w->cdf_offset = cdf_offset;
    w->row = -1;
    w->width = f->leaf_width;
    const size_t d = (size_t)f->n_features, W = (size_t)f->leaf_width;
    w->checked = malloc(d);
    w->s_pos = malloc(11 * d * sizeof(int32_t)); /* one allocation for the eleven per-feature int arrays */
    if (w->s_pos != NULL) {
        w->s_feat = w->s_pos + d;
        w->box_lo = w->s_pos + 2 * d;
        w->box_hi = w->s_pos + 3 * d;
        w->box_dep = w->s_pos + 4 * d;
        w->top = w->s_pos + 5 * d;
        w->slot = w->s_pos + 6 * d;
        w->prev_row = w->s_pos + 7 * d; /* 4 d */
    }
    w->x_leaf = malloc((size_t)f->n_trees * sizeof(int64_t));
    w->used = malloc(d);
    w->tree_order = malloc((size_t)f->n_trees * sizeof(int32_t));
    w->bands = malloc(d * sizeof(diff_band));
    w->max_len = 0;
    w->cw = 1;
    for (int32_t j = 0; j < f->n_features; j++) {
        if (cdf_offset[j + 1] - cdf_offset[j] > w->max_len)
            w->max_len = (int32_t)(cdf_offset[j + 1] - cdf_offset[j]);
        const int32_t K = xai_categories(f, j);
        if (K > 0 && (K + 2 + 63) / 64 > w->cw)
            w->cw = (K + 2 + 63) / 64;
    }
    const size_t n_map = d * ROW_TYPES * (size_t)w->max_len;
    w->rowmap = calloc(n_map, sizeof(int32_t));
    w->sum_mean = malloc((size_t)f->n_outputs * sizeof(double));
    w->vec = malloc(2 * W * sizeof(double));
    w->bound_max = malloc((size_t)f->n_outputs * sizeof(double));
    if (!w->checked || !w->s_pos || !w->s_feat || !w->box_lo || !w->box_hi || !w->box_dep || !w->top || !w->x_leaf || !w->used ||
        !w->tree_order || !w->slot || !w->bands || !w->rowmap || !w->prev_row || !w->sum_mean || !w->vec || !w->bound_max)
        return XAI_E_NOMEM;
    int32_t k = 0; /* trees by target (outputs in order), then index */
    for (int32_t o = 0; o < f->n_outputs; o++)
        for (int32_t t = 0; t < f->n_trees; t++)
            if (f->tree_target[t] == o)
                w->tree_order[k++] = t;
    if (pairs == XAI_PAIRS_LEAVES)
        return XAI_OK;
    const int status = grid_new(f, cdf_offset, w->cw, &w->grid);
    if (status == XAI_OK && pairs == XAI_PAIRS_GRIDS && !grid_usable(w->grid))
        return XAI_E_UNSUPPORTED;
    return status;
}

/* 1 when S position pos is a categorical feature. */
static inline int is_set_pos(const workspace *w, int32_t pos)
{
    return xai_categories(w->f, w->s_feat[pos]) > 0;
}

/* Hash of the atom set of cw words at a in S position pos. */
static inline uint64_t set_hash_of(const uint64_t *a, int32_t cw, int32_t pos)
{
    uint64_t h = 0x9E3779B97F4A7C15u ^ (uint64_t)(uint32_t)pos;
    for (int32_t q = 0; q < cw; q++) {
        h ^= a[q];
        h *= 0xBF58476D1CE4E5B9u;
        h ^= h >> 31;
    }
    return h;
}

/* The id of the atom set of S position pos in the pool's next free slot (pool[n_pool]): an
 * existing set's id when an equal one of that position was interned before in this call (then
 * the slot stays free), else n_pool, which becomes a set (with its P(A) under the current row's
 * law). One set of atoms has one id per position, so the table rows, the leaves' bands and the
 * masses of equal sets are shared across leaves and trees. -1 when out of memory (or of ids). */
static int32_t intern_set(workspace *w, int32_t pos)
{
    const int32_t cw = w->cw, id = w->n_pool;
    if (id == INT32_MAX)
        return -1; /* ids are int32 */
    if ((size_t)id * 2 + 2 > w->set_hash_cap) { /* load factor at most 1/2: rehash into twice the room */
        const size_t cap = w->set_hash_cap ? 2 * w->set_hash_cap : 64;
        int32_t *hash = calloc(cap, sizeof(int32_t));
        if (hash == NULL)
            return -1;
        for (int32_t k = 0; k < id; k++) {
            size_t h = (size_t)set_hash_of(w->pool + (size_t)k * cw, cw, w->set_of[k]) & (cap - 1);
            while (hash[h] != 0)
                h = (h + 1) & (cap - 1);
            hash[h] = k + 1;
        }
        free(w->set_hash);
        w->set_hash = hash;
        w->set_hash_cap = cap;
    }
    if (grow((void **)&w->set_p, &w->set_p_cap, (size_t)id + 1, sizeof(double)) ||
        grow((void **)&w->set_of, &w->set_of_cap, (size_t)id + 1, sizeof(int32_t)))
        return -1;
    const uint64_t *a = w->pool + (size_t)id * cw;
    const size_t mask = w->set_hash_cap - 1;
    size_t h = (size_t)set_hash_of(a, cw, pos) & mask;
    for (; w->set_hash[h] != 0; h = (h + 1) & mask) {
        const int32_t k = w->set_hash[h] - 1;
        if (w->set_of[k] == pos && memcmp(w->pool + (size_t)k * cw, a, (size_t)cw * sizeof(uint64_t)) == 0)
            return k;
    }
    w->set_hash[h] = id + 1;
    w->set_of[id] = pos;
    w->set_p[id] = atom_sum(a, NULL, cw, w->cdf_row + w->cdf_offset[w->s_feat[pos]]);
    w->n_pool++;
    return id;
}

/* The mass of a leaf's box (lo, hi] in S position pos (lo: the set id of a categorical one). */
static inline double box_mass(const workspace *w, int32_t pos, int32_t lo, int32_t hi, const double *F,
                              const double *S)
{
    return is_set_pos(w, pos) ? w->set_p[lo] : interval_mass(F[lo], F[hi], S[lo], S[hi]);
}

/* 1 when a leaf's box (lo, hi] in S position pos leaves out part of the line (or of the atoms). */
static inline int box_narrow(const workspace *w, int32_t pos, int32_t lo, int32_t hi)
{
    return is_set_pos(w, pos) ? lo != w->top[pos] : lo > 0 || hi < w->top[pos];
}

static void walk(workspace *w, int32_t t, int32_t k, int32_t depth, const double *x_value);

/* walk's step at a categorical node g on S position pos (K categories): the current set splits
 * into the atoms going left (bitset, NaN by missing_left) and the others; each non-empty side is
 * walked, with its interned id (intern_set) when it is a strict part of the current set. */
static void walk_set(workspace *w, int32_t t, int64_t g, int32_t pos, int32_t K, int32_t depth,
                     const double *x_value)
{
    const xai_forest *f = w->f;
    const int32_t cw = w->cw, cur = w->box_lo[pos], dep = w->box_dep[pos];
    if (grow((void **)&w->pool, &w->pool_cap, (size_t)(w->n_pool + 2) * cw, sizeof(uint64_t))) {
        w->status = XAI_E_NOMEM;
        return;
    }
    const uint64_t *bits = f->cat_bits + f->cat_start[g], *C = w->pool + (size_t)cur * cw;
    uint64_t *L = w->pool + (size_t)w->n_pool * cw, *R = L + cw;
    const int64_t n_words = XAI_CAT_WORDS(K), nan_word = (K + 1) / 64;
    const uint64_t nan_bit = (uint64_t)1 << ((K + 1) % 64);
    int any[2] = {0, 0};
    for (int32_t q = 0; q < cw; q++) {
        uint64_t left = q < n_words ? bits[q] : 0;
        if (q == nan_word)
            left = (left & ~nan_bit) | (f->missing_left[g] ? nan_bit : 0);
        L[q] = C[q] & left;
        R[q] = C[q] & ~left;
        any[0] |= L[q] != 0;
        any[1] |= R[q] != 0;
    }
    const int both = any[0] && any[1];
    int32_t id[2] = {cur, cur};
    if (both) { /* L in slot n_pool, R in the slot after it */
        const int32_t at = w->n_pool;
        id[0] = intern_set(w, pos);
        if (id[0] >= 0 && w->n_pool == at) /* L was known: R moves down into the free slot */
            memmove(w->pool + (size_t)at * cw, w->pool + (size_t)(at + 1) * cw, (size_t)cw * sizeof(uint64_t));
        id[1] = id[0] >= 0 ? intern_set(w, pos) : -1;
        if (id[1] < 0) {
            w->status = XAI_E_NOMEM;
            return;
        }
    }
    w->used[pos] = 1;
    const int32_t child[2] = {f->left_child[g], f->right_child[g]};
    for (int side = 0; side < 2; side++) {
        if (!any[side])
            continue;
        if (both) {
            w->box_lo[pos] = id[side];
            w->box_dep[pos] = depth;
        }
        walk(w, t, child[side], depth + 1, x_value);
        w->box_lo[pos] = cur;
        w->box_dep[pos] = dep;
    }
}

/* Walk tree t from local node k: features outside S follow x, features in S take both
 * children while their interval stays non-empty. Marks the S positions the walk meets (w->used) and
 * records every reachable leaf whose value differs from x's, with its intervals (ranks) in every
 * S position (collect keeps those of the used positions). */
static void walk(workspace *w, int32_t t, int32_t k, int32_t depth, const double *x_value)
{
    const xai_forest *f = w->f;
    const int64_t g = f->tree_offset[t] + k;
    if (f->left_child[g] < 0) {
        tree_rec *r = &w->rec[w->n_rec];
        int nonzero = 0;
        for (int32_t o = 0; o < w->width; o++)
            nonzero |= f->value[g * w->width + o] - x_value[o] != 0.0;
        if (!nonzero)
            return; /* adds nothing to any sum */
        const int64_t k_box = r->box_start + (int64_t)r->n_leaf * w->n_s; /* n_s entries per leaf for now */
        if (grow((void **)&w->leaf_c, &w->leaf_c_cap, (size_t)(w->n_leaf + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->rank, &w->rank_cap, (size_t)RANK_STRIDE * (k_box + w->n_s), sizeof(int32_t))) {
            w->status = XAI_E_NOMEM;
            return;
        }
        for (int32_t o = 0; o < w->width; o++)
            w->leaf_c[w->n_leaf * w->width + o] = f->value[g * w->width + o] - x_value[o];
        for (int32_t pos = 0; pos < w->n_s; pos++) {
            w->rank[RANK_STRIDE * (k_box + pos)] = w->box_lo[pos];
            w->rank[RANK_STRIDE * (k_box + pos) + 1] = w->box_hi[pos];
            w->rank[RANK_STRIDE * (k_box + pos) + 2] = w->box_dep[pos];
        }
        w->n_leaf++;
        r->n_leaf++;
        return;
    }
    const int32_t j = f->feature[g];
    const int32_t pos = w->s_pos[j];
    if (pos < 0) {
        walk(w, t, xai_goes_left(f, g, w->x[j]) ? f->left_child[g] : f->right_child[g], depth + 1, x_value);
        return;
    }
    const int32_t K = xai_categories(f, j);
    if (K > 0) {
        walk_set(w, t, g, pos, K, depth, x_value);
        return;
    }
    w->used[pos] = 1;
    const int32_t rank = f->threshold_rank[g];
    const int32_t lo = w->box_lo[pos], hi = w->box_hi[pos], dep = w->box_dep[pos];
    if (rank > lo) { /* left: x' below the boundary */
        if (rank < hi) {
            w->box_hi[pos] = rank;
            w->box_dep[pos] = depth;
        }
        walk(w, t, f->left_child[g], depth + 1, x_value);
        w->box_hi[pos] = hi;
        w->box_dep[pos] = dep;
    }
    if (rank < hi) { /* right */
        if (rank > lo) {
            w->box_lo[pos] = rank;
            w->box_dep[pos] = depth;
        }
        walk(w, t, f->right_child[g], depth + 1, x_value);
        w->box_lo[pos] = lo;
        w->box_dep[pos] = dep;
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
    int32_t *rank = w->rank + RANK_STRIDE * r->box_start;
    for (int32_t l = 0; l < L0; l++)
        p[l] = 1.0;
    for (int32_t q = 0; q < n_used; q++) {
        const int32_t pos = w->used_pos[r->used_start + q];
        const int64_t off = w->cdf_offset[w->s_feat[pos]];
        const double *F = w->cdf_row + off, *S = w->sf_row + off;
        for (int32_t l = 0; l < L0; l++) {
            const int32_t lo = rank[RANK_STRIDE * ((size_t)l * n_used + q)];
            const int32_t hi = rank[RANK_STRIDE * ((size_t)l * n_used + q) + 1];
            p[l] *= box_mass(w, pos, lo, hi, F, S);
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
        if (L != l) { /* L < l: moving down, in order */
            p[L] = p[l];
            for (int32_t o = 0; o < W; o++)
                c[(size_t)L * W + o] = c[(size_t)l * W + o];
            for (size_t e = 0; e < RANK_STRIDE * (size_t)n_used; e++)
                rank[RANK_STRIDE * (size_t)L * n_used + e] = rank[RANK_STRIDE * (size_t)l * n_used + e];
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

/* The masses of tree r's leaves in the positions they constrain, their bits and c * p. */
static int tree_boxes(workspace *w, const tree_rec *r)
{
    const int32_t W = w->width, n_words = w->n_words, n_used = r->n_used, L = r->n_leaf;
    const int64_t n_leaf = r->leaf_start + L;
    if (L == 0)
        return XAI_OK; /* every leaf was pruned (the buffers may still be unallocated) */
    if (grow((void **)&w->leaf_b, &w->leaf_b_cap, (size_t)n_leaf * W, sizeof(double)) ||
        grow((void **)&w->leaf_bits, &w->leaf_bits_cap, (size_t)n_leaf * n_words, sizeof(uint64_t)) ||
        grow((void **)&w->box, &w->box_cap, (size_t)BOX_BLOCKS * (size_t)(r->box_start + (int64_t)L * n_used),
             sizeof(double)))
        return XAI_E_NOMEM;
    const double *p = w->leaf_p + r->leaf_start, *c = w->leaf_c + r->leaf_start * W;
    const int32_t *rank = w->rank + RANK_STRIDE * r->box_start;
    double *b = w->leaf_b + r->leaf_start * W, *box = w->box + (size_t)BOX_BLOCKS * r->box_start;
    uint64_t *bits = w->leaf_bits + (size_t)r->leaf_start * n_words;
    memset(bits, 0, (size_t)L * n_words * sizeof(uint64_t));
    for (int32_t q = 0; q < n_used; q++) {
        const int32_t pos = w->used_pos[r->used_start + q];
        const int64_t off = w->cdf_offset[w->s_feat[pos]];
        const double *F = w->cdf_row + off, *S = w->sf_row + off;
        double *mass_q = box + ((size_t)BOX_MASS * n_used + q) * L;
        for (int32_t l = 0; l < L; l++) {
            const int32_t lo = rank[RANK_STRIDE * ((size_t)l * n_used + q)];
            const int32_t hi = rank[RANK_STRIDE * ((size_t)l * n_used + q) + 1];
            mass_q[l] = box_mass(w, pos, lo, hi, F, S);
            if (box_narrow(w, pos, lo, hi))
                bits[(size_t)l * n_words + (pos >> 6)] |= (uint64_t)1 << (pos & 63);
        }
    }
    for (int32_t l = 0; l < L; l++)
        for (int32_t o = 0; o < W; o++)
            b[(size_t)l * W + o] = c[(size_t)l * W + o] * p[l];
    return XAI_OK;
}

/* Sorts a[0 .. n) by key, keeping the input order of equal keys (tmp: n entries of scratch): a
 * byte-wise least-significant-digit radix sort of the keys' bits, which order like the keys themselves
 * for keys >= +0 (all of them here); a byte that all keys share costs no pass. */
static void sort_keys(leaf_key *a, leaf_key *tmp, int64_t n)
{
    if (n < 2)
        return;
    int64_t count[8][256];
    memset(count, 0, sizeof(count));
    for (int64_t i = 0; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &a[i].key, sizeof(bits));
        for (int d = 0; d < 8; d++)
            count[d][(bits >> (8 * d)) & 255]++;
    }
    uint64_t first;
    memcpy(&first, &a[0].key, sizeof(first));
    leaf_key *from = a, *to = tmp;
    for (int d = 0; d < 8; d++) {
        if (count[d][(first >> (8 * d)) & 255] == n)
            continue; /* every key has this byte */
        int64_t at = 0;
        for (int v = 0; v < 256; v++) {
            const int64_t c = count[d][v];
            count[d][v] = at;
            at += c;
        }
        for (int64_t i = 0; i < n; i++) {
            uint64_t bits;
            memcpy(&bits, &from[i].key, sizeof(bits));
            to[count[d][(bits >> (8 * d)) & 255]++] = from[i];
        }
        leaf_key *swap = from;
        from = to;
        to = swap;
    }
    if (from != a)
        memcpy(a, from, (size_t)n * sizeof(leaf_key));
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
 * to at most 1 (only keys <= 1 are sorted), then the kept leaves are moved down. */
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
    if (grow((void **)&w->order, &w->order_cap, (size_t)w->n_leaf, sizeof(leaf_key)) ||
        grow((void **)&w->order_tmp, &w->order_tmp_cap, (size_t)w->n_leaf, sizeof(leaf_key)))
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
            if (key <= 1.0) /* a larger key is never dropped: it alone exceeds the budget */
                w->order[n++] = (leaf_key){key, g};
        }
    }
    sort_keys(w->order, w->order_tmp, n); /* by key, then position (the input order) */
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
            const int64_t to = leaf_at + L; /* to <= g: moving down, in order */
            w->leaf_p[to] = w->leaf_p[g];
            for (int32_t o = 0; o < W; o++)
                w->leaf_c[to * W + o] = w->leaf_c[g * W + o];
            int32_t *dst = w->rank + RANK_STRIDE * (box_at + (int64_t)L * n_used);
            const int32_t *src = w->rank + RANK_STRIDE * (r->box_start + (int64_t)l * n_used);
            if (dst != src)
                for (size_t e = 0; e < RANK_STRIDE * (size_t)n_used; e++)
                    dst[e] = src[e];
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

/* The inner side of the leaf-pair loop: every S position some tree constrains gets a slot of
 * COL_BLOCKS columns over the leaves of one block (block_columns), CHUNK entries each. */
static int lay_slots(workspace *w)
{
    int32_t n_slots = 0;
    for (int32_t pos = 0; pos < w->n_s; pos++)
        w->slot[pos] = -1;
    for (int32_t i = 0; i < w->n_rec; i++)
        for (int32_t q = 0; q < w->rec[i].n_used; q++) {
            const int32_t pos = w->used_pos[w->rec[i].used_start + q];
            if (w->slot[pos] < 0)
                w->slot[pos] = n_slots++;
        }
    if (grow((void **)&w->col, &w->col_cap, (size_t)(n_slots > 0 ? n_slots : 1) * COL_BLOCKS * CHUNK, sizeof(double)))
        return XAI_E_NOMEM;
    return XAI_OK;
}

/* A leaf's interval (lo, hi] in S position pos (lo: the set id in a categorical one) from its refs
 * (rows_prepare), which replaced its ranks: the whole line (or set) where the leaf leaves the position
 * whole (narrow 0), else the boundaries its rows U and V were made at (table_row): A(hi) - A(lo)
 * below the median, B(lo) - B(hi) above it, C(hi) - A(lo) around it, the set's row; ZERO stands for
 * lo = 0 (A) or hi = top (B), ONE for hi = top (C). */
static inline void ref_interval(const workspace *w, int32_t pos, const int32_t *ref, int narrow, int32_t *lo,
                                int32_t *hi)
{
    const int32_t u = ref[REF_U], v = ref[REF_V], top = w->top[pos];
    if (!narrow) {
        *lo = is_set_pos(w, pos) ? top : 0;
        *hi = top;
        return;
    }
    const int type = u == ROW_ONE ? ROW_C : w->rowdef[u].type;
    if (type == ROW_SET) {
        *lo = w->rowdef[u].rank;
        *hi = top;
    } else if (type == ROW_B) {
        *lo = w->rowdef[u].rank;
        *hi = v == ROW_ZERO ? top : w->rowdef[v].rank;
    } else { /* ROW_A: below the median; ROW_C: around it */
        *hi = u == ROW_ONE ? top : w->rowdef[u].rank;
        *lo = v == ROW_ZERO ? 0 : w->rowdef[v].rank;
    }
}

/* The columns of the kept leaves [b0, b1) of one block, leaf m at entry m - b0 of each: per slot,
 * F(lo), F(hi), -S(lo), -S(hi) and 1 / mass of the leaf's interval (lo, hi] in that position (all four
 * increase with the boundary; 1 / mass is finite: a kept leaf's probability, and so each of its masses,
 * is >= DBL_MIN); the set id in place of F(lo) in a categorical position; the whole line (F 0 .. 1,
 * -S -1 .. 0, inv 1; the whole set's id) where the leaf leaves the position whole. *rec_at: the first
 * record whose leaves reach b0 (the blocks come in order). Filled per block rather than once for all
 * leaves, so that the columns take CHUNK entries per slot, not one per leaf. */
static void block_columns(workspace *w, int64_t b0, int64_t b1, int32_t *rec_at)
{
    int32_t i = *rec_at;
    while (i < w->n_rec && w->rec[i].leaf_start + w->rec[i].n_leaf <= b0)
        i++;
    *rec_at = i;
    for (; i < w->n_rec && w->rec[i].leaf_start < b1; i++) {
        const tree_rec *r = &w->rec[i];
        const int32_t n_used = r->n_used, L = r->n_leaf;
        const int64_t at = r->leaf_start - b0; /* leaf l's entry: at + l */
        const int32_t l0 = (int32_t)(b0 > r->leaf_start ? b0 - r->leaf_start : 0);
        const int32_t l1 = (int32_t)(b1 < r->leaf_start + L ? b1 - r->leaf_start : L);
        const uint64_t *bits = w->bits + (size_t)i * w->n_words;
        for (int32_t pos = 0; pos < w->n_s; pos++) {
            if (w->slot[pos] < 0 || bits[pos >> 6] >> (pos & 63) & 1)
                continue; /* no slot, or filled below */
            double *col = w->col + (size_t)w->slot[pos] * COL_BLOCKS * CHUNK;
            const double whole = is_set_pos(w, pos) ? (double)w->top[pos] : 0.0;
            for (int32_t l = l0; l < l1; l++) {
                col[COL_FLO * CHUNK + at + l] = whole;
                col[COL_FHI * CHUNK + at + l] = 1.0;
                col[COL_NSLO * CHUNK + at + l] = -1.0;
                col[COL_NSHI * CHUNK + at + l] = 0.0;
                col[COL_INV * CHUNK + at + l] = 1.0;
            }
        }
        const int32_t *ref = w->rank + RANK_STRIDE * r->box_start;
        const uint64_t *leaf_bits = w->leaf_bits + (size_t)r->leaf_start * w->n_words;
        const double *box = w->box + (size_t)BOX_BLOCKS * r->box_start;
        for (int32_t q = 0; q < n_used; q++) {
            const int32_t pos = w->used_pos[r->used_start + q];
            const int64_t off = w->cdf_offset[w->s_feat[pos]];
            const double *F = w->cdf_row + off, *S = w->sf_row + off, *mass = box + ((size_t)BOX_MASS * n_used + q) * L;
            double *col = w->col + (size_t)w->slot[pos] * COL_BLOCKS * CHUNK;
            const int set = is_set_pos(w, pos);
            for (int32_t l = l0; l < l1; l++) {
                int32_t lo, hi;
                ref_interval(w, pos, ref + RANK_STRIDE * ((size_t)l * n_used + q),
                             (int)(leaf_bits[(size_t)l * w->n_words + (pos >> 6)] >> (pos & 63) & 1), &lo, &hi);
                if (set) { /* the set id, read by block_rows' ROW_SET rows */
                    col[COL_FLO * CHUNK + at + l] = (double)lo;
                } else {
                    col[COL_FLO * CHUNK + at + l] = F[lo];
                    col[COL_FHI * CHUNK + at + l] = F[hi];
                    col[COL_NSLO * CHUNK + at + l] = -S[lo];
                    col[COL_NSHI * CHUNK + at + l] = -S[hi];
                }
                col[COL_INV * CHUNK + at + l] = 1.0 / mass[l];
            }
        }
    }
}

/* Largest room reserve_leaves takes at once for one buffer, in bytes (of address space: untouched
 * pages take no memory). */
#define RESERVE_MAX ((size_t)1 << 30)

/* Room for the per-leaf buffers of collect in the worst case, every leaf of the forest reachable (a
 * full binary tree of n nodes has (n + 1) / 2 leaves; XGBoost's, LightGBM's and scikit-learn's are),
 * taken at once before the walk rather than doubled as the leaves come: a buffer that doubles among
 * others that do is copied at each step and leaves its old copies as holes in the C heap, which the
 * process keeps (about 20 MB on a 1,000 x depth-10 model, S = all). Pages of the room the leaves do not
 * reach are never touched; a buffer whose room would exceed RESERVE_MAX grows as before. */
static int reserve_leaves(workspace *w)
{
    const xai_forest *f = w->f;
    const size_t leaves = ((size_t)f->n_nodes + (size_t)f->n_trees) / 2, W = (size_t)w->width;
    const size_t n_s = (size_t)w->n_s, n_words = (size_t)w->n_words;
    const struct {
        void **buf;
        size_t *cap, need, elem;
    } room[] = {
        {(void **)&w->rank, &w->rank_cap, RANK_STRIDE * leaves * n_s, sizeof(int32_t)},
        {(void **)&w->box, &w->box_cap, BOX_BLOCKS * leaves * n_s, sizeof(double)},
        {(void **)&w->leaf_c, &w->leaf_c_cap, leaves * W, sizeof(double)},
        {(void **)&w->leaf_b, &w->leaf_b_cap, leaves * W, sizeof(double)},
        {(void **)&w->leaf_p, &w->leaf_p_cap, leaves, sizeof(double)},
        {(void **)&w->leaf_bits, &w->leaf_bits_cap, leaves * n_words, sizeof(uint64_t)},
    };
    for (size_t i = 0; i < sizeof(room) / sizeof(room[0]); i++)
        if (room[i].need <= RESERVE_MAX / room[i].elem && grow(room[i].buf, room[i].cap, room[i].need, room[i].elem))
            return XAI_E_NOMEM;
    return XAI_OK;
}

/* Collect every tree's reachable leaves for the current (x, S), with their moments; drop trees
 * whose centred values are all zero (they add nothing); prune (see prune_leaves). */
static int collect(workspace *w)
{
    const xai_forest *f = w->f;
    w->n_rec = 0;
    w->n_leaf = 0;
    w->n_box = 0;
    w->n_used_total = 0;
    for (int32_t o = 0; o < f->n_outputs; o++)
        w->bound_max[o] = 0.0;
    if (reserve_leaves(w) != XAI_OK)
        return XAI_E_NOMEM;
    for (int32_t k = 0; k < f->n_trees && w->status == XAI_OK; k++) {
        const int32_t t = w->tree_order[k];
        if (grow((void **)&w->rec, &w->rec_cap, (size_t)w->n_rec + 1, sizeof(tree_rec)) ||
            grow((void **)&w->used_pos, &w->used_cap, (size_t)(w->n_used_total + w->n_s), sizeof(int32_t)) ||
            grow((void **)&w->mean, &w->mean_cap, (size_t)(w->n_rec + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->sq, &w->sq_cap, (size_t)(w->n_rec + 1) * w->width, sizeof(double)) ||
            grow((void **)&w->bits, &w->bits_cap, (size_t)(w->n_rec + 1) * w->n_words, sizeof(uint64_t)))
            return XAI_E_NOMEM;
        if (!w->x_leaf_valid) { /* x's leaves, once per row */
            for (int32_t u = 0; u < f->n_trees; u++)
                w->x_leaf[u] = xai_leaf_of(f, u, w->x);
            w->x_leaf_valid = 1;
        }
        const double *x_value = f->value + w->x_leaf[t] * w->width;
        tree_rec *r = &w->rec[w->n_rec];
        r->tree = t;
        r->n_leaf = 0;
        r->leaf_start = w->n_leaf;
        r->box_start = w->n_box;
        r->used_start = (int32_t)w->n_used_total;
        r->n_used = 0;
        memset(w->used, 0, (size_t)w->n_s);
        walk(w, t, 0, 0, x_value);
        if (w->status != XAI_OK)
            return w->status;
        uint64_t *bits = w->bits + (size_t)w->n_rec * w->n_words;
        memset(bits, 0, (size_t)w->n_words * sizeof(uint64_t));
        for (int32_t pos = 0; pos < w->n_s; pos++)
            if (w->used[pos]) {
                w->used_pos[r->used_start + r->n_used++] = pos;
                bits[pos >> 6] |= (uint64_t)1 << (pos & 63);
            }
        if (r->n_used == 0) { /* a single reachable leaf: x's own, centred value 0 */
            w->n_leaf = r->leaf_start;
            continue;
        }
        /* keep the used positions' ranks: n_s entries per leaf become n_used (moving down) */
        int32_t *rank = w->rank + RANK_STRIDE * r->box_start;
        for (int32_t l = 0; l < r->n_leaf; l++)
            for (int32_t q = 0; q < r->n_used; q++) {
                const int32_t pos = w->used_pos[r->used_start + q];
                for (int e = 0; e < RANK_STRIDE; e++)
                    rank[RANK_STRIDE * ((size_t)l * r->n_used + q) + e] = rank[RANK_STRIDE * ((size_t)l * w->n_s + pos) + e];
            }
        w->n_box = r->box_start + (int64_t)r->n_leaf * r->n_used;
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
    if (w->count != NULL)
        w->count[0] = (double)w->n_leaf; /* before pruning: each was walked to and weighed */
    if (w->status == XAI_OK && w->prune_rtol > 0.0 && w->n_leaf > 0)
        w->status = prune_leaves(w);
    return w->status;
}

/* The kept leaves' boxes, for the leaf-pair loop (not needed by the grid path). */
static int lay_boxes(workspace *w)
{
    int status = lay_slots(w);
    for (int32_t i = 0; i < w->n_rec && status == XAI_OK; i++)
        status = tree_boxes(w, &w->rec[i]);
    return status;
}

/* The leaf-pair loop needs, for an outer leaf l of tree t and a feature k it constrains, the share
 * frac(m) of each inner leaf m's mass in k that falls in l's interval (lo, hi]. Per block of inner
 * leaves it first tabulates, for every boundary r that t's leaves use in k, one share of each m
 * (a row of the table; (x_m, y_m] is m's interval, inv_m = 1 / mass_m):
 *   A(r) = share of m at or below r, for r below the median (F(r) <= 1/2), in F values:
 *          max(0, min(F(r), y_m) - x_m) * inv_m;
 *   B(r) = share of m above r, for r above the median, in -S values: max(0, y_m - max(-S(r), x_m)) * inv_m;
 *   C(r) = 1 - B(r), the share at or below r, for r above the median;
 * and A(-inf) = B(inf) = 0, C(inf) = 1 (the rows ZERO and ONE). Every difference is then taken on the
 * side of the median where it lies (an interval far in a tail keeps its relative precision), and
 * each frac is the difference of two rows, U - V:
 *   (lo, hi] below the median:  A(hi) - A(lo);
 *   above it:                   B(lo) - B(hi);
 *   around it:                  C(hi) - A(lo) = 1 - (share at or below lo) - (share above hi).
 * An inner leaf that leaves k whole has the whole line (x, y) = (0, 1) in F and (-1, 0) in -S. */

#define FUSED_MAX 6

/* dst[q][m] = src[m] (1 when first) times the product of the first q + 1 bands' (u[m] - v[m]), q < K,
 * m < n: the products of a leaf's fracs after a shared prefix, every prefix kept (see block_pairs).
 * K and first are constants where it is inlined. */
XAI_INLINE void fused_levels(const double *restrict src, const diff_band *restrict bands, double *restrict dst, int K,
                             int first, int32_t n)
{
    for (int32_t m = 0; m < n; m++) {
        double product = first ? 1.0 : src[m];
        for (int q = 0; q < K; q++) {
            product *= bands[q].u[m] - bands[q].v[m];
            dst[(size_t)q * CHUNK + m] = product;
        }
    }
}

#define LEVEL_CASE(k)                                          \
    case k:                                                    \
        if (first)                                             \
            fused_levels(src, bands, dst, k, 1, n);            \
        else                                                   \
            fused_levels(src, bands, dst, k, 0, n);            \
        break;

/* Levels c + 1 .. c + K of the leaf-pair products (dst = level c + 1, src = level c unless c = 0), in
 * passes of at most FUSED_MAX bands. */
XAI_INLINE void product_levels(const double *src, const diff_band *bands, double *dst, int K, int first, int32_t n)
{
    while (K > 0) {
        const int k = K < FUSED_MAX ? K : FUSED_MAX;
        switch (k) { LEVEL_CASE(1) LEVEL_CASE(2) LEVEL_CASE(3) LEVEL_CASE(4) LEVEL_CASE(5) LEVEL_CASE(6) }
        bands += k;
        dst += (size_t)k * CHUNK;
        src = dst - CHUNK;
        first = 0;
        K -= k;
    }
}

/* The eight partial sums of sum8 / last_band_sum, added in a fixed tree order. */
XAI_INLINE double fold8(const double part[8])
{
    return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

/* sum_m a[m] in eight partial sums over the leading multiple of 8, then the rest in order: the order
 * of the additions does not depend on the vector width. */
XAI_INLINE double sum8(const double *restrict a, int32_t n)
{
    double part[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    const size_t n8 = (size_t)(n - n % 8); /* size_t offsets: int32 ones keep gcc from vectorising it inlined */
    for (size_t m = 0; m < n8; m += 8) {
        const double *pa = a + m;
        for (int r = 0; r < 8; r++)
            part[r] += pa[r];
    }
    double sum = fold8(part);
    for (size_t m = n8; m < (size_t)n; m++)
        sum += a[m];
    return sum;
}

/* sum_m a[m] * (u[m] - v[m]), in the partial sums of sum8. */
XAI_INLINE double last_band_sum(const double *restrict a, const double *restrict u, const double *restrict v,
                                int32_t n)
{
    double part[8] = {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0};
    const size_t n8 = (size_t)(n - n % 8);
    for (size_t m = 0; m < n8; m += 8) {
        const double *pa = a + m, *pu = u + m, *pv = v + m;
        for (int r = 0; r < 8; r++)
            part[r] += pa[r] * (pu[r] - pv[r]);
    }
    double sum = fold8(part);
    for (size_t m = n8; m < (size_t)n; m++)
        sum += a[m] * (u[m] - v[m]);
    return sum;
}

/* Most outputs whose sums output_sums holds in registers. */
enum { OUTPUT_SUMS_MAX = 8 };

/* acc[o] += weighted[o] * b[m W + o] * prob[m] for m < n in order, o < W <= OUTPUT_SUMS_MAX: one outer leaf's sums with several
 * outputs. Each acc[o] is a chain of additions in m; held in a register over m (W a constant where inlined)
 * rather than stored and loaded again at every m, it takes the same operations in the same order. */
XAI_INLINE void output_sums(double *restrict acc, const double *restrict weighted, const double *restrict b,
                            const double *restrict prob, int32_t W, int32_t n)
{
    double sum[OUTPUT_SUMS_MAX];
    for (int32_t o = 0; o < W; o++)
        sum[o] = acc[o];
    for (int32_t m = 0; m < n; m++)
        for (int32_t o = 0; o < W; o++)
            sum[o] += weighted[o] * b[(size_t)m * W + o] * prob[m];
    for (int32_t o = 0; o < W; o++)
        acc[o] = sum[o];
}

#define OUTPUT_SUMS_CASE(k)                           \
    case k:                                           \
        output_sums(acc, weighted, b, prob, k, n);    \
        break;

/* The rest of the inner side of the leaf-pair loop (the columns: lay_slots, block_columns): per block of
 * CHUNK leaves, the positions some leaf of the block constrains; per record, the sum of the means of
 * the later records with its target and where those records' leaves end. */
static int lay_columns(workspace *w)
{
    const xai_forest *f = w->f;
    const int32_t W = w->width, n_words = w->n_words;
    const int64_t n = w->n_leaf, n_blocks = (n + CHUNK - 1) / CHUNK;
    if (grow((void **)&w->block_bits, &w->block_bits_cap, (size_t)n_blocks * n_words, sizeof(uint64_t)) ||
        grow((void **)&w->after_mean, &w->after_mean_cap, (size_t)w->n_rec * W, sizeof(double)) ||
        grow((void **)&w->group_end, &w->group_end_cap, (size_t)w->n_rec, sizeof(int64_t)))
        return XAI_E_NOMEM;
    if (n_blocks > 0)
        memset(w->block_bits, 0, (size_t)n_blocks * n_words * sizeof(uint64_t));
    for (int64_t m = 0; m < n; m++)
        for (int32_t q = 0; q < n_words; q++)
            w->block_bits[(m / CHUNK) * n_words + q] |= w->leaf_bits[m * n_words + q];
    for (int32_t i = w->n_rec - 1; i >= 0; i--) {
        const int last = i == w->n_rec - 1 || f->tree_target[w->rec[i + 1].tree] != f->tree_target[w->rec[i].tree];
        for (int32_t o = 0; o < W; o++)
            w->after_mean[(size_t)i * W + o] = last ? 0.0 : w->after_mean[(size_t)(i + 1) * W + o] +
                                                          w->mean[(size_t)(i + 1) * W + o];
        w->group_end[i] = last ? w->rec[i].leaf_start + w->rec[i].n_leaf : w->group_end[i + 1];
    }
    return XAI_OK;
}

/* The rows that record it uses in block blk (its leaves [b0, b1)) and that no record computed there
 * before, over the block's leaves from a on (see before fused_levels): the records come in order, so
 * a later one reaches no leaf before a. Rows of a position no leaf of the block constrains are not
 * used there (block_pairs takes the outer leaf's mass instead). */
XAI_VECTOR_CLONES
static void block_rows(workspace *w, int32_t it, int64_t blk, int64_t b0, int64_t a, int64_t b1,
                       const uint64_t *block_bits)
{
    const int32_t nb = (int32_t)(b1 - a);
    const int32_t *list = w->rec_rows + w->rec_rows_at[2 * it];
    for (int64_t k = 0; k < w->rec_rows_at[2 * it + 1]; k++) {
        const int32_t r = list[k], pos = w->rowdef[r].pos;
        if (w->rowdef[r].block == blk)
            continue;
        w->rowdef[r].block = blk;
        if (!(block_bits[pos >> 6] >> (pos & 63) & 1))
            continue;
        const double *col = w->col + (size_t)w->slot[pos] * COL_BLOCKS * CHUNK + (a - b0);
        const double v = w->rowdef[r].val;
        const double *restrict inv = col + COL_INV * CHUNK;
        double *restrict row = w->table + (size_t)r * CHUNK + (a - b0);
        if (w->rowdef[r].type == ROW_SET) { /* P(A & A_m) / P(A_m), A_m by its set id */
            const int32_t cw = w->cw;
            const uint64_t *A = w->pool + (size_t)w->rowdef[r].rank * cw;
            const double *p = w->cdf_row + w->cdf_offset[w->s_feat[pos]], *id = col + COL_FLO * CHUNK;
            /* the block's leaves share few sets: P(A & A_m) is remembered per set id, direct-mapped */
            int32_t seen[SET_CACHE];
            double known[SET_CACHE];
            for (int k = 0; k < SET_CACHE; k++)
                seen[k] = -1;
            for (int32_t m = 0; m < nb; m++) {
                const int32_t set = (int32_t)id[m], k = set & (SET_CACHE - 1);
                if (seen[k] != set) {
                    seen[k] = set;
                    known[k] = atom_sum(A, w->pool + (size_t)set * cw, cw, p);
                }
                row[m] = known[k] * inv[m];
            }
        } else if (w->rowdef[r].type == ROW_A) {
            const double *restrict x = col + COL_FLO * CHUNK, *restrict y = col + COL_FHI * CHUNK;
            for (int32_t m = 0; m < nb; m++) {
                const double d = (y[m] < v ? y[m] : v) - x[m];
                row[m] = (d > 0.0 ? d : 0.0) * inv[m];
            }
        } else {
            const double *restrict x = col + COL_NSLO * CHUNK, *restrict y = col + COL_NSHI * CHUNK;
            const double keep = w->rowdef[r].type == ROW_C ? 1.0 : 0.0, sign = w->rowdef[r].type == ROW_C ? -1.0 : 1.0;
            for (int32_t m = 0; m < nb; m++) {
                const double d = y[m] - (x[m] > v ? x[m] : v);
                row[m] = keep + sign * ((d > 0.0 ? d : 0.0) * inv[m]);
            }
        }
    }
}

/* sum over the leaves l of record it of c_l * sum over the inner leaves m in [a, a + n) (part of one
 * block, whose rows start `off` entries before a and whose constrained positions are block_bits) of
 * c_m p_m prod_{k in C_l} frac_k(l, m), added into acc: per leaf the products of its fracs in the
 * order of rows_prepare, starting after the bands it shares with the leaf before (their products are
 * kept per level). A feature of C_l that no leaf of the block constrains gives frac = l's own mass
 * for every m. */
XAI_VECTOR_CLONES
static void block_pairs(workspace *w, int32_t it, int64_t a, int32_t n, int64_t off, const uint64_t *block_bits,
                        double *acc)
{
    const tree_rec *rt = &w->rec[it];
    const int32_t W = w->width, n_used = rt->n_used, Lt = rt->n_leaf;
    const double *box = w->box + (size_t)BOX_BLOCKS * rt->box_start;
    const double *c = w->leaf_c + rt->leaf_start * W, *b = w->leaf_b + a * W;
    const int32_t *ref = w->rank + RANK_STRIDE * rt->box_start, *nband = w->nband + rt->leaf_start;
    const double *table = w->table + off;
    double *prob, *sum_b = w->vec, *weighted = w->vec + W;
    diff_band *bands = w->bands;
    if (W == 1) {
        sum_b[0] = sum8(b, n);
    } else {
        for (int32_t o = 0; o < W; o++) {
            sum_b[o] = 0.0;
            for (int32_t m = 0; m < n; m++)
                sum_b[o] += b[(size_t)m * W + o];
        }
    }
    /* level[j] holds the product of the first j + 1 fracs of the last leaf that computed it (its
     * bands in prev_u / prev_v, prev_k of them); a leaf whose first c bands are the same starts there */
    double *level = w->level;
    int32_t *prev_u = w->prev_row, *prev_v = w->prev_row + n_used, *cur_u = w->prev_row + 2 * n_used,
            *cur_v = w->prev_row + 3 * n_used;
    int prev_k = 0;
    double prev_sum = 0.0, acc0 = 0.0; /* W == 1: the sum over l in a register */
    for (int32_t l = 0; l < Lt; l++) {
        double weight = 1.0;
        int K = 0;
        const int32_t *leaf_ref = ref + RANK_STRIDE * (size_t)l * n_used;
        for (int32_t i = 0; i < nband[l]; i++) {
            const int32_t q = leaf_ref[RANK_STRIDE * i + REF_BORDER], pos = w->used_pos[rt->used_start + q];
            if (!(block_bits[pos >> 6] >> (pos & 63) & 1)) {
                weight *= box[(size_t)BOX_MASS * n_used * Lt + (size_t)q * Lt + l];
                continue;
            }
            cur_u[K] = leaf_ref[RANK_STRIDE * q + REF_U];
            cur_v[K] = leaf_ref[RANK_STRIDE * q + REF_V];
            K++;
        }
        for (int32_t o = 0; o < W; o++)
            weighted[o] = c[(size_t)l * W + o] * weight;
        if (K == 0) { /* no feature in common with the block: frac = 1 for every m */
            for (int32_t o = 0; o < W; o++)
                acc[o] += weighted[o] * sum_b[o];
            continue;
        }
        int shared = 0;
        while (shared < K && shared < prev_k && cur_u[shared] == prev_u[shared] && cur_v[shared] == prev_v[shared])
            shared++;
        if (W == 1) {
            /* here level[j] = b times the first j + 1 fracs, kept for j < prev_k - 1; the last frac goes
             * straight into the sum (a leaf with the same bands as the one before has its sum) */
            if (!(shared == K && prev_k == K)) {
                if (shared > K - 1)
                    shared = K - 1;
                if (shared > prev_k - 1)
                    shared = prev_k - 1 > 0 ? prev_k - 1 : 0;
                for (int i = shared; i < K; i++)
                    bands[i] = (diff_band){table + (size_t)cur_u[i] * CHUNK, table + (size_t)cur_v[i] * CHUNK};
                if (shared < K - 1)
                    product_levels(shared > 0 ? level + (size_t)(shared - 1) * CHUNK : b, bands + shared,
                                   level + (size_t)shared * CHUNK, K - 1 - shared, 0, n);
                prev_sum = last_band_sum(K > 1 ? level + (size_t)(K - 2) * CHUNK : b, bands[K - 1].u, bands[K - 1].v, n);
                for (int i = 0; i < K; i++) {
                    prev_u[i] = cur_u[i];
                    prev_v[i] = cur_v[i];
                }
                prev_k = K;
            }
            acc0 += weighted[0] * prev_sum;
            continue;
        }
        if (shared < K) {
            for (int i = shared; i < K; i++)
                bands[i] = (diff_band){table + (size_t)cur_u[i] * CHUNK, table + (size_t)cur_v[i] * CHUNK};
            product_levels(level + (size_t)(shared > 0 ? shared - 1 : 0) * CHUNK, bands + shared,
                           level + (size_t)shared * CHUNK, K - shared, shared == 0, n);
            for (int i = 0; i < K; i++) {
                prev_u[i] = cur_u[i];
                prev_v[i] = cur_v[i];
            }
            prev_k = K;
        }
        prob = level + (size_t)(K - 1) * CHUNK;
        switch (W) { OUTPUT_SUMS_CASE(2) OUTPUT_SUMS_CASE(3) OUTPUT_SUMS_CASE(4) OUTPUT_SUMS_CASE(5) OUTPUT_SUMS_CASE(6)
                     OUTPUT_SUMS_CASE(7) OUTPUT_SUMS_CASE(8)
        default:
            for (int32_t m = 0; m < n; m++)
                for (int32_t o = 0; o < W; o++)
                    acc[o] += weighted[o] * b[(size_t)m * W + o] * prob[m];
        }
    }
    acc[0] += acc0;
}

/* The row of type `type` at boundary rank r of S position pos, created when new (w->rowmap: per
 * position, type and rank, 1 + the row, 0 when absent; rows_prepare resets the entries it set). */
static int32_t table_row(workspace *w, int32_t pos, int type, int32_t r, double value)
{
    int32_t *at = type == ROW_SET ? &w->setmap[r] : &w->rowmap[((size_t)pos * ROW_TYPES + (size_t)type) * w->max_len + r];
    if (*at == 0) {
        *at = w->n_rows + 1;
        w->rowdef[w->n_rows].pos = pos;
        w->rowdef[w->n_rows].type = (uint8_t)type;
        w->rowdef[w->n_rows].rank = r;
        w->rowdef[w->n_rows].val = value;
        w->rowdef[w->n_rows].block = -1; /* in no record's list yet */
        w->n_rows++;
    }
    return *at - 1;
}

/* The table rows (see before fused_levels), shared by all records: per (leaf, used position) that
 * the leaf constrains, the rows U (REF_U) and V (REF_V) whose difference is its frac; per leaf its
 * constrained positions in the order block_pairs multiplies them (REF_BORDER, nband); per record the
 * rows it uses (rec_rows). The refs take the place of the ranks in w->rank (RANK_STRIDE entries per
 * (leaf, used position) either way), so that the two never take memory at once; the rows remember
 * their boundaries, from which ref_interval gives the ranks back. */
static int rows_prepare(workspace *w)
{
    const int32_t n_words = w->n_words;
    const size_t n_box = (size_t)w->n_box, n_rec = (size_t)(w->n_rec > 0 ? w->n_rec : 1);
    if (grow((void **)&w->nband, &w->nband_cap, (size_t)(w->n_leaf > 0 ? w->n_leaf : 1), sizeof(int32_t)) ||
        grow((void **)&w->rec_rows, &w->rec_rows_cap, 2 * n_box, sizeof(int32_t)) ||
        grow((void **)&w->rec_rows_at, &w->rec_rows_at_cap, 2 * n_rec, sizeof(int64_t)) ||
        grow((void **)&w->level, &w->level_cap, (size_t)w->n_s * CHUNK, sizeof(double)) ||
        grow((void **)&w->rowdef, &w->rowdef_cap, ROW_FIRST + 2 * n_box, sizeof(row_def)) ||
        grow((void **)&w->setmap, &w->setmap_cap, (size_t)(w->n_pool > 0 ? w->n_pool : 1), sizeof(int32_t)))
        return XAI_E_NOMEM;
    memset(w->setmap, 0, (size_t)(w->n_pool > 0 ? w->n_pool : 1) * sizeof(int32_t));
    w->n_rows = ROW_FIRST;
    int64_t n_list = 0;
    for (int32_t it = 0; it < w->n_rec; it++) {
        const tree_rec *rt = &w->rec[it];
        const int32_t n_used = rt->n_used, Lt = rt->n_leaf;
        int32_t *rank = w->rank + RANK_STRIDE * rt->box_start; /* its entries become refs, in place */
        const uint64_t *leaf_bits = w->leaf_bits + (size_t)rt->leaf_start * n_words;
        int32_t *list = w->rec_rows + n_list, n = 0;
        w->rec_rows_at[2 * it] = n_list;
        for (int32_t q = 0; q < n_used; q++) {
            const int32_t pos = w->used_pos[rt->used_start + q], top = w->top[pos];
            const int64_t off = w->cdf_offset[w->s_feat[pos]];
            const double *F = w->cdf_row + off, *S = w->sf_row + off;
            for (int32_t l = 0; l < Lt; l++) {
                const size_t at = (size_t)l * n_used + q;
                if (!(leaf_bits[(size_t)l * n_words + (pos >> 6)] >> (pos & 63) & 1)) {
                    rank[RANK_STRIDE * at + REF_U] = rank[RANK_STRIDE * at + REF_V] = ROW_ZERO; /* not read */
                    continue;
                }
                const int32_t lo = rank[RANK_STRIDE * at], hi = rank[RANK_STRIDE * at + 1];
                int32_t u, v;
                if (is_set_pos(w, pos)) { /* lo is the set id */
                    u = table_row(w, pos, ROW_SET, lo, 0.0);
                    v = ROW_ZERO;
                } else if (F[hi] <= 0.5) { /* below the median */
                    u = table_row(w, pos, ROW_A, hi, F[hi]);
                    v = lo == 0 ? ROW_ZERO : table_row(w, pos, ROW_A, lo, F[lo]);
                } else if (!(F[lo] <= 0.5)) { /* above it */
                    u = table_row(w, pos, ROW_B, lo, -S[lo]);
                    v = hi == top ? ROW_ZERO : table_row(w, pos, ROW_B, hi, -S[hi]);
                } else { /* around it */
                    u = hi == top ? ROW_ONE : table_row(w, pos, ROW_C, hi, -S[hi]);
                    v = lo == 0 ? ROW_ZERO : table_row(w, pos, ROW_A, lo, F[lo]);
                }
                rank[RANK_STRIDE * at + REF_U] = u; /* in place of lo and hi, read above */
                rank[RANK_STRIDE * at + REF_V] = v;
                /* the record's list of rows (rowdef[].block marks the rows already in it) */
                if (u >= ROW_FIRST && w->rowdef[u].block != -2 - (int64_t)it) {
                    w->rowdef[u].block = -2 - (int64_t)it;
                    list[n++] = u;
                }
                if (v >= ROW_FIRST && w->rowdef[v].block != -2 - (int64_t)it) {
                    w->rowdef[v].block = -2 - (int64_t)it;
                    list[n++] = v;
                }
            }
        }
        w->rec_rows_at[2 * it + 1] = n;
        n_list += n;
        /* each leaf's constrained positions by the depth of the node that last narrowed them (then q):
         * leaves next to each other in the walk's order share the first ones, and block_pairs their
         * products */
        int32_t *depth = w->box_dep; /* scratch: the walk is over */
        for (int32_t l = 0; l < Lt; l++) {
            int32_t *leaf_ref = rank + RANK_STRIDE * (size_t)l * n_used, k = 0;
            for (int32_t q = 0; q < n_used; q++) /* the depths go: the border takes their entries */
                depth[q] = leaf_ref[RANK_STRIDE * q + 2];
            for (int32_t q = 0; q < n_used; q++) {
                const int32_t pos = w->used_pos[rt->used_start + q];
                if (!(leaf_bits[(size_t)l * n_words + (pos >> 6)] >> (pos & 63) & 1))
                    continue;
                int32_t i = k++;
                for (; i > 0 && depth[leaf_ref[RANK_STRIDE * (i - 1) + REF_BORDER]] > depth[q]; i--)
                    leaf_ref[RANK_STRIDE * i + REF_BORDER] = leaf_ref[RANK_STRIDE * (i - 1) + REF_BORDER];
                leaf_ref[RANK_STRIDE * i + REF_BORDER] = q;
            }
            w->nband[rt->leaf_start + l] = k;
        }
    }
    for (int32_t r = ROW_FIRST; r < w->n_rows; r++) {
        if (w->rowdef[r].type != ROW_SET)
            w->rowmap[((size_t)w->rowdef[r].pos * ROW_TYPES + w->rowdef[r].type) * w->max_len + w->rowdef[r].rank] = 0;
        w->rowdef[r].block = -1; /* computed in no block yet */
    }
    if (grow((void **)&w->table, &w->table_cap, (size_t)w->n_rows * CHUNK, sizeof(double)))
        return XAI_E_NOMEM;
    for (int32_t m = 0; m < CHUNK; m++) {
        w->table[(size_t)ROW_ZERO * CHUNK + m] = 0.0;
        w->table[(size_t)ROW_ONE * CHUNK + m] = 1.0;
    }
    return XAI_OK;
}

/* sum over record pairs t < u with one target of E[c_t c_u] - E[c_t] E[c_u], into pair_acc[t]: the
 * leaf-pair sums block by block over the inner leaves (each record's partners' leaves lie end to end
 * after its own), every block's rows computed once for all the records that reach it. */
static int all_pairs(workspace *w)
{
    const int32_t W = w->width;
    if (grow((void **)&w->pair_acc, &w->pair_acc_cap, (size_t)(w->n_rec > 0 ? w->n_rec : 1) * W, sizeof(double)))
        return XAI_E_NOMEM;
    for (int32_t it = 0; it < w->n_rec; it++) {
        const tree_rec *rt = &w->rec[it];
        const int64_t start = rt->leaf_start + rt->n_leaf, end = w->group_end[it];
        for (int32_t o = 0; o < W; o++)
            w->pair_acc[(size_t)it * W + o] = -w->mean[(size_t)it * W + o] * w->after_mean[(size_t)it * W + o];
        if (rt->n_leaf > 0 && start < end)
            w->pair_terms += (int64_t)rt->n_leaf * (end - start);
    }
    const int64_t n_blocks = (w->n_leaf + CHUNK - 1) / CHUNK;
    int32_t rec_at = 0;
    for (int64_t blk = 0; blk < n_blocks; blk++) {
        const int64_t b0 = blk * CHUNK, b1 = b0 + CHUNK < w->n_leaf ? b0 + CHUNK : w->n_leaf;
        block_columns(w, b0, b1, &rec_at);
        const uint64_t *bits = w->block_bits + (size_t)blk * w->n_words;
        for (int32_t it = 0; it < w->n_rec; it++) {
            const tree_rec *rt = &w->rec[it];
            const int64_t start = rt->leaf_start + rt->n_leaf, end = w->group_end[it];
            if (start >= b1)
                break; /* so do the later records' */
            if (rt->n_leaf == 0 || end <= b0)
                continue;
            const int64_t a = start > b0 ? start : b0, e = end < b1 ? end : b1;
            block_rows(w, it, blk, b0, a, b1, bits);
            block_pairs(w, it, a, (int32_t)(e - a), a - b0, bits, w->pair_acc + (size_t)it * W);
        }
    }
    return XAI_OK;
}

/* The terms the leaf-pair loop sums for the current records: each record's kept leaves times those of the later
 * records of its target. */
static double leaf_pair_terms(const workspace *w)
{
    double terms = 0.0, later = 0.0;
    for (int32_t i = w->n_rec - 1; i >= 0; i--) {
        if (i == w->n_rec - 1 || w->f->tree_target[w->rec[i + 1].tree] != w->f->tree_target[w->rec[i].tree])
            later = 0.0;
        terms += (double)w->rec[i].n_leaf * later;
        later += (double)w->rec[i].n_leaf;
    }
    return terms;
}

/* The leaf-pair loop's cost (seconds) per term, for the cost model of pair_sums (timed against the
 * grid path on benchmarks/bench_categorical.py's CatBoost models and stump ensembles). */
#define LEAF_SECONDS_PER_TERM 6e-10

/* sum over record pairs t < u with one target of E[c_t c_u] - E[c_t] E[c_u], into pair_acc[t]: by the
 * grid path (pg2_grid.c) with XAI_PAIRS_GRIDS, or with XAI_PAIRS_AUTO where every tree is oblivious and
 * its cost estimate is below the leaf-pair loop's (the terms it would sum, the leaves being pruned
 * already); else by the leaf-pair loop. */
static int pair_sums(workspace *w)
{
    if (w->pairs != XAI_PAIRS_LEAVES && grid_usable(w->grid) && w->n_rec > 0) {
        if (grow((void **)&w->rec_tree, &w->rec_tree_cap, (size_t)w->n_rec, sizeof(int32_t)) ||
            grow((void **)&w->pair_acc, &w->pair_acc_cap, (size_t)w->n_rec * w->width, sizeof(double)))
            return XAI_E_NOMEM;
        for (int32_t i = 0; i < w->n_rec; i++)
            w->rec_tree[i] = w->rec[i].tree;
        grid_row r = {w->x, w->s_pos, w->n_s, w->cdf_row, w->sf_row, w->x_leaf, w->n_rec, w->rec_tree, w->mean,
                      w->pair_acc, 0};
        double cost;
        int status = grid_records(w->grid, &r, &cost);
        if (status != XAI_OK)
            return status;
        int grids = w->pairs == XAI_PAIRS_GRIDS;
        if (!grids)
            grids = cost < leaf_pair_terms(w) * LEAF_SECONDS_PER_TERM * (double)w->width;
        if (grids) {
            status = grid_pairs(w->grid, &r);
            w->pair_terms += r.terms;
            return status;
        }
    }
    int status = lay_boxes(w);
    if (status == XAI_OK)
        status = lay_columns(w);
    if (status == XAI_OK)
        status = rows_prepare(w);
    if (status == XAI_OK)
        status = all_pairs(w);
    return status;
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
    w->n_pool = 0;
    if (w->set_hash != NULL)
        memset(w->set_hash, 0, w->set_hash_cap * sizeof(int32_t));
    for (int32_t k = 0; k < w->n_s; k++) {
        const int32_t j = w->s_feat[k], K = xai_categories(f, j);
        w->box_lo[k] = 0;
        w->box_dep[k] = -1;
        w->box_hi[k] = w->top[k] = (int32_t)(w->cdf_offset[j + 1] - w->cdf_offset[j]) - 1;
        if (K > 0) { /* the whole set: atoms 0 .. K + 1 */
            if (grow((void **)&w->pool, &w->pool_cap, (size_t)(w->n_pool + 1) * w->cw, sizeof(uint64_t)))
                return XAI_E_NOMEM;
            uint64_t *all = w->pool + (size_t)w->n_pool * w->cw;
            for (int32_t q = 0; q < w->cw; q++) {
                const int64_t n = (int64_t)K + 2 - 64 * (int64_t)q; /* atoms in word q */
                all[q] = n >= 64 ? ~(uint64_t)0 : n > 0 ? ((uint64_t)1 << n) - 1 : 0;
            }
            w->box_lo[k] = w->top[k] = intern_set(w, k);
            if (w->top[k] < 0)
                return XAI_E_NOMEM;
        }
    }
    int status = collect(w);
    if (status != XAI_OK)
        return status;
    if (w->count != NULL) { /* xai_pg2_terms: what the sums would take, not the sums */
        w->count[1] = leaf_pair_terms(w);
        return XAI_OK;
    }
    /* sum_t (E[c_t^2] - E[c_t]^2) + (sum_t E[c_t])^2 per output */
    for (int32_t i = 0; i < w->n_rec; i++) {
        double *y = out + f->tree_target[w->rec[i].tree];
        const double *m = w->mean + (size_t)i * W, *sq = w->sq + (size_t)i * W;
        for (int32_t o = 0; o < W; o++)
            y[o] += sq[o] - m[o] * m[o];
    }
    double *sum_mean = w->sum_mean;
    for (int32_t o = 0; o < f->n_outputs; o++)
        sum_mean[o] = 0.0;
    for (int32_t i = 0; i < w->n_rec; i++)
        for (int32_t o = 0; o < W; o++)
            sum_mean[f->tree_target[w->rec[i].tree] + o] += w->mean[(size_t)i * W + o];
    for (int32_t o = 0; o < f->n_outputs; o++)
        out[o] += sum_mean[o] * sum_mean[o];
    /* pairs of records with one target, each counted twice */
    status = pair_sums(w);
    for (int32_t i = 0; i < w->n_rec && status == XAI_OK; i++) {
        const int32_t target = f->tree_target[w->rec[i].tree];
        for (int32_t o = 0; o < W; o++)
            out[target + o] += 2.0 * w->pair_acc[(size_t)i * W + o];
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
                      const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, int32_t pairs)
{
    if (f == NULL || X == NULL || cdf == NULL || cdf_offset == NULL || n_rows < 0 || cdf_len < 0)
        return XAI_E_SIZE;
    if (!(prune_rtol >= 0.0 && prune_rtol < 1.0) ||
        (pairs != XAI_PAIRS_AUTO && pairs != XAI_PAIRS_LEAVES && pairs != XAI_PAIRS_GRIDS))
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
    /* a categorical feature's table holds its K + 2 atom probabilities */
    for (int32_t j = 0; j < f->n_features; j++)
        if (xai_categories(f, j) > cdf_offset[j + 1] - cdf_offset[j] - 2)
            return XAI_E_SIZE;
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
    w->x_leaf_valid = 0;
}

/* 1 when feature j's tables of the current row are a CDF (0 .. 1, non-decreasing) and a survival
 * function (1 .. 0, non-increasing) that add up to 1 (up to rounding: they are computed apart). */
static int tables_valid(const workspace *w, int32_t j)
{
    const double *F = w->cdf_row + w->cdf_offset[j], *S = w->sf_row + w->cdf_offset[j];
    const int64_t len = w->cdf_offset[j + 1] - w->cdf_offset[j];
    const int32_t K = xai_categories(w->f, j);
    if (K > 0) { /* atom probabilities: finite, >= 0, adding up to 1 */
        double sum = 0.0;
        for (int32_t a = 0; a < K + 2; a++) {
            if (!(F[a] >= 0.0 && F[a] <= 1.0))
                return 0;
            sum += F[a];
        }
        return fabs(sum - 1.0) <= 1e-6;
    }
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
            if ((xai_categories(f, j) == 0 && !isfinite(w->x[j])) || !tables_valid(w, j)) {
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

/* PG2 of every (row, set) into out; with counts (xai_pg2_terms), in place of PG2 (out is then n_outputs doubles of
 * scratch) the kept leaves and leaf-pair terms of each (row, set) into counts[2 * (row * n_sets + set) ...]. */
static int pg2_rows(const xai_forest *f, const double *X, int64_t n_rows,
                    const uint8_t *mask, int64_t n_sets,
                    const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, int32_t pairs,
                    double *out, int64_t *pair_terms, double *counts)
{
    int status = check_call(f, X, n_rows, cdf, cdf_offset, cdf_len, prune_rtol, pairs);
    if (status != XAI_OK)
        return status;
    if (mask == NULL || out == NULL || n_sets < 0)
        return XAI_E_SIZE;
    workspace w;
    status = ws_init(&w, f, cdf_offset, prune_rtol, pairs);
    for (int64_t i = 0; i < n_rows && status == XAI_OK; i++) {
        set_row(&w, X, cdf, cdf_len, i);
        for (int64_t s = 0; s < n_sets && status == XAI_OK; s++) {
            const int64_t row_set = i * n_sets + s;
            if (counts != NULL) {
                w.count = counts + 2 * row_set;
                w.count[0] = w.count[1] = 0.0;
            }
            status = set_from_mask(&w, mask + row_set * f->n_features);
            if (status == XAI_OK)
                status = pg2_one(&w, counts != NULL ? out : out + row_set * f->n_outputs);
        }
    }
    if (pair_terms != NULL)
        *pair_terms = w.pair_terms;
    ws_free(&w);
    return status;
}

int xai_pg2(const xai_forest *f, const double *X, int64_t n_rows,
            const uint8_t *mask, int64_t n_sets,
            const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, int32_t pairs,
            double *out, int64_t *pair_terms)
{
    xai_error_clear();
    return xai_error_return(pg2_rows(f, X, n_rows, mask, n_sets, cdf, cdf_offset, cdf_len, prune_rtol, pairs, out,
                                     pair_terms, NULL));
}

int xai_pg2_terms(const xai_forest *f, const double *X, int64_t n_rows, const uint8_t *mask, int64_t n_sets,
                  const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, double *counts)
{
    xai_error_clear();
    double *scratch = f == NULL || f->n_outputs < 1 ? NULL : malloc((size_t)f->n_outputs * sizeof(double));
    int status = f == NULL || f->n_outputs < 1 ? XAI_E_SIZE : scratch == NULL ? XAI_E_NOMEM
                 : counts == NULL ? XAI_E_SIZE
                 : pg2_rows(f, X, n_rows, mask, n_sets, cdf, cdf_offset, cdf_len, prune_rtol, XAI_PAIRS_LEAVES,
                            scratch, NULL, counts);
    free(scratch);
    return xai_error_return(status);
}

/* The objective sum_o weight[o] * PG2_o(x, S + {j}) of the current row, S + {j} given by mask. */
static int greedy_objective(workspace *w, const uint8_t *mask, const double *weight, double *value, double *objective)
{
    *objective = 0.0;
    int status = set_from_mask(w, mask);
    if (status == XAI_OK)
        status = pg2_one(w, value);
    if (status != XAI_OK)
        return status; /* value is not written */
    for (int32_t o = 0; o < w->f->n_outputs; o++)
        *objective += weight[o] * value[o];
    return XAI_OK;
}

/* A candidate's state in a greedy step (greedy_step). */
enum { CAND_OUT, CAND_OPEN, CAND_EXACT };

/* One greedy step of the current row: the feature j outside mask maximising the objective, lowest
 * index on ties, and its objective, as evaluating every candidate with prune_rtol would give them.
 * Unless prune_rtol is at least as loose, the candidates are first screened with the looser bound
 * SCREEN_RTOL = r: an objective O so evaluated lies within r / (1 - r) |O| + 1e-12 |O| of the one
 * prune_rtol gives (relative error r on every output, weights >= 0 and PG2 >= 0 bound the objective's
 * by r / (1 - r); 1e-12 covers rounding), and a candidate whose upper end is below the best lower end
 * is out (some other candidate is strictly better). A screened evaluation that dropped no leaf is the
 * one prune_rtol gives, bit for bit (a stricter bound drops no leaf either, and with nothing dropped
 * the sums are the unpruned ones): that candidate is exact, its interval its value alone. The
 * candidates left are evaluated with prune_rtol, unless exact, and the best of them is chosen; with
 * need_value 0 (its objective is not asked for) a candidate left alone is chosen as it is. A lone
 * candidate is evaluated once (not at all without need_value). cand, lo, hi: d entries of scratch;
 * state: d entries (CAND_*). */
static int greedy_step(workspace *w, uint8_t *mask, const double *weight, int need_value, double *cand, double *lo,
                       double *hi, uint8_t *state, double *value, int32_t *best, double *best_value)
{
    const int32_t d = w->f->n_features;
    const double strict = w->prune_rtol, slack = SCREEN_RTOL / (1.0 - SCREEN_RTOL) + 1e-12;
    int32_t left = 0;
    for (int32_t j = 0; j < d; j++) {
        state[j] = mask[j] ? CAND_OUT : CAND_OPEN;
        left += !mask[j];
    }
    int status = XAI_OK;
    if (left > 1 && strict < SCREEN_RTOL) {
        double best_low = -INFINITY;
        w->prune_rtol = SCREEN_RTOL;
        for (int32_t j = 0; j < d && status == XAI_OK; j++) {
            if (state[j] == CAND_OUT)
                continue;
            const int64_t pruned = w->n_pruned;
            mask[j] = 1;
            status = greedy_objective(w, mask, weight, value, &cand[j]);
            mask[j] = 0;
            const int exact = w->n_pruned == pruned;
            state[j] = exact ? CAND_EXACT : CAND_OPEN;
            lo[j] = exact ? cand[j] : cand[j] - slack * fabs(cand[j]);
            hi[j] = exact ? cand[j] : cand[j] + slack * fabs(cand[j]);
            best_low = fmax(best_low, lo[j]);
        }
        w->prune_rtol = strict;
        left = 0;
        for (int32_t j = 0; j < d; j++) {
            if (state[j] != CAND_OUT && hi[j] < best_low)
                state[j] = CAND_OUT;
            left += state[j] != CAND_OUT;
        }
    }
    *best = -1;
    if (left == 1 && !need_value) { /* its set is not evaluated, only checked (set_from_mask) */
        for (int32_t j = 0; j < d; j++)
            if (state[j] != CAND_OUT)
                *best = j;
        if (status == XAI_OK) {
            mask[*best] = 1;
            status = set_from_mask(w, mask);
            mask[*best] = 0;
        }
        return status;
    }
    for (int32_t j = 0; j < d && status == XAI_OK; j++) {
        if (state[j] == CAND_OUT)
            continue;
        if (state[j] == CAND_OPEN) {
            mask[j] = 1;
            status = greedy_objective(w, mask, weight, value, &cand[j]);
            mask[j] = 0;
        }
        if (*best < 0 || cand[j] > *best_value) {
            *best = j;
            *best_value = cand[j];
        }
    }
    return status;
}

static int greedy_rows(const xai_forest *f, const double *X, int64_t n_rows,
                       const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol,
                       int32_t pairs, const double *output_weight, int32_t *ranking, double *path)
{
    int status = check_call(f, X, n_rows, cdf, cdf_offset, cdf_len, prune_rtol, pairs);
    if (status != XAI_OK)
        return status;
    if (output_weight == NULL || ranking == NULL)
        return XAI_E_SIZE;
    for (int32_t o = 0; o < f->n_outputs; o++)
        if (!(output_weight[o] >= 0.0 && output_weight[o] < INFINITY))
            return XAI_E_VALUE;
    const int32_t d = f->n_features;
    workspace w;
    status = ws_init(&w, f, cdf_offset, prune_rtol, pairs);
    uint8_t *mask = calloc((size_t)d, 1);
    uint8_t *state = malloc((size_t)d);
    double *value = malloc((size_t)f->n_outputs * sizeof(double)), *cand = malloc(3 * (size_t)d * sizeof(double));
    if (status == XAI_OK && (mask == NULL || state == NULL || value == NULL || cand == NULL))
        status = XAI_E_NOMEM;
    for (int64_t i = 0; i < n_rows && status == XAI_OK; i++) {
        set_row(&w, X, cdf, cdf_len, i);
        memset(mask, 0, (size_t)d);
        for (int32_t step = 0; step < d && status == XAI_OK; step++) {
            int32_t best = -1;
            double best_value = 0.0;
            status = greedy_step(&w, mask, output_weight, path != NULL, cand, cand + d, cand + 2 * (size_t)d, state,
                                 value, &best, &best_value);
            if (status != XAI_OK)
                break;
            mask[best] = 1;
            ranking[i * d + step] = best;
            if (path != NULL)
                path[i * d + step] = best_value;
        }
    }
    free(mask);
    free(state);
    free(value);
    free(cand);
    ws_free(&w);
    return status;
}

int xai_greedy_pg2(const xai_forest *f, const double *X, int64_t n_rows,
                   const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, int32_t pairs,
                   const double *output_weight, int32_t *ranking, double *path)
{
    xai_error_clear();
    return xai_error_return(greedy_rows(f, X, n_rows, cdf, cdf_offset, cdf_len, prune_rtol, pairs, output_weight,
                                        ranking, path));
}
