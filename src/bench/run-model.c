/* run-model.c - `atr bench run`'s check of the model file its server
 * command names (`-m FILE`, `--model FILE`: llama-server's options): a GGUF is read whole by atr's own reader (util/gguf.h) after
 * prepare and before the server starts, so a corrupt or truncated model is
 * the outcome model_invalid naming the file and the offset at fault, not a
 * server crash with a loader's message in its log. */
#include "bench/run-impl.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/gguf.h"

/* One shell word of *p into w, quotes removed; *known false when its value
 * depends on the shell ($, a backquote, a glob). Separators (blanks and
 * ; & | ( ) < >) end a word. false at the end of the command. */
static bool next_word(const char **p, struct atr_buf *w, bool *known)
{
    const char *s = *p;
    while (*s && strchr(" \t\n;&|()<>", *s))
        s++;
    if (!*s)
        return false;
    atr_buf_clear(w);
    *known = true;
    char quote = 0;
    for (; *s && (quote || !strchr(" \t\n;&|()<>", *s)); s++) {
        if (quote == '\'' && *s != '\'') {
            atr_buf_putc(w, *s);
        } else if (*s == quote) {
            quote = 0;
        } else if (!quote && (*s == '\'' || *s == '"')) {
            quote = *s;
        } else if (*s == '\\' && s[1]) {
            atr_buf_putc(w, *++s);
        } else {
            if (strchr("$`", *s) || (!quote && strchr("*?[~", *s)))
                *known = false;
            atr_buf_putc(w, *s);
        }
    }
    *p = s;
    return true;
}

/* Is path a GGUF to check: named *.gguf (checked even when missing), or a
 * regular file that begins with the GGUF magic. */
static bool is_gguf(const char *path)
{
    size_t n = strlen(path);
    if (n >= 5 && strcasecmp(path + n - 5, ".gguf") == 0)
        return true;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    char magic[4] = "";
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    bool yes = fd >= 0 && read(fd, magic, 4) == 4 && memcmp(magic, ATR_GGUF_MAGIC, 4) == 0;
    if (fd >= 0)
        close(fd);
    return yes;
}

/* Checks one model file; false (outcome decided) when it is refused. */
static bool check_one(struct run *r, const char *path)
{
    struct atr_gguf_summary s;
    struct atr_error err;
    if (atr_gguf_check(path, &s, &err) < 0) {
        run_log_line(r, "<== model refused before the server started: %s", err.msg);
        run_decide(r, ATR_BENCH_MODEL_INVALID, "Model refused before the server started: %s",
                   err.msg);
        return false;
    }
    run_log_line(r, "==> model: %s: GGUF v%u, %s, %llu layers, %llu-d, vocabulary %llu, "
                 "%llu bytes: checked", path, s.version, *s.arch ? s.arch : "no architecture",
                 (unsigned long long)s.layers, (unsigned long long)s.embd,
                 (unsigned long long)s.vocab, (unsigned long long)s.file_bytes);
    return true;
}

bool run_check_model(struct run *r)
{
    if (r->image)   /* its paths are the container's, not the host's */
        return true;
    struct atr_buf w = ATR_BUF_INIT;
    const char *p = r->server_cmd;
    bool known, ok = true, want = false;    /* want: the last word was -m */
    while (ok && next_word(&p, &w, &known)) {
        const char *word = w.data ? w.data : "";
        if (want && known && is_gguf(word))
            ok = check_one(r, word);
        want = strcmp(word, "-m") == 0 || strcmp(word, "--model") == 0;
    }
    atr_buf_release(&w);
    return ok;
}
