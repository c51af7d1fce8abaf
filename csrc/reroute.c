/* reroute.c -- leaves of one tree after some input features changed (RF-MCR's permutations). */
#include <stdlib.h>

#include "xai.h"

/* One node of a tree's walk layout: the tree renumbered in depth-first pre-order, so that a node's
 * left child is the next record and one step of a descent reads one 16-byte record (the forest's
 * arrays would cost five cache lines). */
typedef struct {
    double threshold;
    int32_t split; /* 2 * feature + missing_left at an internal node, -1 at a leaf */
    int32_t right; /* internal node: position of the right child; leaf: its local id in the forest */
} walk_node;

/* One DFS over tree t fills the walk layout (walk[m]; pos[node] = position of local node `node`
 * in it) and the box of every node in the changed features: lo[k * m + node] / hi[k * m + node]
 * bound the values of changed feature k that the splits on the node's path let through; up[node] is
 * the node's nearest strict ancestor that splits on a changed feature (-1 when none). stack holds
 * m + 1 entries. */
static void changed_boxes(const xai_forest *f, int32_t t, const int32_t *slot, int32_t n_changed,
                          double *lo, double *hi, int32_t *up, int32_t *pos, walk_node *walk, int32_t *stack)
{
    const int64_t base = f->tree_offset[t];
    const int64_t m = f->tree_offset[t + 1] - base;
    for (int32_t k = 0; k < n_changed; k++) {
        lo[k * m] = -INFINITY;
        hi[k * m] = INFINITY;
    }
    up[0] = -1;
    int32_t placed = 0;
    int64_t top = 0;
    stack[top++] = 0;
    while (top > 0) {   /* pre-order: a node's left child is popped next */
        const int32_t node = stack[--top];
        const int32_t l = f->left_child[base + node], r = f->right_child[base + node];
        walk_node *w = walk + (pos[node] = placed++);
        if (l < 0) {
            *w = (walk_node){0.0, -1, node};
            continue;
        }
        *w = (walk_node){f->threshold[base + node], 2 * f->feature[base + node] + (f->missing_left[base + node] != 0),
                         -1};
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
        stack[top++] = r;
        stack[top++] = l;
    }
    for (int64_t node = 0; node < m; node++)   /* a right child is placed after its parent */
        if (f->left_child[base + node] >= 0)
            walk[pos[node]].right = pos[f->right_child[base + node]];
}

/* The argument checks of xai_reroute that need no allocation. */
static int check_args(const xai_forest *f, const xai_reroute_args *a)
{
    if (f == NULL || a == NULL || a->X == NULL || a->changed == NULL || a->start_leaf == NULL ||
        a->leaf == NULL || a->moved == NULL || a->n_rows < 0 || a->n_changed < 1 ||
        a->n_changed > f->n_features || (a->acc != NULL && (a->node_value == NULL || a->width < 1)))
        return XAI_E_SIZE;
    if (f->n_nodes > INT32_MAX || f->n_features > (INT32_MAX >> 1) || f->n_categories != NULL)
        return XAI_E_UNSUPPORTED; /* global leaf ids and walk_node.split are int32; intervals describe no
                                     category set */
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

/* Rows walked down a tree in lockstep: their cache misses overlap (local_mdi.c measures the gain). */
enum { GROUP = 16 };

/* Walks the rows row[0 .. n) of X (d values each, read by xai_input_value) down the walk layout
 * from the positions at[0 .. n) to their leaves, in lockstep, branch-free (a mispredicted branch
 * would discard the other rows' loads in flight); at[q] ends as the leaf's local id in the forest. */
static inline void descend_group(const xai_forest *f, const walk_node *walk, const double *X, int32_t d,
                                 const int64_t *row, int32_t *at, int n, int strict_left)
{
    int live[GROUP];
    int n_live = 0;
    for (int q = 0; q < n; q++)
        live[n_live++] = q;
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
            const double x = xai_input_value(f, X[row[q] * d + (split >> 1)]);
            /* both comparisons are false for NaN, which then goes where missing_left says */
            const int32_t left = (strict_left ? x < w->threshold : x <= w->threshold) | ((isnan(x) != 0) & split);
            at[q] = ((at[q] + 1) & -left) | (w->right & (left - 1));
            live[kept++] = q;
        }
        n_live = kept;
    }
}

/* The leaves, moved rows and accumulator of xai_reroute, given the boxes and ancestors of
 * changed_boxes; v is scratch for one row's values. A row outside its start leaf's box climbs the
 * ancestors that split on a changed feature to the first whose box holds its values (its other
 * values are those that reached the start leaf, so the row reaches that node) and descends from
 * there (walk layout positions pos[], walk[]); those of each GROUP consecutive rows descend
 * together, in lockstep. The arguments are read into locals once: stores into leaf could otherwise
 * alias them. */
static void route_rows(const xai_forest *f, xai_reroute_args *a, const double *lo, const double *hi,
                       const int32_t *up, const int32_t *pos, const walk_node *walk, double *v)
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
    int64_t count = 0, row[GROUP];
    int32_t node[GROUP];
    for (int64_t i0 = 0; i0 < n_rows; i0 += GROUP) {
        const int64_t i1 = n_rows - i0 < GROUP ? n_rows : i0 + GROUP;
        int n = 0;
        for (int64_t i = i0; i < i1; i++) {
            int64_t at = start_leaf[i] - base;
            for (int32_t k = 0; k < n_changed; k++)
                v[changed[k]] = xai_input_value(f, X[i * d + changed[k]]);
            leaf[i] = start_leaf[i];
            if (in_box(v, changed, n_changed, lo, hi, m, at, strict_left))
                continue;
            do
                at = up[at];
            while (at >= 0 && !in_box(v, changed, n_changed, lo, hi, m, at, strict_left));
            row[n] = i;
            node[n++] = pos[at < 0 ? 0 : at];
        }
        descend_group(f, walk, X, d, row, node, n, strict_left);
        for (int q = 0; q < n; q++) {    /* in row order: moved stays increasing */
            const int64_t i = row[q];
            const int32_t now = (int32_t)(base + node[q]), start = start_leaf[i]; /* n_nodes <= INT32_MAX */
            leaf[i] = now;
            if (now == start)
                continue;
            moved[count++] = i;
            if (acc != NULL)
                for (int32_t c = 0; c < width; c++)
                    acc[i * width + c] += node_value[(int64_t)now * width + c] - node_value[(int64_t)start * width + c];
        }
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
    int32_t *pos = xai_alloc(m, sizeof(int32_t));
    walk_node *walk = xai_alloc(m, sizeof(walk_node));
    double *v = xai_alloc(f->n_features, sizeof(double));
    status = (slot && stack && up && lo && hi && pos && walk && v) ? changed_slots(f, a->changed, a->n_changed, slot) : XAI_E_NOMEM;
    if (status == XAI_OK) {
        changed_boxes(f, a->tree, slot, a->n_changed, lo, hi, up, pos, walk, stack);
        route_rows(f, a, lo, hi, up, pos, walk, v);
    }
    free(slot);
    free(stack);
    free(up);
    free(lo);
    free(hi);
    free(pos);
    free(walk);
    free(v);
    return status;
}

int xai_reroute(const xai_forest *f, xai_reroute_args *args)
{
    xai_error_clear();
    return xai_error_return(reroute(f, args));
}
