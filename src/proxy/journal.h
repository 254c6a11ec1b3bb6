/* journal.h - the recording journal of `atr proxy`: one atr-trace line per
 * completed request (docs/proxy.md, "Record format"), appended to a file
 * that is fsynced on an interval and rotated by size.
 *
 * Each line is itself a valid atr trace (one trace, one llm step), so the
 * journal is read by every atr command as is; `atr convert --sessions`
 * folds it into one multi-step trace per session.
 *
 * What is guaranteed (one writer per journal, a local Linux filesystem):
 * - A line goes to the kernel as one buffer in one write() on an O_APPEND
 *   descriptor. Linux serialises such writes per file, so lines of other
 *   appenders never interleave with it, and once write() returns the line
 *   is in the page cache: a crash of the process (SIGKILL included) after
 *   that loses nothing.
 * - The kernel may still write only part of a buffer (a fatal signal while
 *   a large line is being copied, a full disk, the file size limit).
 *   atr_journal_append writes the rest in further calls; when a call fails
 *   it cuts the file back to its length before the line, so a failed
 *   append leaves no partial line. A process killed between the parts can
 *   leave one cut line at the end, without its '\n': atr_journal_open
 *   removes such a tail before appending (atr_journal_cut_bytes says how
 *   much). A reader that meets the file after a kill and before the next
 *   open sees at most that last, unterminated line cut; every line that
 *   ends in '\n' is whole.
 * - Durability against power loss or a kernel crash is the fsync interval:
 *   lines appended since the last fdatasync may be lost, and the file may
 *   end as the filesystem left it (cut, or zeros at the tail: the next
 *   open removes whatever follows the last '\n').
 * - Rotation renames a file only between lines, so PATH.1, PATH.2, ...
 *   hold whole lines too.
 *
 * Memory: the journal owns its descriptor, its path and one line buffer;
 * atr_journal_close frees all. Records are read during the call only. */
#ifndef ATR_PROXY_JOURNAL_H
#define ATR_PROXY_JOURNAL_H

#include <stdint.h>

#include "proxy/record.h"
#include "util/buf.h"
#include "util/error.h"

struct atr_journal_cfg {
    /* Seconds between fdatasyncs (atr_journal_tick); 0: after every
     * append, in atr_journal_append itself. */
    double fsync_interval_s;
    /* Rotate once the file has reached this many bytes, after the line that
     * took it there: PATH becomes PATH.1, PATH.1 becomes PATH.2, ... up to
     * PATH.<keep> (the oldest is dropped), and a new PATH is started.
     * 0: never. */
    uint64_t rotate_bytes;
    unsigned keep;             /* rotated files kept; 0: 5 */
    /* Lines are OpenTelemetry OTLP/JSON instead (`atr proxy --otlp`): the
     * record's atr line read back and written by trace/otlp.h, one export
     * document per request, times in Unix ns (docs/otel.md). */
    bool otlp;
};

/* fsync every second, no rotation, 5 rotated files when rotating. */
#define ATR_JOURNAL_CFG_INIT { 1.0, 0, 5, false }

struct atr_journal;

/* Opens (creates, mode 0644) path for appending; cfg NULL:
 * ATR_JOURNAL_CFG_INIT. An existing journal is continued: a cut last line
 * left by a killed writer is removed first, and a file already at
 * rotate_bytes is rotated at once. NULL with err set. */
struct atr_journal *atr_journal_open(const char *path, const struct atr_journal_cfg *cfg,
                                     struct atr_error *err);

/* Formats r (atr_journal_format) and appends it as one whole line, then
 * rotates when the file has reached rotate_bytes. 0, or -1 with err set
 * (the record is inconsistent, or the write failed: then the file is cut
 * back to where it was, and the journal stays usable). */
int atr_journal_append(struct atr_journal *j, const struct atr_proxy_record *r,
                       struct atr_error *err);

/* fdatasyncs when something was appended since the last sync and at least
 * fsync_interval_s has passed since then (or since the first tick).
 * now_mono: CLOCK_MONOTONIC seconds. A failure is kept and returned by
 * atr_journal_close. */
void atr_journal_tick(struct atr_journal *j, double now_mono);

/* fdatasyncs what is unsynced, closes and frees j. 0, or -1 with err set
 * when this or an earlier sync failed (j is freed either way). NULL: 0. */
int atr_journal_close(struct atr_journal *j, struct atr_error *err);

/* 0, or -1 with err set to the first fdatasync or rotation failure so far
 * (appends go on after one: a failed rotation keeps writing to the file it
 * has, and is tried again after the next append). */
int atr_journal_status(const struct atr_journal *j, struct atr_error *err);

/* Bytes of a cut last line removed when the journal was opened; 0 when the
 * file ended cleanly. */
uint64_t atr_journal_cut_bytes(const struct atr_journal *j);

/* Calls fn for every line of the journal at path and its rotated files
 * (PATH.<keep> ... PATH.1, then PATH; those that exist), oldest first,
 * with the line's meta.session and meta.turn; keep 0: 5. So a proxy that
 * goes on with an existing journal learns which trace ids it holds.
 * 0, or -1 with err set (FILE:LINE:COL) at a line that is not a record. */
typedef void atr_journal_seen_fn(void *ctx, const char *session, size_t len, uint64_t turn);
int atr_journal_scan(const char *path, unsigned keep, atr_journal_seen_fn *fn, void *ctx,
                     struct atr_error *err);

/* Appends s[0..len) to out with each byte that starts no valid UTF-8
 * character replaced by U+FFFD: the text a journal line holds for s. The
 * session table keys names by it, so that two names the journal would
 * write alike are one session. */
void atr_journal_clean_text(struct atr_buf *out, const char *s, size_t len);

/* Appends r's line, with its final '\n', to b (an atr-trace/1 trace of one
 * llm step; docs/proxy.md, "Record format"). Strings are written as JSON
 * with invalid UTF-8 replaced by U+FFFD, so any bytes make one valid line.
 * r->n_block_ids must be 0 or ceil(est_prompt_tokens / block_size), what
 * atr_blockhash gives for the text the estimate counted. With the
 * upstream's usage the line carries its counts ("tokens_from":"recorded",
 * the estimate in estimated_input_tokens) and ids fitted to the recorded
 * prompt length (trace/convo.h, atr_fit_ids_fill: the estimated ids as far
 * as they go, ids unique to the request past them); without, the estimate
 * and its ids ("estimated"). 0, or -1 (that check, or b's cap) with b
 * unchanged. */
int atr_journal_format(struct atr_buf *b, const struct atr_proxy_record *r);

#endif
