/*
 * The model parser: every error with its status, line, column and a
 * message fragment (columns counted by hand in the comments), presets,
 * files, comments and whitespace, overflowing models, and the round trip
 * through memest_model_write().
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgefit/memest.h"

struct err_case {
    const char *text;
    int status;
    int line;
    int column;
    const char *fragment;
};

static const struct err_case errors[] = {
    /* unknown kind */
    {"input 4\nlinear 3\n", MEMEST_E_PARSE, 2, 1,
     "unknown layer kind 'linear'"},
    /* unknown key: "dense 3 k=2", k at column 9 */
    {"input 4\ndense 3 k=2\n", MEMEST_E_PARSE, 2, 9,
     "unknown key 'k' for dense"},
    {"input 1x8x8\nmaxpool k=2 g=2\n", MEMEST_E_PARSE, 2, 13,
     "unknown key 'g' for maxpool"},
    {"input 4  # x\n\n  dense 3 bogus=1\n", MEMEST_E_PARSE, 3, 11,
     "unknown key 'bogus'"},
    /* missing width */
    {"input 4\ndense act=relu\n", MEMEST_E_PARSE, 2, 1, "missing width"},
    {"input 1x8x8\nconv2d k=3\n", MEMEST_E_PARSE, 2, 1, "missing width"},
    /* bad numbers: non-numeric, zero, negative, too large */
    {"input 4\ndense abc\n", MEMEST_E_PARSE, 2, 7, "not a whole number"},
    {"input 4\ndense 3x\n", MEMEST_E_PARSE, 2, 7, "not a whole number"},
    {"input 4\ndense +3\n", MEMEST_E_PARSE, 2, 7, "not a whole number"},
    {"input 4\ndense 0\n", MEMEST_E_RANGE, 2, 7, "at least 1"},
    {"input 1x8x8\nconv2d 4 k=-3\n", MEMEST_E_RANGE, 2, 12,
     "must be positive"},
    {"input 1x8x8\nconv2d 4 k=3 p=-1\n", MEMEST_E_RANGE, 2, 16,
     "must be zero or positive"},
    {"input 1x8x8\nconv2d 4 k=3 s=0\n", MEMEST_E_RANGE, 2, 16,
     "stride s must be at least 1"},
    {"input 99999999999999999999\n", MEMEST_E_RANGE, 1, 7, "too large"},
    {"input 1x0x8\n", MEMEST_E_RANGE, 1, 9, "at least 1"},
    {"input 1x8x8\nconv2d 3 k=\n", MEMEST_E_PARSE, 2, 12,
     "missing value for kernel size k"},
    /* kernel larger than the padded input: 4 + 2*1 < 7 */
    {"input 1x4x4\nconv2d 2 k=7 p=1\n", MEMEST_E_SHAPE, 2, 12,
     "larger than the padded input"},
    {"input 1x4x9\nmaxpool k=5\n", MEMEST_E_SHAPE, 2, 11,
     "larger than the padded input height 4"},
    /* channels not divisible by groups */
    {"input 3x8x8\nconv2d 4 k=3 g=2\n", MEMEST_E_SHAPE, 2, 16,
     "input channels 3 are not divisible by groups g=2"},
    {"input 4x8x8\nconv2d 6 k=3 g=4\n", MEMEST_E_SHAPE, 2, 16,
     "output channels 6 are not divisible by groups g=4"},
    /* dense on a CxHxW input without flatten */
    {"input 1x4x4\ndense 3\n", MEMEST_E_SHAPE, 2, 1, "add a 'flatten'"},
    {"input 1x8x8\nconv2d 2 k=3\nrelu\ndense 3\n", MEMEST_E_SHAPE, 4, 1,
     "add a 'flatten'"},
    {"input 16\nconv2d 4 k=3\n", MEMEST_E_SHAPE, 2, 1,
     "needs a CxHxW input"},
    /* empty models */
    {"", MEMEST_E_PARSE, 1, 1, "empty model"},
    {"# only a comment\n\n   \n", MEMEST_E_PARSE, 1, 1, "empty model"},
    {"input 4\n", MEMEST_E_PARSE, 1, 1, "empty model: no layers"},
    {"name x\n\ninput 4 # hi\n", MEMEST_E_PARSE, 3, 1,
     "empty model: no layers"},
    /* duplicate and missing input */
    {"input 4\ninput 5\ndense 2\n", MEMEST_E_PARSE, 2, 1,
     "duplicate 'input' line (first on line 1)"},
    {"dense 3\n", MEMEST_E_PARSE, 1, 1, "missing input"},
    {"name m\n  conv2d 3 k=1\n", MEMEST_E_PARSE, 2, 3, "missing input"},
    {"input\n", MEMEST_E_PARSE, 1, 1, "missing input shape"},
    /* other malformed lines */
    /* a 2-D input is a sequence T x D (dense runs over D); an image is
     * flattened first */
    {"input 3x28x28\ndense 3\n", MEMEST_E_SHAPE, 2, 1,
     "dense needs a feature vector or a sequence T x D but its input is "
     "3x28x28"},
    /* graphs: "add in=a,b" has b at column 10 */
    {"input 1x8x8\nconv2d 4 k=3 p=1 name=a\nconv2d 8 k=3 p=1 in=input "
     "name=b\nadd in=a,b\n",
     MEMEST_E_SHAPE, 4, 10, "add: input 'a' is 4x8x8 and 'b' is 8x8x8, which do not broadcast"},
    {"input 4\ndense 3 in=foo\n", MEMEST_E_PARSE, 2, 12,
     "unknown input 'foo'"},
    /* element-wise binary: shapes that do not broadcast (b at column
     * 10), three inputs, one without a constant, bad constants */
    {"input 4x8x8\nconv2d 3 k=1 name=a\nglobalavgpool in=input name=b\n"
     "mul in=a,b\n",
     MEMEST_E_SHAPE, 4, 10, "mul: input 'a' is 3x8x8 and 'b' is 4x1x1, "
     "which do not broadcast"},
    {"input 8\ndense 3 name=a\nsub in=a,input\n", MEMEST_E_SHAPE, 3, 10,
     "sub: input 'a' is 3 and 'input' is 8, which do not broadcast"},
    {"input 4\nrelu name=a\ndiv in=a,a,a\n", MEMEST_E_SHAPE, 3, 8,
     "div reads two inputs (or one and scalar=), got 3"},
    {"input 4\nrelu name=a\nsub in=a\n", MEMEST_E_PARSE, 3, 8,
     "sub needs two or more inputs, got one"},
    {"input 4\nmul scalar=abc\n", MEMEST_E_PARSE, 2, 12,
     "scalar: 'abc' is not a number"},
    {"input 4\nmul scalar=1 scalar_left=2\n", MEMEST_E_PARSE, 2, 14,
     "scalar= and scalar_left= exclude each other"},
    {"input 4\ndiv scalar_left=inf\n", MEMEST_E_RANGE, 2, 17,
     "scalar_left must be a finite number"},
    {"input 4\nmul scalar=1e39\n", MEMEST_E_RANGE, 2, 12,
     "scalar must be a finite number within float's range"},
    {"input 4\nrelu name=a\nmul in=a,input scalar=2\n", MEMEST_E_PARSE, 3,
     8, "mul reads one input, got 2"},
    {"input 4\nconv2d 3 k=1 scalar=2\n", MEMEST_E_PARSE, 2, 14,
     "unknown key 'scalar' for conv2d"},
    /* reading a layer below: the order written is the order run */
    {"input 4\ndense 3 in=d2 name=d1\ndense 3 name=d2\n", MEMEST_E_PARSE, 2,
     12, "earlier layer"},
    {"input 4\ndense 3 name=a\ndense 3 in=input name=b\n", MEMEST_E_SHAPE,
     2, 1, "'a' is read by no layer"},
    {"input 4\nadd in=input\n", MEMEST_E_PARSE, 2, 8, "two or more"},
    {"input 4\nadd\n", MEMEST_E_PARSE, 2, 1, "two or more inputs"},
    {"input 4\ndense 3 in=input,input\n", MEMEST_E_PARSE, 2, 12,
     "reads one input"},
    {"input 1x8x8\nmaxpool k=2 name=p\nconcat in=input,p\n", MEMEST_E_SHAPE,
     3, 17, "concat: input 'p' is 1x4x4"},
    {"input 2x4x6\nslice axis=w end=3 name=s\nconcat in=input,s axis=h\n",
     MEMEST_E_SHAPE, 3, 17, "concat: input 's' is 2x4x3"},
    {"input 8\nconcat in=input,input axis=h\n", MEMEST_E_SHAPE, 2, 28,
     "concat: axis=h needs a tensor of 2 dimensions per sample"},
    {"input 8\nconcat in=input,input axis=x\n", MEMEST_E_PARSE, 2, 28,
     "axis must be c, h or w"},
    {"input 1x8x8\nconv2d 2 k=3 p=1,1,1\n", MEMEST_E_PARSE, 2, 16,
     "has 3 values"},
    {"input 1x8x8\nconv2d 2 k=3x \n", MEMEST_E_PARSE, 2, 14,
     "missing value"},
    {"input 4\nbatchnorm eps=0\n", MEMEST_E_RANGE, 2, 15, "eps must be"},
    {"input 4\nbatchnorm eps=x\n", MEMEST_E_PARSE, 2, 15, "not a number"},
    {"input 4\ndense 2\ninput 3 name=x\n", MEMEST_E_PARSE, 3, 1,
     "after the first layer"},
    {"input 4 name=a\ninput 4 name=b\ndense 2\n", MEMEST_E_PARSE, 3, 1,
     "has 2 inputs"},
    {"input 4 name=a\ninput 4 name=a\ndense 2 in=a\n", MEMEST_E_PARSE, 2,
     14, "duplicate name 'a'"},
    {"input 4\ninput 4\n", MEMEST_E_PARSE, 2, 1, "several inputs"},
    {"input 4 name=a\ninput 4 name=b\ndense 2 in=a\n", MEMEST_E_SHAPE, 2,
     1, "input 'b' is read by no layer"},
    {"input 1x8x8\nmaxpool k=2 p=2\n", MEMEST_E_SHAPE, 2, 15,
     "only padding"},
    {"input 4\ndense 3 name=a,b\n", MEMEST_E_PARSE, 2, 14, "contains ','"},
    {"input 1x8x8\navgpool k=2 count_pad=maybe\n", MEMEST_E_PARSE, 2, 23,
     "count_pad must be yes or no"},
    /* data movement: slice and shuffle */
    {"input 4x6x6\nslice axis=d end=2\n", MEMEST_E_PARSE, 2, 12,
     "axis must be c, h or w, or 0, 1 or 2 (a per-sample axis), got 'd'"},
    {"input 4x6x6\nslice axis=c begin=2 end=9\n", MEMEST_E_SHAPE, 2, 26,
     "end=9 is past the 4 elements of axis c"},
    {"input 4x6x6\nslice axis=h begin=3 end=3\n", MEMEST_E_SHAPE, 2, 20,
     "begin=3 must be below end=3"},
    {"input 8\nslice axis=h end=2\n", MEMEST_E_SHAPE, 2, 12,
     "axis=h needs a CxHxW input"},
    {"input 4x6x6\nslice axis=c\n", MEMEST_E_PARSE, 2, 1,
     "missing end: slice needs end="},
    {"input 4x6x6\nslice axis=c end=0\n", MEMEST_E_RANGE, 2, 18,
     "end must be at least 1"},
    {"input 6x4x4\nshuffle g=4\n", MEMEST_E_SHAPE, 2, 11,
     "6 channels do not split into g=4"},
    {"input 6x4x4\nshuffle\n", MEMEST_E_PARSE, 2, 1,
     "missing groups: shuffle needs g="},
    {"input 6\nshuffle g=2\n", MEMEST_E_SHAPE, 2, 1, "CxHxW"},
    {"input 6x2x2\nreshape shape=5x5\n", MEMEST_E_SHAPE, 2, 15,
     "shape=5x5 has 25 elements but 'input' (6x2x2) has 24"},
    {"input 6x2x2\nreshape\n", MEMEST_E_PARSE, 2, 1,
     "missing target shape: reshape needs shape="},
    {"input 4\nrelu act=relu\n", MEMEST_E_PARSE, 2, 6,
     "unknown key 'act' for relu"},
    {"input 1x8x8\nmaxpool k=2 ceil=maybe\n", MEMEST_E_PARSE, 2, 18,
     "ceil must be yes or no"},
    {"input 1x8x8\nconv2d 2 k=3 d=0\n", MEMEST_E_RANGE, 2, 16,
     "dilation d"},
    {"input 1x8x8\nconv2d 2 k=3 d=4\n", MEMEST_E_SHAPE, 2, 16,
     "the dilated kernel spans 9x9 cells (k=3x3 d=4x4)"},
    {"input 1x8x8\nmaxpool k=2 d=2\n", MEMEST_E_PARSE, 2, 13,
     "unknown key 'd' for maxpool"},
    {"input 1x8x8\npad value=1\n", MEMEST_E_PARSE, 2, 1,
     "missing padding: pad needs p="},
    {"input 1x8x8\npad p=1 value=inf\n", MEMEST_E_RANGE, 2, 15,
     "value must be a finite number within float's range"},
    {"input 8\npad p=1\n", MEMEST_E_SHAPE, 2, 1, "CxHxW"},
    {"input 1x2x3x4\n", MEMEST_E_PARSE, 1, 7, "more than three"},
    {"input 1xx3\n", MEMEST_E_PARSE, 1, 9, "empty dimension"},
    {"input 4 5\n", MEMEST_E_PARSE, 1, 9, "unexpected '5'"},
    {"input 4\ndense 3 7\n", MEMEST_E_PARSE, 2, 9, "unexpected '7'"},
    {"input 4\nflatten 3\n", MEMEST_E_PARSE, 2, 9, "unexpected '3'"},
    {"input 4\ndense 3 act=relu act=gelu\n", MEMEST_E_PARSE, 2, 18,
     "duplicate key 'act'"},
    {"input 4\ndense 3 act=swish\n", MEMEST_E_PARSE, 2, 13,
     "unknown activation 'swish'"},
    /* the activations' parameters: each under its activation's word */
    {"input 4\nrelu alpha=0.1\n", MEMEST_E_PARSE, 2, 6,
     "alpha= is not a parameter of relu"},
    {"input 4\nleakyrelu min=0\n", MEMEST_E_PARSE, 2, 11,
     "min= is not a parameter of leakyrelu"},
    {"input 4\nclip alpha=0\n", MEMEST_E_PARSE, 2, 6,
     "alpha= is not a parameter of clip"},
    {"input 4\nhardswish beta=0.5\n", MEMEST_E_PARSE, 2, 11,
     "beta= is not a parameter of hardswish"},
    {"input 4\ndense 3 alpha=0.2\n", MEMEST_E_PARSE, 2, 9,
     "alpha= is not a parameter of none"},
    {"input 4\ndense 3 alpha=0.2 act=elu alpha=1\n", MEMEST_E_PARSE, 2, 27,
     "duplicate key 'alpha'"},
    {"input 4\nleakyrelu alpha=nan\n", MEMEST_E_PARSE, 2, 17,
     "alpha: 'nan' is not a number"},
    {"input 4\nclip min=x\n", MEMEST_E_PARSE, 2, 10,
     "min: 'x' is not a number"},
    {"input 4\nclip min=1e999\n", MEMEST_E_RANGE, 2, 10, "out of range"},
    {"input 4\nelu alpha=inf\n", MEMEST_E_RANGE, 2, 5,
     "elu: alpha and beta must be finite"},
    {"input 4\nhardsigmoid beta=1e300\n", MEMEST_E_RANGE, 2, 13,
     "within float's range"},
    {"input 4\ndense 3 act=clip lo=0\n", MEMEST_E_PARSE, 2, 18,
     "unknown key 'lo'"},
    {"input 4\ndense 3 bias=maybe\n", MEMEST_E_PARSE, 2, 14,
     "bias must be yes or no"},
    {"input 4\ndense 3 name=input\n", MEMEST_E_PARSE, 2, 14, "reserved"},
    {"input 4\ndense 3 name=\n", MEMEST_E_PARSE, 2, 14,
     "missing value for name"},
    {"name a\nname b\n", MEMEST_E_PARSE, 2, 1, "duplicate 'name'"},
    {"name\n", MEMEST_E_PARSE, 1, 1, "missing model name"},
    {"input 4\ndense 3 name=a\ndense 2 name=a\n", MEMEST_E_PARSE, 3, 14,
     "duplicate layer name 'a' (first used on line 2)"},
    {"input 4\ndense 3\ndense 2 name=dense1\n", MEMEST_E_PARSE, 3, 14,
     "duplicate layer name 'dense1'"},
    {"input 4\ndense 3 name=dense2\ndense 2\n", MEMEST_E_PARSE, 3, 1,
     "automatic name 'dense2' is already used on line 2"},
    {"input 4\r\ndense 3 k=1\r\n", MEMEST_E_PARSE, 2, 9, "unknown key"},
    {"input\t4\n\tdense\t3\tact=nope\n", MEMEST_E_PARSE, 2, 14,
     "unknown activation"},
    /* text that is not UTF-8, at the column of the bad sequence */
    {"input 4\ndense 3 name=caf\xe9\n", MEMEST_E_PARSE, 2, 17,
     "invalid UTF-8 (byte 0xE9)"},
    {"name \xc0\xaf\ninput 4\ndense 3\n", MEMEST_E_PARSE, 1, 6,
     "invalid UTF-8 (byte 0xC0)"}, /* overlong '/' */
    {"name \xe0\x80\xaf\ninput 4\ndense 3\n", MEMEST_E_PARSE, 1, 6,
     "invalid UTF-8 (byte 0xE0)"}, /* overlong, three bytes */
    {"input 4\ndense 3 # \xed\xb0\x80\n", MEMEST_E_PARSE, 2, 11,
     "invalid UTF-8 (byte 0xED)"}, /* a surrogate, even in a comment */
    {"input 4\ndense 3 name=a\xe2\x82\n", MEMEST_E_PARSE, 2, 15,
     "invalid UTF-8 (byte 0xE2)"}, /* cut short by the line end */
    {"input 4\ndense 3 name=\xf0\x9f\x98", MEMEST_E_PARSE, 2, 14,
     "invalid UTF-8 (byte 0xF0)"}, /* cut short by the end */
    {"input 4\n\x80" "dense 3\n", MEMEST_E_PARSE, 2, 1,
     "invalid UTF-8 (byte 0x80)"},
    /* a byte-order mark is skipped only at the very start */
    {"input 4\n\xef\xbb\xbf" "dense 3\n", MEMEST_E_PARSE, 2, 1,
     "unknown layer kind"},
    {"\xef\xbb\xbfinput 4\ndense 3 k=1\n", MEMEST_E_PARSE, 2, 9,
     "unknown key"},
    {"\xef\xbb\xbfinput 4 5\n", MEMEST_E_PARSE, 1, 9, "unexpected '5'"},
    /* tensors larger than any model's (the ONNX importer's limit of
     * 2147483647 elements per sample, one limit for both): refused before
     * any count could overflow */
    {"input 4294967296\ndense 4294967296\n", MEMEST_E_RANGE, 1, 7,
     "4294967296 elements per sample (1 to 2147483647"},
    {"input 4294967296x4294967296x2\ndense 1\n", MEMEST_E_OVERFLOW, 1, 7,
     "64 bits"},
    {"input 1x4294967295x4294967295\nconv2d 4 k=1\n", MEMEST_E_RANGE, 1,
     7, "(1 to 2147483647"},
    {"input 9223372036854775808\nrelu\n", MEMEST_E_RANGE, 1, 7,
     "(1 to 2147483647"},
    {"input 4000000000\ndense 10\n", MEMEST_E_RANGE, 1, 7,
     "input 4000000000 has 4000000000 elements per sample"},
    {"input 784\ndense 4000000000\n", MEMEST_E_RANGE, 2, 1,
     "dense: its output 4000000000 has 4000000000 elements per sample"},
    /* weights the largest ONNX file could not hold: 1e10 in one layer
     * (over the 2^31 - 1 elements of a tensor), and 2 x 1.6e9 in a model
     * (over its 2^31 - 1 parameters), refused at the layer that crosses */
    {"input 100000\ndense 100000\n", MEMEST_E_RANGE, 2, 1,
     "dense: its weight has 10000000000 elements (1 to 2147483647"},
    {"input 40000\ndense 40000\ndense 40000\n", MEMEST_E_RANGE, 3, 1,
     "dense2: the model has 3200080000 parameters up to here (at most "
     "2147483647"},
    {"input 65536x65536x65536\nflatten\ndense 2\n", MEMEST_E_RANGE, 1, 7,
     "281474976710656 elements per sample (1 to 2147483647"},
    {"input 1x46341x46341\nflatten\ndense 2\n", MEMEST_E_RANGE, 1, 7,
     "2147488281 elements"},
    {"input 1x2x536870912\nconv2d 4 k=1\nflatten\ndense 2\n",
     MEMEST_E_RANGE, 2, 1, "conv2d: its output 4x2x536870912"},
    {"input 1x8x8\nconv2d 8 k=3 p=9223372036854775807\n",
     MEMEST_E_OVERFLOW, 2, 16, "padding"},
    /* sequence operators: "softmax axis=2", the value at column 14 */
    {"input 5x8\nsoftmax axis=2\n", MEMEST_E_SHAPE, 2, 14,
     "softmax: axis 2 is outside its input 5x8 (axes 0 to 1)"},
    {"input 5x8\nlogsoftmax axis=3\n", MEMEST_E_PARSE, 2, 17,
     "axis must be c, h or w, or 0, 1 or 2"},
    {"input 5x8\nrelu axis=1\n", MEMEST_E_PARSE, 2, 11,
     "relu takes no axis="},
    {"input 8\nlayernorm axis=1\n", MEMEST_E_SHAPE, 2, 16,
     "layernorm: axis 1 is outside its input 8"},
    {"input 5x8\nlayernorm eps=0\n", MEMEST_E_RANGE, 2, 15,
     "eps must be in (0, 1]"},
    {"input 5x8\nlayernorm k=3\n", MEMEST_E_PARSE, 2, 11,
     "unknown key 'k' for layernorm"},
    {"input 40\nclstoken\n", MEMEST_E_SHAPE, 2, 1,
     "clstoken needs a sequence T x D (e.g. 'input 49x10') but its input "
     "is 40"},
    {"input 2x5x8\nposembed\n", MEMEST_E_SHAPE, 2, 1,
     "posembed needs a sequence T x D"},
    {"input 5x8\nclstoken bias=no\n", MEMEST_E_PARSE, 2, 10,
     "unknown key 'bias' for clstoken"},
    /* attention's operators */
    {"input 7x10\nattention heads=3\n", MEMEST_E_SHAPE, 2, 17,
     "10 features do not split into heads=3"},
    {"input 7x10\nattention\n", MEMEST_E_PARSE, 2, 1,
     "missing head count"},
    {"input 2x7x10\nattention heads=2\n", MEMEST_E_SHAPE, 2, 1,
     "attention needs a sequence T x D"},
    {"input 7x10\ntranspose perm=1,0,2\n", MEMEST_E_SHAPE, 2, 16,
     "perm= lists 3 axes but 'input' (7x10) has 2"},
    {"input 7x10\ntranspose perm=1,1\n", MEMEST_E_SHAPE, 2, 16,
     "each axis 0 to 1 once"},
    {"input 7x10\ntranspose perm=1,\n", MEMEST_E_PARSE, 2, 16,
     "perm must list 2 or 3 axes"},
    {"input 7x10\ntranspose\n", MEMEST_E_PARSE, 2, 1,
     "missing axis permutation"},
    {"input 7x10\ntranspose perm=1,0 name=t\nmatmul in=input,input\n",
     MEMEST_E_SHAPE, 3, 17, "the last dimension of the first (10) must "
     "equal the second-to-last of the second (7)"},
    {"input 7x10\nreshape shape=2x7x5 name=a\nreshape shape=7x5x2 "
     "in=input name=b\nmatmul in=a,b\n",
     MEMEST_E_SHAPE, 4, 13, "leading dimensions (2 and 7) do not "
     "broadcast"},
    {"input 70\nmatmul in=input,input\n", MEMEST_E_SHAPE, 2, 11,
     "each operand needs 2 (M x K) or 3"},
    {"input 7x10\nmatmul in=input\n", MEMEST_E_PARSE, 2, 11,
     "matmul needs two or more inputs"},
    /* lstm and gru: a sequence T x D, their keys' words */
    {"input 10\nlstm 4\n", MEMEST_E_SHAPE, 2, 1,
     "lstm needs a sequence T x D (steps x features) but its input is 10"},
    {"input 2x3x4\ngru 4\n", MEMEST_E_SHAPE, 2, 1,
     "gru needs a sequence T x D"},
    {"input 5x3\nlstm 4 dir=both\n", MEMEST_E_PARSE, 2, 12,
     "dir must be forward, reverse or bidirectional, got 'both'"},
    {"input 5x3\nlstm 4 seq=maybe\n", MEMEST_E_PARSE, 2, 12,
     "seq must be yes or no"},
    {"input 5x3\nlstm 4 lbr=no\n", MEMEST_E_PARSE, 2, 8,
     "unknown key 'lbr' for lstm"},
    {"input 5x3\ngru dir=forward\n", MEMEST_E_PARSE, 2, 1,
     "missing width: gru needs the number of hidden units first"},
};

