/*
 * TEMPLATE: when adding an ONNX operator to the importer, copy what you
 * need from here. This file is not compiled.
 *
 * 1. A row in the table of ops.c, in strcmp order of op_type:
 *
 *        {"MyOp", "alpha mode", onnx_myop, fold_myop, 0},
 *
 *    The attribute list is every attribute the operator reads; any other
 *    is refused before the handler runs, naming it. A handler of NULL
 *    means the operator is read only when its inputs are constants
 *    (folded); a fold of NULL means it is never folded.
 * 2. The handler (in the ops_*.c file of its family), declared in
 *    onnx_internal.h, and/or the fold (fold.c).
 * 3. libmemest/README.md's ONNX section names the operator (test_onnx
 *    checks it), a fixture in scripts/make-onnx-test-models.py computes
 *    it with PyTorch, and tests/memest/test_onnx.c checks the layers, the
 *    outputs against PyTorch and each refusal's message.
 */
#include "onnx/onnx_internal.h"

#include <string.h>

/* The handler: the node's inputs are computed tensors (and constants such
 * as weights). Read, check, then make layers. */
int onnx_myop(struct imp *I, size_t node)
{
    const Onnx__NodeProto *n = I->g->node[node];
    const struct cval *w = NULL;
    char mode_buf[32];
    const char *mode = attr_str(n, "mode", "linear", mode_buf,
                                sizeof mode_buf);
    double alpha;
    size_t x = 0;
    int st;

    /* the activation input (a graph input becomes a model input), a
     * constant operand (an initializer, a Constant, a folded value), the
     * attributes with their defaults */
    if ((st = get_act(I, node, 0, &x)) ||
        (st = need_rank(I, node, &I->v[x], 4, "NxCxHxW")) ||
        (st = get_const(I, node, 1, "weight", &w)) ||
        (st = attr_float(I, node, "alpha", 0.01, &alpha))) {
        return st;
    }
    /* every value the layer cannot take is refused, naming the attribute
     * and the value: "node 'n' (MyOp): mode 'cubic' is not supported" */
    if (strcmp(mode, "linear") != 0) {
        return node_fail(I, node, MEMEST_E_PARSE,
                         "mode '%s' is not supported (only 'linear')", mode);
    }
    /* one layer of an existing kind with the input's shape; a layer with
     * arguments fills I->L[l].args and its weights with push_weight() */
    return emit_simple(I, node, "identity", "myop", x, I->v[x].rank,
                       I->v[x].dim);
}

/* The fold: every input is a constant. Make the output with the helpers
 * of fold.h (fold_new(), fold_new_like(), fold_move(), fold_set_int()),
 * which refuse a tensor over MAX_FOLD_ELEMENTS before allocating; carry
 * the batch terms (struct cval's nb) or refuse what would depend on the
 * batch's value. */
int fold_myop(struct imp *I, size_t node, struct cval *c)
{
    const struct cval *x;
    int st = get_const(I, node, 0, "input", &x);
    if (st != MEMEST_OK) {
        return st;
    }
    (void)c;
    return node_fail(I, node, MEMEST_E_PARSE, "not written yet");
}
