/* local_mdi.c -- per-sample impurity-decrease importances (Sutera et al., Definition 1):
 * for each tree, every node on the row's path adds impurity(node) - impurity(child followed)
 * to the node's split feature; trees are combined with weights w(i, t) (default 1 / T).
 *
 * Where the time goes is memory: a fully grown tree is walked by each row down a path of cache
 * misses. So the walk reads its own layout (xai_mdi_layout, built once per forest): one 24-byte
 * record per node holding everything a step needs (threshold, split feature and NaN direction,
 * right child, the impurity decrease toward this node precomputed), the left child next to its
 * parent. Rows are processed in large blocks (rounded to the model's input precision once), tree
 * by tree so that a tree's nodes stay in cache across the block, and within a block in
 * groups of GROUP rows walked in lockstep, branch-free, so that their cache misses overlap.
 * Each row still receives its terms in the order tree 0 .. T - 1, root to leaf, with the same
 * doubles as w * (impurity(node) - impurity(child)): the result does not depend on the block,
 * the group or the thread split.
 *
 * A forest with categorical features (set-membership splits: a one-hot Pipeline compiled to its
 * input columns) is walked on the forest itself, one row at a time (walk_categorical): the same
 * terms, in the same order, with the split decisions of xai_goes_left. */
#include <stdlib.h>

#include "xai.h"

/* A block is as many rows as fit BLOCK_BYTES of rounded inputs (at most MAX_BLOCK_ROWS): the more
 * rows walk a tree in turn, the more of its nodes are still in cache for the next row (measured: 64
 * rows 1.25x the forest's predict, 1,024 0.8x, 8,192 0.5x on a 100-tree California forest). */
enum { MAX_BLOCK_ROWS = 8192, BLOCK_BYTES = 1 << 22, GROUP = 16 };

/* One stack entry of the pre-order renumbering: a node still to be placed, its parent's old
 * global id and the new local id of the parent whose right child it is (-1 for a left child or
 * a root). */
typedef struct {
    int64_t node, parent;
    int32_t right_of;
} pending;

static int mdi_layout(const xai_forest *f, xai_mdi_node *layout)
{
    if (f == NULL || layout == NULL)
        return XAI_E_SIZE;
    if (f->impurity == NULL || f->n_features > (INT32_MAX >> 1))
        return XAI_E_UNSUPPORTED;
    pending *stack = xai_alloc((int64_t)f->max_depth + 2, sizeof(pending));
    if (stack == NULL)
        return XAI_E_NOMEM;
    for (int32_t t = 0; t < f->n_trees; t++) {
        const int64_t base = f->tree_offset[t];
        xai_mdi_node *tree = layout + base;
        int32_t placed = 0;
        int64_t top = 0;
        stack[top++] = (pending){base, -1, -1};
        while (top > 0) {          /* a validated tree has depth <= max_depth: at most max_depth + 1 pending */
            const pending p = stack[--top];
            const int64_t g = p.node;
            const int32_t k = placed++;
            if (p.right_of >= 0)
                tree[p.right_of].right = k;
            tree[k].gain = p.parent < 0 ? 0.0 : f->impurity[p.parent] - f->impurity[g];
            tree[k].threshold = f->threshold[g];
            tree[k].right = -1;
            if (f->left_child[g] < 0) {
                tree[k].split = -1;
                continue;
            }
            tree[k].split = 2 * f->feature[g] + (f->missing_left[g] != 0);
            stack[top++] = (pending){base + f->right_child[g], g, k};
            stack[top++] = (pending){base + f->left_child[g], g, -1};
        }
    }
    free(stack);
    return XAI_OK;
}

/* Walks the rows [0, n) of a block (x: rows of d rounded inputs, out: their output rows, w: their
 * weights) through one tree's layout, GROUP rows in lockstep. `lt`: the XAI_LEFT_IF_LT rule. */
