/* models.c - the served model's id from GET /v1/models (see models.h). */
#include "llm/models.h"

#include <curl/curl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "json/json.h"
#include "util/arena.h"
#include "util/buf.h"

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
    return atr_buf_append(ctx, p, size * n) < 0 ? 0 : size * n;
}

static int parse_models(const struct atr_buf *b, const char *url, char *out, size_t cap,
                        struct atr_error *err)
{
    struct atr_arena arena = ATR_ARENA_INIT;
    struct atr_json *root, *data;
    struct atr_json_err jerr;
    int rc = -1;
    if (atr_json_parse(&arena, b->data ? b->data : "", b->len, NULL, &root, &jerr) < 0)
        atr_error_set(err, "%s:%u:%u: %s", url, jerr.line, jerr.col, jerr.msg);
    else if (!atr_json_is(data = atr_json_get(root, "data"), ATR_JSON_ARRAY) ||
             !data->u.kids.first || !atr_json_get_str(data->u.kids.first, "id", NULL))
        atr_error_set(err, "%s: expected {\"data\": [{\"id\": ...}]}", url);
    else if (strlen(atr_json_get_str(data->u.kids.first, "id", NULL)) >= cap)
        atr_error_set(err, "%s: model id too long", url);
    else {
        strcpy(out, atr_json_get_str(data->u.kids.first, "id", NULL));
        rc = 0;
    }
    atr_arena_release(&arena);
    return rc;
}

/* The server did not answer at all: say that, with the system's reason
 * (errno: "Connection refused") or curl's, never as a model problem. */
static int unreachable(CURL *h, CURLcode cc, const char *base_url, double timeout_s,
                       struct atr_error *err)
{
    long os_errno = 0;
    curl_easy_getinfo(h, CURLINFO_OS_ERRNO, &os_errno);
    if (cc == CURLE_OPERATION_TIMEDOUT)
        return atr_error_set(err, "the server at %s did not answer GET /v1/models within %g s",
                             base_url, timeout_s);
    return atr_error_set(err, "the server at %s is not reachable (%s)", base_url,
                         os_errno ? strerror((int)os_errno) : curl_easy_strerror(cc));
}

int atr_llm_first_model(const char *base_url, const char *api_key, double timeout_s,
                        char *out, size_t cap, enum atr_models_fail *why,
                        struct atr_error *err)
{
    char url[1024], auth[512];
    snprintf(url, sizeof url, "%s/v1/models", base_url);
    struct atr_buf body = ATR_BUF_INIT;
    body.max = 1 << 20;
    CURL *h = curl_easy_init();
    if (!h)
        return atr_error_set(err, "cannot initialise libcurl");
    struct curl_slist *hdr = NULL;
    if (api_key) {
        snprintf(auth, sizeof auth, "Authorization: Bearer %s", api_key);
        hdr = curl_slist_append(NULL, auth);
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    if (hdr)
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    CURLcode cc = curl_easy_perform(h);
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    int rc;
    bool down = cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
                cc == CURLE_OPERATION_TIMEDOUT || cc == CURLE_GOT_NOTHING;
    if (why)
        *why = down ? ATR_MODELS_UNREACHABLE : ATR_MODELS_NO_LIST;
    if (down)
        rc = unreachable(h, cc, base_url, timeout_s, err);
    else if (cc != CURLE_OK)
        rc = atr_error_set(err, "%s: %s", url, curl_easy_strerror(cc));
    else if (status != 200)
        rc = atr_error_set(err, "%s: HTTP %ld", url, status);
    else
        rc = parse_models(&body, url, out, cap, err);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    atr_buf_release(&body);
    return rc;
}
