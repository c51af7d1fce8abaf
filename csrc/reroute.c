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

/* The argument checks of xai_reroute that need no allocation. */
static int check_args(const xai_forest *f, const xai_reroute_args *a)
{
    if (f == NULL || a == NULL || a->X == NULL || a->changed == NULL || a->start_leaf == NULL ||
        a->leaf == NULL || a->moved == NULL || a->n_rows < 0 || a->n_changed < 1 ||
        a->n_changed > f->n_features || (a->acc != NULL && (a->node_value == NULL || a->width < 1)))
        return XAI_E_SIZE;
    if (f->n_nodes > INT32_MAX || f->n_categories != NULL)
        return XAI_E_UNSUPPORTED; /* global leaf ids are int32; intervals describe no category set */
    if (a->tree < 0 || a->tree >= f->n_trees)
        return XAI_E_INDEX;
    const int64_t base = f->tree_offset[a->tree], end = f->tree_offset[a->tree + 1];
    for (int64_t i = 0; i < a->n_rows; i++) {
        const int32_t g = a->start_leaf[i];
        if (g < base || g >= end || f->left_child[g] >= 0) {
            xai_error_at(a->tree, -1, i);
            return XAI_E_INDEX;
        }
    }
    return XAI_OK;
}

/* slot[j] = position of feature j in changed, -1 when unchanged; XAI_E_INDEX when a feature is
 * out of range or listed twice. */
static int changed_slots(const xai_forest *f, const int32_t *changed, int32_t n_changed, int32_t *slot)
{
    for (int32_t j = 0; j < f->n_features; j++)
        slot[j] = -1;
    for (int32_t k = 0; k < n_changed; k++) {
        if (changed[k] < 0 || changed[k] >= f->n_features || slot[changed[k]] >= 0)
            return XAI_E_INDEX;
        slot[changed[k]] = k;
    }
    return XAI_OK;
}

/* The leaves, moved rows and accumulator of xai_reroute, given the boxes of changed_boxes. The
 * arguments are read into locals once: stores into leaf could otherwise alias them. */
static void route_rows(const xai_forest *f, xai_reroute_args *a, const double *lo, const double *hi)
{
    const int64_t n_rows = a->n_rows;
    const int32_t tree = a->tree, n_changed = a->n_changed, width = a->width;
    const int32_t *changed = a->changed, *start_leaf = a->start_leaf;
    const double *X = a->X, *node_value = a->node_value;
    int32_t *leaf = a->leaf;
    int64_t *moved = a->moved;
    double *acc = a->acc;
    const int64_t base = f->tree_offset[tree];
    const int64_t m = f->tree_offset[tree + 1] - base;
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT; /* left: x < t, so a box is [lo, hi) */
    int64_t count = 0;
    for (int64_t i = 0; i < n_rows; i++) {
        const double *x = X + i * f->n_features;
        const int32_t start = start_leaf[i];
        const int64_t node = start - base;
        int inside = 1;
        for (int32_t k = 0; k < n_changed && inside; k++) {
            const double v = xai_input_value(f, x[changed[k]]);
            const double l = lo[k * m + node], h = hi[k * m + node];
            inside = strict_left ? (v >= l && v < h) : (v > l && v <= h); /* false for NaN */
        }
        const int32_t now = inside ? start : (int32_t)xai_leaf_of(f, tree, x); /* n_nodes <= INT32_MAX */
        leaf[i] = now;
        if (now == start)
            continue;
        moved[count++] = i;
        if (acc != NULL)
            for (int32_t c = 0; c < width; c++)
                acc[i * width + c] += node_value[(int64_t)now * width + c] - node_value[(int64_t)start * width + c];
    }
    a->n_moved = count;
}

static int reroute(const xai_forest *f, xai_reroute_args *a)
{
    int status = check_args(f, a);
    if (status != XAI_OK)
        return status;
    const int64_t m = f->tree_offset[a->tree + 1] - f->tree_offset[a->tree];
    int32_t *slot = xai_alloc(f->n_features, sizeof(int32_t));
    int32_t *stack = xai_alloc(m + 1, sizeof(int32_t));
    double *lo = xai_alloc(m * a->n_changed, sizeof(double));
    double *hi = xai_alloc(m * a->n_changed, sizeof(double));
    status = (slot && stack && lo && hi) ? changed_slots(f, a->changed, a->n_changed, slot) : XAI_E_NOMEM;
    if (status == XAI_OK) {
        changed_boxes(f, a->tree, slot, a->n_changed, lo, hi, stack);
        route_rows(f, a, lo, hi);
    }
    free(slot);
    free(stack);
    free(lo);
    free(hi);
    return status;
}

int xai_reroute(const xai_forest *f, xai_reroute_args *args)
{
    xai_error_clear();
    return xai_error_return(reroute(f, args));
}