static inline void walk_tree(const xai_mdi_node *tree, int lt, const double *x, int32_t d, int64_t n,
                             const double *w, double *out)
{
    for (int64_t r0 = 0; r0 < n; r0 += GROUP) {
        int32_t at[GROUP];
        int live[GROUP];
        int n_live = 0;
        for (int q = 0; q < GROUP && r0 + q < n; q++)
            if (w[r0 + q] != 0.0) {
                at[q] = 0;
                live[n_live++] = q;
            }
        while (n_live > 0) {
            int kept = 0;
            for (int a = 0; a < n_live; a++) {
                const int q = live[a];
                const xai_mdi_node *node = tree + at[q];
                const int32_t split = node->split;
                if (split < 0)
                    continue;
                const int32_t j = split >> 1;
                const double v = x[(r0 + q) * d + j];
                /* branch-free (a mispredicted branch would discard the other rows' loads in flight):
                 * both comparisons are false for NaN, which then goes where missing_left says */
                const int32_t left = (lt ? v < node->threshold : v <= node->threshold) | ((isnan(v) != 0) & split);
                const int32_t child = ((at[q] + 1) & -left) | (node->right & (left - 1));
                out[(r0 + q) * d + j] += w[r0 + q] * tree[child].gain;
                at[q] = child;
                live[kept++] = q;
            }
            n_live = kept;
        }
    }
}

/* The terms of row x (raw inputs) in tree t added to out[0 .. d), each weighted by w: the path of
 * x followed on the forest itself, so that categorical nodes route by their category bitsets. */
static void walk_categorical(const xai_forest *f, int32_t t, const double *x, double w, double *out)
{
    const int64_t base = f->tree_offset[t];
    int64_t g = base;
    while (f->left_child[g] >= 0) {
        const int32_t j = f->feature[g];
        const int64_t child = base + (xai_goes_left(f, g, x[j]) ? f->left_child[g] : f->right_child[g]);
        out[j] += w * (f->impurity[g] - f->impurity[child]);
        g = child;
    }
}

static int local_mdi(const xai_forest *f, const xai_mdi_node *layout, const double *X, int64_t n_rows,
                     const double *tree_weight, double *out)
{
    if (f == NULL || layout == NULL || X == NULL || out == NULL || n_rows < 0)
        return XAI_E_SIZE;
    if (f->impurity == NULL)
        return XAI_E_UNSUPPORTED;
    const int32_t d = f->n_features;
    const int lt = f->split_rule == XAI_LEFT_IF_LT;
    const double plain = 1.0 / f->n_trees;
    if (f->n_categories != NULL) {
        for (int64_t r = 0; r < n_rows; r++) {
            for (int32_t j = 0; j < d; j++)
                out[r * d + j] = 0.0;
            for (int32_t t = 0; t < f->n_trees; t++)
                walk_categorical(f, t, X + r * d, tree_weight ? tree_weight[r * f->n_trees + t] : plain, out + r * d);
        }
        return XAI_OK;
    }
    int64_t block_rows = BLOCK_BYTES / ((int64_t)sizeof(double) * (d + 1));
    block_rows = block_rows < GROUP ? GROUP : block_rows > MAX_BLOCK_ROWS ? MAX_BLOCK_ROWS : block_rows;
    if (block_rows > n_rows)
        block_rows = n_rows > 0 ? n_rows : 1;
    double *block = xai_alloc(block_rows * (d + 1), sizeof(double));
    if (block == NULL)
        return XAI_E_NOMEM;
    double *w = block + block_rows * d;
    for (int64_t start = 0; start < n_rows; start += block_rows) {
        const int64_t n_block = n_rows - start < block_rows ? n_rows - start : block_rows;
        for (int64_t k = 0; k < n_block * d; k++) {
            block[k] = xai_input_value(f, X[start * d + k]);
            out[start * d + k] = 0.0;
        }
        for (int32_t t = 0; t < f->n_trees; t++) {
            for (int64_t r = 0; r < n_block; r++)
                w[r] = tree_weight ? tree_weight[(start + r) * f->n_trees + t] : plain;
            walk_tree(layout + f->tree_offset[t], lt, block, d, n_block, w, out + start * d);
        }
    }
    free(block);
    return XAI_OK;
}

int xai_mdi_layout(const xai_forest *f, xai_mdi_node *layout)
{
    xai_error_clear();
    return xai_error_return(mdi_layout(f, layout));
}

int xai_local_mdi(const xai_forest *f, const xai_mdi_node *layout, const double *X, int64_t n_rows,
                  const double *tree_weight, double *out)
{
    xai_error_clear();
    return xai_error_return(local_mdi(f, layout, X, n_rows, tree_weight, out));
}
