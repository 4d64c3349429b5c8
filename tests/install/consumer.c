/* A program that takes libmemest alone, as an outside project would. */
#include <stdio.h>

#include <edgefit/memest.h>

int main(void)
{
    memest_model *m = NULL;
    struct memest_diag diag;
    if (memest_model_load("mlp:784-64-10", &m, &diag) != MEMEST_OK) {
        fprintf(stderr, "%s\n", diag.message);
        return 1;
    }
    const uint64_t params = memest_model_parameter_count(m);
    memest_model_destroy(m);
    printf("%llu\n", (unsigned long long)params);
    return params == 50890 ? 0 : 1;
}
