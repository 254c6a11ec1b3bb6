/* test-output.c - result folders written whole (util/output.c, atr_outdir):
 * what a path holds, a commit into an absent, an empty and a full folder
 * (refused unless replace, the old one removed after), abort and keep. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/output.h"

static char root[256];           /* under $TMPDIR, links resolved */

static void put(const char *dir, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char *get(const char *dir, const char *name)
{
    static char text[64];
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    return text;
}

/* Entries of root other than "." and "..". */
static int entries(void)
{
    DIR *d = opendir(root);
    int n = 0;
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_state(void **state)
{
    char dir[300], file[320];
    enum atr_outdir_state st;
    struct atr_error err;
    snprintf(dir, sizeof dir, "%s/s", root);
    assert_int_equal(atr_outdir_state(dir, &st, &err), 0);
    assert_int_equal(st, ATR_OUTDIR_ABSENT);
    assert_int_equal(mkdir(dir, 0755), 0);
    assert_int_equal(atr_outdir_state(dir, &st, &err), 0);
    assert_int_equal(st, ATR_OUTDIR_EMPTY);
    put(dir, "a", "1");
    assert_int_equal(atr_outdir_state(dir, &st, &err), 0);
    assert_int_equal(st, ATR_OUTDIR_FULL);
    snprintf(file, sizeof file, "%s/a", dir);
    assert_int_equal(atr_outdir_state(file, &st, &err), -1);
    assert_non_null(strstr(err.msg, "exists and is not a directory"));
    unlink(file);
    rmdir(dir);
}

static void test_commit(void **state)
{
    char dir[512];
    struct atr_error err;
    snprintf(dir, sizeof dir, "%s/out", root);
    struct atr_outdir *d = atr_outdir_open(dir, &err);      /* absent */
    assert_non_null(d);
    put(atr_outdir_path(d), "m", "first");
    assert_null(get(dir, "m"));                            /* nothing there before the commit */
    assert_int_equal(atr_outdir_commit(d, false, &err), 0);
    assert_string_equal(get(dir, "m"), "first");
    d = atr_outdir_open(dir, &err);                         /* full, no replace: refused */
    put(atr_outdir_path(d), "m", "second");
    assert_int_equal(atr_outdir_commit(d, false, &err), -1);
    assert_non_null(strstr(err.msg, "exists and is not empty (the results are in "));
    assert_string_equal(get(dir, "m"), "first");
    char *tmp = strstr(err.msg, "are in ") + strlen("are in ");
    tmp[strlen(tmp) - 1] = '\0';
    assert_string_equal(get(tmp, "m"), "second");          /* the new results kept */
    char rm[600];
    snprintf(rm, sizeof rm, "rm -r %s", tmp);
    assert_int_equal(system(rm), 0);
    d = atr_outdir_open(dir, &err);                         /* full, replace */
    put(atr_outdir_path(d), "n", "third");
    assert_int_equal(atr_outdir_commit(d, true, &err), 0);
    assert_null(get(dir, "m"));
    assert_string_equal(get(dir, "n"), "third");
    assert_int_equal(entries(), 1);                         /* no .tmp, no .old beside it */
    snprintf(rm, sizeof rm, "rm -r %s", dir);
    assert_int_equal(system(rm), 0);
}

static void test_abort_keep(void **state)
{
    char dir[512];
    struct atr_error err;
    snprintf(dir, sizeof dir, "%s/k", root);
    struct atr_outdir *d = atr_outdir_open(dir, &err);
    put(atr_outdir_path(d), "m", "x");
    atr_outdir_abort(d);
    atr_outdir_abort(NULL);
    enum atr_outdir_state st;
    assert_int_equal(atr_outdir_state(dir, &st, &err), 0);
    assert_int_equal(st, ATR_OUTDIR_ABSENT);
    d = atr_outdir_open(dir, &err);
    put(atr_outdir_path(d), "m", "y");
    char *kept = atr_outdir_keep(d);
    assert_string_equal(get(kept, "m"), "y");
    assert_int_equal(strncmp(kept, root, strlen(root)), 0);
    char rm[600];
    snprintf(rm, sizeof rm, "rm -r %s", kept);
    assert_int_equal(system(rm), 0);
    free(kept);
}

static int setup(void **state)
{
    const char *t = getenv("TMPDIR");
    char tmpl[PATH_MAX], real[PATH_MAX];
    snprintf(tmpl, sizeof tmpl, "%s/atr-test-output-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpl) || !realpath(tmpl, real) || strlen(real) >= sizeof root)
        return -1;
    memcpy(root, real, strlen(real) + 1);
    return 0;
}

static int teardown(void **state)
{
    char rm[600];
    snprintf(rm, sizeof rm, "rm -rf %s", root);
    return system(rm) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state),
        cmocka_unit_test(test_commit),
        cmocka_unit_test(test_abort_keep),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
