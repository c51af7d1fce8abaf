/* reroute.c -- leaves of one tree, or of a version of it with the same shape that splits
 * differently (RF-MCR's S+ / S- trees), after some input features changed (RF-MCR's permutations).
 *
 * xai_reroute_prepare builds the tree's walk layout once (it is reused for every permutation of the
 * same features): the tree renumbered in depth-first pre-order, so that a node's left child is the
 * next record and one step reads one 16-byte record, and (for few changed features) every leaf's
 * box in the changed features. xai_reroute then routes rows: a row whose new values lie in its
 * start leaf's box keeps that leaf; the others are copied into a small row buffer (as the model
 * compares them, with their new values) and walk down from the root, GROUP rows in lockstep so that
 * their cache misses overlap. A step is a handful of instructions and has no data-dependent branch,
 * so that the loads of many rows are in flight at once (a walk of the original tree and its S+
 * version together, one record per step while they agree, measured 1.5x slower than two walks:
 * the wider records and steps left fewer loads in flight). */
#include <stdlib.h>
#include <string.h>

#include "xai.h"

enum {
    GROUP = 16,    /* rows walked in lockstep (local_mdi.c measures the gain) */
    MAX_BOXED = 4  /* leaf boxes are kept for at most this many changed features (memory) */
};

/* One node of the walk layout. split: at an internal node 4 * feature + 2 * flipped + missing_left;
 * -1 at a leaf. right: an internal node's right child's position, a leaf's local id. */
typedef struct {
    double threshold;
    int32_t split;
    int32_t right;
} walk_node;

struct xai_reroute_layout {
    int32_t tree, n_changed, n_features;
    int64_t n_nodes;
    int32_t *changed;  /* [n_changed] */
    walk_node *walk;   /* [n_nodes] in pre-order */
    double *box;       /* NULL, or [n_nodes][n_changed][2] (lo, hi) by local node id */
};

void xai_reroute_free(xai_reroute_layout *layout)
{
    if (layout == NULL)
        return;
    free(layout->changed);
    free(layout->walk);
    free(layout->box);
    free(layout);
}

/* The checks of xai_reroute_prepare's arguments and of the version's splits; slot[j] receives the
 * position of feature j in spec->changed, -1 when unchanged. */
static int check_spec(const xai_forest *f, const xai_reroute_spec *s, int32_t *slot)
{
    if (s->feature == NULL || s->threshold == NULL || s->changed == NULL || s->n_changed < 1 ||
        s->n_changed > f->n_features)
        return XAI_E_SIZE;
    if (f->n_nodes > INT32_MAX || f->n_features > (INT32_MAX >> 2) || f->n_categories != NULL)
        return XAI_E_UNSUPPORTED; /* global leaf ids and split codes are int32; intervals describe no
                                     category set */
    if (s->tree < 0 || s->tree >= f->n_trees)
        return XAI_E_INDEX;
    for (int32_t j = 0; j < f->n_features; j++)
        slot[j] = -1;
    for (int32_t k = 0; k < s->n_changed; k++) {
        if (s->changed[k] < 0 || s->changed[k] >= f->n_features || slot[s->changed[k]] >= 0)
            return XAI_E_INDEX;
        slot[s->changed[k]] = k;
    }
    const int64_t base = f->tree_offset[s->tree], end = f->tree_offset[s->tree + 1];
    for (int64_t g = base; g < end; g++) {
        if (f->left_child[g] < 0)
            continue;
        if (s->feature[g] < 0 || s->feature[g] >= f->n_features) {
            xai_error_at(s->tree, g - base, -1);
            return XAI_E_INDEX;
        }
        if (isnan(s->threshold[g])) {
            xai_error_at(s->tree, g - base, -1);
            return XAI_E_VALUE;
        }
    }
    return XAI_OK;
}

