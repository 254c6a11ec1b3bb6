/* test-output.c - result folders written whole (util/output.c, atr_outdir):
 * what a path holds, a commit into an absent, an empty and a full folder
 * (refused unless replace, the old one removed after), abort and keep; and
 * the sweep of a dead writer's temporary file (an unlocked one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/file.h>
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

/* The path of a temporary of out (out.tmp.XXXXXX) in dir other than a and b. */
static bool other_tmp(const char *dir, const char *a, const char *b, char *name, size_t n)
{
    DIR *d = opendir(dir);
    bool found = false;
    for (struct dirent *e; d && !found && (e = readdir(d)) != NULL;)
        if (strncmp(e->d_name, "out.tmp.", 8) == 0 && strlen(e->d_name) == 14 &&
            strcmp(e->d_name, a) != 0 &&
            strcmp(e->d_name, b) != 0) {
            snprintf(name, n, "%s/%s", dir, e->d_name);
            found = true;
        }
    if (d)
        closedir(d);
    return found;
}

/* Opening out sweeps out.tmp.XXXXXX files nobody holds locked (their
 * writer died), keeps a locked one (a live writer), another output's, a
 * name of another length and a result folder's temporary; and locks its
 * own temporary until the commit. */
static void test_sweep(void **state)
{
    (void)state;
    char dir[300], path[600], live[600], mine[600];
    snprintf(dir, sizeof dir, "%s/sweep", root);
    assert_int_equal(mkdir(dir, 0777), 0);
    put(dir, "out.tmp.AAAAAA", "dead");
    put(dir, "out.tmp.BBBBBB", "live");
    put(dir, "other.tmp.CCCCCC", "other");
    put(dir, "out.tmp.long-name", "other");
    snprintf(path, sizeof path, "%s/out.tmp.DDDDDD", dir);
    assert_int_equal(mkdir(path, 0777), 0);
    snprintf(live, sizeof live, "%s/out.tmp.BBBBBB", dir);
    int held = open(live, O_RDONLY);
    assert_true(held >= 0 && flock(held, LOCK_EX) == 0);

    struct atr_error err;
    snprintf(path, sizeof path, "%s/out", dir);
    struct atr_output *o = atr_output_open(path, &err);
    assert_non_null(o);
    assert_null(get(dir, "out.tmp.AAAAAA"));
    assert_string_equal(get(dir, "out.tmp.BBBBBB"), "live");
    assert_string_equal(get(dir, "other.tmp.CCCCCC"), "other");
    assert_string_equal(get(dir, "out.tmp.long-name"), "other");
    assert_true(other_tmp(dir, "out.tmp.BBBBBB", "out.tmp.DDDDDD", mine, sizeof mine));
    int fd = open(mine, O_RDONLY);
    assert_true(fd >= 0);
    assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), -1);    /* its writer lives */
    assert_int_equal(errno, EWOULDBLOCK);
    close(fd);
    assert_int_equal(atr_output_write(o, "x", 1, &err), 0);
    assert_int_equal(atr_output_commit(o, &err), 0);
    assert_string_equal(get(dir, "out"), "x");
    close(held);
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
        cmocka_unit_test(test_sweep),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
