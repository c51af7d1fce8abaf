/* reroute.c -- leaves of one tree, and of up to XAI_REROUTE_VERSIONS variants of it that share its
 * shape but split differently (RF-MCR's S+ / S- trees), after some input features changed (RF-MCR's
 * permutations).
 *
 * xai_reroute_prepare builds a tree's walk layout once (it is reused for every permutation of the
 * same features): the tree renumbered in depth-first pre-order, so that a node's left child is the
 * next record, one record holding every version's split, and (for few changed features) every leaf's
 * box in the changed features per version. xai_reroute then walks the rows: a row whose new values
 * lie in its start leaf's box keeps that leaf; the others descend from the root, every version of
 * the tree in one walk while their splits send the row the same way (one record read per step for
 * all of them), parting where they disagree. Rows are walked GROUP at a time in lockstep so that
 * their cache misses overlap. */
#include <stdlib.h>
#include <string.h>

#include "xai.h"

enum {
    GROUP = 16,    /* rows walked in lockstep (local_mdi.c measures the gain) */
    MAX_BOXED = 4  /* leaf boxes are kept for at most this many changed features (memory) */
};

/* One node of the walk layout, for V versions: double threshold[V], then int32_t split[V], then
 * int32_t right, padded to a multiple of 8 bytes (16 bytes for one version: a step reads as little
 * as it can). split[v]: at an internal node 4 * feature + 2 * flipped + missing_left of version v;
 * -1 at a leaf. right: an internal node's right child's position, a leaf's local
 * id. Fields are read and written with memcpy (no type punning); the compiler makes them plain loads. */
static inline size_t record_size(int32_t V) { return (size_t)(12 * V + 4 + 7) / 8 * 8; }

static inline double threshold_of(const unsigned char *r, int32_t v)
{
    double t;
    memcpy(&t, r + 8 * v, sizeof t);
    return t;
}

static inline int32_t split_of(const unsigned char *r, int32_t V, int32_t v)
{
    int32_t x;
    memcpy(&x, r + 8 * V + 4 * v, sizeof x);
    return x;
}

static inline int32_t right_of(const unsigned char *r, int32_t V)
{
    int32_t x;
    memcpy(&x, r + 12 * V, sizeof x);
    return x;
}

static inline void set_record(unsigned char *r, int32_t V, int32_t v, double threshold, int32_t split)
{
    memcpy(r + 8 * v, &threshold, sizeof threshold);
    memcpy(r + 8 * V + 4 * v, &split, sizeof split);
}

static inline void set_right(unsigned char *r, int32_t V, int32_t right) { memcpy(r + 12 * V, &right, sizeof right); }