static void check_error(const char *where, int st,
                        const struct memest_diag *d, const struct err_case *e)
{
    if (st != e->status || d->line != e->line || d->column != e->column ||
        strstr(d->message, e->fragment) == NULL) {
        fail_msg("%s: got status %d at %d:%d '%s'; want %d at %d:%d "
                 "containing '%s'",
                 where, st, d->line, d->column, d->message, e->status,
                 e->line, e->column, e->fragment);
    }
}

static void test_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        const struct err_case *e = &errors[i];
        memest_model *m = (memest_model *)&m; /* must be reset to NULL */
        struct memest_diag d;
        char where[64];
        int st = memest_model_parse(e->text, &m, &d);
        snprintf(where, sizeof where, "case %zu", i);
        check_error(where, st, &d, e);
        assert_null(m);
        assert_string_equal(d.source, "<string>");
        /* the same without a diag */
        assert_int_equal(memest_model_parse(e->text, &m, NULL), e->status);
    }
}

static void test_diag_format(void **state)
{
    memest_model *m = NULL;
    struct memest_diag d;
    char buf[512];
    (void)state;
    assert_int_equal(memest_model_parse("input 4\nlinear 3\n", &m, &d),
                     MEMEST_E_PARSE);
    memest_diag_format(&d, buf, sizeof buf);
    assert_int_equal(strncmp(buf, "<string>:2:1: unknown layer kind", 32),
                     0);
    d.line = 0;
    memest_diag_format(&d, buf, sizeof buf);
    assert_int_equal(strncmp(buf, "<string>: unknown", 17), 0);
    assert_int_equal(memest_diag_format(&d, buf, 5), strlen(d.source) + 2 +
                                                         strlen(d.message));
    assert_string_equal(buf, "<str");
}

