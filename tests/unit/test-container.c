/* test-container.c - the parts of runner/container.h that need no engine:
 * image templates ({instance}, {sweb}, bad placeholders), the CLI choice
 * refused with the package to install, and the guard's sweep argv. The
 * containers themselves are tested on a real podman image by
 * tests/cli/test-replay-image.sh. */
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
    struct atr_ctr_cli cli = {.path = "/usr/bin/podman"};
    char buf[64], name[64], *argv[6];
    atr_ctr_sweep_argv(&cli, 4242, buf, sizeof buf, argv);
    assert_string_equal(argv[0], "/usr/bin/podman");
    assert_string_equal(argv[1], "rm");
    assert_string_equal(argv[4], "name=^atr-4242-");
    assert_null(argv[5]);
    atr_ctr_name(name, sizeof name, 4242, 7);
    assert_string_equal(name, "atr-4242-7");   /* matched by the sweep */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_template_fills),
        cmocka_unit_test(test_template_refuses),
        cmocka_unit_test(test_detect_refuses),
        cmocka_unit_test(test_sweep_argv),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
