/* surrogates.c -- RF-MCR's exact surrogate splits of one tree (xai_surrogates). One pass over the
 * training rows fills every leaf's box (per feature, the smallest and largest value of its rows),
 * one pass over the nodes, children before parents, fills every internal node's box, and a last
 * pass compares the boxes of each internal node's two children feature by feature. */
#include <stdlib.h>

#include "xai.h"

/* Local node ids of tree t in reverse pre-order (children before parents) into order[m]; stack
 * holds m entries. */
static void children_first(const xai_forest *f, int32_t t, int64_t m, int32_t *order, int32_t *stack)
{
    const int64_t base = f->tree_offset[t];
    int64_t top = 0, placed = m;
    stack[top++] = 0;
    while (top > 0) {
        const int32_t node = stack[--top];
        order[--placed] = node;
        if (f->left_child[base + node] >= 0) {
            stack[top++] = f->right_child[base + node];
            stack[top++] = f->left_child[base + node];
        }
    }
}

/* The argument checks of xai_surrogates that need no allocation; rows with NaN or a start leaf
 * that is not a leaf of the tree are reported by row. */
static int check_args(const xai_forest *f, int32_t t, const float *X, int64_t n_rows, const int32_t *leaf,
                      int64_t capacity, const int32_t *node, const int32_t *feature, const double *threshold,
                      const uint8_t *flipped, const int64_t *count)
{
    if (f == NULL || X == NULL || leaf == NULL || node == NULL || feature == NULL || threshold == NULL ||
        flipped == NULL || count == NULL || n_rows < 1 || capacity < 0)
        return XAI_E_SIZE;
    if (f->n_categories != NULL)
        return XAI_E_UNSUPPORTED;
    if (t < 0 || t >= f->n_trees)
        return XAI_E_INDEX;
    const int64_t base = f->tree_offset[t], m = f->tree_offset[t + 1] - base;
    const int32_t d = f->n_features;
    for (int64_t i = 0; i < n_rows; i++) {
        if (leaf[i] < 0 || leaf[i] >= m || f->left_child[base + leaf[i]] >= 0) {
            xai_error_at(t, -1, i);
            return XAI_E_INDEX;
        }
        for (int32_t j = 0; j < d; j++)
            if (isnan(X[i * d + j])) {
                xai_error_at(t, -1, i);
                return XAI_E_VALUE;
            }
    }
    return XAI_OK;
}

/* Fills the boxes lo/hi[m * d] of every node of tree t from the rows (see xai_surrogates); a leaf
 * no row reaches is an error (its box would be empty). */
static int node_boxes(const xai_forest *f, int32_t t, const float *X, int64_t n_rows, const int32_t *leaf,
                      const int32_t *order, float *lo, float *hi)
{
    const int64_t base = f->tree_offset[t], m = f->tree_offset[t + 1] - base;
    const int32_t d = f->n_features;
    for (int64_t k = 0; k < m * d; k++) {
        lo[k] = INFINITY;
        hi[k] = -INFINITY;
    }
    uint8_t *seen = calloc((size_t)m, 1);
    if (seen == NULL)
        return XAI_E_NOMEM;
    for (int64_t i = 0; i < n_rows; i++) {
        float *l = lo + (int64_t)leaf[i] * d, *h = hi + (int64_t)leaf[i] * d;
        const float *x = X + i * d;
        seen[leaf[i]] = 1;
        for (int32_t j = 0; j < d; j++) {
            l[j] = x[j] < l[j] ? x[j] : l[j];
            h[j] = x[j] > h[j] ? x[j] : h[j];
        }
    }
    int status = XAI_OK;
    for (int64_t k = 0; k < m && status == XAI_OK; k++) {
        const int32_t node = order[k];
        const int32_t a = f->left_child[base + node], b = f->right_child[base + node];
        if (a < 0) {
            if (!seen[node]) {
                xai_error_at(t, node, -1);
                status = XAI_E_VALUE;
            }
            continue;
        }
        for (int32_t j = 0; j < d; j++) {
            lo[(int64_t)node * d + j] = lo[(int64_t)a * d + j] < lo[(int64_t)b * d + j] ? lo[(int64_t)a * d + j]
                                                                                       : lo[(int64_t)b * d + j];
            hi[(int64_t)node * d + j] = hi[(int64_t)a * d + j] > hi[(int64_t)b * d + j] ? hi[(int64_t)a * d + j]
                                                                                       : hi[(int64_t)b * d + j];
        }
    }
    free(seen);
    return status;
}