static void test_accepts(void **state)
{
    memest_model *m = NULL;
    struct memest_diag d;
    (void)state;

    /* a byte-order mark, UTF-8 names */
    assert_int_equal(memest_model_parse("\xef\xbb\xbfname caf\xc3\xa9\n"
                                        "input 4\ndense 3 name=\xf0\x9f\x98"
                                        "\x80\n",
                                        &m, &d),
                     MEMEST_OK);
    assert_string_equal(memest_model_name(m), "caf\xc3\xa9");
    memest_model_destroy(m);
    m = NULL;

    /* comments, blank lines, CRLF, tabs, options in any order */
    assert_int_equal(
        memest_model_parse("# a model\r\n\r\nname  tiny # its name\r\n"
                           "input\t1x6x6\r\n"
                           "conv2d p=1 name=c act=tanh 4 k=3 bias=no\r\n"
                           "   avgpool s=1 k=2  \r\n"
                           "flatten#glued comment\r\n"
                           "dense 3 bias=yes act=sigmoid\r\n"
                           "sigmoid\n",
                           &m, &d),
        MEMEST_OK);
    assert_int_equal(d.line, 0);
    assert_string_equal(d.message, "");
    assert_string_equal(memest_model_name(m), "tiny");
    assert_int_equal(memest_model_layer_count(m), 5);
    assert_string_equal(memest_model_layer(m, 0)->name, "c");
    assert_int_equal(memest_model_layer(m, 0)->act, MEMEST_ACT_TANH);
    assert_int_equal(memest_model_layer(m, 0)->line, 5);
    assert_int_equal(memest_model_layer(m, 0)->parameter_count, 36);
    assert_string_equal(memest_model_layer(m, 1)->name, "pool1");
    assert_int_equal(memest_model_layer(m, 1)->out_shape.dim[1], 5);
    /* flatten: 4*5*5 = 100; dense 100*3+3 */
    assert_int_equal(memest_model_layer(m, 3)->parameter_count, 303);
    assert_int_equal(memest_model_layer(m, 4)->kind, MEMEST_KIND_ACTIVATION);
    assert_int_equal(memest_model_layer(m, 4)->act, MEMEST_ACT_SIGMOID);
    memest_model_destroy(m);

    /* the activations' parameters and their defaults; the text written
     * back names each, clip's infinite bound as inf */
    assert_int_equal(
        memest_model_parse("input 2x4x4\n"
                           "conv2d 4 k=1 alpha=0.25 act=leakyrelu name=c\n"
                           "clip min=-1.5\n"
                           "hardsigmoid\n"
                           "elu alpha=0.5\n"
                           "conv2d 4 k=1 act=hardswish name=d\n"
                           "add in=c,d act=clip max=6 min=0.5 name=s\n"
                           "batchnorm act=hardsigmoid beta=0.25 alpha=-2\n"
                           "silu\nsoftplus\nleakyrelu\n",
                           &m, &d),
        MEMEST_OK);
    {
        static const struct {
            enum memest_act act;
            double alpha, beta;
        } want[] = {
            {MEMEST_ACT_LEAKYRELU, 0.25, 0},
            {MEMEST_ACT_CLIP, -1.5, INFINITY},
            {MEMEST_ACT_HARDSIGMOID, 0.2, 0.5},
            {MEMEST_ACT_ELU, 0.5, 0},
            {MEMEST_ACT_HARDSWISH, 1.0 / 6.0, 0.5},
            {MEMEST_ACT_CLIP, 0.5, 6},
            {MEMEST_ACT_HARDSIGMOID, -2, 0.25},
            {MEMEST_ACT_SILU, 0, 0},
            {MEMEST_ACT_SOFTPLUS, 0, 0},
            {MEMEST_ACT_LEAKYRELU, 0.01, 0},
        };
        assert_int_equal(memest_model_layer_count(m), 10);
        for (size_t i = 0; i < 10; i++) {
            const struct memest_layer *L = memest_model_layer(m, i);
            assert_int_equal(L->act, want[i].act);
            assert_true(L->act_alpha == want[i].alpha);
            assert_true(L->act_beta == want[i].beta);
            /* element-wise: no MACs, no parameters */
            if (L->kind == MEMEST_KIND_ACTIVATION) {
                assert_int_equal(L->macs_per_sample, 0);
                assert_int_equal(L->parameter_count, 0);
            }
        }
        char text[1024];
        size_t len = 0;
        assert_int_equal(memest_model_write(m, text, sizeof text, &len),
                         MEMEST_OK);
        assert_string_equal(
            text,
            "name model\n"
            "input 2x4x4\n"
            "conv2d 4 k=1 s=1 p=0 g=1 act=leakyrelu bias=yes alpha=0.25 "
            "name=c\n"
            "clip min=-1.5 max=inf name=act1\n"
            "hardsigmoid alpha=0.20000000000000001 beta=0.5 name=act2\n"
            "elu alpha=0.5 name=act3\n"
            "conv2d 4 k=1 s=1 p=0 g=1 act=hardswish bias=yes name=d\n"
            "add act=clip min=0.5 max=6 in=c,d name=s\n"
            "batchnorm act=hardsigmoid eps=1.0000000000000001e-05 "
            "alpha=-2 beta=0.25 name=bn1\n"
            "silu name=act4\n"
            "softplus name=act5\n"
            "leakyrelu alpha=0.01 name=act6\n");
        memest_model *b = NULL;
        assert_int_equal(memest_model_parse(text, &b, &d), MEMEST_OK);
        char text2[1024];
        assert_int_equal(memest_model_write(b, text2, sizeof text2, &len),
                         MEMEST_OK);
        assert_string_equal(text, text2);
        memest_model_destroy(b);
    }
    memest_model_destroy(m);

    /* a name line may come anywhere; no name means "model" */
    assert_int_equal(memest_model_parse("input 2\ndense 2\n", &m, NULL),
                     MEMEST_OK);
    assert_string_equal(memest_model_name(m), "model");
    memest_model_destroy(m);
    /* flatten of a vector keeps it */
    assert_int_equal(memest_model_parse("input 7\nflatten\n", &m, NULL),
                     MEMEST_OK);
    assert_int_equal(memest_model_output_shape(m).dim[0], 7);
    memest_model_destroy(m);

    /* parse_buffer stops at len and names its source */
    {
        const char buf[] = "input 4\ndense 2\nGARBAGE";
        assert_int_equal(memest_model_parse_buffer(buf, 16, "buf.txt", &m,
                                                   &d),
                         MEMEST_OK);
        assert_int_equal(memest_model_layer_count(m), 1);
        memest_model_destroy(m);
        assert_int_equal(memest_model_parse_buffer(buf, sizeof buf - 1,
                                                   "buf.txt", &m, &d),
                         MEMEST_E_PARSE);
        assert_string_equal(d.source, "buf.txt");
        assert_int_equal(d.line, 3);
    }
    {
        const char nul[] = "input 4\nden\0se 2\n";
        assert_int_equal(memest_model_parse_buffer(nul, sizeof nul - 1, NULL,
                                                   &m, &d),
                         MEMEST_E_PARSE);
        assert_int_equal(d.line, 2);
        assert_int_equal(d.column, 4);
        assert_non_null(strstr(d.message, "NUL"));
    }
    assert_int_equal(memest_model_parse(NULL, &m, &d), MEMEST_E_INVALID);
    assert_int_equal(memest_model_parse("input 4\ndense 1\n", NULL, &d),
                     MEMEST_E_INVALID);
    memest_model_destroy(NULL);
}

