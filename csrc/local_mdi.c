/* local_mdi.c -- per-sample impurity-decrease importances (Sutera et al., Definition 1):
 * for each tree, every node on the row's path adds impurity(node) - impurity(child followed)
 * to the node's split feature; trees are combined with weights w(i, t) (default 1 / T).
 *
 * Rows are processed in blocks, tree by tree, so that one tree's nodes stay in cache while
 * the block's rows walk it; each block is rounded to the model's input precision once. */
#include <stdlib.h>

#include "xai.h"

enum { BLOCK_ROWS = 64 };

static int local_mdi(const xai_forest *f, const double *X, int64_t n_rows,
                     const double *tree_weight, double *out)
{
    if (f == NULL || X == NULL || out == NULL || n_rows < 0)
        return XAI_E_SIZE;
    if (f->impurity == NULL)
        return XAI_E_UNSUPPORTED;
    const int32_t d = f->n_features;
    double *block = xai_alloc((int64_t)BLOCK_ROWS * d, sizeof(double));
    if (block == NULL)
        return XAI_E_NOMEM;
    const double plain = 1.0 / f->n_trees;
    for (int64_t start = 0; start < n_rows; start += BLOCK_ROWS) {
        const int64_t n_block = n_rows - start < BLOCK_ROWS ? n_rows - start : BLOCK_ROWS;
        for (int64_t k = 0; k < n_block * d; k++) {
            block[k] = xai_input_value(f, X[start * d + k]);
            out[start * d + k] = 0.0;
        }
        for (int32_t t = 0; t < f->n_trees; t++) {
            const int64_t base = f->tree_offset[t];
            for (int64_t r = 0; r < n_block; r++) {
                const int64_t i = start + r;
                const double w = tree_weight ? tree_weight[i * f->n_trees + t] : plain;
                if (w == 0.0)
                    continue;
                const double *x = block + r * d;
                double *row = out + i * d;
                int64_t g = base;
                while (f->left_child[g] >= 0) {
                    const int32_t j = f->feature[g];
                    const int64_t child = base + (xai_goes_left_value(f, g, x[j]) ? f->left_child[g] : f->right_child[g]);
                    row[j] += w * (f->impurity[g] - f->impurity[child]);
                    g = child;
                }
            }
        }
    }
    free(block);
    return XAI_OK;
}

int xai_local_mdi(const xai_forest *f, const double *X, int64_t n_rows,
                  const double *tree_weight, double *out)
{
    xai_error_clear();
    return xai_error_return(local_mdi(f, X, n_rows, tree_weight, out));
}
