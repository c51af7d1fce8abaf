/* pg2_grid.c -- the grid path of PG2's pair sums, for oblivious trees (pg2.c has the sums themselves).
 *
 * An oblivious tree applies one condition per level (every node of level l splits alike: CatBoost's
 * symmetric trees), so its leaf is named by the bits of the branches taken, bit l set when level l goes
 * right. With the features outside S following x, the levels that split on one perturbed feature j cut
 * x'_j's line into cells: the rank intervals (lo, hi] between consecutive distinct boundaries of those
 * levels, or, for a categorical j, the classes of atoms that take the same branches at every one of them
 * (a bitset each). A cell fixes the branches of its feature's levels, so the tree's centred value c_t is
 * a tensor V over the cells of its perturbed features (one axis per feature, at most 2^depth entries),
 * and x'_j being independent across features, for two trees A and B
 *   E[c_A c_B] = sum_{alpha, beta} V_A[alpha] V_B[beta] prod_j M_j[alpha_j, beta_j],
 * M_j[a, b] = P(x'_j in cell a of A and in cell b of B) for a feature both split on, while a feature only
 * one of them splits on weighs its cells by their own masses. The sum is therefore a contraction of U_A
 * (V_A summed over the axes of the features B does not split on, with their masses) and U_B (alike) over
 * the joint cells where they meet, only the pairs of cells that meet (at most a + b - 1 per interval
 * axis): with one output, the meeting cells of every shared feature but the first are listed once
 * (offsets in U_A and U_B, product of masses) and the first one's are walked, one dot product with the
 * list each (pair_sum_flat); with several outputs (or a list too long) the joint cells are summed
 * directly up to three shared features (or where that takes fewer products), else U_A is carried axis by
 * axis from A's cells to B's (pair_sum). U_t is kept per tree and subset of its features (the lowest
 * missing axis summed out of the next larger subset), computed when a pair first
 * needs it in the current (row, set). M_j's entries are masses of intersections of two cells: the
 * interval's mass from F and S on the side of the median where it lies (as interval_mass), or the sum of the
 * probabilities of the atoms in both (atom_sum), exactly as the leaf-pair loop takes them; NaN routing
 * and the laws of categorical features are in the cells and the tables. Pairs sharing no perturbed
 * feature are independent (E[c_A c_B] = E[c_A] E[c_B]) and add nothing. The grid path never prunes; it
 * keeps leaves of probability below DBL_MIN (the leaf path drops them: a difference below DBL_MIN). */
#include <string.h>

#include "pg2_grid.h"

/* The grid path's limits: levels per tree (a tensor has at most 2^8 entries, the subsets of a tree's
 * features at most 2^8) and atoms per categorical feature (its cells are built atom by atom). */
enum { GRID_MAX_DEPTH = 8, GRID_MAX_ATOMS = 65536 };

/* The most joint cells of a pair's shared axes after the first that pair_sum_flat lists. */
enum { FLAT_MAX = 4096 };

/* The cost model's constants (seconds; grid_records): per pair of records sharing a target, and per
 * tensor entry of each record, per pair. */
#define GRID_SECONDS_PER_PAIR 6e-8
#define GRID_SECONDS_PER_ENTRY 1.2e-9

/* One oblivious tree. */
typedef struct {
    int32_t depth;
    int32_t n_groups, group_start;  /* its features, in grid_state.group */
    int64_t level_start;            /* level_node[level_start + l]: a node of level l (its split) */
    int64_t leaf_start;             /* leaf[leaf_start + bits]: the global leaf of the branches bits */
} gtree;

/* The levels of one tree on one feature, and the cells they make of its line (or atoms). */
typedef struct {
    int32_t feature;
    int32_t n_cells, cell_start;    /* in cell_right / cell_lo / cell_hi */
    int32_t categorical;
} ggroup;

/* One record of the current (row, set): its tree, its branches fixed by x, and its groups on perturbed
 * features (k of them, by S position), each with its cells' masses. */
typedef struct {
    int32_t tree, k;
    uint32_t fixed;
    int32_t group[GRID_MAX_DEPTH], pos[GRID_MAX_DEPTH], n[GRID_MAX_DEPTH];
    int64_t mass[GRID_MAX_DEPTH];   /* first mass of each group in grid_state.mass */
    int64_t size;                   /* entries of V: the product of n */
    int64_t u_at;                   /* u_off[u_at + s]: where U over subset s lies in arena, -1 until computed */
    int64_t bump;                   /* the end of its part of arena in use */
    uint64_t pmask;                 /* its S positions (when S has at most 64) */
} grec;

struct grid_state {
    const xai_forest *f;
    const int64_t *cdf_offset;
    int usable;
    int32_t cw, width;
    gtree *tree;
    int64_t *level_node; size_t level_cap; int64_t n_level;
    int64_t *leaf; size_t leaf_cap; int64_t n_leafs;
    ggroup *group; size_t group_cap; int32_t n_group;
    uint32_t *cell_right; size_t right_cap;  /* the levels a cell sends right (bits) */
    int32_t *cell_lo; size_t lo_cap;         /* a numeric cell's ranks (lo, hi]; a categorical one's first */
    int32_t *cell_hi; size_t hi_cap;         /* word in cell_bits (lo; hi unused) */
    int32_t n_cell;
    uint64_t *cell_bits; size_t bits_cap; int64_t n_bits;
    /* the current (row, set) */
    grec *rec; size_t rec_cap;
    double *mass; size_t mass_cap;           /* per record, axis and cell: the cell's mass */
    double *cut; size_t cut_cap;             /* the same for numeric axes: min(F, 1/2) and min(S, 1/2) at the
                                                cell's upper boundary, interleaved (meeting_cells) */
    int8_t *axis_of; size_t axis_cap;        /* [64 per record]: the axis of an S position (n_s <= 64) */
    int64_t *u_off; size_t u_off_cap;
    double *arena; size_t arena_cap;
    int32_t *rec_end; size_t rec_end_cap;    /* one past the last record of each record's target */
    /* a pair's scratch */
    double *buf[2]; size_t buf_cap[2];
    int32_t *za, *zb; size_t za_cap, zb_cap;
    double *zm; size_t zm_cap;
    int32_t fa[FLAT_MAX], fb[FLAT_MAX];       /* pair_sum_flat's list */
    double fm[FLAT_MAX];
};

