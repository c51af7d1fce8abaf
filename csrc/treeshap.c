/* treeshap.c -- exact Shapley values of a tree ensemble's output, one player per input feature.
 *
 * Path-dependent TreeSHAP (Lundberg et al., "From local explanations to global understanding with
 * explainable AI for trees", 2020, Algorithm 2): the value of a coalition S is E[f(x) | x_S], the
 * expectation taken down the tree with the node covers as weights (a split on a feature outside S sends
 * the row to each child in proportion to the child's cover). The walk keeps, along the path, the
 * "unique path" of the features met so far with the fractions of the covers that flow where x goes
 * (one) and in all (zero), and the weights of every subset size; a leaf adds, for each feature of the
 * path, its unwound weight times (one - zero) times the leaf value. A feature met twice on a path is
 * unwound and extended again, so each feature is one player, however many splits use it.
 *
 * Interventional TreeSHAP: the value of S is f(x_S, z_rest) for a background row z, averaged over the
 * background rows. For one z and one tree, a leaf is reached from a coalition S iff every feature of
 * the path where x and z go different ways is taken from x when the path follows x's side (the set A)
 * and from z when it follows z's side (the set B); features met again must keep their side. That game
 * has the closed-form Shapley values +v (|A| - 1)! |B|! / (|A| + |B|)! for each feature of A and
 * -v |A|! (|B| - 1)! / (|A| + |B|)! for each feature of B (v the leaf value), added up over the leaves
 * the walk reaches, then averaged over z.
 *
 * Both split on any node kind of the layout: a numeric threshold, a categorical set, NaN routed by
 * missing_left (xai_goes_left), so a categorical input is one player, as is an input column of a
 * compiled Pipeline. Values are per output (leaf_width > 1 or tree_target), scaled by 1 / trees for
 * a mean. Each row is summed in a fixed order (trees in order, leaves depth first; background rows in
 * order), so results do not depend on how rows are split across threads. */
#include <string.h>

#include "xai.h"

/* One element of the unique path: a feature, its zero / one fractions and a subset-size weight. */
typedef struct {
    int32_t feature;
    double zero, one, weight;
} path_el;

/* The loops below multiply by 1 / (depth + 1) and 1 / one rather than divide (a division costs several
 * multiplications); the values move by rounding only. */
static void extend(path_el *path, int32_t depth, double zero, double one, int32_t feature)
{
    const double inv = 1.0 / (double)(depth + 1);
    path[depth].feature = feature;
    path[depth].zero = zero;
    path[depth].one = one;
    path[depth].weight = depth == 0 ? 1.0 : 0.0;
    for (int32_t i = depth - 1; i >= 0; i--) {
        const double w = path[i].weight * inv;
        path[i + 1].weight += one * w * (double)(i + 1);
        path[i].weight = zero * w * (double)(depth - i);
    }
}

static void unwind(path_el *path, int32_t depth, int32_t at)
{
    const double one = path[at].one, zero = path[at].zero;
    double next = path[depth].weight;
    for (int32_t i = depth - 1; i >= 0; i--) {
        if (one != 0.0) {
            const double kept = path[i].weight;
            path[i].weight = next * (depth + 1) / ((double)(i + 1) * one);
            next = kept - path[i].weight * zero * (depth - i) / (double)(depth + 1);
        } else {
            path[i].weight = path[i].weight * (depth + 1) / (zero * (double)(depth - i));
        }
    }
    for (int32_t i = at; i < depth; i++) {
        path[i].feature = path[i + 1].feature;
        path[i].zero = path[i + 1].zero;
        path[i].one = path[i + 1].one;
    }
}

/* The sum of the weights of the path with element `at` unwound (without changing the path). */
static double unwound_sum(const path_el *path, int32_t depth, int32_t at, const double *recip)
{
    const double one = path[at].one, zero = path[at].zero, n = (double)(depth + 1);
    double next = path[depth].weight, total = 0.0;
    if (one != 0.0) {
        const double scale = n / one, shrink = zero * recip[depth + 1];
        for (int32_t i = depth - 1; i >= 0; i--) {
            const double w = next * scale * recip[i + 1];
            total += w;
            next = path[i].weight - w * shrink * (double)(depth - i);
        }
    } else {
        const double scale = n / zero;
        for (int32_t i = depth - 1; i >= 0; i--)
            total += path[i].weight * scale * recip[depth - i];
    }
    return total;
}

