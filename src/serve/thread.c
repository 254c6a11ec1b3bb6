/* thread.c - an in-process `atr sim serve` on its own thread (see
 * thread.h). */
#include "serve/thread.h"

#include "sim/stats.h"

#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "serve/server.h"
#include "sim/stats.h"
#include "util/alloc.h"

struct atr_sim_thread {
    struct atr_profile profile;
    struct event_base *base;
    struct atr_serve *srv;
    struct event *quit;          /* the stop pipe readable: end the loop */
    int pipe[2];
    pthread_t th;
    bool running;
    char url[64];
};

static void on_quit(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    event_base_loopbreak(arg);
}

static void *serve_main(void *arg)
{
    struct atr_sim_thread *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

static int open_server(struct atr_sim_thread *s, const struct atr_engine_cfg *e,
                       unsigned max_model_len, struct atr_error *err)
{
    struct atr_serve_cfg cfg = {
        .profile = &s->profile, .engine = *e, .model_id = s->profile.model->hf_name,
        .max_model_len = max_model_len ? max_model_len : s->profile.model->max_model_len,
        .stall_s = 3600,
    };
    if (!(s->srv = atr_serve_new(s->base, &cfg, err)) || atr_serve_listen(s->srv, err) < 0)
        return -1;
    snprintf(s->url, sizeof s->url, "http://127.0.0.1:%u", atr_serve_port(s->srv));
    return 0;
}

struct atr_sim_thread *atr_sim_thread_start(const struct atr_profile *p,
                                            const struct atr_engine_cfg *e,
                                            unsigned max_model_len, struct atr_error *err)
{
    struct atr_sim_thread *s = xcalloc(1, sizeof *s);
    s->profile = *p;
    s->pipe[0] = s->pipe[1] = -1;
    s->base = event_base_new();
    if (!s->base || pipe2(s->pipe, O_CLOEXEC) < 0) {
        atr_error_set(err, "cannot create the sim server's loop");
        atr_sim_thread_stop(s);
        return NULL;
    }
    s->quit = event_new(s->base, s->pipe[0], EV_READ, on_quit, s->base);
    if (!s->quit || event_add(s->quit, NULL) < 0 || open_server(s, e, max_model_len, err) < 0) {
        if (!s->quit)
            atr_error_set(err, "out of memory");
        atr_sim_thread_stop(s);
        return NULL;
    }
    if (pthread_create(&s->th, NULL, serve_main, s) != 0) {
        atr_error_set(err, "cannot start the sim server's thread");
        atr_sim_thread_stop(s);
        return NULL;
    }
    s->running = true;
    return s;
}

const char *atr_sim_thread_url(const struct atr_sim_thread *s)
{
    return s->url;
}

const char *atr_sim_thread_model(const struct atr_sim_thread *s)
{
    return s->profile.model->hf_name;
}

static void halt(struct atr_sim_thread *s)
{
    if (!s->running)
        return;
    ssize_t n = write(s->pipe[1], "q", 1);
    (void)n;
    pthread_join(s->th, NULL);
    s->running = false;
}

int atr_sim_thread_halt(struct atr_sim_thread *s, struct atr_engine_stats *out)
{
    halt(s);                     /* the engine is read on this thread from here on */
    struct atr_engine *e = atr_serve_engine(s->srv);
    if (!e)
        return -1;
    atr_sim_stats_sum(&e, 1, out);
    return 0;
}

void atr_sim_thread_stop(struct atr_sim_thread *s)
{
    if (!s)
        return;
    halt(s);
    atr_serve_free(s->srv);
    if (s->quit)
        event_free(s->quit);
    if (s->base)
        event_base_free(s->base);
    for (int k = 0; k < 2; k++)
        if (s->pipe[k] >= 0)
            close(s->pipe[k]);
    free(s);
}
