/* forest.c -- structure validation, the parity predictor and the reachable-leaf counts over the xai_forest layout. */
#include <stdlib.h>
#include <string.h>

#include "xai.h"

int xai_abi_version(void) { return XAI_ABI_VERSION; }

const char *xai_strerror(int status)
{
    switch (status) {
    case XAI_OK:
        return "success";
    case XAI_E_SIZE:
        return "a count or buffer size is invalid (negative, zero where it must not be, or too small)";
    case XAI_E_INDEX:
        return "an index (child, feature, rank, leaf, tree or output) is out of range";
    case XAI_E_STRUCTURE:
        return "the trees are not well-formed binary trees rooted at node 0 (in-degree, reachability "
               "or depth)";
    case XAI_E_VALUE:
        return "a value is NaN or infinite where it must be finite (a NaN threshold, a leaf value or impurity, "
               "NaN in a perturbed feature, or an invalid CDF table)";
    case XAI_E_UNSUPPORTED:
        return "this model lacks what the computation needs, or the settings are not implemented";
    case XAI_E_NOMEM:
        return "the C core ran out of memory";
    default:
        return "unknown status code";
    }
}

/* MSVC spells C11's _Thread_local as __declspec(thread). */
#if defined(_MSC_VER) && !defined(__clang__)
#define XAI_THREAD_LOCAL __declspec(thread)
#else
#define XAI_THREAD_LOCAL _Thread_local
#endif

/* The calling thread's record of its last API call (see xai_last_error). */
typedef struct {
    int status;
    int64_t tree, node, row;
} error_record;

static XAI_THREAD_LOCAL error_record last_error = {XAI_OK, -1, -1, -1};

void xai_error_clear(void)
{
    last_error.status = XAI_OK;
    last_error.tree = last_error.node = last_error.row = -1;
}

void xai_error_at(int64_t tree, int64_t node, int64_t row)
{
    last_error.tree = tree;
    last_error.node = node;
    last_error.row = row;
}

int xai_error_return(int status)
{
    last_error.status = status;
    if (status == XAI_OK)
        last_error.tree = last_error.node = last_error.row = -1;
    return status;
}

int xai_last_error(int64_t *tree, int64_t *node, int64_t *row)
{
    if (tree != NULL)
        *tree = last_error.tree;
    if (node != NULL)
        *node = last_error.node;
    if (row != NULL)
        *row = last_error.row;
    return last_error.status;
}

/* Depth-first walk of tree t from its root; fails on cycles, shared children or depth overflow.
 * *bad receives the local node where the walk failed (-1 when no single node is to blame). */
static int check_tree_at(const xai_forest *f, int32_t t, uint8_t *seen, int32_t *stack_node, int32_t *stack_depth,
                         int64_t *bad)
{
    const int64_t base = f->tree_offset[t];
    const int64_t size = f->tree_offset[t + 1] - base;
    int64_t top = 0, visited = 0;
    stack_node[top] = 0;
    stack_depth[top++] = 0;
    while (top > 0) {
        const int32_t k = stack_node[--top];
        const int32_t depth = stack_depth[top];
        const int64_t g = base + k;
        *bad = k;
        if (seen[k])
            return XAI_E_STRUCTURE; /* in-degree > 1 */
        seen[k] = 1;
        visited++;
        if (depth > f->max_depth)
            return XAI_E_STRUCTURE;
        const int32_t l = f->left_child[g], r = f->right_child[g];
        if (l < 0 || r < 0) {
            if (l != -1 || r != -1)
                return XAI_E_INDEX;
            for (int32_t o = 0; o < f->leaf_width; o++)
                if (!isfinite(f->value[g * f->leaf_width + o]))
                    return XAI_E_VALUE;
            continue;
        }
        if (l >= size || r >= size || l == 0 || r == 0)
            return XAI_E_INDEX;
        if (f->feature[g] < 0 || f->feature[g] >= f->n_features)
            return XAI_E_INDEX;
        const int32_t K = xai_categories(f, f->feature[g]);
        if (K > 0) { /* a set-membership split: its bitset lies inside cat_bits */
            if (f->cat_start[g] < 0 || f->cat_start[g] > f->n_cat_words - XAI_CAT_WORDS(K))
                return XAI_E_INDEX;
        } else if (isnan(f->threshold[g])) {
            return XAI_E_VALUE;
        } else if (f->threshold_rank != NULL && f->threshold_rank[g] < 1) {
            return XAI_E_INDEX;
        }
        if (f->impurity != NULL && !isfinite(f->impurity[g]))
            return XAI_E_VALUE;
        if (top + 2 > size)
            return XAI_E_STRUCTURE;
        stack_node[top] = l;
        stack_depth[top++] = depth + 1;
        stack_node[top] = r;
        stack_depth[top++] = depth + 1;
    }
    if (visited == size) {
        *bad = -1;
        return XAI_OK;
    }
    for (int64_t k = 0; k < size; k++) /* the first unreachable node */
        if (!seen[k]) {
            *bad = k;
            break;
        }
    return XAI_E_STRUCTURE;
}