struct preset_case {
    const char *name;
    int status;
    int column;
    const char *fragment;
};

static void test_presets(void **state)
{
    static const struct preset_case bad[] = {
        {"mlp:784", MEMEST_E_PARSE, 1, "at least two widths"},
        {"mlp:784--10", MEMEST_E_PARSE, 9, "missing width"},
        {"mlp:", MEMEST_E_PARSE, 5, "missing width"},
        {"mlp:784-10-", MEMEST_E_PARSE, 12, "missing width"},
        {"mlp:784-0", MEMEST_E_RANGE, 9, "at least 1"},
        {"mlp:784-1x", MEMEST_E_PARSE, 9, "not a whole number"},
        {"mlp:5000000000-5000000000", MEMEST_E_RANGE, 5,
         "(1 to 2147483647"},
        {"mlp:18446744073709551616-2", MEMEST_E_RANGE, 5,
         "too large (more than 64 bits hold)"},
        {"resnet50", MEMEST_E_PARSE, 1, "unknown preset"},
    };
    memest_model *m = NULL;
    struct memest_diag d;
    (void)state;

    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct err_case e = {bad[i].name, bad[i].status, 1, bad[i].column,
                             bad[i].fragment};
        int st = memest_model_preset(bad[i].name, &m, &d);
        check_error(bad[i].name, st, &d, &e);
        assert_null(m);
        assert_string_equal(d.source, bad[i].name);
    }

    assert_int_equal(memest_model_preset("smallcnn", &m, &d), MEMEST_OK);
    assert_string_equal(memest_model_name(m), "smallcnn");
    assert_int_equal(memest_model_layer_count(m), 6);
    /* conv 8*1*9+8, conv 16*8*9+16, dense 784*10+10 */
    assert_int_equal(memest_model_parameter_count(m), 80 + 1168 + 7850);
    assert_int_equal(memest_model_layer(m, 4)->out_shape.dim[0], 784);
    memest_model_destroy(m);

    assert_int_equal(memest_model_preset("mlp:3-5", &m, &d), MEMEST_OK);
    assert_int_equal(memest_model_layer_count(m), 1);
    assert_int_equal(memest_model_layer(m, 0)->act, MEMEST_ACT_SOFTMAX);
    assert_int_equal(memest_model_layer(m, 0)->parameter_count, 20);
    memest_model_destroy(m);

    assert_true(memest_is_preset_name("mlp:1-2"));
    assert_true(memest_is_preset_name("mlp:"));
    assert_true(memest_is_preset_name("smallcnn"));
    assert_false(memest_is_preset_name("smallcnn.txt"));
    assert_false(memest_is_preset_name("./smallcnn"));
    assert_false(memest_is_preset_name(NULL));
}

