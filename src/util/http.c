/* http.c - request-framing checks (util/http.h). */
#include "util/http.h"

#include <stdbool.h>
#include <string.h>
#include <strings.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

/* Content-Length past this many digits cannot be a body we would take. */
#define MAX_CL_DIGITS 18

/* RFC 9110 §5.6.2: token = 1*tchar. */
static bool is_token(const char *s)
{
    static const char extra[] = "!#$%&'*+-.^_`|~";
    if (!*s)
        return false;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
              (*s >= 'A' && *s <= 'Z') || strchr(extra, *s)))
            return false;
    return true;
}

/* RFC 9112 §6.3: Content-Length = 1*DIGIT; evhttp's strtoll would also
 * take a sign. */
static bool is_digits(const char *s)
{
    size_t n = strspn(s, "0123456789");
    return n > 0 && n <= MAX_CL_DIGITS && s[n] == '\0';
}

static const char *check(const struct evkeyvalq *h)
{
    const struct evkeyval *kv;
    int n_cl = 0, n_te = 0;
    const char *te = NULL;
    /* keyvalq_struct.h declares the list but not TAILQ_FOREACH */
    for (kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (!is_token(kv->key))
            return "bad header name (whitespace before the colon?)";
        if (strcasecmp(kv->key, "Content-Length") == 0) {
            if (++n_cl > 1)
                return "more than one Content-Length header";
            if (!is_digits(kv->value))
                return "Content-Length is not 1 to 18 decimal digits";
        } else if (strcasecmp(kv->key, "Transfer-Encoding") == 0) {
            n_te++;
            te = kv->value;
        }
    }
    if (n_te && n_cl)
        return "both Transfer-Encoding and Content-Length";
    if (n_te > 1 || (te && strcasecmp(te, "chunked") != 0))
        return "Transfer-Encoding other than one \"chunked\"";
    return NULL;
}

const char *atr_http_framing_error(struct evhttp_request *req)
{
    const char *why = check(evhttp_request_get_input_headers(req));
    if (why)
        evhttp_add_header(evhttp_request_get_output_headers(req), "Connection", "close");
    return why;
}
