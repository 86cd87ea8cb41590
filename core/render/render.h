/* render.h — the decoder layout of docs/spec/request.md §5.1 with the budget of
 * §7.3: pieces, their token ids (each piece tokenized on its own, no special
 * tokens) and one row's tree.
 *
 * The tokenizer is injected (vw_encoder), so tests can use the spec's
 * 1-char-per-token tokenizer and production uses vw_tok_encode
 * (vw_encoder_tok). Constant pieces are tokenized once per renderer.
 *
 * Ownership: vw_renderer_new borrows cfg and the encoder's ctx (both must
 * outlive the renderer); vw_renderer_free releases the rest. vw_qtoks and
 * vw_ptree contents are owned by the caller (vw_qtoks_free, plan.c frees trees).
 * Thread-safety: a renderer is immutable after creation; it is as thread-safe
 * as its encoder (vw_tok_encode is).
 * Errors: encoder errors are passed through; VW_ENOMEM.
 */
#ifndef VW_RENDER_H
#define VW_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission/admit_cfg.h"
#include "admission/questions.h"
#include "tokenizer/tokenizer.h"
#include "util/ivec.h"
#include "vw_status.h"
#include "words.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vw_renderer vw_renderer;

/* One row's tree as rendered: a prefix and the blocks forked from it (the
 * planner, plan.h, collects them into a plan). */
typedef struct vw_pblock {
    size_t entry;     /* index into req->entries */
    const char *kind; /* engine type: "choice", "score", "set", "span" */
    vw_ivec ids;
    vw_ivec option_ends;    /* non-span blocks */
    int32_t query;          /* last token of the block */
    vw_ivec label_ranges;   /* span: [2L] first, last (inclusive) */
    vw_ivec word_positions; /* span: block index of each read word's first token */
    vw_ivec word_index;     /* span: index of that word in the part's words */
    bool read;              /* false: a span block whose windows are read instead */
} vw_pblock;

typedef struct vw_ptree {
    size_t row;
    bool window;                /* a window tree of the row's span */
    int64_t win_start, win_end; /* window: token range of the span part */
    vw_ivec prefix;
    vw_pblock *blocks;
    size_t n_blocks;
} vw_ptree;

typedef struct vw_encoder {
    /* Encodes len bytes of UTF-8 into out (ids and code-point offsets),
     * reusing out's buffers. */
    vw_status (*encode)(void *ctx, const char *text, size_t len, vw_encoding *out, vw_err *err);
    /* Releases buffers filled by encode. */
    void (*release)(void *ctx, vw_encoding *enc);
    void *ctx;
} vw_encoder;

/* vw_tok_encode (no flags) / vw_encoding_free on a loaded tokenizer. */
vw_encoder vw_encoder_tok(vw_tokenizer *tok);

vw_status vw_renderer_new(const vw_admit_cfg *cfg, vw_encoder enc, vw_renderer **out, vw_err *err);
void vw_renderer_free(vw_renderer *r);
const vw_admit_cfg *vw_renderer_cfg(const vw_renderer *r);
const vw_word_re *vw_renderer_words(const vw_renderer *r);

/* Tokenizes text into ids (appended to out). */
vw_status vw_render_encode(const vw_renderer *r, const char *text, size_t len, vw_ivec *out,
                           vw_encoding *scratch, vw_err *err);

/* Releases a scratch encoding filled through this renderer's encoder. */
void vw_render_scratch_free(const vw_renderer *r, vw_encoding *scratch);

/* A question's pieces. Non-span: head (B0), options (B1, + abstain B2 when the
 * question abstains), suffix (B3). Span: head (S0), options are the labels
 * (S1), suffix (S6). */
typedef struct vw_qtoks {
    bool span;
    const char *kind; /* engine type: "choice", "score", "set", "span" */
    vw_ivec head;
    vw_ivec *opts;
    size_t n_opts;
    const vw_ivec *abstain; /* borrowed from the renderer, NULL when none */
    const vw_ivec *suffix;  /* borrowed from the renderer */
    int64_t cost;           /* §7.3: question cost, or for a span the sum of label costs */
} vw_qtoks;

/* labels: the options to render (the question's, or the alias rendering). */
vw_status vw_render_question(const vw_renderer *r, const vw_question *q, const vw_option *labels,
                             size_t n_labels, vw_qtoks *out, vw_encoding *scratch, vw_err *err);
void vw_qtoks_free(vw_qtoks *t);

/* One row to render: parts in state order (the span part possibly a window
 * slice), non-span questions, and the span (optional). */
typedef struct vw_row_part {
    vw_role role;
    const int32_t *ids;
    size_t n;
    bool read;            /* some question of the row reads it */
    const int32_t *first; /* span part: first token of each word (rebased), ascending */
    size_t n_words;
} vw_row_part;

typedef struct vw_row_in {
    const vw_row_part *parts;
    size_t n_parts;
    const vw_qtoks *const *qs; /* non-span questions in order */
    const size_t *entries;     /* their entry indices */
    size_t n_qs;
    const vw_qtoks *span; /* NULL when the row has no span */
    size_t span_entry;
    size_t span_part; /* index into parts */
} vw_row_in;

typedef struct vw_row_out {
    bool fits;
    int64_t over;   /* when !fits */
    int64_t tokens; /* rendered tokens of this tree, the span block included */
    bool repeat;    /* the span target was repeated (<= hybrid_rmax tokens) */
} vw_row_out;

/* Renders the tree of one row into *tree (prefix + blocks; the span block is
 * last and read only when repeated). A row that does not fit leaves *tree
 * empty and out->fits false. */
vw_status vw_render_row(const vw_renderer *r, const vw_row_in *in, vw_ptree *tree, vw_row_out *out,
                        vw_err *err);

#ifdef __cplusplus
}
#endif
#endif
