/* webaction.h - web agents' action strings: BrowserGym calls and WebArena
 * commands, split into verb, target element and url (docs/web-agent-traces.md).
 *
 * Two grammars are read. BrowserGym's high-level actions are Python calls,
 * one or more per string (its multiaction mode puts one per line):
 * `click('a123')`, `fill('b45', 'text')`, `goto('http://...')`,
 * `scroll(0, 200)`, `press('a1', 'Enter')`, `go_back()`, `noop(1000)`.
 * WebArena's are one command per string with bracketed arguments:
 * `click [1234]`, `type [56] [text] [1]`, `goto [http://...]`,
 * `scroll [down]`, `stop [answer]`.
 *
 * Memory: nothing is allocated; target and url point into the parsed text
 * (without their quotes or brackets; escapes inside them are left as
 * written, which element ids and urls do not use). */
#ifndef ATR_TRACE_WEBACTION_H
#define ATR_TRACE_WEBACTION_H

#include <stddef.h>

enum atr_web_style { ATR_WEB_BROWSERGYM, ATR_WEB_WEBARENA };

#define ATR_WEB_VERB_MAX 32

struct atr_web_action {
    enum atr_web_style style;
    char verb[ATR_WEB_VERB_MAX];   /* "click", "fill", "type", "goto", ... */
    const char *target;            /* the element id (a BrowserGym bid, a
                                      WebArena node id), or NULL */
    size_t target_len;
    const char *url;               /* goto's page, or NULL */
    size_t url_len;
    const char *value;             /* what an element action enters: fill's
                                      text, press's key (content), or NULL */
    size_t value_len;
};

/* Reads the next action of s[*pos..len): 1 with *out filled and *pos past
 * it, 0 when only blanks (or `;`) are left, -1 when the text there is not
 * an action (*pos is then where that action starts). */
int atr_web_action_next(const char *s, size_t len, size_t *pos, struct atr_web_action *out);

#endif
