/* reroute.c -- leaves of one tree after some input features changed (RF-MCR's permutations). */
#include <stdlib.h>

#include "xai.h"

/* Box of every node of tree t in the changed features: lo[k * m + node] / hi[k * m + node] bound
 * the values of changed feature k that the splits on the node's path let through. */
static void changed_boxes(const xai_forest *f, int32_t t, const int32_t *slot, int32_t n_changed,
                          double *lo, double *hi, int32_t *stack)
{
    const int64_t base = f->tree_offset[t];
    const int64_t m = f->tree_offset[t + 1] - base;
    for (int32_t k = 0; k < n_changed; k++) {
        lo[k * m] = -INFINITY;
        hi[k * m] = INFINITY;
    }
    int64_t top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const int32_t node = stack[--top];
        const int32_t l = f->left_child[base + node], r = f->right_child[base + node];
        if (l < 0)
            continue;
        for (int32_t k = 0; k < n_changed; k++) {
            lo[k * m + l] = lo[k * m + r] = lo[k * m + node];
            hi[k * m + l] = hi[k * m + r] = hi[k * m + node];
        }
        const int32_t k = slot[f->feature[base + node]];
        if (k >= 0) {
            const double thr = f->threshold[base + node];
            if (thr < hi[k * m + l])
                hi[k * m + l] = thr;
            if (thr > lo[k * m + r])
                lo[k * m + r] = thr;
        }
        stack[top++] = l;
        stack[top++] = r;
    }
}

static int reroute(const xai_forest *f, int32_t tree, const double *X, int64_t n_rows,
                   const int32_t *changed, int32_t n_changed, const int32_t *start_leaf,
                   int32_t *leaf, int64_t *moved, int64_t *n_moved,
                   const double *node_value, int32_t width, double *acc)
{
    if (f == NULL || X == NULL || changed == NULL || start_leaf == NULL || leaf == NULL || moved == NULL ||
        n_moved == NULL || n_rows < 0 || n_changed < 1 || n_changed > f->n_features ||
        (acc != NULL && (node_value == NULL || width < 1)))
        return XAI_E_SIZE;
    if (tree < 0 || tree >= f->n_trees)
        return XAI_E_INDEX;
    const int64_t base = f->tree_offset[tree];
    const int64_t m = f->tree_offset[tree + 1] - base;
    for (int64_t i = 0; i < n_rows; i++)
        if (start_leaf[i] < base || start_leaf[i] >= base + m || f->left_child[start_leaf[i]] >= 0) {
            xai_error_at(tree, -1, i);
            return XAI_E_INDEX;
        }
    int32_t *slot = malloc(sizeof(int32_t) * (size_t)f->n_features);
    int32_t *stack = malloc(sizeof(int32_t) * (size_t)(m + 1));
    double *lo = malloc(sizeof(double) * (size_t)(m * n_changed));
    double *hi = malloc(sizeof(double) * (size_t)(m * n_changed));
    int status = (slot && stack && lo && hi) ? XAI_OK : XAI_E_NOMEM;
    if (status == XAI_OK) {
        for (int32_t j = 0; j < f->n_features; j++)
            slot[j] = -1;
        for (int32_t k = 0; k < n_changed && status == XAI_OK; k++) {
            if (changed[k] < 0 || changed[k] >= f->n_features || slot[changed[k]] >= 0)
                status = XAI_E_INDEX; /* out of range or listed twice */
            else
                slot[changed[k]] = k;
        }
    }
    if (status == XAI_OK) {
        changed_boxes(f, tree, slot, n_changed, lo, hi, stack);
        const int strict_left = f->split_rule == XAI_LEFT_IF_LT; /* left: x < t, so a box is [lo, hi) */
        int64_t count = 0;
        for (int64_t i = 0; i < n_rows; i++) {
            const double *x = X + i * f->n_features;
            const int64_t node = start_leaf[i] - base;
            int inside = 1;
            for (int32_t k = 0; k < n_changed && inside; k++) {
                const double v = xai_input_value(f, x[changed[k]]);
                const double a = lo[k * m + node], b = hi[k * m + node];
                inside = strict_left ? (v >= a && v < b) : (v > a && v <= b); /* false for NaN */
            }
            leaf[i] = inside ? start_leaf[i] : (int32_t)xai_leaf_of(f, tree, x); /* < n_nodes */
            if (leaf[i] == start_leaf[i])
                continue;
            moved[count++] = i;
            if (acc != NULL)
                for (int32_t c = 0; c < width; c++)
                    acc[i * width + c] += node_value[(int64_t)leaf[i] * width + c] -
                                          node_value[(int64_t)start_leaf[i] * width + c];
        }
        *n_moved = count;
    }
    free(slot);
    free(stack);
    free(lo);
    free(hi);
    return status;
}

int xai_reroute(const xai_forest *f, int32_t tree, const double *X, int64_t n_rows,
                const int32_t *changed, int32_t n_changed, const int32_t *start_leaf,
                int32_t *leaf, int64_t *moved, int64_t *n_moved,
                const double *node_value, int32_t width, double *acc)
{
    xai_error_clear();
    return xai_error_return(reroute(f, tree, X, n_rows, changed, n_changed, start_leaf, leaf, moved, n_moved,
                                    node_value, width, acc));
}
