/* list.c — a replay file as one short line per record. Owns the summary
 * format; never computes a metric. */
#include "list.h"

#include <stdlib.h>
#include <string.h>

#include "eval.h"
#include "util/utf8.h"

/* A string taken from the record, escaped for the terminal (sbuf.h). */
static void put(vw_sbuf *sb, const char *s) {
    if (!s)
        s = "?";
    vw_sbuf_put_visible(sb, s, strlen(s));
}

/* " qid" and then sep. */
static void qid(vw_sbuf *sb, const vw_eval_answer *a, const char *sep) {
    vw_sbuf_puts(sb, " ");
    put(sb, a->qid);
    vw_sbuf_puts(sb, sep);
}

static void decision(vw_sbuf *sb, const vw_eval_answer *a) {
    size_t i;
    json_t *v;
    if (a->error) {
        qid(sb, a, ":!");
        put(sb, a->error);
        return;
    }
    switch (a->type) {
    case VW_QT_CHOICE:
        qid(sb, a, "=");
        put(sb, json_string_value(json_object_get(a->v, "choice")));
        break;
    case VW_QT_NOUL:
        qid(sb, a, "=");
        vw_sbuf_printf(sb, "%.3f", json_number_value(json_object_get(a->v, "noul")));
        break;
    case VW_QT_SCORE:
        qid(sb, a, "=");
        vw_sbuf_printf(sb, "%.2f", json_number_value(json_object_get(a->v, "score")));
        break;
    case VW_QT_SET:
        qid(sb, a, "={");
        json_array_foreach(json_object_get(a->v, "selected"), i, v) {
            vw_sbuf_puts(sb, i ? "," : "");
            put(sb, json_string_value(v));
        }
        vw_sbuf_puts(sb, "}");
        break;
    case VW_QT_SPAN: {
        /* Counts by label, in the order the labels first appear. */
        size_t n = json_array_size(a->v), shown = 0;
        qid(sb, a, "=[");
        for (i = 0; i < n; i++) {
            const char *l = json_string_value(json_object_get(json_array_get(a->v, i), "label"));
            size_t c = 0, j;
            for (j = 0; j < i; j++)
                if (!strcmp(l,
                            json_string_value(json_object_get(json_array_get(a->v, j), "label"))))
                    break;
            if (j < i)
                continue; /* counted at its first span */
            for (j = i; j < n; j++)
                c += !strcmp(l,
                             json_string_value(json_object_get(json_array_get(a->v, j), "label")));
            vw_sbuf_puts(sb, shown++ ? " " : "");
            put(sb, l);
            vw_sbuf_printf(sb, ":%zu", c);
        }
        vw_sbuf_puts(sb, "]");
        break;
    }
    case VW_QT_UNKNOWN:
        break;
    }
}

/* The rejection's first (loc, msg, type) and how many follow. */
static void rejection(vw_sbuf *sb, const json_t *value) {
    const json_t *detail = json_object_get(value, "detail"), *d = json_array_get(detail, 0);
    size_t i;
    json_t *seg;
    if (!d) {
        vw_sbuf_puts(sb, " (no detail)");
        return;
    }
    vw_sbuf_puts(sb, " ");
    json_array_foreach(json_object_get(d, "loc"), i, seg) {
        if (json_is_string(seg)) {
            vw_sbuf_puts(sb, i ? "." : "");
            put(sb, json_string_value(seg));
        } else
            vw_sbuf_printf(sb, "[%lld]", (long long)json_integer_value(seg));
    }
    const char *msg = json_string_value(json_object_get(d, "msg"));
    const char *type = json_string_value(json_object_get(d, "type"));
    vw_sbuf_puts(sb, ": ");
    put(sb, msg);
    vw_sbuf_puts(sb, " (");
    put(sb, type);
    vw_sbuf_puts(sb, ")");
    if (json_array_size(detail) > 1)
        vw_sbuf_printf(sb, " +%zu more", json_array_size(detail) - 1);
}

/* Cuts sb (from byte `from`) to width characters, "..." ending a cut line. */
static void cut(vw_sbuf *sb, size_t from, size_t width) {
    if (width < 8 || vw_utf8_count(sb->p + from, sb->len - from) <= width)
        return;
    size_t i = from;
    for (size_t chars = 0; chars < width - 3 && i < sb->len; chars++) {
        vw_utf8_step st = vw_utf8_step_at((const unsigned char *)sb->p, sb->len, i);
        i += st.len ? st.len : 1;
    }
    vw_sbuf_truncate(sb, i);
    vw_sbuf_puts(sb, "...");
}

void vw_eval_list_line(const vw_eval_rec *r, size_t width, vw_sbuf *sb) {
    size_t from = sb->len;
    char status[64];
    vw_eval_rec_status_key(r, status, sizeof status);
    put(sb, r->id);
    for (size_t n = sb->len - from; n < 20; n++)
        vw_sbuf_put(sb, " ", 1);
    vw_sbuf_puts(sb, " ");
    put(sb, status);
    if (r->status == 200)
        for (size_t i = 0; i < r->n_ans; i++)
            decision(sb, &r->ans[i]);
    else if (r->value)
        rejection(sb, r->value);
    if (width)
        cut(sb, from, width);
}

vw_status vw_eval_list(const char *path, size_t width, FILE *out, FILE *log, vw_err *err) {
    FILE *f = fopen(path, "r");
    vw_eval_rec r = {0};
    vw_sbuf sb = {0};
    char *line = NULL;
    size_t cap = 0;
    unsigned long long no = 0;
    ssize_t n;
    vw_status st = VW_OK;
    if (!f)
        return VW_FAIL(err, VW_EIO, "io_error", "%s: cannot open", path);
    while (!st && (n = getline(&line, &cap, f)) >= 0) {
        vw_err why = {0};
        no++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (!n)
            continue;
        if (vw_eval_rec_parse(line, (size_t)n, &r, &why)) {
            if (why.status == VW_ENOMEM)
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "%s", why.msg);
            else if (log)
                vw_eval_problem_print(log, path, no, why.msg);
            continue;
        }
        vw_sbuf_reset(&sb);
        vw_eval_list_line(&r, width, &sb);
        vw_sbuf_puts(&sb, "\n");
        if ((st = vw_sbuf_status(&sb)))
            VW_FAIL(err, st, "out_of_memory", "eval --list");
        else if (fwrite(sb.p, 1, sb.len, out) != sb.len)
            st = VW_FAIL(err, VW_EIO, "io_error", "eval --list: cannot write the output");
    }
    if (!st && fflush(out))
        st = VW_FAIL(err, VW_EIO, "io_error", "eval --list: cannot write the output");
    if (!st && ferror(f))
        st = VW_FAIL(err, VW_EIO, "io_error", "%s: read error", path);
    vw_eval_rec_free(&r);
    vw_sbuf_free(&sb);
    free(line);
    fclose(f);
    return st;
}
