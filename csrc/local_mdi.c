/* local_mdi.c -- per-sample impurity-decrease importances (Sutera et al., Definition 1):
 * for each tree, every node on the row's path adds impurity(node) - impurity(child followed)
 * to the node's split feature; trees are combined with weights w(i, t) (default 1 / T). */
#include <stddef.h>

#include "xai.h"

int xai_local_mdi(const xai_forest *f, const double *X, int64_t n_rows,
                  const double *tree_weight, double *out)
{
    if (f == NULL || X == NULL || out == NULL || n_rows < 0)
        return XAI_E_SIZE;
    if (f->impurity == NULL)
        return XAI_E_UNSUPPORTED;
    const double plain = 1.0 / f->n_trees;
    for (int64_t i = 0; i < n_rows; i++) {
        const double *x = X + i * f->n_features;
        double *row = out + i * f->n_features;
        for (int32_t j = 0; j < f->n_features; j++)
            row[j] = 0.0;
        for (int32_t t = 0; t < f->n_trees; t++) {
            const double w = tree_weight ? tree_weight[i * f->n_trees + t] : plain;
            if (w == 0.0)
                continue;
            const int64_t base = f->tree_offset[t];
            int64_t g = base;
            while (f->left_child[g] >= 0) {
                const int32_t j = f->feature[g];
                const int64_t child = base + (xai_goes_left(f, g, x[j]) ? f->left_child[g] : f->right_child[g]);
                row[j] += w * (f->impurity[g] - f->impurity[child]);
                g = child;
            }
        }
    }
    return XAI_OK;
}
