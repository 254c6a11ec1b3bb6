/* workdir.h - removing a directory atr made for steps (a trace's work
 * directory, a browser's profile), whatever the steps did to it. */
#ifndef ATR_RUNNER_WORKDIR_H
#define ATR_RUNNER_WORKDIR_H

/* The names of the directories a run makes under its work base, each
 * followed by "<atr's pid>-": a trace's work directory
 * ("atr-work-<pid>-<n>-XXXXXX", runner/replay.c) and a browser's profile
 * ("atr-browser-<pid>-<n>", runner/browse.c). The guard and the stale
 * sweep find a run's by them. */
#define ATR_WORKDIR_PREFIX "atr-work-"
#define ATR_PROFILE_PREFIX "atr-browser-"

/* rm -rf of dir that never follows symlinks out, through the immutable and
 * append-only flags a step set (chattr +i), after detaching the mounts at
 * or below it (a step's leftovers, the size-capped file system of
 * replay.c). 0, or -1 if dir is still there. */
int atr_workdir_remove(const char *dir);

#endif