/* The share of node g's cover that flows to its child: cover[child] / cover[g], and 1/2 at a node of no
 * cover (a region no training row reached: its branches weigh alike). */
static inline double cover_share(const double *cover, int64_t g, int64_t child)
{
    return cover[g] > 0.0 ? cover[child] / cover[g] : 0.5;
}

typedef struct {
    const xai_forest *f;
    const double *cover;
    const double *recip;  /* recip[k] = 1 / k for k = 1 .. max_depth + 2 */
    const double *x;
    double *phi;          /* [n_outputs * (n_features + 1)] of the current row */
    int32_t target;       /* first output of the current tree */
    double scale;         /* 1, or 1 / trees for a mean */
} path_walk;

/* Algorithm 2's RECURSE at global node g; `path` holds `depth` elements of the parent, and this
 * call's copy starts at path + depth + 1 (the caller reserved room for every level). */
static void path_recurse(const path_walk *w, int64_t g, int64_t base, path_el *parent, int32_t depth, double zero,
                         double one, int32_t feature)
{
    const xai_forest *f = w->f;
    path_el *path = parent + depth;
    if (depth > 0)
        memcpy(path, parent, (size_t)depth * sizeof(path_el));
    extend(path, depth, zero, one, feature);
    if (f->left_child[g] < 0) {
        const int32_t D = f->n_features + 1, W = f->leaf_width;
        for (int32_t i = 1; i <= depth; i++) {
            const double s = unwound_sum(path, depth, i, w->recip) * (path[i].one - path[i].zero) * w->scale;
            for (int32_t o = 0; o < W; o++)
                w->phi[(size_t)(w->target + o) * D + path[i].feature] += s * f->value[g * W + o];
        }
        return;
    }
    const int32_t j = f->feature[g];
    const int left = xai_goes_left(f, g, w->x[j]);
    const int64_t hot = base + (left ? f->left_child[g] : f->right_child[g]);
    const int64_t cold = base + (left ? f->right_child[g] : f->left_child[g]);
    double in_zero = 1.0, in_one = 1.0;
    int32_t at = 0;
    while (at <= depth && path[at].feature != j)
        at++;
    if (at <= depth) {       /* j met before on this path: undo it, to redo it with both splits' fractions */
        in_zero = path[at].zero;
        in_one = path[at].one;
        unwind(path, depth, at);
        depth--;
    }
    const double hot_zero = cover_share(w->cover, g, hot) * in_zero, cold_zero = cover_share(w->cover, g, cold) * in_zero;
    /* a child whose zero and one fractions are both 0 (no cover, and not x's side) weighs 0 in every
     * coalition: it adds nothing, and leaving it out keeps unwinding free of 0 / 0 */
    if (hot_zero != 0.0 || in_one != 0.0)
        path_recurse(w, hot, base, path, depth + 1, hot_zero, in_one, j);
    if (cold_zero != 0.0)
        path_recurse(w, cold, base, path, depth + 1, cold_zero, 0.0, j);
}

/* The cover-weighted mean leaf value of tree t from global node g (the expected value's share). */
static void tree_mean(const xai_forest *f, const double *cover, int64_t base, int64_t g, double weight, double scale,
                      double *out)
{
    if (f->left_child[g] < 0) {
        for (int32_t o = 0; o < f->leaf_width; o++)
            out[o] += weight * scale * f->value[g * f->leaf_width + o];
        return;
    }
    const int64_t l = base + f->left_child[g], r = base + f->right_child[g];
    tree_mean(f, cover, base, l, weight * cover_share(cover, g, l), scale, out);
    tree_mean(f, cover, base, r, weight * cover_share(cover, g, r), scale, out);
}

static int check_common(const xai_forest *f, const double *X, int64_t n_rows, const double *out)
{
    if (f == NULL || X == NULL || out == NULL || n_rows < 0)
        return XAI_E_SIZE;
    if (f->max_depth > 4096)
        return XAI_E_UNSUPPORTED;
    return XAI_OK;
}