int grid_usable(const grid_state *g)
{
    return g != NULL && g->usable;
}

void grid_free(grid_state *g)
{
    if (g == NULL)
        return;
    free(g->tree); free(g->level_node); free(g->leaf); free(g->group); free(g->cell_right); free(g->cell_lo);
    free(g->cell_hi); free(g->cell_bits); free(g->rec); free(g->mass); free(g->cut); free(g->axis_of);
    free(g->u_off); free(g->arena);
    free(g->rec_end); free(g->buf[0]); free(g->buf[1]); free(g->za); free(g->zb); free(g->zm);
    free(g);
}

/* 1 when global nodes a and b apply the same condition (feature, NaN direction, threshold and rank, or
 * the atoms 0 .. K going left). */
static int same_split(const xai_forest *f, int64_t a, int64_t b)
{
    const int32_t j = f->feature[a];
    if (f->feature[b] != j || f->missing_left[a] != f->missing_left[b])
        return 0;
    const int32_t K = xai_categories(f, j);
    if (K == 0)
        return f->threshold[a] == f->threshold[b] && f->threshold_rank[a] == f->threshold_rank[b];
    const uint64_t *x = f->cat_bits + f->cat_start[a], *y = f->cat_bits + f->cat_start[b];
    for (int64_t q = 0; q < XAI_CAT_WORDS(K); q++) {
        const int64_t n = (int64_t)K + 1 - 64 * q; /* atoms 0 .. K of this word */
        const uint64_t keep = n >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << n) - 1;
        if ((x[q] ^ y[q]) & keep)
            return 0;
    }
    return 1;
}

/* 1 when atom a (0 .. K + 1) of a categorical node g goes left. */
static inline int atom_left(const xai_forest *f, int64_t g, int64_t a, int32_t K)
{
    return a > K ? f->missing_left[g] != 0 : (int)(f->cat_bits[f->cat_start[g] + a / 64] >> (a % 64) & 1);
}

/* The cells of tree t's levels (mask: their bits) on feature j, appended to the cell arrays. */
static int add_cells(grid_state *g, const gtree *t, ggroup *grp, uint32_t mask)
{
    const xai_forest *f = g->f;
    const int32_t j = grp->feature, K = xai_categories(f, j);
    grp->cell_start = g->n_cell;
    grp->n_cells = 0;
    grp->categorical = K > 0;
    const size_t most = (size_t)g->n_cell + (K > 0 ? ((size_t)1 << t->depth) : (size_t)t->depth + 1);
    if (grow((void **)&g->cell_right, &g->right_cap, most, sizeof(uint32_t)) ||
        grow((void **)&g->cell_lo, &g->lo_cap, most, sizeof(int32_t)) ||
        grow((void **)&g->cell_hi, &g->hi_cap, most, sizeof(int32_t)))
        return XAI_E_NOMEM;
    if (K == 0) { /* the distinct ranks of the levels, increasing, cut (0, top] */
        int32_t rank[GRID_MAX_DEPTH], h = 0;
        for (int32_t l = 0; l < t->depth; l++) {
            if (!(mask >> l & 1))
                continue;
            const int32_t r = g->f->threshold_rank[g->level_node[t->level_start + l]];
            int32_t i = h;
            for (; i > 0 && rank[i - 1] > r; i--)
                ;
            if (i > 0 && rank[i - 1] == r)
                continue;
            memmove(rank + i + 1, rank + i, (size_t)(h - i) * sizeof(int32_t));
            rank[i] = r;
            h++;
        }
        const int32_t top = (int32_t)(g->cdf_offset[j + 1] - g->cdf_offset[j]) - 1;
        for (int32_t c = 0; c <= h; c++) {
            const int32_t lo = c == 0 ? 0 : rank[c - 1], hi = c == h ? top : rank[c];
            uint32_t right = 0;
            for (int32_t l = 0; l < t->depth; l++) /* right of boundary r when lo >= r */
                if (mask >> l & 1 && g->f->threshold_rank[g->level_node[t->level_start + l]] <= lo)
                    right |= (uint32_t)1 << l;
            g->cell_lo[g->n_cell] = lo;
            g->cell_hi[g->n_cell] = hi;
            g->cell_right[g->n_cell++] = right;
        }
        grp->n_cells = h + 1;
        return XAI_OK;
    }
    /* atoms by the branches they take at these levels: one cell per distinct pattern */
    int32_t cell_of[1 << GRID_MAX_DEPTH];
    for (int32_t m = 0; m < (1 << t->depth); m++)
        cell_of[m] = -1;
    const int32_t cw = g->cw;
    for (int64_t a = 0; a < (int64_t)K + 2; a++) {
        uint32_t right = 0;
        for (int32_t l = 0; l < t->depth; l++)
            if (mask >> l & 1 && !atom_left(f, g->level_node[t->level_start + l], a, K))
                right |= (uint32_t)1 << l;
        if (cell_of[right] < 0) {
            if (grow((void **)&g->cell_bits, &g->bits_cap, (size_t)(g->n_bits + cw), sizeof(uint64_t)))
                return XAI_E_NOMEM;
            memset(g->cell_bits + g->n_bits, 0, (size_t)cw * sizeof(uint64_t));
            cell_of[right] = grp->n_cells++;
            g->cell_lo[g->n_cell] = (int32_t)g->n_bits;
            g->cell_hi[g->n_cell] = 0;
            g->cell_right[g->n_cell++] = right;
            g->n_bits += cw;
        }
        g->cell_bits[g->cell_lo[grp->cell_start + cell_of[right]] + a / 64] |= (uint64_t)1 << (a % 64);
    }
    return XAI_OK;
}