/* Narrows a child's box (lo, hi) in one feature to the side of the threshold it receives. */
static inline void narrow(double *box, double threshold, int below)
{
    if (below) {
        if (threshold < box[1])
            box[1] = threshold;
    } else if (threshold > box[0]) {
        box[0] = threshold;
    }
}

/* One pre-order DFS over the tree fills the walk layout and, when L->box is set, every node's box in
 * the changed features: the values the splits on its path let through. pos[m] and stack[m + 1] are
 * scratch. */
static void build(const xai_forest *f, const xai_reroute_spec *s, const int32_t *slot, xai_reroute_layout *L,
                  int32_t *pos, int32_t *stack)
{
    const int64_t base = f->tree_offset[s->tree], m = L->n_nodes, K = s->n_changed;
    if (L->box != NULL)
        for (int64_t k = 0; k < K; k++) {
            L->box[2 * k] = -INFINITY;
            L->box[2 * k + 1] = INFINITY;
        }
    int32_t placed = 0;
    int64_t top = 0;
    stack[top++] = 0;
    while (top > 0) {   /* pre-order: a node's left child is popped next */
        const int32_t node = stack[--top];
        const int64_t g = base + node;
        const int32_t l = f->left_child[g], r = f->right_child[g];
        walk_node *w = L->walk + (pos[node] = placed++);
        if (l < 0) {
            *w = (walk_node){0.0, -1, node};
            continue;
        }
        const int flip = s->flipped != NULL && s->flipped[g] != 0;
        *w = (walk_node){s->threshold[g], 4 * s->feature[g] + 2 * flip + (f->missing_left[g] != 0), -1};
        if (L->box != NULL) {
            double *parent = L->box + node * 2 * K, *bl = L->box + l * 2 * K, *br = L->box + r * 2 * K;
            for (int64_t c = 0; c < 2 * K; c++)
                bl[c] = br[c] = parent[c];
            const int32_t k = slot[s->feature[g]];
            if (k >= 0) {   /* a flipped node sends the values below its threshold right */
                narrow(bl + 2 * k, s->threshold[g], !flip);
                narrow(br + 2 * k, s->threshold[g], flip);
            }
        }
        stack[top++] = r;
        stack[top++] = l;
    }
    for (int64_t node = 0; node < m; node++)   /* a right child is placed after its parent */
        if (f->left_child[base + node] >= 0)
            L->walk[pos[node]].right = pos[f->right_child[base + node]];
}

static int prepare(const xai_forest *f, const xai_reroute_spec *s, xai_reroute_layout **out)
{
    if (f == NULL || s == NULL || out == NULL)
        return XAI_E_SIZE;
    *out = NULL;
    int32_t *slot = xai_alloc(f->n_features, sizeof(int32_t));
    if (slot == NULL)
        return XAI_E_NOMEM;
    int status = check_spec(f, s, slot);
    if (status != XAI_OK) {
        free(slot);
        return status;
    }
    const int64_t m = f->tree_offset[s->tree + 1] - f->tree_offset[s->tree];
    xai_reroute_layout *L = calloc(1, sizeof(xai_reroute_layout));
    int32_t *pos = xai_alloc(m, sizeof(int32_t)), *stack = xai_alloc(m + 1, sizeof(int32_t));
    if (L != NULL) {
        *L = (xai_reroute_layout){s->tree, s->n_changed, f->n_features, m, NULL, NULL, NULL};
        L->changed = xai_alloc(s->n_changed, sizeof(int32_t));
        L->walk = xai_alloc(m, sizeof(walk_node));
        if (s->n_changed <= MAX_BOXED)
            L->box = xai_alloc(m * s->n_changed * 2, sizeof(double));
    }
    status = L && L->changed && L->walk && pos && stack && (s->n_changed > MAX_BOXED || L->box) ? XAI_OK
                                                                                                : XAI_E_NOMEM;
    if (status == XAI_OK) {
        memcpy(L->changed, s->changed, (size_t)s->n_changed * sizeof(int32_t));
        build(f, s, slot, L, pos, stack);
        *out = L;
    } else {
        xai_reroute_free(L);
    }
    free(slot);
    free(pos);
    free(stack);
    return status;
}