static int check_tree(const xai_forest *f, int32_t t, uint8_t *seen, int32_t *stack_node, int32_t *stack_depth)
{
    int64_t bad = -1;
    const int status = check_tree_at(f, t, seen, stack_node, stack_depth, &bad);
    if (status != XAI_OK)
        xai_error_at(t, bad, -1);
    return status;
}

/* PG2's ranks (when present): every internal node's rank lies in 1 .. rank_count[its feature].
 * Runs after the trees are checked, so every internal node's feature is in range. */
static int check_ranks(const xai_forest *f)
{
    if (f->threshold_rank == NULL)
        return XAI_OK;
    if (f->rank_count == NULL)
        return XAI_E_SIZE;
    for (int32_t j = 0; j < f->n_features; j++)
        if (f->rank_count[j] < 0)
            return XAI_E_SIZE;
    for (int32_t t = 0; t < f->n_trees; t++)
        for (int64_t g = f->tree_offset[t]; g < f->tree_offset[t + 1]; g++)
            if (f->left_child[g] >= 0 && xai_categories(f, f->feature[g]) == 0 &&
                (f->threshold_rank[g] < 1 || f->threshold_rank[g] > f->rank_count[f->feature[g]])) {
                xai_error_at(t, g - f->tree_offset[t], -1);
                return XAI_E_INDEX;
            }
    return XAI_OK;
}

static int validate(const xai_forest *f)
{
    if (f == NULL || f->n_trees < 1 || f->n_nodes < 1 || f->n_features < 1 || f->n_outputs < 1 ||
        f->max_depth < 0 || f->tree_offset == NULL || f->left_child == NULL || f->right_child == NULL ||
        f->feature == NULL || f->threshold == NULL || f->missing_left == NULL || f->value == NULL ||
        f->base_score == NULL || f->tree_target == NULL)
        return XAI_E_SIZE;
    if (f->leaf_width != f->n_outputs && f->leaf_width != 1)
        return XAI_E_SIZE;
    if (f->split_rule != XAI_LEFT_IF_LE && f->split_rule != XAI_LEFT_IF_LT)
        return XAI_E_UNSUPPORTED;
    if (f->aggregate != XAI_AGGREGATE_SUM && f->aggregate != XAI_AGGREGATE_MEAN)
        return XAI_E_UNSUPPORTED;
    if (f->tree_offset[0] != 0 || f->tree_offset[f->n_trees] != f->n_nodes) /* sizes >= 1 below: increasing */
        return XAI_E_SIZE;
    if (!(f->zero_threshold >= 0.0) || isinf(f->zero_threshold))
        return XAI_E_VALUE;
    if (f->n_categories != NULL) {
        if (f->cat_start == NULL || f->n_cat_words < 0 || (f->cat_bits == NULL && f->n_cat_words > 0))
            return XAI_E_SIZE;
        for (int32_t j = 0; j < f->n_features; j++)
            if (f->n_categories[j] < 0 || f->n_categories[j] > XAI_MAX_CATEGORIES)
                return XAI_E_SIZE;
    }
    for (int32_t o = 0; o < f->n_outputs; o++)
        if (!isfinite(f->base_score[o]))
            return XAI_E_VALUE;
    int64_t largest = 0;
    int64_t first_output_trees = 0;     /* trees adding to output 0 (a mean needs equal counts) */
    for (int32_t t = 0; t < f->n_trees; t++) {
        const int64_t size = f->tree_offset[t + 1] - f->tree_offset[t];
        if (size < 1 || size > INT32_MAX) {
            xai_error_at(t, -1, -1);
            return XAI_E_SIZE;
        }
        if (size > largest)
            largest = size;
        const int32_t target = f->tree_target[t];
        if (target < 0 || (int64_t)target + f->leaf_width > f->n_outputs) {
            xai_error_at(t, -1, -1);
            return XAI_E_INDEX;
        }
        first_output_trees += target == 0;
    }
    if (f->aggregate == XAI_AGGREGATE_MEAN && first_output_trees * f->n_outputs != (int64_t)f->n_trees * f->leaf_width)
        return XAI_E_STRUCTURE;      /* the outputs of a mean do not all get the same number of trees */
    uint8_t *seen = xai_alloc(largest, 1);
    int32_t *stack_node = xai_alloc(largest + 2, sizeof(int32_t));
    int32_t *stack_depth = xai_alloc(largest + 2, sizeof(int32_t));
    int status = (seen && stack_node && stack_depth) ? XAI_OK : XAI_E_NOMEM;
    for (int32_t t = 0; t < f->n_trees && status == XAI_OK; t++) {
        memset(seen, 0, (size_t)(f->tree_offset[t + 1] - f->tree_offset[t]));
        status = check_tree(f, t, seen, stack_node, stack_depth);
    }
    free(seen);
    free(stack_node);
    free(stack_depth);
    return status == XAI_OK ? check_ranks(f) : status;
}