/* Tree t's levels (each the same condition across its nodes), leaves and groups; 0 when it is not
 * oblivious within the limits (g->usable is then cleared by the caller). */
static int add_tree(grid_state *g, int32_t t, int *ok)
{
    const xai_forest *f = g->f;
    const int64_t base = f->tree_offset[t];
    gtree *tr = &g->tree[t];
    int32_t list[2][1 << GRID_MAX_DEPTH], n = 1, depth = 0;
    list[0][0] = 0;
    *ok = 0;
    while (f->left_child[base + list[depth & 1][0]] >= 0) {
        const int32_t *cur = list[depth & 1];
        if (depth == GRID_MAX_DEPTH)
            return XAI_OK;
        int32_t *next = list[(depth + 1) & 1];
        for (int32_t i = 0; i < n; i++) {
            const int64_t node = base + cur[i];
            if (f->left_child[node] < 0 || !same_split(f, base + cur[0], node))
                return XAI_OK;
            next[2 * i] = f->left_child[node];
            next[2 * i + 1] = f->right_child[node];
        }
        if (grow((void **)&g->level_node, &g->level_cap, (size_t)(g->n_level + depth + 1), sizeof(int64_t)))
            return XAI_E_NOMEM;
        g->level_node[g->n_level + depth] = base + cur[0];
        n *= 2;
        depth++;
    }
    const int32_t *last = list[depth & 1];
    for (int32_t i = 0; i < n; i++)
        if (f->left_child[base + last[i]] >= 0)
            return XAI_OK;
    for (int32_t l = 0; l < depth; l++) {
        const int32_t K = xai_categories(f, f->feature[g->level_node[g->n_level + l]]);
        if (K > 0 && (int64_t)K + 2 > GRID_MAX_ATOMS)
            return XAI_OK;
    }
    tr->depth = depth;
    tr->level_start = g->n_level;
    tr->leaf_start = g->n_leafs;
    g->n_level += depth;
    if (grow((void **)&g->leaf, &g->leaf_cap, (size_t)(g->n_leafs + n), sizeof(int64_t)))
        return XAI_E_NOMEM;
    for (int32_t i = 0; i < n; i++) { /* position i of the last level: level l's branch is bit depth - 1 - l */
        int32_t bits = 0;
        for (int32_t l = 0; l < depth; l++)
            bits |= (i >> (depth - 1 - l) & 1) << l;
        g->leaf[g->n_leafs + bits] = base + last[i];
    }
    g->n_leafs += n;
    /* one group per distinct feature of the levels, in order of first level */
    tr->group_start = g->n_group;
    tr->n_groups = 0;
    uint32_t seen = 0;
    for (int32_t l = 0; l < depth; l++) {
        if (seen >> l & 1)
            continue;
        const int32_t j = f->feature[g->level_node[tr->level_start + l]];
        uint32_t mask = 0;
        for (int32_t m = l; m < depth; m++)
            if (f->feature[g->level_node[tr->level_start + m]] == j)
                mask |= (uint32_t)1 << m;
        seen |= mask;
        if (grow((void **)&g->group, &g->group_cap, (size_t)g->n_group + 1, sizeof(ggroup)))
            return XAI_E_NOMEM;
        ggroup *grp = &g->group[g->n_group++];
        grp->feature = j;
        tr->n_groups++;
        const int status = add_cells(g, tr, grp, mask);
        if (status != XAI_OK)
            return status;
    }
    *ok = 1;
    return XAI_OK;
}

int grid_new(const xai_forest *f, const int64_t *cdf_offset, int32_t cw, grid_state **out)
{
    grid_state *g = calloc(1, sizeof(grid_state));
    *out = g;
    if (g == NULL)
        return XAI_E_NOMEM;
    g->f = f;
    g->cdf_offset = cdf_offset;
    g->cw = cw;
    g->width = f->leaf_width;
    g->tree = calloc((size_t)(f->n_trees > 0 ? f->n_trees : 1), sizeof(gtree));
    if (g->tree == NULL)
        return XAI_E_NOMEM;
    g->usable = f->threshold_rank != NULL;
    for (int32_t t = 0; t < f->n_trees && g->usable; t++) {
        int ok;
        const int status = add_tree(g, t, &ok);
        if (status != XAI_OK)
            return status;
        g->usable = ok;
    }
    return XAI_OK;
}

