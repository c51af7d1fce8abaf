/* xai.h -- the one contract between Python and the C core of xai_plugins.
 *
 * A tree ensemble is a read-only structure of borrowed pointers (structure of arrays).
 * Python owns every array and keeps it alive while the struct is in use. Child ids are
 * local to their tree: node `k` of tree `t` lives at global index tree_offset[t] + k,
 * and the root of every tree is its local node 0.
 *
 * Every function returns an xai_status, writes only into caller-allocated buffers whose
 * sizes are stated below, never aborts and never touches Python objects (cffi releases
 * the GIL around each call). Each also records its status, and where a failure was found,
 * for xai_last_error in the calling thread. The block between the cffi markers is fed verbatim to
 * cffi's cdef, so it holds plain declarations only.
 *
 * Only xai_validate checks the forest itself. Every other function assumes a forest that
 * xai_validate accepted (and that has not changed since): it checks its own arguments (sizes,
 * indices, NULL buffers) but reads the forest's arrays without bounds checks, so an unvalidated
 * forest is undefined behaviour. The code is portable C11; compiler extensions appear only behind
 * feature tests, with a plain C11 path elsewhere.
 */
#ifndef XAI_H
#define XAI_H

#include <stdint.h>

#define XAI_ABI_VERSION 16

/* cffi-cdef-begin */
enum {
    XAI_OK = 0,
    XAI_E_SIZE = 1,        /* a count or buffer size is negative, zero where it must not be, or too small */
    XAI_E_INDEX = 2,       /* a child, feature, rank, tree, leaf or output index is out of range */
    XAI_E_STRUCTURE = 3,   /* a tree is not a binary tree rooted at node 0 (in-degree, reachability, depth) */
    XAI_E_VALUE = 4,       /* a NaN threshold, or a leaf value, impurity or input NaN/inf where it must be finite */
    XAI_E_UNSUPPORTED = 5, /* a combination of settings the core does not implement */
    XAI_E_NOMEM = 6        /* malloc failed */
};

enum {
    XAI_LEFT_IF_LE = 0,    /* go left iff x <= threshold (scikit-learn, LightGBM) */
    XAI_LEFT_IF_LT = 1     /* go left iff x <  threshold (XGBoost) */
};

enum {
    XAI_PAIRS_AUTO = 0,    /* PG2's pair sums: the cheaper of the two paths below, per (row, set) */
    XAI_PAIRS_LEAVES = 1,  /* leaf pairs (any forest) */
    XAI_PAIRS_GRIDS = 2    /* per-feature grids of tree pairs (only when every tree is oblivious, else
                              XAI_E_UNSUPPORTED; see xai_pg2) */
};

enum {
    XAI_AGGREGATE_SUM = 0, /* boosting: f(x) = base + sum over trees */
    XAI_AGGREGATE_MEAN = 1 /* forests:  f(x) = base + mean over the trees adding to each output (every
                              output must receive the same number of trees) */
};

