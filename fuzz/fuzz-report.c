/* fuzz-report.c - libFuzzer target for `atr report`'s inputs: any bytes as
 * one input file (recognised by content: a sweep, a result, traces), then
 * the whole report written. The bytes live in a memfd, named by its
 * /proc/self/fd path, so nothing touches the disk. Errors are fine;
 * crashes and leaks are not. */
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

#include "report/html.h"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz-report", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    struct atr_html *h = atr_html_new();
    struct atr_error err;
    if (atr_html_add(h, path, &err) == 0) {
        struct atr_buf b = ATR_BUF_INIT;
        struct atr_html_meta m = {.version = "fuzz", .command_line = "atr report fuzz"};
        atr_html_write(&b, h, &m);
        atr_buf_release(&b);
    }
    atr_html_free(h);
    close(fd);
    return 0;
}