static int treeshap_path(const xai_forest *f, const double *cover, const double *X, int64_t n_rows, double *out)
{
    int status = check_common(f, X, n_rows, out);
    if (status != XAI_OK)
        return status;
    if (cover == NULL)
        return XAI_E_SIZE;
    for (int32_t t = 0; t < f->n_trees; t++)
        for (int64_t g = f->tree_offset[t]; g < f->tree_offset[t + 1]; g++)
            if (!(cover[g] >= 0.0 && cover[g] < INFINITY)) {
                xai_error_at(t, g - f->tree_offset[t], -1);
                return XAI_E_VALUE;
            }
    const int32_t D = f->n_features + 1, K = f->n_outputs;
    const int64_t levels = (int64_t)f->max_depth + 2;
    path_el *space = xai_alloc(levels * (levels + 1) / 2 + levels, sizeof(path_el));
    double *expected = xai_alloc(K, sizeof(double)), *recip = xai_alloc(levels + 1, sizeof(double));
    if (space == NULL || expected == NULL || recip == NULL) {
        free(space);
        free(expected);
        free(recip);
        return XAI_E_NOMEM;
    }
    recip[0] = 0.0;
    for (int64_t k = 1; k <= levels; k++)
        recip[k] = 1.0 / (double)k;
    const double scale = f->aggregate == XAI_AGGREGATE_MEAN ? xai_mean_scale(f) : 1.0;
    for (int32_t o = 0; o < K; o++)
        expected[o] = f->base_score[o];
    for (int32_t t = 0; t < f->n_trees; t++)
        tree_mean(f, cover, f->tree_offset[t], f->tree_offset[t], 1.0, scale, expected + f->tree_target[t]);
    for (int64_t i = 0; i < n_rows; i++) {
        double *phi = out + i * K * D;
        memset(phi, 0, (size_t)K * D * sizeof(double));
        path_walk w = {f, cover, recip, X + i * f->n_features, phi, 0, scale};
        for (int32_t t = 0; t < f->n_trees; t++) {
            w.target = f->tree_target[t];
            path_recurse(&w, f->tree_offset[t], f->tree_offset[t], space, 0, 1.0, 1.0, -1);
        }
        for (int32_t o = 0; o < K; o++)
            phi[(size_t)o * D + f->n_features] = expected[o];
    }
    free(space);
    free(expected);
    free(recip);
    return XAI_OK;
}

/* Interventional walk of one tree for the pair (x, z): side[j] is 0 (not met), 1 (taken from x) or 2
 * (from z); feats[0 .. n_a + n_b) lists the features of A then B in the order met (A and B kept
 * apart by their side). coef[a][b] holds a! b! / (a + b)! precomputed for a, b <= depth. */
typedef struct {
    const xai_forest *f;
    const double *x, *z;
    double *phi;
    int32_t target;
    double scale;
    uint8_t *side;
    int32_t *feats;
    const double *coef;   /* [(max_depth + 1)^2]: coef[a * (max_depth + 1) + b] = a! b! / (a + b + 1)! */
    int32_t stride;
} pair_walk;

static void pair_recurse(pair_walk *w, int64_t base, int64_t g, int32_t n_a, int32_t n_b)
{
    const xai_forest *f = w->f;
    if (f->left_child[g] < 0) {
        if (n_a + n_b == 0)
            return;
        const int32_t D = f->n_features + 1, W = f->leaf_width;
        /* +v (a-1)! b! / (a+b)! for A, -v a! (b-1)! / (a+b)! for B: coef of (a-1, b) and (a, b-1) */
        const double plus = n_a > 0 ? w->coef[(n_a - 1) * w->stride + n_b] * w->scale : 0.0;
        const double minus = n_b > 0 ? w->coef[n_a * w->stride + (n_b - 1)] * w->scale : 0.0;
        for (int32_t k = 0; k < n_a + n_b; k++) {
            const int32_t j = w->feats[k];
            const double s = w->side[j] == 1 ? plus : -minus;
            for (int32_t o = 0; o < W; o++)
                w->phi[(size_t)(w->target + o) * D + j] += s * f->value[g * W + o];
        }
        return;
    }
    const int32_t j = f->feature[g];
    const int64_t l = base + f->left_child[g], r = base + f->right_child[g];
    const int x_left = xai_goes_left(f, g, w->x[j]), z_left = xai_goes_left(f, g, w->z[j]);
    if (x_left == z_left || w->side[j] != 0) {     /* one way: both agree, or j's side was fixed above */
        const int left = w->side[j] == 2 ? z_left : x_left;
        pair_recurse(w, base, left ? l : r, n_a, n_b);
        return;
    }
    w->side[j] = 1;
    w->feats[n_a + n_b] = j;
    pair_recurse(w, base, x_left ? l : r, n_a + 1, n_b);
    w->side[j] = 2;
    pair_recurse(w, base, z_left ? l : r, n_a, n_b + 1);
    w->side[j] = 0;
}