typedef struct {
    int32_t n_trees;
    int64_t n_nodes;        /* total over all trees (each tree has at most INT32_MAX nodes) */
    int32_t n_features;
    int32_t n_outputs;
    int32_t leaf_width;     /* values per node: n_outputs (vector leaves, tree_target all 0) or 1 */
    int32_t max_depth;      /* deepest root-to-leaf edge count over all trees */
    int32_t split_rule;     /* XAI_LEFT_IF_LE or XAI_LEFT_IF_LT */
    int32_t input_float32;  /* 1: the model compares (float)x, as scikit-learn and XGBoost do */
    int32_t aggregate;      /* XAI_AGGREGATE_SUM or XAI_AGGREGATE_MEAN */
    double zero_threshold;  /* inputs with |x| <= zero_threshold are read as 0.0 before comparing
                               (LightGBM: kZeroThreshold = (double)1e-35f); 0 for libraries without
                               that rule. Finite and >= 0. NaN inputs are never changed. */
    const double *base_score;      /* [n_outputs], margin space */
    const int64_t *tree_offset;    /* [n_trees + 1], tree_offset[0] = 0, tree_offset[n_trees] = n_nodes */
    const int32_t *tree_target;    /* [n_trees], first output a tree adds to */
    const int32_t *left_child;     /* [n_nodes], local id, -1 for a leaf */
    const int32_t *right_child;    /* [n_nodes], local id, -1 for a leaf */
    const int32_t *feature;        /* [n_nodes], split feature, ignored at leaves */
    const double *threshold;       /* [n_nodes], bit-identical to the model's own value; not NaN at
                                      internal nodes, ignored at leaves. +-inf is allowed and compares as
                                      in IEEE 754: scikit-learn stores +inf for a split that sends only
                                      the missing values (NaN) right */
    const uint8_t *missing_left;   /* [n_nodes], 1 when NaN goes left */
    const double *value;           /* [n_nodes * leaf_width], leaf outputs (internal nodes ignored) */
    const double *impurity;        /* [n_nodes] node impurity, or NULL (local MDI needs it) */
    const int32_t *threshold_rank; /* [n_nodes] for PG2: 1-based rank of the node's split boundary among
                                      the sorted distinct boundaries of its feature; ignored at leaves */
    const int32_t *rank_count;     /* [n_features] for PG2 (with threshold_rank): the number of distinct
                                      boundaries of each feature. xai_validate checks every rank against
                                      it once; each PG2 call then only checks rank_count against the
                                      table layout (O(features), not O(nodes)). */
    /* Categorical features (all four NULL / 0 when the model has none). A categorical feature j has
     * K = n_categories[j] >= 1 category codes 0 .. K-1; every split on it is a set-membership split
     * and its threshold, rank and (for PG2) rank_count[j] = 0 are ignored. An input value is one of
     * K + 2 atoms: code c when it is an integer in [0, K), "other" (atom K) for any other non-NaN
     * value (an unseen category), NaN (atom K + 1). At a categorical node g, the K + 1 bits
     * cat_bits[cat_start[g] ...] (XAI_CAT_WORDS(K) words, bit a of word a / 64) say which of the
     * atoms 0 .. K go left; NaN follows missing_left[g]. */
    const int32_t *n_categories;   /* [n_features], 0 for a numeric feature; K <= XAI_MAX_CATEGORIES */
    const int64_t *cat_start;      /* [n_nodes]: first word of a categorical node's bitset, ignored elsewhere */
    const uint64_t *cat_bits;      /* [n_cat_words] */
    int64_t n_cat_words;
} xai_forest;

/* The most categories of one feature (codes stay exact in float32). */
#define XAI_MAX_CATEGORIES 16777216

int xai_abi_version(void);

/* A static, NUL-terminated English description of a status code (never NULL; an unknown code
 * gets a text saying so). */
const char *xai_strerror(int status);

/* The status of the last call of this API made by the calling thread (XAI_OK after a success),
 * and where that call found the problem: the tree, the node (local id within that tree) and the
 * row (index into that call's X) it concerns, each -1 when unknown or irrelevant. Any pointer may
 * be NULL. Thread-local: call it from the thread that made the failing call, before any other. */
int xai_last_error(int64_t *tree, int64_t *node, int64_t *row);

/* Checks the structure once per model: sizes, index ranges, in-degree 1, every node reachable
 * from its tree's root, depth <= max_depth, thresholds not NaN (+-inf allowed), finite leaf
 * values, impurities and base scores, and the PG2 ranks when present. The only function that
 * checks the forest. */
int xai_validate(const xai_forest *forest);

/* out[i * n_outputs + o] = model output o for row i of X[n_rows * n_features] (margin space).
 * NaN follows missing_left; a categorical feature's value goes by its atom (see xai_forest). */
int xai_predict(const xai_forest *forest, const double *X, int64_t n_rows, double *out);

/* counts[i * n_trees + t] = the leaves of tree t that row i can reach when every feature j with
 * mask[i * n_features + j] != 0 takes any value and the others keep row i's (a perturbed feature's
 * split sends the row both ways): the leaves exact PG2 pairs up (pg2.c), counted before pruning.
 * mask is read as 0 / nonzero; X of a masked feature is not read. */
int xai_reachable_leaves(const xai_forest *forest, const double *X, int64_t n_rows, const uint8_t *mask,
                         int64_t *counts);

