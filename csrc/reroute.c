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

#include "xai.h"

enum {
    GROUP = 16,    /* rows walked in lockstep (local_mdi.c measures the gain) */
    MAX_BOXED = 4  /* leaf boxes are kept for at most this many changed features (memory) */
};

/* One node of the walk layout. split[v]: at an internal node 4 * source + 2 * flipped +
 * missing_left of version v, where source < n_features reads that feature's old value and
 * n_features + s the new value of changed feature s; -1 at a leaf. right: an internal node's right
 * child's position, a leaf's local id. */
typedef struct {
    double threshold[XAI_REROUTE_VERSIONS];
    int32_t split[XAI_REROUTE_VERSIONS];
    int32_t right;
} walk_node;

struct xai_reroute_layout {
    int32_t tree, n_versions, n_changed, n_features;
    int64_t n_nodes;
    walk_node *walk;   /* [n_nodes] in pre-order */
    double *box;       /* NULL, or [n_nodes][n_versions][n_changed][2] (lo, hi) by local node id */
};

void xai_reroute_free(xai_reroute_layout *layout)
{
    if (layout == NULL)
        return;
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
        return XAI_E_UNSUPPORTED; /* global leaf ids and split sources are int32; intervals describe no
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
    const int32_t V = s->n_versions, K = s->n_changed, d = f->n_features;
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
        walk_node *w = L->walk + (pos[node] = placed++);
        for (int32_t v = 0; v < XAI_REROUTE_VERSIONS; v++) {
            w->threshold[v] = 0.0;
            w->split[v] = -1;
        }
        w->right = node;
        if (l < 0)
            continue;
        for (int32_t v = 0; v < V; v++) {
            const int32_t j = s->feature[v][g], k = slot[j];
            const int flip = s->flipped[v] != NULL && s->flipped[v][g] != 0;
            w->threshold[v] = s->threshold[v][g];
            w->split[v] = 4 * (k >= 0 ? d + k : j) + 2 * flip + (f->missing_left[g] != 0);
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
        *L = (xai_reroute_layout){s->tree, s->n_versions, s->n_changed, f->n_features, m, NULL, NULL};
        L->walk = xai_alloc(m, sizeof(walk_node));
        if (s->n_changed <= MAX_BOXED)
            L->box = xai_alloc(m * s->n_versions * s->n_changed * 2, sizeof(double));
    }
    status = L && L->walk && pos && stack && (s->n_changed > MAX_BOXED || L->box) ? XAI_OK : XAI_E_NOMEM;
    if (status == XAI_OK) {
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
 * on store forwarding): a row, its position in the layout and the versions (bit mask) it stands
 * for. Each holds GROUP * XAI_REROUTE_VERSIONS lanes: a row parts into at most one lane per version. */
typedef struct {
    int64_t row[GROUP * XAI_REROUTE_VERSIONS];
    int32_t at[GROUP * XAI_REROUTE_VERSIONS], versions[GROUP * XAI_REROUTE_VERSIONS];
} lanes;

/* Walks the n lanes of cur down the layout to their leaves, in lockstep, writing
 * leaf[v * n_rows + row] for every version a lane stands for; a lane whose versions disagree at a
 * node parts in two. next is scratch. */
static void descend(const xai_forest *f, const xai_reroute_layout *L, const xai_reroute_args *a, lanes *cur,
                    lanes *next, int n)
{
    const walk_node *walk = L->walk;
    const double *X = a->X, *new_values = a->new_values;
    const int32_t d = L->n_features, K = L->n_changed, V = L->n_versions;
    const int64_t base = f->tree_offset[L->tree], n_rows = a->n_rows;
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT;
    int32_t *leaf = a->leaf;
    while (n > 0) {
        int kept = 0;
        for (int q = 0; q < n; q++) {
            const int64_t row = cur->row[q];
            const int32_t at = cur->at[q], versions = cur->versions[q];
            const walk_node *w = walk + at;
            if (w->split[0] < 0) {
                for (int32_t v = 0; v < V; v++)
                    if ((versions >> v) & 1)
                        leaf[v * n_rows + row] = (int32_t)(base + w->right); /* n_nodes <= INT32_MAX */
                continue;
            }
            const double *old = X + row * d, *now = new_values + row * K;
            int32_t left = 0;
            for (int32_t v = 0; v < V; v++) {
                const int32_t split = w->split[v], source = split >> 2, fresh = source >= d;
                /* both loads are in bounds whichever the source; selected without a branch (a
                   mispredicted one would discard the other lanes' loads in flight) */
                const double candidates[2] = {old[source & (fresh - 1)], now[(source - d) & -fresh]};
                const double x = xai_input_value(f, candidates[fresh]);
                /* both comparisons are false for NaN, which then goes where missing_left says */
                const int32_t l = (strict_left ? x < w->threshold[v] : x <= w->threshold[v]) |
                                  ((isnan(x) != 0) & split);
                left |= (l ^ ((split >> 1) & 1)) << v;
            }
            const int32_t go_left = left & versions, go_right = versions & ~left;
            if (go_left != 0 && go_right != 0) {  /* the versions part: rare, once per row at most */
                next->row[kept] = row;
                next->at[kept] = w->right;
                next->versions[kept++] = go_right;
            }
            /* branch-free: a mispredicted branch would discard the other lanes' loads in flight */
            const int32_t to_left = -(int32_t)(go_left != 0);
            next->row[kept] = row;
            next->at[kept] = ((at + 1) & to_left) | (w->right & ~to_left);
            next->versions[kept++] = (go_left & to_left) | (go_right & ~to_left);
        }
        lanes *swap = cur;
        cur = next;
        next = swap;
        n = kept;
    }
}

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

/* The leaves and moved rows of xai_reroute, GROUP rows at a time. The arguments are
 * read into locals once: stores into leaf could otherwise alias them. */
static void route_rows(const xai_forest *f, const xai_reroute_layout *L, xai_reroute_args *a)
{
    const int64_t n_rows = a->n_rows, base = f->tree_offset[L->tree];
    const int32_t V = L->n_versions, K = L->n_changed;
    const int32_t *start_leaf = a->start_leaf;
    int32_t *leaf = a->leaf;
    int64_t *moved = a->moved;
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT;
    const int32_t all = (1 << V) - 1;
    int64_t count = 0;
    lanes cur, next;
    for (int64_t i0 = 0; i0 < n_rows; i0 += GROUP) {
        const int64_t i1 = n_rows - i0 < GROUP ? n_rows : i0 + GROUP;
        int n = 0;
        for (int64_t i = i0; i < i1; i++) {
            int32_t versions = all;
            if (L->box != NULL) {
                const double *box = L->box + (start_leaf[i] - base) * V * K * 2;
                for (int32_t v = 0; v < V; v++)
                    if (in_box(f, a->new_values + i * K, box + (int64_t)v * K * 2, K, strict_left)) {
                        versions &= ~(1 << v);
                        leaf[v * n_rows + i] = start_leaf[i];
                    }
            }
            if (versions != 0) {
                cur.row[n] = i;
                cur.at[n] = 0;
                cur.versions[n++] = versions;
            }
        }
        descend(f, L, a, &cur, &next, n);
        for (int64_t i = i0; i < i1; i++) {    /* in row order: moved stays increasing */
            if (leaf[i] != start_leaf[i])
                moved[count++] = i;
        }
    }
    a->n_moved = count;
}

int xai_reroute(const xai_forest *forest, const xai_reroute_layout *layout, xai_reroute_args *args)
{
    xai_error_clear();
    int status = check_args(forest, layout, args);
    if (status == XAI_OK)
        route_rows(forest, layout, args);
    return xai_error_return(status);
}