int xai_reroute_prepare(const xai_forest *forest, const xai_reroute_spec *spec, xai_reroute_layout **layout)
{
    xai_error_clear();
    return xai_error_return(prepare(forest, spec, layout));
}

/* The argument checks of xai_reroute. */
static int check_args(const xai_forest *f, const xai_reroute_layout *L, const xai_reroute_args *a)
{
    if (f == NULL || L == NULL || a == NULL || a->X == NULL || a->new_values == NULL || a->leaf == NULL ||
        (a->start_leaf != NULL && a->moved == NULL) || a->n_rows < 0 ||
        (a->delta != NULL && (a->start_leaf == NULL || a->node_value == NULL || a->width < 1)))
        return XAI_E_SIZE;
    if (L->tree >= f->n_trees || L->n_features != f->n_features ||
        L->n_nodes != f->tree_offset[L->tree + 1] - f->tree_offset[L->tree])
        return XAI_E_INDEX;    /* a layout of another forest */
    const int64_t base = f->tree_offset[L->tree], end = f->tree_offset[L->tree + 1];
    for (int64_t i = 0; a->start_leaf != NULL && i < a->n_rows; i++) {
        const int32_t g = a->start_leaf[i];
        if (g < base || g >= end || f->left_child[g] >= 0) {
            xai_error_at(L->tree, -1, i);
            return XAI_E_INDEX;
        }
    }
    return XAI_OK;
}

/* x as the model compares it (xai_input_value, with the forest's settings read once). */
static inline double model_value(double x, int float32, double zero_threshold)
{
    if (zero_threshold > 0.0 && fabs(x) <= zero_threshold)
        x = 0.0;
    return float32 ? (double)(float)x : x;
}

/* Walks the rows values[q * d ..] (q < n, as the model compares them) from the root of the walk
 * layout to their leaves, in lockstep, branch-free (a mispredicted branch would discard the other
 * rows' loads in flight): at[q] ends as the leaf's local id. */
static inline void descend(const walk_node *walk, const double *values, int32_t d, int32_t *at, int n,
                           int strict_left)
{
    int live[GROUP];
    int n_live = 0;
    for (int q = 0; q < n; q++) {
        at[q] = 0;
        live[n_live++] = q;
    }
    while (n_live > 0) {
        int kept = 0;
        for (int a = 0; a < n_live; a++) {
            const int q = live[a];
            const walk_node *w = walk + at[q];
            const int32_t split = w->split;
            if (split < 0) {
                at[q] = w->right;
                continue;
            }
            const double x = values[q * d + (split >> 2)];
            /* both comparisons are false for NaN, which then goes where missing_left says */
            const int32_t left = ((strict_left ? x < w->threshold : x <= w->threshold) | ((isnan(x) != 0) & split)) ^
                                 ((split >> 1) & 1);
            at[q] = ((at[q] + 1) & -left) | (w->right & (left - 1));
            live[kept++] = q;
        }
        n_live = kept;
    }
}

/* 1 when the new values now[0 .. K) lie in box[K][2] (false for NaN). */
static inline int in_box(const double *now, const double *box, int32_t K, int float32, double zero, int strict_left)
{
    for (int32_t k = 0; k < K; k++) {
        const double x = model_value(now[k], float32, zero), lo = box[2 * k], hi = box[2 * k + 1];
        if (!(strict_left ? (x >= lo && x < hi) : (x > lo && x <= hi)))
            return 0;
    }
    return 1;
}

/* The leaves, moved rows and their changes of node value of xai_reroute, GROUP rows at a time: the rows that leave their start
 * leaf's box (every row without start leaves) are copied, as the model compares them and with their new values, into the row buffer
 * values[GROUP * n_features] and walked together. The arguments are read into locals once: stores
 * into leaf could otherwise alias them. */