/* Exact PG2(x, S) = E[(f(x') - f(x))^2] with x'_j = x_j + noise_j for numeric j in S; a categorical
 * j in S takes atom a with probability p_a, read from its table (below).
 * mask[(i * n_sets + s) * n_features + j] != 0 when feature j is in set s of row i.
 * Row i's table is cdf[i * cdf_len ...], in two halves of H = cdf_offset[n_features] entries
 * (cdf_offset has n_features + 1 non-decreasing entries, 2 * H <= cdf_len): for feature j and
 * its boundaries r = 1 .. m_j in rank order (m_j + 2 = cdf_offset[j + 1] - cdf_offset[j]),
 *   cdf[i * cdf_len + cdf_offset[j] + r]     = P(x'_j < boundary r), entry 0 = 0, entry m_j + 1 = 1;
 *   cdf[i * cdf_len + H + cdf_offset[j] + r] = P(x'_j > boundary r), computed directly (not as
 *                                              1 - CDF), entry 0 = 1, entry m_j + 1 = 0.
 * A categorical feature j (K categories) instead needs cdf_offset[j + 1] - cdf_offset[j] >= K + 2
 * and reads p_a = cdf[i * cdf_len + cdf_offset[j] + a] for its atoms a = 0 .. K + 1 (>= 0, adding up
 * to 1 within 1e-6; its survival half is not read); its x_j may be any value, NaN included.
 * Each interval's probability is taken on the side of the median where it lies (CDF differences
 * below, survival differences above), so tail probabilities keep full relative precision; a leaf
 * whose probability is below DBL_MIN is treated as unreachable. Only the features of a set are
 * read; their halves must be non-decreasing / non-increasing and add up to 1 within 1e-6, and
 * their x finite, else XAI_E_VALUE with the row in xai_last_error. out[(i * n_sets + s) * n_outputs + o].
 * prune_rtol = 0 sums every leaf pair; prune_rtol in (0, 1) leaves out the pairs of the least
 * weighty leaves while a proven bound keeps the relative error of every output below prune_rtol
 * (pg2.c, prune_leaves); anything else is XAI_E_VALUE.
 * pairs (XAI_PAIRS_*) chooses how the sums over pairs of trees are taken: leaf by leaf, or, for
 * oblivious trees (every node of a level has the same split, as CatBoost's symmetric trees; at most
 * 8 levels and 65536 atoms per categorical feature), as a contraction over per-feature grids of both
 * trees' boundaries (pg2_grid.c). Both give the same sums up to rounding (the grid path never prunes);
 * XAI_PAIRS_AUTO takes the one a cost model says is cheaper, per (row, set).
 * pair_terms (may be NULL) receives the number of leaf-pair terms evaluated (the grid path counts
 * the products of its contractions). */
int xai_pg2(const xai_forest *forest, const double *X, int64_t n_rows,
            const uint8_t *mask, int64_t n_sets,
            const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, int32_t pairs,
            double *out, int64_t *pair_terms);

/* What xai_pg2 with XAI_PAIRS_LEAVES would sum, without summing it: counts[2 * (i * n_sets + s)] = the leaves
 * of (row i, set s) it weighs (reachable with probability >= DBL_MIN and a centred value != 0, before pruning) and
 * counts[2 * (i * n_sets + s) + 1] the leaf-pair terms its pair loop would take (each leaf kept after pruning at
 * prune_rtol against the kept leaves of the later trees of its output). Arguments as xai_pg2; the cost of the walks
 * alone, for cost models. */
int xai_pg2_terms(const xai_forest *forest, const double *X, int64_t n_rows, const uint8_t *mask, int64_t n_sets,
                  const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, double *counts);

/* Greedy PG2 ranking: step k adds the feature that maximises sum_o weight[o] * PG2(x, S + {j})
 * (weights finite and >= 0, else XAI_E_VALUE); ties go to the lowest feature index. ranking[i * n_features + k] is the k-th feature,
 * path[i * n_features + k] the objective after adding it; path may be NULL (the ranking alone, which then
 * evaluates exactly only the candidates that screening could not tell apart). Same cdf layout, prune_rtol and
 * pairs as xai_pg2. */