int grid_records(grid_state *g, grid_row *r, double *cost)
{
    const xai_forest *f = g->f;
    const int32_t W = g->width;
    *cost = 0.0;
    if (grow((void **)&g->rec, &g->rec_cap, (size_t)(r->n_rec > 0 ? r->n_rec : 1), sizeof(grec)) ||
        grow((void **)&g->rec_end, &g->rec_end_cap, (size_t)(r->n_rec > 0 ? r->n_rec : 1), sizeof(int32_t)))
        return XAI_E_NOMEM;
    int64_t n_mass = 0, n_off = 0, n_arena = 0;
    for (int32_t i = 0; i < r->n_rec; i++) {
        grec *e = &g->rec[i];
        const gtree *t = &g->tree[r->rec_tree[i]];
        e->tree = r->rec_tree[i];
        e->k = 0;
        e->fixed = 0;
        e->size = 1;
        int64_t chunk = 1;
        for (int32_t q = 0; q < t->n_groups; q++) {
            const ggroup *grp = &g->group[t->group_start + q];
            const int32_t pos = r->s_pos[grp->feature];
            if (pos >= 0 && grp->n_cells == 1) { /* every atom takes the same branches */
                e->fixed |= g->cell_right[grp->cell_start];
                continue;
            }
            if (pos < 0) { /* x's branches at these levels */
                const double xj = r->x[grp->feature];
                for (int32_t l = 0; l < t->depth; l++) {
                    const int64_t node = g->level_node[t->level_start + l];
                    if (f->feature[node] == grp->feature && !xai_goes_left(f, node, xj))
                        e->fixed |= (uint32_t)1 << l;
                }
                continue;
            }
            int32_t at = e->k++; /* by S position */
            for (; at > 0 && e->pos[at - 1] > pos; at--) {
                e->pos[at] = e->pos[at - 1];
                e->group[at] = e->group[at - 1];
                e->n[at] = e->n[at - 1];
            }
            e->pos[at] = pos;
            e->group[at] = t->group_start + q;
            e->n[at] = grp->n_cells;
            e->size *= grp->n_cells;
            chunk *= grp->n_cells + 1;
        }
        for (int32_t q = 0; q < e->k; q++) {
            e->mass[q] = n_mass;
            n_mass += e->n[q];
        }
        e->u_at = n_off;
        n_off += (int64_t)1 << e->k;
        e->bump = n_arena;
        n_arena += chunk * W;
        e->pmask = 0;
        for (int32_t q = 0; q < e->k && r->n_s <= 64; q++)
            e->pmask |= (uint64_t)1 << e->pos[q];
    }
    for (int32_t i = r->n_rec - 1; i >= 0; i--)
        g->rec_end[i] = i == r->n_rec - 1 || f->tree_target[r->rec_tree[i + 1]] != f->tree_target[r->rec_tree[i]]
                            ? i + 1
                            : g->rec_end[i + 1];
    if (grow((void **)&g->mass, &g->mass_cap, (size_t)(n_mass > 0 ? n_mass : 1), sizeof(double)) ||
        grow((void **)&g->cut, &g->cut_cap, (size_t)(n_mass > 0 ? 2 * n_mass : 1), sizeof(double)) ||
        grow((void **)&g->axis_of, &g->axis_cap, (size_t)(r->n_rec > 0 ? r->n_rec : 1) * 64, sizeof(int8_t)) ||
        grow((void **)&g->u_off, &g->u_off_cap, (size_t)(n_off > 0 ? n_off : 1), sizeof(int64_t)) ||
        grow((void **)&g->arena, &g->arena_cap, (size_t)(n_arena > 0 ? n_arena : 1), sizeof(double)))
        return XAI_E_NOMEM;
    /* cost: per pair of records of one target, a fixed part and the entries of both tensors (record i
     * is in group_size - 1 pairs) */
    double pairs = 0.0, entries = 0.0;
    for (int32_t i = 0, begin = 0; i < r->n_rec; i++) {
        if (i > 0 && g->rec_end[i] != g->rec_end[i - 1])
            begin = i;
        pairs += (double)(g->rec_end[i] - i - 1);
        entries += (double)g->rec[i].size * (double)(g->rec_end[i] - begin - 1);
    }
    *cost = pairs * GRID_SECONDS_PER_PAIR + entries * GRID_SECONDS_PER_ENTRY * (double)W;
    return XAI_OK;
}