static void route_rows(const xai_forest *f, const xai_reroute_layout *L, xai_reroute_args *a, double *values)
{
    const int64_t n_rows = a->n_rows, base = f->tree_offset[L->tree];
    const int32_t K = L->n_changed, d = L->n_features;
    const int32_t *start_leaf = a->start_leaf, *changed = L->changed;
    const double *X = a->X, *new_values = a->new_values, *boxes = start_leaf != NULL ? L->box : NULL;
    const double zero = f->zero_threshold;
    const double *node_value = a->node_value;
    const int32_t width = a->width;
    int32_t *leaf = a->leaf;
    int64_t *moved = a->moved;
    double *delta = a->delta;
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT, float32 = f->input_float32 != 0;
    int64_t count = 0, row[GROUP];
    int32_t at[GROUP];
    for (int64_t i0 = 0; i0 < n_rows; i0 += GROUP) {
        const int64_t i1 = n_rows - i0 < GROUP ? n_rows : i0 + GROUP;
        int n = 0;
        for (int64_t i = i0; i < i1; i++) {
            if (start_leaf != NULL)
                leaf[i] = start_leaf[i];
            if (boxes != NULL && in_box(new_values + i * K, boxes + (start_leaf[i] - base) * 2 * K, K, float32, zero,
                                        strict_left))
                continue;
            double *x = values + (int64_t)n * d;
            for (int32_t j = 0; j < d; j++)
                x[j] = model_value(X[i * d + j], float32, zero);
            for (int32_t k = 0; k < K; k++)
                x[changed[k]] = model_value(new_values[i * K + k], float32, zero);
            row[n++] = i;
        }
        descend(L->walk, values, d, at, n, strict_left);
        for (int q = 0; q < n; q++)
            leaf[row[q]] = (int32_t)(base + at[q]);   /* n_nodes <= INT32_MAX */
        for (int64_t i = i0; start_leaf != NULL && i < i1; i++) {   /* in row order: moved stays increasing */
            const int32_t now = leaf[i], start = start_leaf[i];
            if (now == start)
                continue;
            if (delta != NULL)
                for (int32_t c = 0; c < width; c++)
                    delta[count * width + c] = node_value[(int64_t)now * width + c] - node_value[(int64_t)start * width + c];
            moved[count++] = i;
        }
    }
    a->n_moved = count;
}

int xai_reroute(const xai_forest *forest, const xai_reroute_layout *layout, xai_reroute_args *args)
{
    xai_error_clear();
    int status = check_args(forest, layout, args);
    double *values = status == XAI_OK ? xai_alloc((int64_t)GROUP * layout->n_features, sizeof(double)) : NULL;
    if (status == XAI_OK && values == NULL)
        status = XAI_E_NOMEM;
    if (status == XAI_OK)
        route_rows(forest, layout, args, values);
    free(values);
    return xai_error_return(status);
}

static int scatter_add(double *target, int64_t n_target, int32_t width, const int64_t *rows, const double *values,
                       int64_t n)
{
    if (target == NULL || rows == NULL || values == NULL || n_target < 0 || width < 1 || n < 0)
        return XAI_E_SIZE;
    for (int64_t q = 0; q < n; q++) {   /* one pass: an index out of range stops the sums there */
        const int64_t i = rows[q];
        if (i < 0 || i >= n_target) {
            xai_error_at(-1, -1, q);
            return XAI_E_INDEX;
        }
        for (int32_t c = 0; c < width; c++)
            target[i * width + c] += values[q * width + c];
    }
    return XAI_OK;
}

int xai_scatter_add(double *target, int64_t n_target, int32_t width, const int64_t *rows, const double *values,
                    int64_t n)
{
    xai_error_clear();
    return xai_error_return(scatter_add(target, n_target, width, rows, values, n));
}
