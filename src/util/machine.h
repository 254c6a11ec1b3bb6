/* machine.h - facts about the machine atr runs on, for the records that
 * must say where figures came from (the report's data appendix). */
#ifndef ATR_UTIL_MACHINE_H
#define ATR_UTIL_MACHINE_H

struct atr_machine {
    char host[65];          /* uname nodename */
    char kernel[200];       /* uname sysname, release and machine */
    char cpu[128];          /* /proc/cpuinfo's first "model name"; "" if none */
    unsigned cpus;          /* CPUs this process may run on */
    unsigned long long mem_bytes;   /* MemTotal; 0 if unknown */
};

/* Fills m from uname and /proc; a fact that cannot be read is left
 * empty or 0. Never fails. */
void atr_machine_read(struct atr_machine *m);

#endif