static int treeshap_interventional(const xai_forest *f, const double *X, int64_t n_rows, const double *B,
                                   int64_t n_background, double *out)
{
    int status = check_common(f, X, n_rows, out);
    if (status != XAI_OK)
        return status;
    if (B == NULL || n_background < 1)
        return XAI_E_SIZE;
    const int32_t D = f->n_features + 1, K = f->n_outputs, stride = f->max_depth + 1;
    uint8_t *side = calloc((size_t)f->n_features, 1);
    int32_t *feats = xai_alloc(stride, sizeof(int32_t));
    double *coef = xai_alloc((int64_t)stride * stride, sizeof(double));
    double *pred = xai_alloc(K, sizeof(double)), *base_value = xai_alloc(K, sizeof(double));
    if (side == NULL || feats == NULL || coef == NULL || pred == NULL || base_value == NULL) {
        free(side);
        free(feats);
        free(coef);
        free(pred);
        free(base_value);
        return XAI_E_NOMEM;
    }
    /* coef[a][b] = a! b! / (a + b + 1)!, built from coef[0][0] = 1 by the ratios of factorials */
    for (int32_t a = 0; a < stride; a++)
        for (int32_t b = 0; b < stride; b++) {
            double v = 1.0;
            for (int32_t k = 1; k <= a; k++)
                v *= (double)k / (double)(b + k);
            coef[a * stride + b] = v / (double)(a + b + 1);
        }
    /* a leaf of |A| = a, |B| = b adds +v (a-1)! b! / (a+b)! = coef[a-1][b] to A's features and
     * -v a! (b-1)! / (a+b)! = coef[a][b-1] to B's */
    const double scale = f->aggregate == XAI_AGGREGATE_MEAN ? xai_mean_scale(f) : 1.0;
    const double per_row = 1.0 / (double)n_background;
    for (int32_t o = 0; o < K; o++)
        base_value[o] = 0.0;
    for (int64_t b = 0; b < n_background; b++) {      /* the mean model output over the background */
        for (int32_t o = 0; o < K; o++)
            pred[o] = f->base_score[o];
        for (int32_t t = 0; t < f->n_trees; t++) {
            const int64_t leaf = xai_leaf_of(f, t, B + b * f->n_features);
            for (int32_t o = 0; o < f->leaf_width; o++)
                pred[f->tree_target[t] + o] += scale * f->value[leaf * f->leaf_width + o];
        }
        for (int32_t o = 0; o < K; o++)
            base_value[o] += pred[o] * per_row;
    }
    for (int64_t i = 0; i < n_rows; i++) {
        double *phi = out + i * K * D;
        memset(phi, 0, (size_t)K * D * sizeof(double));
        pair_walk w = {f, X + i * f->n_features, NULL, phi, 0, scale * per_row, side, feats, coef, stride};
        for (int64_t b = 0; b < n_background; b++) {
            w.z = B + b * f->n_features;
            for (int32_t t = 0; t < f->n_trees; t++) {
                w.target = f->tree_target[t];
                pair_recurse(&w, f->tree_offset[t], f->tree_offset[t], 0, 0);
            }
        }
        for (int32_t o = 0; o < K; o++)
            phi[(size_t)o * D + f->n_features] = base_value[o];
    }
    free(side);
    free(feats);
    free(coef);
    free(pred);
    free(base_value);
    return XAI_OK;
}

int xai_treeshap_path(const xai_forest *f, const double *cover, const double *X, int64_t n_rows, double *out)
{
    xai_error_clear();
    return xai_error_return(treeshap_path(f, cover, X, n_rows, out));
}

int xai_treeshap_interventional(const xai_forest *f, const double *X, int64_t n_rows, const double *background,
                                int64_t n_background, double *out)
{
    xai_error_clear();
    return xai_error_return(treeshap_interventional(f, X, n_rows, background, n_background, out));
}
