/* list_kernels.c: the library from a program of one's own (README, "Using
 * the library"): parse and check .tile files and list their kernels and
 * graphs. Built against an installed tilec with
 *     cc list_kernels.c $(pkg-config --cflags --libs tilec)
 * (tests/install_test.sh does exactly that). */
#include <stdio.h>

#include <tilec/lower.h> /* tilec_kernel_variant_count */
#include <tilec/tilec.h>

int main(int argc, char **argv)
{
    tilec_ctx *ctx = tilec_ctx_new();
    if (!ctx)
        return 1;
    int status = 0;
    for (int i = 1; i < argc; i++) {
        tilec_module *m = NULL;
        if (tilec_parse_file(ctx, argv[i], &m) != TILEC_OK) {
            tilec_ctx_render_diags(ctx, tilec_sink_file(stderr)); /* the program decides where */
            tilec_ctx_clear_diags(ctx);
            status = 1;
            continue;
        }
        for (size_t k = 0; k < tilec_module_kernel_count(m); k++) {
            const tilec_kernel *kern = tilec_module_kernel(m, k);
            printf("%s: kernel %s, %u variant(s)\n", argv[i], kern->name, (unsigned)tilec_kernel_variant_count(kern));
        }
        for (size_t g = 0; g < tilec_module_graph_count(m); g++)
            printf("%s: graph %s\n", argv[i], tilec_module_graph(m, g)->name);
        tilec_module_free(m);
    }
    printf("libtilec %s (header %s)\n", tilec_version(), TILEC_VERSION_STRING);
    tilec_ctx_free(ctx);
    return status;
}
