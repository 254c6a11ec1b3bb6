/* fuzz-cgroup.c - libFuzzer target for the cgroup file parsers: pressure
 * and keyed files, and host detection from mountinfo + /proc/self/cgroup
 * text (split at the first NUL byte of the input). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "runner/cgroup.h"

static int memfile(const uint8_t *p, size_t n, char *path, size_t cap)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    if (n && write(fd, p, n) != (ssize_t)n) {
        close(fd);
        return -1;
    }
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char text[4096];
    size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    int64_t some, full;
    atr_cg_parse_pressure(text, &some, &full);
    atr_cg_parse_keyed(text, "oom_kill");
    atr_cg_parse_keyed(text, "user_usec");

    const uint8_t *nul = memchr(data, 0, size);
    size_t n1 = nul ? (size_t)(nul - data) : size;
    const uint8_t *rest = nul ? nul + 1 : data + size;
    char p1[64], p2[64];
    int fd1 = memfile(data, n1, p1, sizeof p1);
    int fd2 = memfile(rest, (size_t)(data + size - rest), p2, sizeof p2);
    if (fd1 >= 0 && fd2 >= 0) {
        struct atr_cg_host h;
        struct atr_error err;
        /* A sysfs root that does not exist: parsing only, nothing touched. */
        atr_cg_detect(&h, p1, p2, "/nonexistent-fuzz-root", &err);
    }
    if (fd1 >= 0)
        close(fd1);
    if (fd2 >= 0)
        close(fd2);
    return 0;
}