/* The masses of record e's cells, and V (its centred values over its cells) as U of the full subset. */
static void record_tensor(grid_state *g, const grid_row *r, grec *e)
{
    const xai_forest *f = g->f;
    const int32_t W = g->width, cw = g->cw;
    const gtree *t = &g->tree[e->tree];
    for (int32_t q = 0; q < e->k; q++) {
        const ggroup *grp = &g->group[e->group[q]];
        const int64_t off = g->cdf_offset[grp->feature];
        const double *F = r->cdf_row + off, *S = r->sf_row + off;
        double *mass = g->mass + e->mass[q], *cut = g->cut + 2 * e->mass[q];
        for (int32_t c = 0; c < grp->n_cells; c++) {
            const int32_t cell = grp->cell_start + c;
            if (grp->categorical) {
                mass[c] = atom_sum(g->cell_bits + g->cell_lo[cell], NULL, cw, F);
                continue;
            }
            const int32_t lo = g->cell_lo[cell], hi = g->cell_hi[cell];
            mass[c] = interval_mass(F[lo], F[hi], S[lo], S[hi]);
            cut[2 * c] = F[hi] < 0.5 ? F[hi] : 0.5;
            cut[2 * c + 1] = S[hi] < 0.5 ? S[hi] : 0.5;
        }
    }
    if (e->pmask != 0) {
        int8_t *axis = g->axis_of + (size_t)(e - g->rec) * 64;
        for (int32_t q = 0; q < e->k; q++)
            axis[e->pos[q]] = (int8_t)q;
    }
    const int64_t full = ((int64_t)1 << e->k) - 1;
    for (int64_t s = 0; s <= full; s++)
        g->u_off[e->u_at + s] = -1;
    double *v = g->arena + e->bump;
    g->u_off[e->u_at + full] = e->bump;
    e->bump += e->size * W;
    const double *xv = f->value + r->x_leaf[e->tree] * W;
    int32_t idx[GRID_MAX_DEPTH] = {0};
    for (int64_t m = 0; m < e->size; m++) { /* cells in row-major order, the last axis fastest */
        uint32_t bits = e->fixed;
        for (int32_t q = 0; q < e->k; q++)
            bits |= g->cell_right[g->group[e->group[q]].cell_start + idx[q]];
        const double *value = f->value + g->leaf[t->leaf_start + bits] * W;
        for (int32_t o = 0; o < W; o++)
            v[m * W + o] = value[o] - xv[o];
        for (int32_t q = e->k - 1; q >= 0; q--) {
            if (++idx[q] < e->n[q])
                break;
            idx[q] = 0;
        }
    }
}

/* U of record e over subset s of its axes (bits of q): V summed over the other axes with their masses,
 * computed (from the subset with the lowest missing axis added) when first asked for. */
static const double *subset_compute(grid_state *g, grec *e, uint32_t s);

static inline const double *subset_tensor(grid_state *g, grec *e, uint32_t s)
{
    const int64_t at = g->u_off[e->u_at + s];
    return at >= 0 ? g->arena + at : subset_compute(g, e, s);
}

static const double *subset_compute(grid_state *g, grec *e, uint32_t s)
{
    int64_t *at = &g->u_off[e->u_at + s];
    int32_t q = 0;
    while (s >> q & 1)
        q++;
    const double *in = subset_tensor(g, e, s | (uint32_t)1 << q);
    int64_t before = 1, after = g->width;
    for (int32_t p = 0; p < e->k; p++)
        if (s >> p & 1) {
            if (p < q)
                before *= e->n[p];
            else
                after *= e->n[p];
        }
    const int32_t n = e->n[q];
    const double *mass = g->mass + e->mass[q];
    double *out = g->arena + e->bump;
    *at = e->bump;
    e->bump += before * after;
    for (int64_t b = 0; b < before; b++)
        for (int64_t a = 0; a < after; a++) {
            double sum = 0.0;
            for (int32_t c = 0; c < n; c++)
                sum += in[(b * n + c) * after + a] * mass[c];
            out[b * after + a] = sum;
        }
    return out;
}

/* The pairs of a cell of A and a cell of B that meet, on the axes qa of A and qb of B (one feature), into
 * za / zb (the cells' offsets: their index times stride_a / stride_b) and zm (the mass of both) from
 * entry z0; returns their count. Intervals: the merged boundaries in increasing order, each meeting
 * cell's mass (min(F, 1/2) at its ends' difference) + (min(S, 1/2) at its ends' difference): F's part
 * below the median, S's above it (each exact in its tail, the other part 0), as interval_mass takes it
 * (the cells' ends read from the record's cut values). Atom sets: every pair, the atoms in both. */
static int32_t meeting_cells(grid_state *g, const grid_row *r, const grec *A, const grec *B, int32_t qa, int32_t qb,
                             int32_t stride_a, int32_t stride_b, int64_t z0)
{
    const ggroup *ga = &g->group[A->group[qa]], *gb = &g->group[B->group[qb]];
    int32_t *za = g->za + z0, *zb = g->zb + z0;
    double *zm = g->zm + z0;
    int32_t z = 0;
    if (!ga->categorical) {
        const int32_t *ha = g->cell_hi + ga->cell_start, *hb = g->cell_hi + gb->cell_start;
        const double *ca = g->cut + 2 * A->mass[qa], *cb = g->cut + 2 * B->mass[qb];
        const int32_t na = ga->n_cells, nb = gb->n_cells;
        int32_t a = 0, b = 0;
        double f_lo = 0.0, s_lo = 0.5; /* at rank 0: F = 0, S = 1 */
        while (a < na && b < nb) { /* both end at the top rank together */
            const int take_a = ha[a] <= hb[b], take_b = hb[b] <= ha[a];
            const double *hi = take_a ? ca + 2 * a : cb + 2 * b;
            za[z] = a * stride_a;
            zb[z] = b * stride_b;
            zm[z++] = (hi[0] - f_lo) + (s_lo - hi[1]);
            f_lo = hi[0];
            s_lo = hi[1];
            a += take_a;
            b += take_b;
        }
        return z;
    }
    const int32_t cw = g->cw;
    const double *p = r->cdf_row + g->cdf_offset[ga->feature];
    for (int32_t a = 0; a < ga->n_cells; a++) {
        const uint64_t *CA = g->cell_bits + g->cell_lo[ga->cell_start + a];
        for (int32_t b = 0; b < gb->n_cells; b++) {
            const uint64_t *CB = g->cell_bits + g->cell_lo[gb->cell_start + b];
            int meet = 0;
            for (int32_t w = 0; w < cw; w++)
                meet |= (CA[w] & CB[w]) != 0;
            if (!meet)
                continue;
            za[z] = a * stride_a;
            zb[z] = b * stride_b;
            zm[z++] = atom_sum(CA, CB, cw, p);
        }
    }
    return z;
}