/* The surrogates of every internal node in increasing id, features increasing (see xai_surrogates). */
static int emit(const xai_forest *f, int32_t t, const float *lo, const float *hi, const uint8_t *wanted,
                int64_t capacity, int32_t *node, int32_t *feature, double *threshold, uint8_t *flipped, int64_t *count)
{
    const int64_t base = f->tree_offset[t], m = f->tree_offset[t + 1] - base;
    const int32_t d = f->n_features;
    int64_t c = 0;
    for (int64_t v = 0; v < m; v++) {
        const int32_t a = f->left_child[base + v], b = f->right_child[base + v];
        if (a < 0)
            continue;
        const float *lo_l = lo + (int64_t)a * d, *hi_l = hi + (int64_t)a * d;
        const float *lo_r = lo + (int64_t)b * d, *hi_r = hi + (int64_t)b * d;
        const int32_t split = f->feature[base + v];
        const int every = wanted == NULL || wanted[split];   /* else only the wanted surrogates */
        for (int32_t g = 0; g < d; g++) {
            if (g == split || !(every || wanted[g]))
                continue;
            const int flip = hi_r[g] < lo_l[g];
            if (!flip && !(hi_l[g] < lo_r[g]))
                continue;
            if (c == capacity)
                return XAI_E_SIZE;
            const float below = flip ? hi_r[g] : hi_l[g], above = flip ? lo_l[g] : lo_r[g];
            node[c] = (int32_t)v;
            feature[c] = g;
            threshold[c] = ((double)below + (double)above) / 2.0;
            flipped[c++] = (uint8_t)flip;
        }
    }
    *count = c;
    return XAI_OK;
}

static int surrogates(const xai_forest *f, int32_t t, const float *X, int64_t n_rows, const int32_t *leaf,
                      const uint8_t *wanted, int64_t capacity, int32_t *node, int32_t *feature, double *threshold,
                      uint8_t *flipped, int64_t *count)
{
    int status = check_args(f, t, X, n_rows, leaf, capacity, node, feature, threshold, flipped, count);
    if (status != XAI_OK)
        return status;
    const int64_t m = f->tree_offset[t + 1] - f->tree_offset[t];
    int32_t *order = xai_alloc(m, sizeof(int32_t)), *stack = xai_alloc(m, sizeof(int32_t));
    float *lo = xai_alloc(m * f->n_features, sizeof(float)), *hi = xai_alloc(m * f->n_features, sizeof(float));
    status = order && stack && lo && hi ? XAI_OK : XAI_E_NOMEM;
    if (status == XAI_OK) {
        children_first(f, t, m, order, stack);
        status = node_boxes(f, t, X, n_rows, leaf, order, lo, hi);
    }
    if (status == XAI_OK)
        status = emit(f, t, lo, hi, wanted, capacity, node, feature, threshold, flipped, count);
    free(order);
    free(stack);
    free(lo);
    free(hi);
    return status;
}

int xai_surrogates(const xai_forest *forest, int32_t tree, const float *X, int64_t n_rows, const int32_t *leaf,
                   const uint8_t *wanted, int64_t capacity, int32_t *node, int32_t *feature, double *threshold,
                   uint8_t *flipped, int64_t *count)
{
    xai_error_clear();
    return xai_error_return(surrogates(forest, tree, X, n_rows, leaf, wanted, capacity, node, feature, threshold,
                                       flipped, count));
}
