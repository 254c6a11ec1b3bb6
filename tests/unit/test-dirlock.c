/* test-dirlock.c - a directory's claim is seen held while its owner
 * lives (another process, as another run would be) and free once it has
 * died; a directory that is gone is not held. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/dirlock.h"

static void test_held_while_owner_lives(void **state)
{
    (void)state;
    char dir[] = "/tmp/atr-test-dirlock-XXXXXX";
    assert_non_null(mkdtemp(dir));
    assert_false(atr_dirlock_held(dir));
    int ready[2];
    assert_int_equal(pipe(ready), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = atr_dirlock(dir, false);
        char c = fd >= 0 ? 'y' : 'n';
        if (write(ready[1], &c, 1) != 1)
            _exit(1);
        pause();
        _exit(0);
    }
    char c = 0;
    assert_int_equal(read(ready[0], &c, 1), 1);
    assert_int_equal(c, 'y');
    assert_true(atr_dirlock_held(dir));
    assert_int_equal(atr_dirlock(dir, false), -1);     /* not while it lives */
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    assert_false(atr_dirlock_held(dir));               /* the kernel let go */
    int fd = atr_dirlock(dir, false);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rmdir(dir), 0);
    assert_false(atr_dirlock_held(dir));               /* gone: nobody's */
    close(ready[0]);
    close(ready[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_held_while_owner_lives),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