struct xai_reroute_layout {
    int32_t tree, n_versions, n_changed, n_features;
    int64_t n_nodes;
    int32_t *changed;      /* [n_changed] */
    unsigned char *walk;   /* [n_nodes] records of record_size(n_versions) bytes, in pre-order */
    double *box;       /* NULL, or [n_nodes][n_versions][n_changed][2] (lo, hi) by local node id */
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

/* The checks of xai_reroute_prepare's arguments and of every version's splits; slot[j] receives the
 * position of feature j in spec->changed, -1 when unchanged. */
static int check_spec(const xai_forest *f, const xai_reroute_spec *s, int32_t *slot)
{
    if (s->n_versions < 1 || s->n_versions > XAI_REROUTE_VERSIONS || s->changed == NULL || s->n_changed < 1 ||
        s->n_changed > f->n_features)
        return XAI_E_SIZE;
    if (f->n_nodes > INT32_MAX || f->n_features > (INT32_MAX >> 3) || f->n_categories != NULL)
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
    for (int32_t v = 0; v < s->n_versions; v++) {
        if (s->feature[v] == NULL || s->threshold[v] == NULL)
            return XAI_E_SIZE;
        for (int64_t g = base; g < end; g++) {
            if (f->left_child[g] < 0)
                continue;
            if (s->feature[v][g] < 0 || s->feature[v][g] >= f->n_features) {
                xai_error_at(s->tree, g - base, -1);
                return XAI_E_INDEX;
            }
            if (isnan(s->threshold[v][g])) {
                xai_error_at(s->tree, g - base, -1);
                return XAI_E_VALUE;
            }
        }
    }
    return XAI_OK;
}

/* Narrows the box of a child of local node `node` (version v's split on changed feature slot k) to
 * the side the child receives: lower = the child gets the values below the threshold. */
static inline void narrow(double *child, double threshold, int lower)
{
    if (lower) {
        if (threshold < child[1])
            child[1] = threshold;
    } else if (threshold > child[0]) {
        child[0] = threshold;
    }
}

/* One pre-order DFS over the tree fills the walk layout and, when L->box is set, every node's box
 * per version in the changed features: the values the splits on its path let through. pos[m] and
 * stack[m + 1] are scratch. */
static void build(const xai_forest *f, const xai_reroute_spec *s, const int32_t *slot, xai_reroute_layout *L,
                  int32_t *pos, int32_t *stack)
{
    const int64_t base = f->tree_offset[s->tree], m = L->n_nodes;
    const int32_t V = s->n_versions, K = s->n_changed;
    const int64_t per_node = (int64_t)V * K * 2;
    if (L->box != NULL)
        for (int64_t c = 0; c < per_node; c += 2) {
            L->box[c] = -INFINITY;
            L->box[c + 1] = INFINITY;
        }
    int32_t placed = 0;
    int64_t top = 0;
    stack[top++] = 0;
    while (top > 0) {   /* pre-order: a node's left child is popped next */
        const int32_t node = stack[--top];
        const int64_t g = base + node;
        const int32_t l = f->left_child[g], r = f->right_child[g];
        unsigned char *w = L->walk + (size_t)(pos[node] = placed++) * record_size(V);
        memset(w, 0, record_size(V));
        set_right(w, V, node);
        for (int32_t v = 0; v < V; v++)
            set_record(w, V, v, 0.0, -1);
        if (l < 0)
            continue;
        for (int32_t v = 0; v < V; v++) {
            const int32_t j = s->feature[v][g];
            const int flip = s->flipped[v] != NULL && s->flipped[v][g] != 0;
            set_record(w, V, v, s->threshold[v][g], 4 * j + 2 * flip + (f->missing_left[g] != 0));
        }
        if (L->box != NULL) {
            double *bp = L->box + node * per_node, *bl = L->box + l * per_node, *br = L->box + r * per_node;
            for (int64_t c = 0; c < per_node; c++)
                bl[c] = br[c] = bp[c];
            for (int32_t v = 0; v < V; v++) {
                const int32_t k = slot[s->feature[v][g]];
                if (k < 0)
                    continue;
                const int flip = s->flipped[v] != NULL && s->flipped[v][g] != 0;
                const int64_t c = ((int64_t)v * K + k) * 2;
                narrow(bl + c, s->threshold[v][g], !flip);
                narrow(br + c, s->threshold[v][g], flip);
            }
        }
        stack[top++] = r;
        stack[top++] = l;
    }
    for (int64_t node = 0; node < m; node++)   /* a right child is placed after its parent */
        if (f->left_child[base + node] >= 0)
            set_right(L->walk + (size_t)pos[node] * record_size(V), V, pos[f->right_child[base + node]]);
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
        *L = (xai_reroute_layout){s->tree, s->n_versions, s->n_changed, f->n_features, m, NULL, NULL, NULL};
        L->changed = xai_alloc(s->n_changed, sizeof(int32_t));
        L->walk = xai_alloc(m, record_size(s->n_versions));
        if (s->n_changed <= MAX_BOXED)
            L->box = xai_alloc(m * s->n_versions * s->n_changed * 2, sizeof(double));
    }
    status = L && L->changed && L->walk && pos && stack && (s->n_changed > MAX_BOXED || L->box) ? XAI_OK : XAI_E_NOMEM;
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
    if (f == NULL || L == NULL || a == NULL || a->X == NULL || a->new_values == NULL || a->start_leaf == NULL ||
        a->leaf == NULL || a->moved == NULL || a->n_rows < 0)
        return XAI_E_SIZE;
    if (L->tree >= f->n_trees || L->n_features != f->n_features ||
        L->n_nodes != f->tree_offset[L->tree + 1] - f->tree_offset[L->tree])
        return XAI_E_INDEX;    /* a layout of another forest */
    const int64_t base = f->tree_offset[L->tree], end = f->tree_offset[L->tree + 1];
    for (int64_t i = 0; i < a->n_rows; i++) {
        const int32_t g = a->start_leaf[i];
        if (g < base || g >= end || f->left_child[g] >= 0) {
            xai_error_at(L->tree, -1, i);
            return XAI_E_INDEX;
        }
    }
    return XAI_OK;
}

