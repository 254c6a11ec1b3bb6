/* container.h - a task's own container image as the root of its replayed
 * steps (docs/replay-tools.md, "Containers"): one container per trace,
 * created by the engine's CLI but never started, its files already owned
 * by the sandbox's uid range (runner/sandbox.h), its merged overlay root
 * attached as the steps' root. atr spawns every step itself, so per-step
 * cgroups and metrics are those of the host path.
 *
 * Memory: struct atr_ctr owns its env (malloc); atr_ctr_remove frees it.
 * Library code: never prints. */
#ifndef ATR_RUNNER_CONTAINER_H
#define ATR_RUNNER_CONTAINER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

/* The engine's CLI. Only podman can create a container with a uid map of
 * its own and mount it (`podman mount`); docker is detected, then refused
 * with the reason. */
struct atr_ctr_cli {
    char path[PATH_MAX];        /* the CLI binary */
    char name[16];              /* "podman" or "docker" */
    bool runc;                  /* pass --runtime runc --cgroup-manager cgroupfs */
    bool init;                  /* servers: `run --init` works (podman: catatonit) */
    int timeout_s;              /* per CLI call; atr_ctr_detect sets the default */
    char note[PATH_MAX + 256];  /* what was chosen and why: report once */
};

/* Seconds one CLI call may take by default before it is killed (a hung
 * engine); `image inspect` of a large image takes a few. */
#define ATR_CTR_CLI_TIMEOUT_S 120

/* Finds the CLI: want NULL (podman, else docker where its daemon
 * answers), "podman", "docker", or a path to either. 0, or -1 with err
 * naming the package to install. Runs `podman --version` (and `docker
 * info`) once. */
int atr_ctr_detect(const char *want, struct atr_ctr_cli *cli, struct atr_error *err);

/* The same for server containers (`bench run`'s "image" variants), which
 * need neither a uid map nor a mount: docker is used too where its daemon
 * answers. */
int atr_ctr_detect_servers(const char *want, struct atr_ctr_cli *cli, struct atr_error *err);

/* --image-template: the image of a trace whose instance_id is instance.
 * Placeholders: {instance} (as recorded) and {sweb} (the SWE-bench image
 * id: lower case, "__" as "_1776_"). atr_ctr_template_check: 0 when
 * tmpl is well formed (instance unused), -1 with err naming the bad
 * placeholder. atr_ctr_image_for: 0 and out filled, or -1 with err (no
 * instance_id, too long). */
int atr_ctr_template_check(const char *tmpl, struct atr_error *err);
int atr_ctr_image_for(const char *tmpl, const char *instance, char *out, size_t cap,
                      struct atr_error *err);

/* Is image there locally (`image exists`: atr never pulls)? 0, or -1 with
 * err "IMAGE: image not known" (or why the CLI failed). */
int atr_ctr_image_exists(const struct atr_ctr_cli *cli, const char *image, struct atr_error *err);

/* One trace's container. */
struct atr_ctr {
    char name[64];              /* "atr-<pid>-<n>": see atr_ctr_name */
    char root[PATH_MAX];        /* its merged root on the host */
    char workdir[PATH_MAX];     /* the image's WorkingDir, "" when none */
    char **env;                 /* the image's Env (+ PATH, HOME when it lacks
                                 * them), NULL-terminated, malloc */
    bool created;
};

/* The name of run pid's container number n; every container of a run
 * starts with "atr-<pid>-", which the guard removes after a SIGKILL. */
void atr_ctr_name(char *out, size_t cap, long pid, unsigned long n);

/* Creates (--pull never, no network, the sandbox's uid map) and mounts a
 * container of image named name, reads the image's Env and WorkingDir.
 * 0, or -1 with err (image not known, no /bin/sh in it, the CLI failed or
 * hung) and nothing left behind. */
int atr_ctr_create(const struct atr_ctr_cli *cli, const char *image, const char *name,
                   struct atr_ctr *c, struct atr_error *err);

/* Unmounts and removes c (when created) and frees its env; 0, or -1 with
 * err when the CLI failed (c is released either way). */
int atr_ctr_remove(const struct atr_ctr_cli *cli, struct atr_ctr *c, struct atr_error *err);

/* The argv that removes every container of run pid ("rm -f [--time 0]
 * --filter name=^atr-<pid>-"), for the guard to run after atr died:
 * pointers into buf (cap bytes) and argv (at least 8 slots). */
void atr_ctr_sweep_argv(const struct atr_ctr_cli *cli, long pid, char *buf, size_t cap,
                        char **argv);

/* A server container (`bench run`): run attached, so the CLI is the
 * server process: its exit is the container's, its SIGTERM is forwarded
 * to the container's init (--init: a server that ignores signals as pid 1
 * still stops), and the container's output is the CLI's. Never pulled
 * (`--pull never`: pulls belong in prepare). */
struct atr_ctr_run {
    const char *name;              /* "atr-<pid>-..." so the guard's sweep finds it */
    const char *image;
    const char *cgroup_parent;     /* atr_cg_rel_path of atr's server group, or NULL */
    unsigned host_port;            /* 127.0.0.1:host_port -> container_port */
    unsigned container_port;       /* 0: the host's network, the server binds host_port */
    const char *const *extra;      /* more `run` arguments (--device, -v), each one word */
    size_t n_extra;
    const char *command;           /* run by the image's /bin/sh -c; NULL: its own CMD */
};

/* The shell command line that starts r ("exec podman ... run ..."), every
 * word quoted: malloc'd, the caller frees. */
char *atr_ctr_run_command(const struct atr_ctr_cli *cli, const struct atr_ctr_run *r);

/* Did the engine see container name's init killed by the OOM killer?
 * 0 with *oom set, or -1 with err (no such container, the CLI failed). */
int atr_ctr_oom_killed(const struct atr_ctr_cli *cli, const char *name, bool *oom,
                       struct atr_error *err);

/* Removes container name, killing it if it runs; a name the engine does
 * not know is not an error. 0, or -1 with err. */
int atr_ctr_rm(const struct atr_ctr_cli *cli, const char *name, struct atr_error *err);

/* Removes the containers of runs that died without their guard (atr's
 * names, "atr-<pid>-...", whose pid no process has: a reboot, the guard
 * killed too); a live pid's are never touched. *removed counts them. 0,
 * or -1 with err (the CLI failed). */
int atr_ctr_sweep_stale(const struct atr_ctr_cli *cli, unsigned *removed, struct atr_error *err);

#endif