int xai_greedy_pg2(const xai_forest *forest, const double *X, int64_t n_rows,
                   const double *cdf, const int64_t *cdf_offset, int64_t cdf_len, double prune_rtol, int32_t pairs,
                   const double *output_weight, int32_t *ranking, double *path);

/* One node of the walk layout of local MDI (xai_mdi_layout): each tree's nodes, at the same
 * global positions tree_offset[t] .. tree_offset[t + 1] as in the forest, renumbered in depth-first
 * pre-order, so that a node's left child is the next node and one node is one 24-byte record. */
typedef struct {
    double threshold;  /* the split threshold (internal nodes) */
    double gain;       /* impurity(parent) - impurity(this node), as the forest's doubles; 0 at a root */
    int32_t split;     /* 2 * feature + missing_left at an internal node, -1 at a leaf */
    int32_t right;     /* local index of the right child in this layout (internal nodes) */
} xai_mdi_node;

/* Fills layout[n_nodes] from a forest with impurities (XAI_E_UNSUPPORTED without, or with more
 * than 2^30 features). Built once per forest and passed to every xai_local_mdi call. A forest with
 * categorical features is walked on the forest itself (the layout's categorical nodes are unused). */
int xai_mdi_layout(const xai_forest *forest, xai_mdi_node *layout);

/* Local MDI: out[i * n_features + j] = sum over trees t of w(i, t) * sum over the nodes on row
 * i's path in t that split on j of impurity(node) - impurity(child the row follows), added per row
 * in tree order, root to leaf. layout is xai_mdi_layout's of the same forest.
 * tree_weight[i * n_trees + t] gives w(i, t); NULL means 1 / n_trees (the plain average). */
int xai_local_mdi(const xai_forest *forest, const xai_mdi_node *layout, const double *X, int64_t n_rows,
                  const double *tree_weight, double *out);
/* RF-MCR's re-routing of rows whose features changed[0 .. n_changed) took new values, through tree
 * `tree` or a version of it: a tree of the same shape (children, NaN directions) whose internal
 * nodes split on feature[g] at threshold[g] (global node ids g), sending x <= threshold (x <
 * threshold for XAI_LEFT_IF_LT) to the right child where flipped[g] is 1 (flipped NULL: none).
 * Global leaf ids are int32, so the forest must have at most INT32_MAX nodes. xai_reroute_prepare
 * builds the walk layout for the changed features once (it copies what it needs of spec);
 * xai_reroute routes any number of row sets with it; xai_reroute_free releases it (NULL is fine). */
typedef struct {
    int32_t tree;
    const int32_t *feature;     /* [n_nodes], read at the tree's internal nodes */
    const double *threshold;    /* [n_nodes], no NaN there */
    const uint8_t *flipped;     /* [n_nodes] or NULL */
    const int32_t *changed;     /* [n_changed], 1 <= n_changed <= n_features, distinct */
    int32_t n_changed;
} xai_reroute_spec;
typedef struct xai_reroute_layout xai_reroute_layout;
int xai_reroute_prepare(const xai_forest *forest, const xai_reroute_spec *spec, xai_reroute_layout **layout);
void xai_reroute_free(xai_reroute_layout *layout);

/* A leaf table of one changed feature (n_changed = 1) over the rows X[n_rows * n_features]: for every
 * row, the leaves its other values reach as the changed feature's value v runs over the real line, in
 * increasing order of v, with the upper ends of their intervals of v. Built once for a layout and rows
 * (xai_reroute_table_build: about 1 + 0.15 E walks of the rows for E entries per row, as
 * benchmarks/bench_reroute.py prints), it routes
 * each permutation of the feature by a binary search per row instead of a walk
 * (xai_reroute_args.table); freed by xai_reroute_table_free (NULL is fine). max_per_row > 0: *table
 * is left NULL (XAI_OK) as soon as a block of rows needs more entries per row than that. */
typedef struct xai_reroute_table xai_reroute_table;
int xai_reroute_table_build(const xai_forest *forest, const xai_reroute_layout *layout, const double *X,
                            int64_t n_rows, int32_t max_per_row, xai_reroute_table **table);
void xai_reroute_table_free(xai_reroute_table *table);

