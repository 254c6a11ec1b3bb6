/* http.h - the request-framing check shared by atr's HTTP servers
 * (`atr sim serve`, `atr proxy`): RFC 9112 rules that libevent's evhttp
 * does not enforce itself, so a body is never framed two ways. */
#ifndef ATR_UTIL_HTTP_H
#define ATR_UTIL_HTTP_H

struct evhttp_request;

/* NULL when req's headers frame its body one way only. Otherwise a static
 * message (never freed) naming what is wrong, and req's reply is marked
 * "Connection: close": the caller answers 400 and the connection ends,
 * since where the next request starts is unknown. Rejected: a header name
 * that is not an RFC 9110 token (so "Transfer-Encoding : chunked", whose
 * name evhttp keeps as "Transfer-Encoding " and then ignores); more than
 * one Content-Length, even equal ones; a Content-Length that is not 1*DIGIT
 * ("+5", "-1", "0x10", "1 2"); a Transfer-Encoding other than one
 * "chunked"; Transfer-Encoding and Content-Length together. */
const char *atr_http_framing_error(struct evhttp_request *req);

#endif