/* Shared axes of a pair up to which pair_sum sums the joint cells directly (prod of the meeting cells'
 * counts products, no intermediate tensor); from there on it contracts axis by axis. */
enum { DIRECT_MAX = 3 };

/* sum over the meeting cells z of the m <= DIRECT_MAX shared axes of prod_i zm_i[z_i] * ua[A's offset] *
 * ub[B's offset] (offsets: za / zb already multiplied by the axes' strides), per output. */
static void direct_sum(const grid_state *g, const int64_t *zs, const int32_t *nz, int32_t m, const double *ua,
                       const double *ub, double *out)
{
    const int32_t W = g->width;
    const int32_t *za = g->za, *zb = g->zb;
    const double *zm = g->zm;
    if (W == 1) {
        double sum = 0.0;
        const int64_t s0 = zs[0];
        if (m == 1) {
            for (int32_t i = 0; i < nz[0]; i++)
                sum += zm[s0 + i] * ua[za[s0 + i]] * ub[zb[s0 + i]];
        } else if (m == 2) {
            const int64_t s1 = zs[1];
            for (int32_t i = 0; i < nz[0]; i++) {
                const double *pa = ua + za[s0 + i], *pb = ub + zb[s0 + i];
                double inner = 0.0;
                for (int32_t j = 0; j < nz[1]; j++)
                    inner += zm[s1 + j] * pa[za[s1 + j]] * pb[zb[s1 + j]];
                sum += zm[s0 + i] * inner;
            }
        } else {
            const int64_t s1 = zs[1], s2 = zs[2];
            for (int32_t i = 0; i < nz[0]; i++) {
                const double *pa = ua + za[s0 + i], *pb = ub + zb[s0 + i];
                double mid = 0.0;
                for (int32_t j = 0; j < nz[1]; j++) {
                    const double *qa = pa + za[s1 + j], *qb = pb + zb[s1 + j];
                    double inner = 0.0;
                    for (int32_t k = 0; k < nz[2]; k++)
                        inner += zm[s2 + k] * qa[za[s2 + k]] * qb[zb[s2 + k]];
                    mid += zm[s1 + j] * inner;
                }
                sum += zm[s0 + i] * mid;
            }
        }
        out[0] = sum;
        return;
    }
    for (int32_t o = 0; o < W; o++)
        out[o] = 0.0;
    int32_t idx[DIRECT_MAX] = {0, 0, 0};
    for (;;) { /* odometer over the joint meeting cells */
        int64_t a = 0, b = 0;
        double weight = 1.0;
        for (int32_t i = 0; i < m; i++) {
            a += za[zs[i] + idx[i]];
            b += zb[zs[i] + idx[i]];
            weight *= zm[zs[i] + idx[i]];
        }
        for (int32_t o = 0; o < W; o++)
            out[o] += weight * ua[a + o] * ub[b + o];
        int32_t i = m - 1;
        for (; i >= 0; i--) {
            if (++idx[i] < nz[i])
                break;
            idx[i] = 0;
        }
        if (i < 0)
            break;
    }
}

/* sum_k fm[k] * pa[fa[k]] * pb[fb[k]], in four partial sums (fixed order). */
static inline double flat_dot(const int32_t *fa, const int32_t *fb, const double *fm, int32_t n, const double *pa,
                              const double *pb)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    int32_t k = 0;
    for (; k + 4 <= n; k += 4) {
        s0 += fm[k] * pa[fa[k]] * pb[fb[k]];
        s1 += fm[k + 1] * pa[fa[k + 1]] * pb[fb[k + 1]];
        s2 += fm[k + 2] * pa[fa[k + 2]] * pb[fb[k + 2]];
        s3 += fm[k + 3] * pa[fa[k + 3]] * pb[fb[k + 3]];
    }
    for (; k < n; k++)
        s0 += fm[k] * pa[fa[k]] * pb[fb[k]];
    return (s0 + s1) + (s2 + s3);
}

/* E[c_A c_B] of records A and B with one output that share the m axes qa of A and qb of B: the joint
 * meeting cells of axes 1 .. m - 1 listed once (offsets in U_A and U_B, product of masses), those of
 * axis 0 walked (intervals: their merged boundaries, as meeting_cells does), each with the list's dot
 * product. Returns 0 (nothing done) when the list would pass FLAT_MAX; else 1, with the sum in *out and
 * the joint cells in *products. */
