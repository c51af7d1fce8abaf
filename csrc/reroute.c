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
 * and it prefetches the row's next record, so that the loads of many rows are in flight at once (a
 * walk of the original tree and its S+ version together, one record per step while they agree,
 * measured 1.5x slower than two walks: the wider records and steps left fewer loads in flight).
 *
 * With one changed feature j, xai_reroute_table_build lays out a leaf table of the rows instead: one
 * depth-first walk of the layout for a block of rows, partitioning them by their own values at a split
 * on another feature and sending all of them to both children at a split on j, each child for its part
 * of j's interval; a row meets its leaves in increasing order of j, and the entries (the interval's upper
 * end, the leaf) are then grouped by row. xai_reroute then finds a row's leaf for a new value by a binary
 * search among its entries: a walk through a large tree waits on memory at every step, the search reads
 * a few neighbouring entries. */
#include <stdlib.h>
#include <string.h>

#include "xai.h"

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(address) __builtin_prefetch(address)
#else
#define PREFETCH(address) ((void)(address))
#endif

enum {
    GROUP = 64,         /* rows walked in lockstep (with PREFETCH, 1.2-1.3x faster than 16: a one-off probe) */
    ROUTE_BLOCK = 1024, /* xai_reroute fills its lockstep groups from blocks of this many rows */
    MAX_BOXED = 4,      /* leaf boxes are kept for at most this many changed features (memory) */
    CHUNK = 1 << 14, /* rows a leaf table's build walks together (their values: n_features columns) */
    FIRST_CHUNK = 1 << 11, /* the first block: small, so that a declined table costs little */
    DECLINED = -1    /* table_walk: the table would exceed its entries per row (not an error) */
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

/* x as the model compares it (xai_input_value, with the forest's settings read once). */
static inline double model_value(double x, int float32, double zero_threshold)
{
    if (zero_threshold > 0.0 && fabs(x) <= zero_threshold)
        x = 0.0;
    return float32 ? (double)(float)x : x;
}

/* 1 when x goes to the left child of the internal node w, branch-free (both comparisons are false for
 * NaN, which then goes where missing_left says; a flipped node swaps its children). */
static inline int32_t goes_left(const walk_node *w, double x, int strict_left)
{
    return ((strict_left ? x < w->threshold : x <= w->threshold) | ((isnan(x) != 0) & w->split)) ^
           ((w->split >> 1) & 1);
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
            const int32_t left = goes_left(w, values[q * d + (split >> 2)], strict_left);
            at[q] = ((at[q] + 1) & -left) | (w->right & (left - 1));
            PREFETCH(walk + at[q]);   /* the row's next record: its load starts before the row's turn */
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

/* 0 for a layout of another forest (another tree count, feature count or tree size). */
static int layout_fits(const xai_forest *f, const xai_reroute_layout *L)
{
    return L->tree < f->n_trees && L->n_features == f->n_features &&
           L->n_nodes == f->tree_offset[L->tree + 1] - f->tree_offset[L->tree];
}

/* One entry of a leaf table: the upper end of an interval of v and the leaf (local id) it reaches, and,
 * while a table is built, the row (one 16-byte record: an entry is moved with one store). */
typedef struct {
    double upper;
    int32_t leaf, row;
} entry;

typedef struct {
    entry *at;
    int64_t n, capacity;
} entry_list;

/* array (of *capacity elements of elem bytes, fewer than `needed`) grown by doublings to hold at least
 * `needed`; NULL when out of memory (array and *capacity then stay as they were). */
static void *grow(void *array, int64_t *capacity, int64_t needed, size_t elem)
{
    int64_t grown = *capacity > 512 ? *capacity : 512;
    while (grown < needed)
        grown *= 2;
    void *bigger = (uint64_t)grown <= SIZE_MAX / elem ? realloc(array, (size_t)grown * elem) : NULL;
    if (bigger != NULL)
        *capacity = grown;
    return bigger;
}

static int reserve(entry_list *e, int64_t needed)
{
    entry *at = needed > e->capacity ? grow(e->at, &e->capacity, needed, sizeof(entry)) : e->at;
    if (at == NULL && needed > 0)
        return XAI_E_NOMEM;
    e->at = at;
    return XAI_OK;
}

struct xai_reroute_table {
    const xai_reroute_layout *layout;
    int64_t n_rows;
    int64_t *start;        /* [n_rows + 1]: row i's entries are [start[i], start[i + 1]), increasing in v */
    entry_list entries;
};

void xai_reroute_table_free(xai_reroute_table *table)
{
    if (table == NULL)
        return;
    free(table->start);
    free(table->entries.at);
    free(table);
}

/* The local leaf a finite value v (as the model compares it) reaches for row i: the first entry of the
 * row whose interval ends at or above v (above, for x < threshold splits). The last entry's interval
 * ends at +inf. */
static inline int32_t table_leaf(const xai_reroute_table *t, int64_t i, double v, int strict_left)
{
    const entry *at = t->entries.at + t->start[i];
    int64_t n = t->start[i + 1] - t->start[i];
    while (n > 1) {   /* branch-free: a branch on v's side would be mispredicted half the time */
        const int64_t half = n / 2;
        const double upper = at[half - 1].upper;
        const int64_t past = strict_left ? !(v < upper) : !(v <= upper);
        at += half & -past;
        n -= half;
    }
    return at->leaf;
}

/* A subtree still to visit by table_walk: the rows arena[begin .. begin + count) for the values of v
 * from lo to hi. Popping it frees the arena above arena_end (the subtrees visited before it). */
typedef struct {
    int32_t node, count;
    int64_t begin, arena_end;
    double lo, hi;
} span;

/* The scratch of table_walk and table_append, kept across blocks of rows. */
typedef struct {
    double *cols;       /* [n_features][CHUNK]: the chunk's values as the model compares them */
    int32_t *arena;     /* the rows of the spans on the stack */
    int64_t arena_capacity;
    span *stack;        /* [forest's max_depth + 2]: at most one span pending per level */
    entry_list found;   /* the chunk's entries, in the order the walk finds them */
    int64_t *next;      /* [CHUNK + 1] */
} table_scratch;

static int reserve_arena(table_scratch *w, int64_t needed)
{
    int32_t *arena = needed > w->arena_capacity ? grow(w->arena, &w->arena_capacity, needed, sizeof(int32_t))
                                                : w->arena;
    if (arena == NULL && needed > 0)
        return XAI_E_NOMEM;
    w->arena = arena;
    return XAI_OK;
}

/* Finds the leaves of the m rows X[i0 * d ..]: one depth-first walk of the layout for all of them. At a
 * split on another feature the rows are partitioned between the children by their own values; at a
 * split on the changed feature j all of them visit both children, the lower values of v first, each
 * child for its part of the interval of v (an empty part is skipped). A row thus meets its leaves in
 * increasing order of v; the entries are found in w->found (row, leaf, upper end). */
static int table_walk(const xai_forest *f, const xai_reroute_layout *L, const double *X, int64_t i0, int32_t m,
                      int64_t max_entries, table_scratch *w)
{
    const int32_t d = L->n_features, j = L->changed[0];
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT, float32 = f->input_float32 != 0;
    for (int32_t q = 0; q < m; q++)
        for (int32_t k = 0; k < d; k++)
            w->cols[(int64_t)k * CHUNK + q] = model_value(X[(i0 + q) * d + k], float32, f->zero_threshold);
    int status = reserve_arena(w, m);
    for (int32_t q = 0; status == XAI_OK && q < m; q++)
        w->arena[q] = q;
    entry_list *found = &w->found;
    found->n = 0;
    int64_t top = 0;
    w->stack[top++] = (span){0, m, 0, m, -INFINITY, INFINITY};
    while (status == XAI_OK && top > 0) {
        const span s = w->stack[--top];
        const walk_node *n = L->walk + s.node;
        const int64_t used = s.arena_end;
        if (n->split < 0) {
            if (max_entries > 0 && found->n + s.count > max_entries)
                return DECLINED;
            status = reserve(found, found->n + s.count);
            for (int32_t q = 0; status == XAI_OK && q < s.count; q++)
                found->at[found->n++] = (entry){s.hi, n->right, w->arena[s.begin + q]};
        } else if ((n->split >> 2) == j) {   /* a flipped node sends the values below its threshold right */
            const int flipped = (n->split >> 1) & 1;
            const int32_t below = flipped ? n->right : s.node + 1, above = flipped ? s.node + 1 : n->right;
            const double cut = n->threshold, upper_lo = cut > s.lo ? cut : s.lo, lower_hi = cut < s.hi ? cut : s.hi;
            if (s.hi > upper_lo)
                w->stack[top++] = (span){above, s.count, s.begin, used, upper_lo, s.hi};
            if (lower_hi > s.lo)
                w->stack[top++] = (span){below, s.count, s.begin, used, s.lo, lower_hi};
        } else if ((status = reserve_arena(w, used + s.count)) == XAI_OK) {
            const double *col = w->cols + (int64_t)(n->split >> 2) * CHUNK;
            int64_t left = used, right = used + s.count - 1;
            for (int32_t q = 0; q < s.count; q++) {   /* each row is written at both ends; one end keeps it */
                const int32_t r = w->arena[s.begin + q], goes = goes_left(n, col[r], strict_left);
                w->arena[left] = r;
                w->arena[right] = r;
                left += goes;
                right -= 1 - goes;
            }
            const int32_t n_left = (int32_t)(left - used);
            const int64_t end = used + s.count;
            if (n_left < s.count)
                w->stack[top++] = (span){n->right, s.count - n_left, left, end, s.lo, s.hi};
            if (n_left > 0)
                w->stack[top++] = (span){s.node + 1, n_left, used, end, s.lo, s.hi};
        }
    }
    return status;
}

/* Appends the chunk's entries (w->found) to the table, grouped by row (rows i0 .. i0 + m), each row's in
 * the order found. */
static int table_append(xai_reroute_table *t, int64_t i0, int32_t m, table_scratch *w)
{
    const entry_list *found = &w->found;
    entry_list *e = &t->entries;
    int status = XAI_OK;
    if (i0 == 0 && m > 0)   /* the whole table from the first block's entries per row: grown once */
        status = reserve(e, (found->n + found->n / 8) * ((t->n_rows + m - 1) / m));
    if (status == XAI_OK)
        status = reserve(e, e->n + found->n);
    if (status != XAI_OK)
        return status;
    for (int32_t q = 0; q <= m; q++)
        w->next[q] = 0;
    for (int64_t k = 0; k < found->n; k++)
        w->next[found->at[k].row + 1]++;
    w->next[0] = e->n;
    for (int32_t q = 0; q < m; q++) {
        w->next[q + 1] += w->next[q];
        t->start[i0 + q] = w->next[q];
    }
    for (int64_t k = 0; k < found->n; k++)
        e->at[w->next[found->at[k].row]++] = found->at[k];
    e->n += found->n;
    return XAI_OK;
}

static int table_build(const xai_forest *f, const xai_reroute_layout *L, const double *X, int64_t n_rows,
                       int32_t max_per_row, xai_reroute_table **out)
{
    if (f == NULL || L == NULL || out == NULL || (X == NULL && n_rows > 0) || n_rows < 0 || max_per_row < 0)
        return XAI_E_SIZE;
    *out = NULL;
    if (L->n_changed != 1)
        return XAI_E_UNSUPPORTED;   /* intervals of one feature's value */
    if (!layout_fits(f, L))
        return XAI_E_INDEX;
    table_scratch w = {0};
    xai_reroute_table *t = calloc(1, sizeof(xai_reroute_table));
    int status = XAI_E_NOMEM;
    if (t != NULL) {
        t->layout = L;
        t->n_rows = n_rows;
        t->start = xai_alloc(n_rows + 1, sizeof(int64_t));
        w.cols = xai_alloc((int64_t)CHUNK * L->n_features, sizeof(double));
        w.stack = xai_alloc((int64_t)f->max_depth + 2, sizeof(span));
        w.next = xai_alloc(CHUNK + 1, sizeof(int64_t));
        if (t->start != NULL && w.cols != NULL && w.stack != NULL && w.next != NULL)
            status = XAI_OK;
    }
    for (int64_t i0 = 0, m = 0; status == XAI_OK && i0 < n_rows; i0 += m) {
        m = i0 == 0 ? FIRST_CHUNK : CHUNK;   /* a small first block decides a declined table early */
        m = n_rows - i0 < m ? n_rows - i0 : m;
        status = table_walk(f, L, X, i0, (int32_t)m, (int64_t)max_per_row * m, &w);
        if (status == XAI_OK)
            status = table_append(t, i0, (int32_t)m, &w);
    }
    if (status == XAI_OK) {
        t->start[n_rows] = t->entries.n;
        *out = t;
    } else {
        xai_reroute_table_free(t);
        if (status == DECLINED)
            status = XAI_OK;   /* *out stays NULL */
    }
    free(w.cols);
    free(w.arena);
    free(w.stack);
    free(w.found.at);
    free(w.next);
    return status;
}

int xai_reroute_table_build(const xai_forest *forest, const xai_reroute_layout *layout, const double *X,
                            int64_t n_rows, int32_t max_per_row, xai_reroute_table **table)
{
    xai_error_clear();
    return xai_error_return(table_build(forest, layout, X, n_rows, max_per_row, table));
}

/* The argument checks of xai_reroute. */
static int check_args(const xai_forest *f, const xai_reroute_layout *L, const xai_reroute_args *a)
{
    if (f == NULL || L == NULL || a == NULL || a->X == NULL || a->new_values == NULL || a->leaf == NULL ||
        (a->start_leaf != NULL && a->moved == NULL) || a->n_rows < 0 ||
        (a->delta != NULL && (a->start_leaf == NULL || a->node_value == NULL || a->width < 1)))
        return XAI_E_SIZE;
    if (!layout_fits(f, L))
        return XAI_E_INDEX;
    if (a->table != NULL && (a->table->layout != L || a->table->n_rows != a->n_rows))
        return XAI_E_INDEX;    /* a table of another layout, or of other rows */
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

/* Walks the n buffered rows values[q * d ..] (rows row[q] of xai_reroute) from the root and stores
 * their global leaves. */
static inline void walk_rows(const walk_node *walk, const double *values, int32_t d, const int64_t *row, int n,
                             int64_t base, int32_t *leaf, int strict_left)
{
    int32_t at[GROUP];
    descend(walk, values, d, at, n, strict_left);
    for (int q = 0; q < n; q++)
        leaf[row[q]] = (int32_t)(base + at[q]);   /* n_nodes <= INT32_MAX */
}

/* The leaves, moved rows and their changes of node value of xai_reroute, ROUTE_BLOCK rows at a time:
 * the rows that leave their start leaf's box (every row without start leaves) are copied, as the model
 * compares them and with their new values, into the row buffer values[GROUP * n_features] and walked
 * together whenever it is full (so that the lockstep groups are full), then the block's moved rows
 * are listed. The arguments are read into locals once: stores into leaf could otherwise alias them. */
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
    const xai_reroute_table *table = a->table;
    const int strict_left = f->split_rule == XAI_LEFT_IF_LT, float32 = f->input_float32 != 0;
    int64_t count = 0, row[GROUP];
    for (int64_t i0 = 0; i0 < n_rows; i0 += ROUTE_BLOCK) {
        const int64_t i1 = n_rows - i0 < ROUTE_BLOCK ? n_rows : i0 + ROUTE_BLOCK;
        int n = 0;
        for (int64_t i = i0; i < i1; i++) {
            if (start_leaf != NULL)
                leaf[i] = start_leaf[i];
            if (table != NULL) {   /* K = 1 */
                const double v = model_value(new_values[i], float32, zero);
                if (isfinite(v)) {
                    leaf[i] = (int32_t)(base + table_leaf(table, i, v, strict_left));
                    continue;
                }
            } else if (boxes != NULL && in_box(new_values + i * K, boxes + (start_leaf[i] - base) * 2 * K, K, float32,
                                               zero, strict_left)) {
                continue;
            }
            double *x = values + (int64_t)n * d;
            for (int32_t j = 0; j < d; j++)
                x[j] = model_value(X[i * d + j], float32, zero);
            for (int32_t k = 0; k < K; k++)
                x[changed[k]] = model_value(new_values[i * K + k], float32, zero);
            row[n++] = i;
            if (n == GROUP) {
                walk_rows(L->walk, values, d, row, n, base, leaf, strict_left);
                n = 0;
            }
        }
        walk_rows(L->walk, values, d, row, n, base, leaf, strict_left);   /* the block's last rows */
        for (int64_t i = i0; start_leaf != NULL && i < i1; i++) {   /* in row order: moved stays increasing */
            const int32_t now = leaf[i], start = start_leaf[i];
            if (now == start)
                continue;
            if (delta != NULL)
                for (int32_t c = 0; c < width; c++)
                    delta[count * width + c] =
                        node_value[(int64_t)now * width + c] - node_value[(int64_t)start * width + c];
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

static int mark_below(const xai_forest *f, uint8_t *mark)
{
    if (f == NULL || mark == NULL)
        return XAI_E_SIZE;
    int32_t *stack = xai_alloc((int64_t)f->max_depth + 2, sizeof(int32_t));
    if (stack == NULL)
        return XAI_E_NOMEM;
    for (int32_t t = 0; t < f->n_trees; t++) {   /* depth first: a node's mark is final when popped */
        const int64_t base = f->tree_offset[t];
        int64_t top = 0;
        stack[top++] = 0;
        while (top > 0) {
            const int64_t g = base + stack[--top];
            const int32_t l = f->left_child[g], r = f->right_child[g];
            if (l < 0)
                continue;
            mark[base + l] |= mark[g];
            mark[base + r] |= mark[g];
            stack[top++] = r;
            stack[top++] = l;
        }
    }
    free(stack);
    return XAI_OK;
}

int xai_mark_below(const xai_forest *forest, uint8_t *mark)
{
    xai_error_clear();
    return xai_error_return(mark_below(forest, mark));
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
