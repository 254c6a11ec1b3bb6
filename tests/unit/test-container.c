/* test-container.c - the parts of runner/container.h that need no engine:
 * image templates ({instance}, {sweb}, bad placeholders), the CLI choice
 * refused with the package to install, the guard's sweep argv, and the
 * command line of bench run's server containers. The
 * containers themselves are tested on a real podman image by
 * tests/cli/test-replay-image.sh and tests/cli/test-bench-image.sh. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "runner/container.h"

static void test_template_fills(void **state)
{
    char out[128];
    struct atr_error err;
    assert_int_equal(atr_ctr_image_for("repo:{instance}", "astropy__astropy-12907", out,
                                       sizeof out, &err), 0);
    assert_string_equal(out, "repo:astropy__astropy-12907");
    assert_int_equal(atr_ctr_image_for("swebench/sweb.eval.x86_64.{sweb}:latest",
                                       "Django__django-11099", out, sizeof out, &err), 0);
    assert_string_equal(out, "swebench/sweb.eval.x86_64.django_1776_django-11099:latest");
    assert_int_equal(atr_ctr_image_for("plain", "x", out, sizeof out, &err), 0);
    assert_string_equal(out, "plain");
}

static void test_template_refuses(void **state)
{
    char out[16];
    struct atr_error err;
    assert_int_equal(atr_ctr_template_check("r:{instance}-{sweb}", &err), 0);
    assert_int_equal(atr_ctr_template_check("r:{inst}", &err), -1);
    assert_non_null(strstr(err.msg, "unknown placeholder {inst}"));
    assert_int_equal(atr_ctr_template_check("r:{instance", &err), -1);
    assert_int_equal(atr_ctr_template_check("r:instance}", &err), -1);
    assert_non_null(strstr(err.msg, "'}' without its '{'"));
    assert_int_equal(atr_ctr_image_for("r:{instance}", NULL, out, sizeof out, &err), -1);
    assert_non_null(strstr(err.msg, "no instance_id"));
    assert_int_equal(atr_ctr_image_for("r:{instance}", "a-very-long-instance", out, sizeof out,
                                       &err), -1);
    assert_non_null(strstr(err.msg, "too long"));
}

static void test_detect_refuses(void **state)
{
    struct atr_ctr_cli cli;
    struct atr_error err;
    assert_int_equal(atr_ctr_detect("/nonexistent/podman", &cli, &err), -1);
    assert_non_null(strstr(err.msg, "(the container CLI)"));
    assert_int_equal(atr_ctr_detect("lxc", &cli, &err), -1);
    assert_non_null(strstr(err.msg, "want podman, docker or a path"));
    const char *path = getenv("PATH");
    char *saved = path ? strdup(path) : NULL;
    setenv("PATH", "/nonexistent", 1);
    assert_int_equal(atr_ctr_detect(NULL, &cli, &err), -1);
    assert_non_null(strstr(err.msg, "install podman (apt-get install podman runc)"));
    if (saved)
        setenv("PATH", saved, 1);
    free(saved);
}

static void test_sweep_argv(void **state)
{
    struct atr_ctr_cli cli = {.path = "/usr/bin/docker", .name = "docker"};
    char buf[64], name[64], *argv[8];
    atr_ctr_sweep_argv(&cli, 4242, buf, sizeof buf, argv);
    assert_string_equal(argv[0], "/usr/bin/docker");
    assert_string_equal(argv[1], "rm");
    assert_string_equal(argv[4], "name=^atr-4242-");
    assert_null(argv[5]);
    struct atr_ctr_cli podman = {.path = "/usr/bin/podman", .name = "podman"};
    atr_ctr_sweep_argv(&podman, 4242, buf, sizeof buf, argv);
    assert_string_equal(argv[3], "--time");   /* not podman's 10 s stop timeout */
    assert_string_equal(argv[4], "0");
    assert_string_equal(argv[6], "name=^atr-4242-");
    assert_null(argv[7]);
    atr_ctr_name(name, sizeof name, 4242, 7);
    assert_string_equal(name, "atr-4242-7");   /* matched by the sweep */
}

/* bench run's server containers: every word quoted once, the engine's
 * quirks where they apply, the host network unless a port is published. */
static void test_run_command(void **state)
{
    struct atr_ctr_cli cli = {.path = "/usr/bin/podman", .name = "podman", .runc = true,
                              .init = true};
    const char *extra[] = {"-v", "/models dir:/models:ro"};
    struct atr_ctr_run r = {.name = "atr-1-1", .image = "vllm-bench:abc",
                            .cgroup_parent = "/atr-1/server-1", .host_port = 8011,
                            .extra = extra, .n_extra = 2,
                            .command = "vllm serve 'm' --port 8011"};
    char *cmd = atr_ctr_run_command(&cli, &r);
    assert_string_equal(cmd, "exec /usr/bin/podman --runtime runc --cgroup-manager cgroupfs run "
                             "--pull never --init --name atr-1-1 --cgroup-parent /atr-1/server-1 "
                             "--ulimit nofile=1024:1024 --ulimit nproc=4096:4096 --network host "
                             "-v '/models dir:/models:ro' vllm-bench:abc /bin/sh -c "
                             "'vllm serve '\\''m'\\'' --port 8011'");
    free(cmd);
    struct atr_ctr_cli docker = {.path = "/usr/bin/docker", .name = "docker", .init = true};
    struct atr_ctr_run p = {.name = "atr-1-2", .image = "e", .host_port = 8011,
                            .container_port = 8000};
    cmd = atr_ctr_run_command(&docker, &p);
    assert_string_equal(cmd, "exec /usr/bin/docker run --pull never --init --name atr-1-2 "
                             "--publish 127.0.0.1:8011:8000 e");
    free(cmd);
}

static void test_detect_servers(void **state)
{
    struct atr_ctr_cli cli;
    struct atr_error err;
    assert_int_equal(atr_ctr_detect_servers("/nonexistent/docker", &cli, &err), -1);
    assert_non_null(strstr(err.msg, "(the container CLI)"));
    const char *path = getenv("PATH");
    char *saved = path ? strdup(path) : NULL;
    setenv("PATH", "/nonexistent", 1);
    assert_int_equal(atr_ctr_detect_servers(NULL, &cli, &err), -1);
    assert_non_null(strstr(err.msg, "no podman or docker on PATH: install podman"));
    if (saved)
        setenv("PATH", saved, 1);
    free(saved);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_fills),
        cmocka_unit_test(test_template_refuses),
        cmocka_unit_test(test_detect_refuses),
        cmocka_unit_test(test_sweep_argv),
        cmocka_unit_test(test_run_command),
        cmocka_unit_test(test_detect_servers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
