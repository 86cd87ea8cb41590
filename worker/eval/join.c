/* join.c — ids to line positions, and lines read back by position. Owns the
 * index and the read-back files; never parses a line. */
#include "join.h"
#include "util/reserve.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void vw_eval_join_init(vw_eval_join *j) {
    memset(j, 0, sizeof *j);
    j->fd[0] = j->fd[1] = -1;
}

void vw_eval_join_free(vw_eval_join *j) {
    if (!j)
        return;
    for (int s = 0; s < 2; s++) {
        if (j->fd[s] >= 0)
            close(j->fd[s]);
        free(j->buf[s]);
    }
    vw_strmap_free(&j->ids);
    free(j->e);
    vw_eval_join_init(j);
}

vw_status vw_eval_join_entry(vw_eval_join *j, const char *id, size_t len, vw_eval_entry **e,
                             vw_err *err) {
    int64_t k = vw_strmap_find(&j->ids, id, len);
    if (k >= 0) {
        *e = &j->e[k];
        return VW_OK;
    }
    if (vw_reserve((void **)&j->e, &j->cap, j->ids.n + 1, sizeof *j->e))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: %zu ids", j->ids.n + 1);
    size_t i;
    vw_status st = vw_strmap_put(&j->ids, id, len, &i, NULL, err);
    if (st)
        return st;
    memset(&j->e[i], 0, sizeof j->e[i]);
    *e = &j->e[i];
    return VW_OK;
}

vw_status vw_eval_join_open(vw_eval_join *j, int side, const char *path, vw_err *err) {
    if (j->fd[side] >= 0)
        close(j->fd[side]);
    j->fd[side] = open(path, O_RDONLY | O_CLOEXEC);
    if (j->fd[side] < 0)
        return VW_FAIL(err, VW_EIO, "io_error", "%s: %s", path, strerror(errno));
    return VW_OK;
}

vw_status vw_eval_join_read(vw_eval_join *j, int side, const vw_eval_entry *e, const char **line,
                            size_t *len, vw_err *err) {
    size_t n = e->len[side];
    if (vw_reserve((void **)&j->buf[side], &j->buf_cap[side], n + 1, 1))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "eval: a line of %zu bytes", n);
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(j->fd[side], j->buf[side] + got, n - got, e->off[side] + (off_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return VW_FAIL(err, VW_EIO, "io_error", "read back line %u: %s", e->line[side],
                           r < 0 ? strerror(errno) : "the file got shorter");
        got += (size_t)r;
    }
    j->buf[side][n] = '\0';
    *line = j->buf[side];
    *len = n;
    return VW_OK;
}