static void test_files(void **state)
{
    char dir[] = "/tmp/memest-parse-XXXXXX";
    char path[256];
    char path2[256];
    memest_model *m = NULL;
    struct memest_diag d;
    FILE *f;
    (void)state;

    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/my net.model", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("input 1x28x28\nflatten\ndense 10\n", f);
    fclose(f);
    assert_int_equal(memest_model_load(path, &m, &d), MEMEST_OK);
    /* the default name is the file's base name, kept to one token */
    assert_string_equal(memest_model_name(m), "my_net");
    memest_model_destroy(m);

    /* a Latin-1 file name gives a UTF-8 default name ('_' for the byte) */
    snprintf(path2, sizeof path2, "%s/caf\xe9.model", dir);
    assert_int_equal(rename(path, path2), 0);
    assert_int_equal(memest_model_load(path2, &m, &d), MEMEST_OK);
    assert_string_equal(memest_model_name(m), "caf_");
    memest_model_destroy(m);
    assert_int_equal(rename(path2, path), 0);

    snprintf(path2, sizeof path2, "%s/bad.txt", dir);
    f = fopen(path2, "w");
    assert_non_null(f);
    fputs("input 1x28x28\n\n# next line is wrong\nconv2d 4 k=3 g=3\n", f);
    fclose(f);
    assert_int_equal(memest_model_load(path2, &m, &d), MEMEST_E_SHAPE);
    assert_null(m);
    assert_string_equal(d.source, path2);
    assert_int_equal(d.line, 4);
    assert_int_equal(d.column, 16);
    unlink(path2);

    /* a file that does not exist */
    assert_int_equal(memest_model_load(path2, &m, &d), MEMEST_E_IO);
    assert_string_equal(d.source, path2);
    assert_int_equal(d.line, 0);
    assert_non_null(strstr(d.message, "cannot open"));

    /* presets take precedence over files */
    assert_int_equal(memest_model_load("mlp:4-2", &m, &d), MEMEST_OK);
    assert_string_equal(memest_model_name(m), "mlp:4-2");
    memest_model_destroy(m);
    assert_int_equal(memest_model_load("mlp:4", &m, &d), MEMEST_E_PARSE);
    assert_string_equal(d.source, "mlp:4");

    unlink(path);
    rmdir(dir);
}

