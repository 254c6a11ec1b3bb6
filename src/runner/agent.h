/* agent.h - the whole agent in one causal timeline (atr replay agent):
 * each llm turn of a session sent to a server (llm/replay.h), then the
 * trace's tool steps that follow it run as real processes in their
 * cgroups (runner/replay.h), then the next turn.
 *
 * Each session with tool steps has a thread that runs its trace's tool
 * steps through the runner (one work directory and container for the
 * whole trace, so files made by one step are there for the next; a DAG
 * session has a thread per sub-agent, all in that one directory, as
 * real agents' sub-agents share the repository); before
 * each step the thread waits until the llm turns before that step have
 * ended. The llm driver holds a turn with tool steps before it
 * (on_turn_due) and the thread resumes it over a pipe when the last of
 * those steps ended, so the event loop never waits on a process. Tool
 * steps before a session's first turn run when the session starts (its
 * scheduled start); those after the last turn once the last reply ended.
 * Two turns with no tool step between them follow at once (the recorded
 * gap is not slept: it was the agent's own time, not measured here).
 *
 * A session's time splits into queueing (turn due -> its bytes left:
 * schedule lag, --max-concurrency slot, connection), model time (bytes
 * left -> last byte of the reply), tool time (a turn's hold: the reply
 * ended -> the last of its tool steps ended) and the rest (handoffs
 * between the loop and the tool thread, well under a millisecond), which add up to
 * its completion time (its start -> the last reply or tool step ended).
 *
 * Memory: the result owns its llm records (as llm/replay.h), its steps
 * and their lines, its sessions; atr_agent_result_release frees them.
 * cfg and what it points to (traces, runner, workload) are borrowed for
 * the call; step metrics' strings point into the traces. */
#ifndef ATR_RUNNER_AGENT_H
#define ATR_RUNNER_AGENT_H

#include <stdbool.h>
#include <stddef.h>

#include "llm/replay.h"
#include "runner/replay.h"
#include "trace/trace.h"

struct atr_agent_cfg {
    /* The turns: everything but on_turn_due, turn_ctx, resume_fd and
     * start_sync, which the agent sets. workload session i is traces[i]. */
    struct atr_llm_replay_cfg llm;
    struct atr_replay *rp;               /* runs the tool steps */
    const char *config;                  /* its configuration's name, for the lines */
    const struct atr_trace *traces;
    size_t n_traces;                     /* == llm.workload->n_sessions */
    /* A tool step that failed (exit status not 0, timed out, OOM-killed)
     * ends its session: the turns after it are dropped (counted), the
     * session is marked stopped. false: recorded, the session goes on. */
    bool stop_on_tool_fail;
};

/* One tool step as it ran (or was skipped). */
struct atr_agent_step {
    size_t session;
    size_t turns_before;                 /* llm turns of its trace before it ("after_turn":
                                            turns_before - 1, -1: before the first) */
    double start_s, end_s;               /* on the llm records' clock */
    bool failed;                         /* ran and failed (see stop_on_tool_fail) */
    bool skipped;
    double latency_ms, cpu_ms, max_rss_mb;
    int exit_code;
    char *line;                          /* its --requests-out line, "\n" ended */
};

struct atr_agent_session {
    const char *trace_id;                /* the trace's */
    double start_s, end_s;               /* scheduled start; last reply or step ended */
    double completion_s;                 /* end_s - start_s */
    double model_s, queue_s, tool_s, other_s;
    double tool_exec_s;                  /* the steps' own latencies, summed */
    double tool_cpu_s;                   /* their CPU time, summed */
    double tool_peak_rss_mb;             /* the largest step's peak memory */
    size_t turns, turns_ok, turns_dropped;
    size_t tool_steps, tool_failed, tool_skipped;
    bool stopped;                        /* a failed tool step ended it */
};

struct atr_agent_result {
    struct atr_llm_replay_result llm;
    struct atr_agent_step *steps;        /* in the order they ended */
    size_t n_steps;
    struct atr_agent_session *sessions;  /* per workload session */
    size_t n_sessions;
    bool incomplete;                     /* stopped early (cfg.llm.stop) */
};

/* 0 (also when stopped early: see incomplete), or -1 with err set: the
 * llm replay failed, or the runner could not run a trace. */
int atr_agent_run(const struct atr_agent_cfg *cfg, struct atr_agent_result *out,
                  struct atr_error *err);
void atr_agent_result_release(struct atr_agent_result *r);

/* When each turn of a session fell due and was resumed (on_turn_due),
 * and when the session was scheduled to start: what the session figures
 * are computed from besides the records and steps. */
struct atr_agent_holds {
    const double *due_s, *resume_s;      /* per turn plus one (the end); resume_s < 0:
                                            not held */
    size_t n;                            /* turns + 1 */
    double start_s;
};

/* Fills r->sessions (n_sessions = w->n_sessions, holds[i] for session i)
 * from r's records (matched by their trace_id pointer to w's) and steps.
 * Exposed for the unit test; atr_agent_run calls it. */
void atr_agent_sessions(struct atr_agent_result *r, const struct atr_workload *w,
                        const struct atr_agent_holds *holds);

/* Totals over sessions: the model, tool, queue and other shares of the
 * summed completion times (0..1; 0 when nothing completed). */
struct atr_agent_split {
    double completion_s, model_s, tool_s, queue_s, other_s;
    double model_share, tool_share, queue_share, other_share;
};
void atr_agent_split(const struct atr_agent_result *r, struct atr_agent_split *out);

#endif
