/* cmd_forward.c — `vela-worker forward --bundle DIR [--device cpu]`: reads a
 * JSON array of token ids on stdin, runs them as one sequence through the
 * bundle's backbone and prints {"hidden": [[...], ...]}: the final-normed
 * hidden state of every position, floats as %.9g (round-trips FP32).
 * Exit codes: 0 ok, 2 usage, 1 anything else (message on stderr). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/backbone_cpu.h"
#include "model/bundle.h"
#include "cli_args.h"
#include "commands.h"

static void usage(FILE *f) {
    fprintf(f, "usage: vela-worker forward --bundle DIR [--device cpu] < ids.json\n"
               "  stdin: a JSON array of token ids; stdout: {\"hidden\": [[...], ...]}\n");
}

/* Parses stdin as a JSON array of ids in [0, vocab). */
static vw_status read_ids(int32_t vocab, int32_t **ids, size_t *n, vw_err *err) {
    json_error_t je;
    json_t *arr = json_loadf(stdin, 0, &je);
    vw_status st = VW_OK;
    *ids = NULL;
    *n = 0;
    if (!json_is_array(arr) || json_array_size(arr) == 0) {
        st = VW_FAIL(err, VW_EINVAL, "bad_input",
                     "stdin: expected a non-empty JSON array of "
                     "token ids (%s)",
                     arr ? "not a non-empty array" : je.text);
        goto done;
    }
    *n = json_array_size(arr);
    if (!(*ids = malloc(*n * sizeof **ids))) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%zu ids", *n);
        goto done;
    }
    for (size_t i = 0; i < *n; i++) {
        json_t *v = json_array_get(arr, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= vocab) {
            st = VW_FAIL(err, VW_EINVAL, "bad_input", "stdin[%zu]: not a token id in [0, %d)", i,
                         (int)vocab);
            goto done;
        }
        (*ids)[i] = (int32_t)json_integer_value(v);
    }
done:
    if (st != VW_OK) {
        free(*ids);
        *ids = NULL;
    }
    json_decref(arr);
    return st;
}

static void print_rows(const float *rows, size_t n, size_t h) {
    fputs("{\"hidden\": [", stdout);
    for (size_t r = 0; r < n; r++) {
        fputs(r ? ", [" : "[", stdout);
        for (size_t i = 0; i < h; i++)
            printf(i ? ", %.9g" : "%.9g", (double)rows[r * h + i]);
        fputc(']', stdout);
    }
    fputs("]}\n", stdout);
}

static vw_status run(const char *dir, vw_err *err) {
    vw_bundle *b = NULL;
    vw_executor *ex = NULL;
    int32_t *ids = NULL, *ro = NULL;
    float *rows = NULL;
    size_t n = 0;
    vw_status st = vw_bundle_open(dir, &b, err);
    if (st == VW_OK)
        st = read_ids(vw_bundle_backbone_config(b)->vocab, &ids, &n, err);
    if (st == VW_OK)
        st = vw_backbone_cpu_new(b, &ex, err);
    if (st == VW_OK &&
        (!(ro = malloc(n * sizeof *ro)) || !(rows = malloc(n * ex->hidden * sizeof *rows))))
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%zu rows", n);
    if (st == VW_OK) {
        for (size_t i = 0; i < n; i++)
            ro[i] = (int32_t)i;
        vw_tree tr = {.prefix = ids, .n_prefix = n, .prefix_readouts = ro, .n_prefix_readouts = n};
        st = vw_executor_forward(ex, &tr, 1, rows, err);
    }
    if (st == VW_OK)
        print_rows(rows, n, ex->hidden);
    free(rows);
    free(ro);
    free(ids);
    vw_executor_free(ex);
    vw_bundle_free(b);
    return st;
}

int vw_cmd_forward(int argc, char **argv) {
    const char *dir = NULL, *device = "cpu";
    for (int i = 1; i < argc; i++) {
        if (vw_cli_is_help(argv[i])) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--bundle")) {
            if (!(dir = vw_cli_value("forward", argc, argv, &i, usage)))
                return 2;
        } else if (!strcmp(argv[i], "--device")) {
            if (!(device = vw_cli_value("forward", argc, argv, &i, usage)))
                return 2;
        } else {
            return vw_cli_bad_arg("forward", argv[i], usage);
        }
    }
    if (!dir)
        return vw_cli_usage_error("forward", "--bundle DIR is required", usage);
    if (strcmp(device, "cpu")) {
        fprintf(stderr, "vela-worker forward: device '%s' is not available (cpu only)\n", device);
        return 2;
    }
    vw_err err = {0};
    if (run(dir, &err) != VW_OK) {
        fprintf(stderr, "vela-worker forward: %s (%s, %s)\n", err.msg, err.type, err.where);
        return 1;
    }
    return 0;
}