static void assert_same_model(const memest_model *a, const memest_model *b)
{
    assert_string_equal(memest_model_name(a), memest_model_name(b));
    {
        struct memest_shape sa = memest_model_input_shape(a);
        struct memest_shape sb = memest_model_input_shape(b);
        assert_int_equal(sa.rank, sb.rank);
        for (int i = 0; i < 3; i++) {
            assert_int_equal(sa.dim[i], sb.dim[i]);
        }
    }
    assert_int_equal(memest_model_layer_count(a), memest_model_layer_count(b));
    for (size_t i = 0; i < memest_model_layer_count(a); i++) {
        const struct memest_layer *x = memest_model_layer(a, i);
        const struct memest_layer *y = memest_model_layer(b, i);
        assert_string_equal(x->name, y->name);
        assert_int_equal(x->kind, y->kind);
        assert_int_equal(x->act, y->act);
        assert_int_equal(x->units, y->units);
        assert_int_equal(x->kernel_h, y->kernel_h);
        assert_int_equal(x->stride_h, y->stride_h);
        assert_int_equal(x->pad_top, y->pad_top);
        assert_int_equal(x->groups, y->groups);
        assert_int_equal(x->has_bias, y->has_bias);
        assert_int_equal(x->parameter_count, y->parameter_count);
        assert_int_equal(x->output_elements, y->output_elements);
        assert_int_equal(x->macs_per_sample, y->macs_per_sample);
        assert_int_equal(x->ceil_mode, y->ceil_mode);
        assert_int_equal(x->dilation_h, y->dilation_h);
        assert_int_equal(x->dilation_w, y->dilation_w);
        assert_int_equal(x->count_include_pad, y->count_include_pad);
        assert_int_equal(x->slice_axis, y->slice_axis);
        assert_int_equal(x->slice_begin, y->slice_begin);
        assert_int_equal(x->slice_end, y->slice_end);
        assert_int_equal(x->concat_axis, y->concat_axis);
        assert_int_equal(x->axis, y->axis);
        assert_true(x->bn_epsilon == y->bn_epsilon);
        for (int k = 0; k < 3; k++) {
            assert_int_equal(x->out_shape.dim[k], y->out_shape.dim[k]);
            assert_int_equal(x->in_shape_b.dim[k], y->in_shape_b.dim[k]);
        }
        assert_int_equal(x->input_count, y->input_count);
        assert_int_equal(x->scalar_side, y->scalar_side);
        assert_true(x->scalar == y->scalar);
    }
}