static int pair_sum_flat(grid_state *g, const grid_row *r, grec *A, grec *B, const int32_t *qa, const int32_t *qb,
                         int32_t m, double *out, int64_t *products)
{
    int32_t ka = 1, kb = 1, n = 1;
    uint32_t sa = (uint32_t)1 << qa[0], sb = (uint32_t)1 << qb[0];
    int32_t *fa = g->fa, *fb = g->fb;
    double *fm = g->fm;
    fa[0] = fb[0] = 0;
    fm[0] = 1.0;
    if (m == 2) { /* the list is axis 1's meeting cells */
        n = meeting_cells(g, r, A, B, qa[1], qb[1], 1, 1, 0);
        if (n > FLAT_MAX)
            return 0;
        fa = g->za;
        fb = g->zb;
        fm = g->zm;
        ka = A->n[qa[1]];
        kb = B->n[qb[1]];
        sa |= (uint32_t)1 << qa[1];
        sb |= (uint32_t)1 << qb[1];
    }
    for (int32_t i = m == 2 ? 0 : m - 1; i >= 1; i--) { /* cross the list with axis i's meeting cells */
        const int32_t nz = meeting_cells(g, r, A, B, qa[i], qb[i], ka, kb, 0);
        if ((int64_t)n * nz > FLAT_MAX)
            return 0;
        for (int32_t e = n - 1; e >= 0; e--) {
            const int32_t oa = fa[e], ob = fb[e];
            const double om = fm[e];
            for (int32_t k = nz - 1; k >= 0; k--) {
                fa[e * nz + k] = oa + g->za[k];
                fb[e * nz + k] = ob + g->zb[k];
                fm[e * nz + k] = om * g->zm[k];
            }
        }
        n *= nz;
        ka *= A->n[qa[i]];
        kb *= B->n[qb[i]];
        sa |= (uint32_t)1 << qa[i];
        sb |= (uint32_t)1 << qb[i];
    }
    const double *ua = subset_tensor(g, A, sa), *ub = subset_tensor(g, B, sb);
    const ggroup *ga = &g->group[A->group[qa[0]]], *gb = &g->group[B->group[qb[0]]];
    double sum = 0.0;
    if (!ga->categorical) {
        const int32_t *ha = g->cell_hi + ga->cell_start, *hb = g->cell_hi + gb->cell_start;
        const double *ca = g->cut + 2 * A->mass[qa[0]], *cb = g->cut + 2 * B->mass[qb[0]];
        const int32_t na = ga->n_cells, nb = gb->n_cells;
        int32_t a = 0, b = 0, n0 = 0;
        double f_lo = 0.0, s_lo = 0.5;
        while (a < na && b < nb) {
            const int take_a = ha[a] <= hb[b], take_b = hb[b] <= ha[a];
            const double *hi = take_a ? ca + 2 * a : cb + 2 * b;
            sum += ((hi[0] - f_lo) + (s_lo - hi[1])) * flat_dot(fa, fb, fm, n, ua + a * ka, ub + b * kb);
            f_lo = hi[0];
            s_lo = hi[1];
            a += take_a;
            b += take_b;
            n0++;
        }
        *products = (int64_t)n * n0;
    } else {
        const int64_t z0 = fa == g->za ? n : 0; /* after the list when it lies in za / zb / zm */
        const int32_t nz = meeting_cells(g, r, A, B, qa[0], qb[0], ka, kb, z0);
        for (int32_t k = 0; k < nz; k++)
            sum += g->zm[z0 + k] * flat_dot(fa, fb, fm, n, ua + g->za[z0 + k], ub + g->zb[z0 + k]);
        *products = (int64_t)n * nz;
    }
    *out = sum;
    return 1;
}

/* direct_sum's sum for one output over shared axes i .. m - 1 (any m), from offsets pa / pb on. */
static double direct_rest(const grid_state *g, const int64_t *zs, const int32_t *nz, int32_t i, int32_t m,
                          const double *pa, const double *pb)
{
    const int32_t *za = g->za + zs[i], *zb = g->zb + zs[i];
    const double *zm = g->zm + zs[i];
    double sum = 0.0;
    if (i == m - 1) {
        for (int32_t k = 0; k < nz[i]; k++)
            sum += zm[k] * pa[za[k]] * pb[zb[k]];
        return sum;
    }
    for (int32_t k = 0; k < nz[i]; k++)
        sum += zm[k] * direct_rest(g, zs, nz, i + 1, m, pa + za[k], pb + zb[k]);
    return sum;
}

/* E[c_A c_B] (W outputs, into out) of records A and B, which share the m axes qa[] of A and qb[] of B
 * (both increasing); returns the number of products. The joint meeting cells are summed directly where
 * they are fewer than the products of the axis-by-axis contraction (always up to DIRECT_MAX axes), else
 * the contraction runs. The buffers were sized by grid_pairs. */
