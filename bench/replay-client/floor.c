/* floor.c - the cheapest client there is, to calibrate what the kernel
 * costs a request on this machine: one kept-alive connection, a timerfd
 * re-armed for each request's due time (as libevent does), one send() of a
 * fixed request, sleep in epoll_wait, recv() the answer; no parsing, no
 * timestamps kept. Its CPU per request is the floor of any client that
 * sleeps between requests at that rate; what atr spends above it is atr's.
 *
 * usage: floor PORT N RATE ANSWER_BYTES   (against stub.c on 127.0.0.1;
 *        ANSWER_BYTES: head + body of one answer, to count answers)
 * prints: user and system CPU microseconds per request */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: floor PORT N RATE ANSWER_BYTES\n");
        return 2;
    }
    int port = atoi(argv[1]), n = atoi(argv[2]);
    double rate = atof(argv[3]);
    long answer = atol(argv[4]);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
        perror("floor: connect");
        return 1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    static const char req[] = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
    int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event e1 = {.events = EPOLLIN, .data.fd = fd};
    struct epoll_event e2 = {.events = EPOLLIN, .data.fd = tfd};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e1);
    epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e2);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long long ns0 = (long long)t0.tv_sec * 1000000000LL + t0.tv_nsec;
    static char buf[65536];
    long bytes = 0;
    int sent = 0;
    while (bytes / answer < n) {
        if (sent < n) {
            long long due = ns0 + (long long)(sent * 1e9 / rate);
            struct itimerspec it = {.it_value = {.tv_sec = (time_t)(due / 1000000000LL),
                                                 .tv_nsec = (long)(due % 1000000000LL)}};
            timerfd_settime(tfd, TFD_TIMER_ABSTIME, &it, NULL);
        }
        struct epoll_event ev[4];
        int k = epoll_wait(ep, ev, 4, -1);
        for (int i = 0; i < k; i++) {
            if (ev[i].data.fd == tfd) {
                uint64_t x;
                if (read(tfd, &x, sizeof x) == sizeof x && send(fd, req, sizeof req - 1, 0) > 0)
                    sent++;
            } else {
                ssize_t m = recv(fd, buf, sizeof buf, 0);
                if (m <= 0)
                    return 1;
                bytes += m;
            }
        }
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("floor: %d requests at %.0f/s: user %.1f us, system %.1f us a request\n", n, rate,
           ((double)ru.ru_utime.tv_sec * 1e6 + (double)ru.ru_utime.tv_usec) / n,
           ((double)ru.ru_stime.tv_sec * 1e6 + (double)ru.ru_stime.tv_usec) / n);
    return 0;
}
