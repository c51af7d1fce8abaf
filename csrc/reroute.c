/* reroute.c -- leaves of one tree after some input features changed (RF-MCR's permutations). */
#include <stdlib.h>

#include "xai.h"

/* Box of every node of tree t in the changed features: lo[k * m + node] / hi[k * m + node] bound
 * the values of changed feature k that the splits on the node's path let through; up[node] is the
 * node's nearest strict ancestor that splits on a changed feature (-1 when none). */
static void changed_boxes(const xai_forest *f, int32_t t, const int32_t *slot, int32_t n_changed,
                          double *lo, double *hi, int32_t *up, int32_t *stack)
{
    const int64_t base = f->tree_offset[t];
    const int64_t m = f->tree_offset[t + 1] - base;
    for (int32_t k = 0; k < n_changed; k++) {
        lo[k * m] = -INFINITY;
        hi[k * m] = INFINITY;
    }
    up[0] = -1;
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
        up[l] = up[r] = k >= 0 ? node : up[node];
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

/* 1 when the changed values v[changed[k]] (read by xai_input_value) lie in the box of local node
 * `node` (false for NaN). */
static inline int in_box(const double *v, const int32_t *changed, int32_t n_changed, const double *lo,
                         const double *hi, int64_t m, int64_t node, int strict_left)
{
    for (int32_t k = 0; k < n_changed; k++) {
        const double x = v[changed[k]], l = lo[k * m + node], h = hi[k * m + node];
        if (!(strict_left ? (x >= l && x < h) : (x > l && x <= h)))
            return 0;
    }
    return 1;
}

/* Global leaf reached from local node `node` of the tree at `base` by the row whose values, read by
 * xai_input_value, are v. */
static inline int32_t descend(const xai_forest *f, int64_t base, int64_t node, const double *v, int strict_left)
{
    const int32_t *left = f->left_child + base, *right = f->right_child + base, *feature = f->feature + base;
    const double *threshold = f->threshold + base;
    const uint8_t *missing_left = f->missing_left + base;
    int32_t l;
    while ((l = left[node]) >= 0) {
        const double x = v[feature[node]], t = threshold[node];
        const int go_left = isnan(x) ? missing_left[node] != 0 : (strict_left ? x < t : x <= t);
        node = go_left ? l : right[node];
    }
    return (int32_t)(base + node); /* n_nodes <= INT32_MAX */
}

/* The leaves, moved rows and accumulator of xai_reroute, given the boxes and ancestors of
 * changed_boxes; v is scratch for one row's values. A row outside its start leaf's box climbs the
 * ancestors that split on a changed feature to the first whose box holds its values (its other
 * values are those that reached the start leaf, so the row reaches that node) and descends from
 * there. The arguments are read into locals once: stores into leaf could otherwise alias them. */
static void route_rows(const xai_forest *f, xai_reroute_args *a, const double *lo, const double *hi,
                       const int32_t *up, double *v)
{
    const int64_t n_rows = a->n_rows;
    const int32_t tree = a->tree, n_changed = a->n_changed, width = a->width, d = f->n_features;
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
        const double *x = X + i * d;
        const int32_t start = start_leaf[i];
        int64_t node = start - base;
        for (int32_t k = 0; k < n_changed; k++)
            v[changed[k]] = xai_input_value(f, x[changed[k]]);
        if (in_box(v, changed, n_changed, lo, hi, m, node, strict_left)) {
            leaf[i] = start;
            continue;
        }
        do
            node = up[node];
        while (node >= 0 && !in_box(v, changed, n_changed, lo, hi, m, node, strict_left));
        for (int32_t j = 0; j < d; j++)
            v[j] = xai_input_value(f, x[j]);
        const int32_t now = descend(f, base, node < 0 ? 0 : node, v, strict_left);
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
    int32_t *up = xai_alloc(m, sizeof(int32_t));
    double *lo = xai_alloc(m * a->n_changed, sizeof(double));
    double *hi = xai_alloc(m * a->n_changed, sizeof(double));
    double *v = xai_alloc(f->n_features, sizeof(double));
    status = (slot && stack && up && lo && hi && v) ? changed_slots(f, a->changed, a->n_changed, slot) : XAI_E_NOMEM;
    if (status == XAI_OK) {
        changed_boxes(f, a->tree, slot, a->n_changed, lo, hi, up, stack);
        route_rows(f, a, lo, hi, up, v);
    }
    free(slot);
    free(stack);
    free(up);
    free(lo);
    free(hi);
    free(v);
    return status;
}

int xai_reroute(const xai_forest *f, xai_reroute_args *args)
{
    xai_error_clear();
    return xai_error_return(reroute(f, args));
}