int xai_validate(const xai_forest *f)
{
    xai_error_clear();
    return xai_error_return(validate(f));
}

int xai_predict(const xai_forest *f, const double *X, int64_t n_rows, double *out)
{
    xai_error_clear();
    if (f == NULL || X == NULL || out == NULL || n_rows < 0)
        return xai_error_return(XAI_E_SIZE);
    const double scale = f->aggregate == XAI_AGGREGATE_MEAN ? xai_mean_scale(f) : 1.0;
    for (int64_t i = 0; i < n_rows; i++) {
        const double *x = X + i * f->n_features;
        double *y = out + i * f->n_outputs;
        for (int32_t o = 0; o < f->n_outputs; o++)
            y[o] = 0.0;
        for (int32_t t = 0; t < f->n_trees; t++) {
            const int64_t leaf = xai_leaf_of(f, t, x);
            for (int32_t o = 0; o < f->leaf_width; o++)
                y[f->tree_target[t] + o] += f->value[leaf * f->leaf_width + o];
        }
        for (int32_t o = 0; o < f->n_outputs; o++)
            y[o] = f->base_score[o] + scale * y[o];
    }
    return xai_error_return(XAI_OK);
}

int xai_reachable_leaves(const xai_forest *f, const double *X, int64_t n_rows, const uint8_t *mask, int64_t *counts)
{
    xai_error_clear();
    if (f == NULL || X == NULL || mask == NULL || counts == NULL || n_rows < 0 || f->max_depth < 0)
        return xai_error_return(XAI_E_SIZE);
    /* a depth-first walk: each level pushes at most two children and pops one */
    int64_t *stack = malloc((size_t)(2 * (int64_t)f->max_depth + 2) * sizeof(int64_t));
    if (stack == NULL)
        return xai_error_return(XAI_E_NOMEM);
    for (int64_t i = 0; i < n_rows; i++) {
        const double *x = X + i * f->n_features;
        const uint8_t *free_feature = mask + i * f->n_features;
        for (int32_t t = 0; t < f->n_trees; t++) {
            const int64_t base = f->tree_offset[t];
            int64_t top = 0, leaves = 0;
            stack[top++] = base;
            while (top > 0) {
                const int64_t g = stack[--top];
                if (f->left_child[g] < 0) {
                    leaves++;
                    continue;
                }
                const int32_t j = f->feature[g];
                if (free_feature[j]) {
                    stack[top++] = base + f->left_child[g];
                    stack[top++] = base + f->right_child[g];
                } else {
                    stack[top++] = base + (xai_goes_left(f, g, x[j]) ? f->left_child[g] : f->right_child[g]);
                }
            }
            counts[i * f->n_trees + t] = leaves;
        }
    }
    free(stack);
    return xai_error_return(XAI_OK);
}
