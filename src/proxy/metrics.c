/* metrics.c - `atr proxy`'s GET /metrics in Prometheus text format:
 * requests, errors by kind, in flight, TTFT and end-to-end histograms,
 * tokens in and out, the prefix-cache hit share the upstreams report
 * (usage.prompt_tokens_details.cached_tokens over prompt tokens), and the
 * same per upstream. */
#include "proxy/proxy-impl.h"

#include <stdio.h>

#include <event2/buffer.h>
#include <event2/http.h>

const double proxy_hist_bounds[PROXY_HIST_BUCKETS] = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300,
};

void proxy_hist_add(struct proxy_hist *h, double v)
{
    for (int i = 0; i < PROXY_HIST_BUCKETS; i++)
        if (v <= proxy_hist_bounds[i])
            h->le[i]++;
    h->count++;
    h->sum += v;
}

static void family(struct evbuffer *o, const char *name, const char *type, const char *help)
{
    evbuffer_add_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void hist(struct evbuffer *o, const char *name, const char *help,
                 const struct proxy_hist *h)
{
    family(o, name, "histogram", help);
    for (int i = 0; i < PROXY_HIST_BUCKETS; i++)
        evbuffer_add_printf(o, "%s_bucket{le=\"%g\"} %llu\n", name, proxy_hist_bounds[i],
                            (unsigned long long)h->le[i]);
    evbuffer_add_printf(o, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                        (unsigned long long)h->count, name, h->sum, name,
                        (unsigned long long)h->count);
}

static void per_upstream(struct evbuffer *o, const struct atr_proxy *p, const char *name,
                         const char *type, const char *help, size_t offset)
{
    family(o, name, type, help);
    for (size_t i = 0; i < p->n_up; i++) {
        const uint64_t *v = (const uint64_t *)((const char *)&p->up[i] + offset);
        evbuffer_add_printf(o, "%s{upstream=\"%s\"} %llu\n", name, p->up[i].url,
                            (unsigned long long)*v);
    }
}

void proxy_send_metrics(struct atr_proxy *p, struct evhttp_request *req)
{
    struct evbuffer *o = evbuffer_new();
    if (!o)
        return;
    const struct proxy_metrics *m = &p->m;
    family(o, "atr_proxy_requests_total", "counter", "LLM requests received");
    evbuffer_add_printf(o, "atr_proxy_requests_total %llu\n", (unsigned long long)m->requests);
    family(o, "atr_proxy_errors_total", "counter", "requests that failed, by kind");
    for (int k = 1; k < PERR_COUNT; k++)
        evbuffer_add_printf(o, "atr_proxy_errors_total{kind=\"%s\"} %llu\n", proxy_err_names[k],
                            (unsigned long long)m->errors[k]);
    family(o, "atr_proxy_in_flight", "gauge", "requests in flight");
    evbuffer_add_printf(o, "atr_proxy_in_flight %zu\n", p->in_flight);
    proxy_sessions_expire(&p->sessions, proxy_now());
    family(o, "atr_proxy_sessions", "gauge", "sessions kept (named and made up)");
    evbuffer_add_printf(o, "atr_proxy_sessions %zu\n", p->sessions.live);
    family(o, "atr_proxy_sessions_evicted_total", "counter",
           "sessions forgotten (idle past --session-ttl, or beyond --max-sessions)");
    evbuffer_add_printf(o, "atr_proxy_sessions_evicted_total %llu\n",
                        (unsigned long long)p->sessions.evicted);
    family(o, "atr_proxy_prompt_tokens_total", "counter", "prompt tokens (upstream usage)");
    evbuffer_add_printf(o, "atr_proxy_prompt_tokens_total %llu\n",
                        (unsigned long long)m->tokens_in);
    family(o, "atr_proxy_generation_tokens_total", "counter", "output tokens (upstream usage)");
    evbuffer_add_printf(o, "atr_proxy_generation_tokens_total %llu\n",
                        (unsigned long long)m->tokens_out);
    family(o, "atr_proxy_prefix_cache_hit_ratio", "gauge",
           "cached prompt tokens / prompt tokens, as the upstreams report them");
    evbuffer_add_printf(o, "atr_proxy_prefix_cache_hit_ratio %.6f\n",
                        m->tokens_in ? (double)m->cached / (double)m->tokens_in : 0.0);
    hist(o, "atr_proxy_time_to_first_token_seconds", "first content chunk after arrival",
         &m->ttft);
    hist(o, "atr_proxy_e2e_request_latency_seconds", "arrival to the last byte", &m->e2e);
    per_upstream(o, p, "atr_proxy_upstream_requests_total", "counter",
                 "requests sent to each upstream", offsetof(struct upstream, requests));
    per_upstream(o, p, "atr_proxy_upstream_failures_total", "counter",
                 "requests an upstream refused, cut or timed out",
                 offsetof(struct upstream, failures));
    per_upstream(o, p, "atr_proxy_upstream_in_flight", "gauge", "requests in flight upstream",
                 offsetof(struct upstream, in_flight));
    per_upstream(o, p, "atr_proxy_upstream_prompt_tokens_total", "counter",
                 "prompt tokens per upstream", offsetof(struct upstream, tokens_in));
    per_upstream(o, p, "atr_proxy_upstream_cached_tokens_total", "counter",
                 "cached prompt tokens per upstream", offsetof(struct upstream, cached));
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", o);
    evbuffer_free(o);
}