/* Lanes of a walk, as separate arrays (a lane stored as one struct and read back whole would stall
 * on store forwarding): the row's place in the group's row buffer, its position in the layout and
 * the versions (bit mask) it stands for. Each holds GROUP * XAI_REROUTE_VERSIONS lanes: a row parts
 * into at most one lane per version. */
typedef struct {
    int32_t slot[GROUP * XAI_REROUTE_VERSIONS], at[GROUP * XAI_REROUTE_VERSIONS],
        versions[GROUP * XAI_REROUTE_VERSIONS];
} lanes;

/* x as the model compares it (xai_input_value, with the forest's settings read once). */
static inline double model_value(double x, int float32, double zero_threshold)
{
    if (zero_threshold > 0.0 && fabs(x) <= zero_threshold)
        x = 0.0;
    return float32 ? (double)(float)x : x;
}

/* Walks the n lanes of cur down the layout of V versions to their leaves, in lockstep, writing
 * leaf[v * n_rows + row[slot]] for every version a lane stands for; a lane whose versions disagree
 * at a node parts in two. Lanes read their row's values from values[slot * n_features ..], already as
 * the model compares them: a step is a few instructions, so that many lanes' loads are in flight at
 * once. next is scratch. Defined once per V (DESCEND) so that the loops over the versions unroll. */
#define DESCEND(V)                                                                                             \
    static void descend##V(const xai_reroute_layout *L, int64_t base, int64_t n_rows, int strict_left,        \
                           const double *values, const int64_t *row, int32_t *leaf, lanes *cur, lanes *next,   \
                           int n)                                                                              \
    {                                                                                                          \
        const unsigned char *walk = L->walk;                                                                   \
        const size_t size = record_size(V);                                                                    \
        const int32_t d = L->n_features;                                                                       \
        while (n > 0) {                                                                                        \
            int kept = 0;                                                                                      \
            for (int q = 0; q < n; q++) {                                                                      \
                const int32_t slot = cur->slot[q], at = cur->at[q], versions = cur->versions[q];               \
                const unsigned char *w = walk + (size_t)at * size;                                             \
                const int32_t right = right_of(w, V);                                                          \
                if (split_of(w, V, 0) < 0) {                                                                   \
                    for (int32_t v = 0; v < V; v++)                                                            \
                        if ((versions >> v) & 1)                                                               \
                            leaf[v * n_rows + row[slot]] = (int32_t)(base + right); /* n_nodes <= INT32_MAX */ \
                    continue;                                                                                  \
                }                                                                                              \
                const double *x_row = values + (int64_t)slot * d;                                              \
                int32_t left = 0;                                                                              \
                for (int32_t v = 0; v < V; v++) {                                                              \
                    const int32_t split = split_of(w, V, v);                                                   \
                    const double x = x_row[split >> 2], t = threshold_of(w, v);                                \
                    /* both comparisons are false for NaN, which then goes where missing_left says */         \
                    const int32_t l = (strict_left ? x < t : x <= t) | ((isnan(x) != 0) & split);             \
                    left |= (l ^ ((split >> 1) & 1)) << v;                                                     \
                }                                                                                              \
                const int32_t go_left = left & versions, go_right = versions & ~left;                          \
                if (V > 1) { /* the versions part (once per row at most): a lane for those going right */    \
                    next->slot[kept] = slot;                                                                   \
                    next->at[kept] = right;                                                                    \
                    next->versions[kept] = go_right;                                                           \
                    kept += (go_left != 0) & (go_right != 0);                                                  \
                }                                                                                              \
                /* branch-free: a mispredicted branch would discard the other lanes' loads in flight */       \
                const int32_t to_left = -(int32_t)(go_left != 0);                                              \
                next->slot[kept] = slot;                                                                       \
                next->at[kept] = ((at + 1) & to_left) | (right & ~to_left);                                    \
                next->versions[kept++] = (go_left & to_left) | (go_right & ~to_left);                          \
            }                                                                                                  \
            lanes *swap = cur;                                                                                 \
            cur = next;                                                                                        \
            next = swap;                                                                                       \
            n = kept;                                                                                          \
        }                                                                                                      \
    }