/* Arguments of xai_reroute: row i has the old values X[i * n_features ..] except in the changed
 * features, whose new values are new_values[i * n_changed + k] (changed[k]); start_leaf[i] is the
 * global leaf its old values reach. */
typedef struct {
    const double *X;            /* [n_rows * n_features] */
    const double *new_values;   /* [n_rows * n_changed] */
    int64_t n_rows;
    const int32_t *start_leaf;  /* [n_rows], global leaves of the layout's tree, or NULL: every row walks
                                   from the root, and moved is not written (n_moved = 0) */
    int32_t *leaf;              /* out [n_rows]: the global leaf each row reaches now */
    int64_t *moved;             /* out [n_rows slots]: the rows whose leaf changed, increasing (may be NULL
                                   without start_leaf) */
    int64_t n_moved;            /* out: how many entries of moved were written */
    const double *node_value;   /* [n_nodes * width], read only when delta is not NULL */
    int32_t width;              /* >= 1 when delta is not NULL */
    double *delta;              /* out [n_rows * width slots] or NULL (needs start_leaf) */
    const xai_reroute_table *table; /* NULL, or the layout's table built on these X and n_rows: finite new
                                       values are looked up in it, the others walk */
} xai_reroute_args;

/* Fills args->leaf, args->moved and args->n_moved (the same leaves as walks from the root): a row
 * whose new values pass every split on a changed feature along start_leaf[i]'s path keeps that leaf
 * without a walk (up to 4 changed features); the others (NaN included) walk down from the root.
 * When delta is not NULL, delta[q * width + c] = node_value[leaf[i] * width + c] -
 * node_value[start_leaf[i] * width + c] for the q-th moved row i (q < n_moved). */
int xai_reroute(const xai_forest *forest, const xai_reroute_layout *layout, xai_reroute_args *args);

/* mark[n_nodes]: every node's mark is or-ed with its parent's, root to leaves, so that a node under a
 * marked node ends marked (RF-MCR: the nodes under a node that S+ / S- changed). */
int xai_mark_below(const xai_forest *forest, uint8_t *mark);

/* target[rows[q] * width + c] += values[q * width + c] for q < n, in order (RF-MCR's sums of moved
 * rows' changes of prediction); every row index must lie in [0, n_target) (XAI_E_INDEX at the first
 * that does not, the sums before it done). */
int xai_scatter_add(double *target, int64_t n_target, int32_t width, const int64_t *rows, const double *values,
                    int64_t n);

/* RF-MCR's exact surrogate splits of tree `tree`, whose training rows X[n_rows * n_features] (float32,
 * no NaN) reach its local leaves leaf[n_rows] (every leaf reached by some row): for every internal
 * node v (increasing local id) and every feature g != feature(v) (increasing) such that the rows of
 * one child all lie below the rows of the other on g, one entry node[c] = v, feature[c] = g,
 * threshold[c] = the midpoint (in double) of the two children's facing extreme values on g,
 * flipped[c] = 1 when the right child's rows lie below. wanted[n_features] (NULL: every feature)
 * keeps only the entries where wanted[feature(v)] or wanted[g] is set (RF-MCR's S+ / S- for feature
 * sets within the wanted features need no others). At most `capacity` entries (XAI_E_SIZE beyond);
 * *count receives how many were written. */
int xai_surrogates(const xai_forest *forest, int32_t tree, const float *X, int64_t n_rows, const int32_t *leaf,
                   const uint8_t *wanted, int64_t capacity, int32_t *node, int32_t *feature, double *threshold,
                   uint8_t *flipped, int64_t *count);
/* Exact Shapley values of the model output (margin space), one player per input feature (a categorical
 * feature's set splits and NaN routing included), out[(i * n_outputs + o) * (n_features + 1) + j] for
 * feature j and output o of row i, and at j = n_features the base value, so that for every row and output
 * the n_features values and the base value add up to the model's output (up to rounding).
 * xai_treeshap_path: path-dependent TreeSHAP (Lundberg et al. 2020, Algorithm 2), the value of a coalition
 * being the expectation of the output down each tree with the node covers cover[n_nodes] as weights (every
 * cover finite and > 0, else XAI_E_VALUE with the node in xai_last_error; additivity needs each internal
 * node's cover to be its children's sum); the base value is that expectation with no feature known.
 * xai_treeshap_interventional: interventional TreeSHAP, the value of a coalition S being the output at
 * (x_S, z_rest) averaged over the background rows background[n_background * n_features] (n_background >= 1);
 * the base value is the mean output over the background. Forests deeper than 4096 levels: XAI_E_UNSUPPORTED. */
