/* net.h - a listening TCP socket for atr's HTTP servers (`atr sim serve`,
 * `atr proxy`): non-blocking, close-on-exec, SO_REUSEADDR, and
 * TCP_NODELAY, which accepted sockets inherit, so each streamed chunk
 * leaves at once instead of waiting (Nagle) for the peer's delayed ACK of
 * the last one. */
#ifndef ATR_UTIL_NET_H
#define ATR_UTIL_NET_H

#include "util/error.h"

/* Binds host:port (port 0: any free one) and listens; *bound gets the
 * port. The fd, or -1 with err ("WHO: cannot listen on HOST:PORT: why"). */
int atr_net_listen(const char *who, const char *host, unsigned port, unsigned *bound,
                   struct atr_error *err);

#endif