static int64_t pair_sum(grid_state *g, const grid_row *r, grec *A, grec *B, const int32_t *qa, const int32_t *qb,
                        int32_t m, double *out)
{
    const int32_t W = g->width;
    uint32_t sa = 0, sb = 0;
    int64_t zs[GRID_MAX_DEPTH], z = 0;
    int32_t nz[GRID_MAX_DEPTH], stride_a[GRID_MAX_DEPTH], stride_b[GRID_MAX_DEPTH];
    int direct = m <= DIRECT_MAX;
    for (int32_t i = m - 1, ka = W, kb = W; i >= 0; i--) { /* the shared axes' strides in U_A, U_B */
        stride_a[i] = direct ? ka : 1;
        stride_b[i] = direct ? kb : 1;
        ka *= A->n[qa[i]];
        kb *= B->n[qb[i]];
    }
    for (int32_t i = 0; i < m; i++) {
        sa |= (uint32_t)1 << qa[i];
        sb |= (uint32_t)1 << qb[i];
        zs[i] = z;
        nz[i] = meeting_cells(g, r, A, B, qa[i], qb[i], stride_a[i], stride_b[i], z);
        z += nz[i];
    }
    const double *ua = subset_tensor(g, A, sa), *ub = subset_tensor(g, B, sb);
    if (!direct && W == 1) { /* prod nz against sum_i (B's cells before i) nz_i (A's cells after i) */
        double joint = 1.0, steps = 0.0, before = 1.0;
        for (int32_t i = 0; i < m; i++) {
            double after = 1.0;
            for (int32_t p = i + 1; p < m; p++)
                after *= A->n[qa[p]];
            joint *= nz[i];
            steps += before * nz[i] * after;
            before *= B->n[qb[i]];
        }
        if (joint <= steps + before) { /* offsets: cells' indices times the strides */
            for (int32_t i = m - 1, ka = 1, kb = 1; i >= 0; i--) {
                for (int32_t k = 0; k < nz[i]; k++) {
                    g->za[zs[i] + k] *= ka;
                    g->zb[zs[i] + k] *= kb;
                }
                ka *= A->n[qa[i]];
                kb *= B->n[qb[i]];
            }
            out[0] = direct_rest(g, zs, nz, 0, m, ua, ub);
            return (int64_t)joint;
        }
    }
    if (direct) {
        int64_t products = 1;
        for (int32_t i = 0; i < m; i++)
            products *= nz[i];
        direct_sum(g, zs, nz, m, ua, ub, out);
        return products;
    }
    int64_t products = 0, before = 1;
    const double *in = ua;
    for (int32_t i = 0; i < m; i++) { /* axis i: A's cells -> B's */
        const int32_t na = A->n[qa[i]], nb = B->n[qb[i]];
        const int32_t *za = g->za + zs[i], *zb = g->zb + zs[i];
        const double *zm = g->zm + zs[i];
        int64_t after = W;
        for (int32_t p = i + 1; p < m; p++)
            after *= A->n[qa[p]];
        double *dst = g->buf[i & 1];
        memset(dst, 0, (size_t)(before * nb * after) * sizeof(double));
        for (int64_t b = 0; b < before; b++)
            for (int32_t k = 0; k < nz[i]; k++) {
                const double *src = in + (b * na + za[k]) * after, mz = zm[k];
                double *to = dst + (b * nb + zb[k]) * after;
                for (int64_t a = 0; a < after; a++)
                    to[a] += mz * src[a];
            }
        products += before * nz[i] * (after / W);
        before *= nb;
        in = dst;
    }
    for (int32_t o = 0; o < W; o++)
        out[o] = 0.0;
    for (int64_t c = 0; c < before; c++)
        for (int32_t o = 0; o < W; o++)
            out[o] += in[c * W + o] * ub[c * W + o];
    return products + before;
}

int grid_pairs(grid_state *g, grid_row *r)
{
    const int32_t W = g->width;
    int64_t size = 1, cells = 1;
    for (int32_t i = 0; i < r->n_rec; i++) {
        record_tensor(g, r, &g->rec[i]);
        size = g->rec[i].size > size ? g->rec[i].size : size;
        for (int32_t q = 0; q < g->rec[i].k; q++)
            cells = g->rec[i].n[q] > cells ? g->rec[i].n[q] : cells;
    }
    /* a pair's meeting cells: at most cells^2 per shared axis; its intermediate tensors: at most the
     * product over the shared axes of the larger count, <= size^2 */
    const size_t zn = (size_t)GRID_MAX_DEPTH * (size_t)(cells * cells), most = (size_t)(size * size) * (size_t)W;
    if (grow((void **)&g->buf[0], &g->buf_cap[0], most, sizeof(double)) ||
        grow((void **)&g->buf[1], &g->buf_cap[1], most, sizeof(double)) ||
        grow((void **)&g->za, &g->za_cap, zn, sizeof(int32_t)) ||
        grow((void **)&g->zb, &g->zb_cap, zn, sizeof(int32_t)) || grow((void **)&g->zm, &g->zm_cap, zn, sizeof(double)))
        return XAI_E_NOMEM;
    double e[64], *sum = W <= 64 ? e : malloc((size_t)W * sizeof(double));
    if (sum == NULL)
        return XAI_E_NOMEM;
    for (int32_t i = 0; i < r->n_rec; i++) {
        grec *A = &g->rec[i];
        double *acc = r->pair_acc + (size_t)i * W;
        const double *ma = r->mean + (size_t)i * W;
        for (int32_t o = 0; o < W; o++)
            acc[o] = 0.0;
        const int8_t *axis_a = g->axis_of + (size_t)i * 64;
        for (int32_t u = i + 1; u < g->rec_end[i]; u++) {
            grec *B = &g->rec[u];
            int32_t qa[GRID_MAX_DEPTH], qb[GRID_MAX_DEPTH], m = 0, a = 0, b = 0;
            if (r->n_s <= 64) { /* the S positions both split on, increasing */
                const int8_t *axis_b = g->axis_of + (size_t)u * 64;
                for (uint64_t both = A->pmask & B->pmask; both; both &= both - 1, m++) {
                    const int pos = lowest_bit(both);
                    qa[m] = axis_a[pos];
                    qb[m] = axis_b[pos];
                }
                a = A->k; /* no merge */
            }
            while (a < A->k && b < B->k) { /* the same by a merge (both lists increase) */
                if (A->pos[a] == B->pos[b]) {
                    qa[m] = a++;
                    qb[m++] = b++;
                } else if (A->pos[a] < B->pos[b]) {
                    a++;
                } else {
                    b++;
                }
            }
            if (m == 0)
                continue; /* independent */
            int64_t products;
            if (W == 1 && pair_sum_flat(g, r, A, B, qa, qb, m, sum, &products))
                r->terms += products;
            else
                r->terms += pair_sum(g, r, A, B, qa, qb, m, sum);
            const double *mb = r->mean + (size_t)u * W;
            for (int32_t o = 0; o < W; o++)
                acc[o] += sum[o] - ma[o] * mb[o];
        }
    }
    if (sum != e)
        free(sum);
    return XAI_OK;
}