DESCEND(1)
DESCEND(2)
DESCEND(3)

/* 1 when the new values now[0 .. K) (read by xai_input_value) lie in box[K][2] (false for NaN). */
static inline int in_box(const xai_forest *f, const double *now, const double *box, int32_t K, int strict_left)
{
    for (int32_t k = 0; k < K; k++) {
        const double x = xai_input_value(f, now[k]), lo = box[2 * k], hi = box[2 * k + 1];
        if (!(strict_left ? (x >= lo && x < hi) : (x > lo && x <= hi)))
            return 0;
    }
    return 1;
}

/* The leaves and moved rows of xai_reroute, GROUP rows at a time: the rows that leave their start
 * leaf's box in some version are copied, as the model compares them and with their new values, into
 * the row buffer values[GROUP * n_features] and walked together. The arguments are read into locals
 * once: stores into leaf could otherwise alias them. */
static void route_rows(const xai_forest *f, const xai_reroute_layout *L, xai_reroute_args *a, double *values)
{
    const int64_t n_rows = a->n_rows, base = f->tree_offset[L->tree];
    const int32_t V = L->n_versions, K = L->n_changed, d = L->n_features;
    const int32_t *start_leaf = a->start_leaf, *changed = L->changed;
    const double *X = a->X, *new_values = a->new_values, zero = f->zero_threshold;
    int32_t *leaf = a->leaf;
    int64_t *moved = a->moved;
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT, float32 = f->input_float32 != 0;
    const int32_t all = (1 << V) - 1;
    int64_t count = 0, row[GROUP];
    lanes cur, next;
    for (int64_t i0 = 0; i0 < n_rows; i0 += GROUP) {
        const int64_t i1 = n_rows - i0 < GROUP ? n_rows : i0 + GROUP;
        int n = 0;
        for (int64_t i = i0; i < i1; i++) {
            int32_t versions = all;
            if (L->box != NULL) {
                const double *box = L->box + (start_leaf[i] - base) * V * K * 2;
                for (int32_t v = 0; v < V; v++)
                    if (in_box(f, new_values + i * K, box + (int64_t)v * K * 2, K, strict_left)) {
                        versions &= ~(1 << v);
                        leaf[v * n_rows + i] = start_leaf[i];
                    }
            }
            if (versions == 0)
                continue;
            double *x = values + (int64_t)n * d;
            for (int32_t j = 0; j < d; j++)
                x[j] = model_value(X[i * d + j], float32, zero);
            for (int32_t k = 0; k < K; k++)
                x[changed[k]] = model_value(new_values[i * K + k], float32, zero);
            row[n] = i;
            cur.slot[n] = n;
            cur.at[n] = 0;
            cur.versions[n++] = versions;
        }
        if (V == 1)
            descend1(L, base, n_rows, strict_left, values, row, leaf, &cur, &next, n);
        else if (V == 2)
            descend2(L, base, n_rows, strict_left, values, row, leaf, &cur, &next, n);
        else
            descend3(L, base, n_rows, strict_left, values, row, leaf, &cur, &next, n);
        for (int64_t i = i0; i < i1; i++)    /* in row order: moved stays increasing */
            if (leaf[i] != start_leaf[i])
                moved[count++] = i;
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