int xai_treeshap_path(const xai_forest *forest, const double *cover, const double *X, int64_t n_rows, double *out);
int xai_treeshap_interventional(const xai_forest *forest, const double *X, int64_t n_rows, const double *background,
                                int64_t n_background, double *out);
/* cffi-cdef-end */

/* Shared by the .c files, not part of the Python-facing API. */
#include <math.h>
#include <stdlib.h>

/* The 64-bit words of a categorical node's bitset (atoms 0 .. K). */
#define XAI_CAT_WORDS(K) (((int64_t)(K) + 64) / 64)

/* Categories of feature j (0: numeric). */
static inline int32_t xai_categories(const xai_forest *f, int32_t j)
{
    return f->n_categories != NULL ? f->n_categories[j] : 0;
}

/* The atom of value x of a categorical feature with K categories (see xai_forest). */
static inline int64_t xai_atom(double x, int32_t K)
{
    if (isnan(x))
        return (int64_t)K + 1;
    return x >= 0.0 && x < (double)K && x == floor(x) ? (int64_t)x : (int64_t)K;
}

/* malloc(count * elem), or NULL when count is negative or the byte count overflows size_t (so
 * an impossible size reads as XAI_E_NOMEM, never as a short buffer). */
static inline void *xai_alloc(int64_t count, size_t elem)
{
    if (count < 0 || elem == 0 || (uint64_t)count > SIZE_MAX / elem)
        return NULL;
    return malloc((size_t)count * elem);
}

/* x as the model compares it: 0.0 when |x| <= zero_threshold, then rounded to float32 when the
 * model casts its input; NaN kept. */
static inline double xai_input_value(const xai_forest *f, double x)
{
    if (isnan(x))
        return x;
    if (fabs(x) <= f->zero_threshold)
        x = 0.0;
    return f->input_float32 ? (double)(float)x : x;
}

/* The factor of a mean over trees: 1 / (trees adding to each output). Every tree adds to
 * leaf_width of the n_outputs outputs, and xai_validate checks that each output gets as many. */
static inline double xai_mean_scale(const xai_forest *f)
{
    return (double)f->n_outputs / ((double)f->n_trees * (double)f->leaf_width);
}

/* Error record of the calling thread (forest.c): clear it on entry to an API function, note
 * where a failure was found, and pass every return status through xai_error_return. */
void xai_error_clear(void);
void xai_error_at(int64_t tree, int64_t node, int64_t row);
int xai_error_return(int status);

/* 1 when v, already passed through xai_input_value, goes to the left child of global node g. */
static inline int xai_goes_left_value(const xai_forest *f, int64_t g, double v)
{
    if (isnan(v))
        return f->missing_left[g] != 0;
    return f->split_rule == XAI_LEFT_IF_LT ? v < f->threshold[g] : v <= f->threshold[g];
}

/* 1 when value x (already read from the input row) goes to the left child of global node g. */
static inline int xai_goes_left(const xai_forest *f, int64_t g, double x)
{
    const int32_t K = xai_categories(f, f->feature[g]);
    if (K > 0) {
        const int64_t a = xai_atom(x, K);
        return a > K ? f->missing_left[g] != 0 : (int)(f->cat_bits[f->cat_start[g] + a / 64] >> (a % 64) & 1);
    }
    return xai_goes_left_value(f, g, xai_input_value(f, x));
}

/* Global index of the leaf that row x reaches in tree t. */
static inline int64_t xai_leaf_of(const xai_forest *f, int32_t t, const double *x)
{
    const int64_t base = f->tree_offset[t];
    int64_t g = base;
    while (f->left_child[g] >= 0)
        g = base + (xai_goes_left(f, g, x[f->feature[g]]) ? f->left_child[g] : f->right_child[g]);
    return g;
}

#endif /* XAI_H */
