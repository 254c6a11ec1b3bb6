/* machine.c - reads the machine facts of machine.h from uname and /proc. */
#include "util/machine.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

/* The value of the first "key<spaces>: value" line of a /proc file. */
static void proc_field(const char *path, const char *key, char *out, size_t cap)
{
    FILE *f = fopen(path, "r");
    char line[512];
    size_t klen = strlen(key);
    out[0] = '\0';
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, key, klen) != 0 || !strchr(line + klen, ':'))
            continue;
        const char *v = strchr(line + klen, ':') + 1;
        v += strspn(v, " \t");
        snprintf(out, cap, "%.*s", (int)strcspn(v, "\n"), v);
        break;
    }
    fclose(f);
}

void atr_machine_read(struct atr_machine *m)
{
    memset(m, 0, sizeof *m);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(m->host, sizeof m->host, "%s", u.nodename);
        snprintf(m->kernel, sizeof m->kernel, "%s %s %s", u.sysname, u.release, u.machine);
    }
    proc_field("/proc/cpuinfo", "model name", m->cpu, sizeof m->cpu);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
        m->cpus = (unsigned)CPU_COUNT(&set);
    char mem[64];
    proc_field("/proc/meminfo", "MemTotal", mem, sizeof mem);
    unsigned long long kb;
    if (sscanf(mem, "%llu", &kb) == 1)
        m->mem_bytes = kb * 1024;
}