static void round_trip(const char *text)
{
    memest_model *a = NULL;
    memest_model *b = NULL;
    char *buf;
    char *buf2;
    size_t len = 0;
    size_t len2 = 0;

    if (memest_is_preset_name(text)) {
        assert_int_equal(memest_model_preset(text, &a, NULL), MEMEST_OK);
    } else {
        assert_int_equal(memest_model_parse(text, &a, NULL), MEMEST_OK);
    }
    assert_int_equal(memest_model_write(a, NULL, 0, &len), MEMEST_E_RANGE);
    buf = malloc(len + 1);
    buf2 = malloc(len + 1);
    assert_int_equal(memest_model_write(a, buf, len + 1, &len2), MEMEST_OK);
    assert_int_equal(len, len2);
    assert_int_equal(strlen(buf), len);
    /* too small: truncated and NUL-terminated */
    assert_int_equal(memest_model_write(a, buf2, len, &len2), MEMEST_E_RANGE);
    assert_int_equal(strlen(buf2), len - 1);
    assert_int_equal(memest_model_parse(buf, &b, NULL), MEMEST_OK);
    assert_same_model(a, b);
    assert_int_equal(memest_model_write(b, buf2, len + 1, &len2), MEMEST_OK);
    assert_string_equal(buf, buf2);
    memest_model_destroy(a);
    memest_model_destroy(b);
    free(buf);
    free(buf2);
}

