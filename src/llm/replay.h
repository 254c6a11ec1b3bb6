/* replay.h - a workload's sessions sent to an OpenAI-compatible server in
 * real time (atr replay llm).
 *
 * One libevent loop drives the schedule and the client: a session's first
 * turn is due at its scheduled start, each next turn when the previous
 * reply ended plus the (scaled) recorded tool time; in a DAG session
 * (sched/workload.h) a turn is due once all its parent turns ended, at the
 * latest parent end plus the tool time after it, so branches run at once. A due turn is released
 * at once (the lag behind its schedule is recorded); with max_concurrency
 * it then waits in a FIFO for a free slot, and that wait is recorded too
 * (client queue time), never hidden. Without max_concurrency the client's
 * connection pool (ATR_LLM_DEFAULT_CONNECTIONS) is the limit. Optional warm-up requests run before
 * the clock starts and are not counted.
 *
 * With a policy (src/policy/policy.h), each request is decided when it
 * gets its slot: its replica (one client per target URL), a unique salt
 * word in front of its prompt, a rewritten prompt (length and block ids),
 * and an output cap (max_tokens = the cap, min_tokens = the recorded length
 * under it, so the engine stops where the cap truncates).
 *
 * Times in the records are seconds since the schedule's 0 (the first
 * scheduled send, or start_at). A record's sent_s is when its bytes began
 * to leave (llm/client.h), so sent_s - scheduled_s holds every wait: timer,
 * slot queue, connection.
 * Memory: the result owns its records, their chunk arrays, their reason
 * and error_detail strings; atr_llm_replay_release frees them. cfg and what it points to are
 * borrowed for the call. */
#ifndef ATR_LLM_REPLAY_H
#define ATR_LLM_REPLAY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "llm/client.h"
#include "stats/metrics.h"
#include "llm/prompt.h"
#include "policy/policy.h"
#include "sched/schedule.h"
#include "sched/workload.h"

struct atr_llm_replay_cfg {
    const struct atr_workload *workload;
    const double *starts;                /* per session (atr_schedule_starts) */
    const struct atr_schedule *schedule;
    unsigned max_concurrency;            /* 0 = unlimited */
    struct atr_body_opts body;
    struct atr_llm_client_cfg client;    /* base_url: the first target */
    /* Replicas: base URLs of every target (n_targets >= 2), or NULL for
     * client.base_url alone. A policy picks the replica per request. */
    const char *const *targets;
    unsigned n_targets;
    struct atr_policy *policy;           /* NULL: every request as recorded */
    unsigned warmup;                     /* uncounted requests before the clock starts */
    /* The schedule's 0 on the wall clock (CLOCK_REALTIME seconds since the
     * epoch), shared by the shards of a run on several machines; 0: as soon
     * as the warm-up is done. One already past starts at once, every
     * request as late as the epoch says (the lag shows it). */
    double start_at;
    /* Replays on several threads (one loop each) share one clock: each
     * calls this once it is ready to start, with the monotonic time it
     * would take as the schedule's 0, and takes the one returned. NULL:
     * none. */
    double (*start_sync)(void *ctx, double t0);
    void *start_ctx;
    /* Set (e.g. by a signal handler) to stop early: finished requests are
     * kept, the rest dropped, and the result is marked incomplete. */
    const volatile sig_atomic_t *stop;
    void (*on_progress)(void *ctx, size_t done, size_t total);
    void *progress_ctx;
    /* Turns gated by the caller (atr replay agent, runner/agent.h): when
     * set, a reply's next turn is due when the reply ends (no recorded
     * think time), and on_turn_due(ctx, session, turn, now_s) is called on
     * the loop as each turn falls due (turn == the session's n_turns: its
     * last reply ended, nothing is due). Returning true holds the turn
     * until the session's index, a uint64_t, is written to resume_fd (from
     * any thread); the turn is then due at once, its scheduled_s the
     * resume (resume_fd non-blocking). With ATR_LLM_RESUME_DROP or'ed in, the session's remaining
     * turns are dropped (out->dropped; no longer in out->total).
     * DAG sessions: turn is the turn's own index (several branches may
     * be held at once), due when its parents are over (no recorded tool
     * time); the message names it, (turn << ATR_LLM_RESUME_TURN_SHIFT) |
     * session; turn == n_turns once every turn is over. */
    bool (*on_turn_due)(void *ctx, size_t session, size_t turn, double now_s);
    /* DAG sessions, NULL: none: on the loop as each turn's reply ends. */
    void (*on_turn_over)(void *ctx, size_t session, size_t turn, double now_s);
    void *turn_ctx;
    int resume_fd;
};

#define ATR_LLM_RESUME_DROP (UINT64_C(1) << 63)
#define ATR_LLM_RESUME_TURN_SHIFT 32
#define ATR_LLM_RESUME_SESSION UINT64_C(0xffffffff)

struct atr_llm_replay_result {
    struct atr_llm_record *recs;         /* in completion order */
    size_t n;
    size_t total;                        /* turns the workload has, less dropped */
    size_t dropped;                      /* turns of sessions the caller dropped */
    bool incomplete;
    /* private storage */
    char **reasons;
    size_t n_reasons;
};

/* 0 (also when stopped early: see incomplete), or -1 with err set when the
 * loop cannot run or every warm-up request failed (the reason is named). */
int atr_llm_replay(const struct atr_llm_replay_cfg *cfg, struct atr_llm_replay_result *out,
                   struct atr_error *err);
void atr_llm_replay_release(struct atr_llm_replay_result *r);

#endif