static void test_round_trip(void **state)
{
    (void)state;
    round_trip("smallcnn");
    round_trip("mlp:784-64-10");
    round_trip("name x\ninput 6x9x9\nconv2d 6 k=3 s=2 p=1 g=3 bias=no\n"
               "avgpool k=2 s=1 p=1 name=ap\ntanh\nflatten\ngelu name=g\n"
               "dense 7 act=none\nsoftmax\n");
    /* element-wise binary: broadcasts in both orders, constants on both
     * sides that need all 17 digits (0.1, 1/3), a negative one, act= */
    round_trip("input 16x5x5\nconv2d 16 k=1 name=a\nglobalavgpool name=g\n"
               "mul in=a,g name=se\nmul in=g,se name=se2\n"
               "sub in=g,se2 act=relu\n"
               "div scalar=0.1\nsub scalar_left=0.33333333333333331\n"
               "add scalar=-6 act=sigmoid name=k\nadd in=k,g name=s\n"
               "add in=s,s,s\ndiv scalar_left=1e-7\n");
    /* dilations and ceil mode (written only where they are not 1 and no,
     * so the lines above stay as they were) */
    round_trip("input 3x13x12\nconv2d 6 k=3 p=2 d=2\n"
               "conv2d 6 k=3x2 s=2x1 d=1x3 g=3\nmaxpool k=2 s=2 ceil=yes\n"
               "avgpool k=3 s=2 p=1 ceil=yes count_pad=yes\n"
               "avgpool k=2 s=1 p=1 ceil=yes count_pad=no\n");
    /* a keyword transformer's per-position layers on 49 steps of 10
     * features: softmax along each axis (the default, 1, not written),
     * layernorm with an epsilon of 17 digits, without beta, over both
     * axes (ONNX's axis=0), a dense over the features */
    round_trip("input 49x10\ndense 16 act=gelu_erf\nclstoken\nposembed\n"
               "layernorm eps=9.9999999999999995e-07 name=ln1\n"
               "layernorm bias=no axis=0\nlayernorm eps=1e-5 axis=1\n"
               "dropout\nidentity\nsoftmax axis=0\nlogsoftmax\n"
               "softmax axis=1\ndense 16 act=softmax bias=no name=d\n"
               "add in=ln1,d act=logsoftmax\ngelu\n");
    round_trip("input 3x5x4\nsoftmax axis=2\nlogsoftmax axis=1\nsoftmax\n"
               "flatten\nsoftmax axis=0\n");
    round_trip("input 7x8\nattention heads=2 name=a\n"
               "attention heads=4 bias=no\ntranspose perm=1,0 name=t\n"
               "matmul in=a,t name=g\nreshape shape=7x7x1\n"
               "transpose perm=2,0,1 name=p\nmatmul in=p,a\n");
    /* recurrent layers: every direction, both outputs, both gru forms */
    round_trip("input 7x5\nlstm 4 name=a\nlstm 3 dir=reverse bias=no\n"
               "gru 6 dir=bidirectional lbr=no\n"
               "gru 2 dir=forward seq=no lbr=yes\n");
    round_trip("input 3x5x4\npad p=1,0,2,3 value=-0.1\npad p=2 name=z\n"
               "maxpool k=2\n");
    round_trip("input 6x5x4\nshuffle g=3\nslice axis=c begin=1 end=4\n"
               "slice axis=h end=2\nslice axis=w begin=3 end=4 name=s\n"
               "reshape shape=2x3\nflatten\nslice axis=c begin=1 end=2\n");
    /* concat along h and w (axis=c, the default, is not written) and
     * along the second dimension of an AxB */
    round_trip("input 2x4x6\nmaxpool k=1 name=a\n"
               "slice axis=h begin=1 end=4 in=input name=b\n"
               "concat in=a,b axis=h name=ch\n"
               "slice axis=w begin=1 end=6 in=input name=c\n"
               "concat in=a,c axis=w name=cw\n"
               "slice axis=h end=4 in=ch name=chs\n"
               "slice axis=w end=6 in=cw name=cws\n"
               "concat in=chs,cws axis=c name=cc\n"
               "reshape shape=4x24 name=r1\n"
               "reshape shape=4x24 in=cc name=r2\n"
               "concat in=r1,r2 axis=h\n");
    {
        memest_model *m = NULL;
        char buf[1024];
        size_t len = 0;
        assert_int_equal(memest_model_parse("input 2x4x6\nmaxpool k=1 "
                                            "name=p\nconcat in=p,input "
                                            "axis=w name=j\nconcat in=j,j "
                                            "axis=c\n",
                                            &m, NULL),
                         MEMEST_OK);
        assert_int_equal(memest_model_write(m, buf, sizeof buf, &len),
                         MEMEST_OK);
        assert_non_null(strstr(buf, "\nconcat axis=w in=p,input"));
        assert_non_null(strstr(buf, "\nconcat in=j,j"));
        memest_model_destroy(m);
    }
}

/* Many layers: automatic names stay unique and counting stays linear. */
static void test_many_layers(void **state)
{
    size_t cap = 64 * 1024;
    char *text = malloc(cap);
    size_t len = 0;
    memest_model *m = NULL;
    struct memest_diag d;
    (void)state;

    len += (size_t)snprintf(text + len, cap - len, "input 64\n");
    for (int i = 0; i < 2000; i++) {
        len += (size_t)snprintf(text + len, cap - len, "%s\n",
                                i % 2 ? "relu" : "dense 64");
    }
    assert_int_equal(memest_model_parse(text, &m, &d), MEMEST_OK);
    assert_int_equal(memest_model_layer_count(m), 2000);
    assert_string_equal(memest_model_layer(m, 1998)->name, "dense1000");
    assert_string_equal(memest_model_layer(m, 1999)->name, "act1000");
    assert_int_equal(memest_model_parameter_count(m), 1000 * (64 * 64 + 64));
    memest_model_destroy(m);
    free(text);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_errors),   cmocka_unit_test(test_diag_format),
        cmocka_unit_test(test_accepts),  cmocka_unit_test(test_presets),
        cmocka_unit_test(test_files),    cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_many_layers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
