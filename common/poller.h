/*
 * poller.h -- the adaptive back-off that keeps dred's runtime threads from spinning.
 *
 * MPI offers no file descriptor to sleep on, so a thread that owns dred's MPI traffic must
 * poll.  After a poll that found work the next poll comes at once; after each empty poll
 * the sleep doubles from `min_ns` up to `max_ns` (DESIGN.md: 1 us to 200 us gave a 0.2 ms
 * round trip through rank 0 on 9 processes over 2 cores).  Once nothing has been in flight
 * for `idle_after_ns`, the cap rises to `idle_max_ns`, so an idle process costs almost no
 * CPU.  Another thread with new work calls dred_poller_kick(): the sleep is a timed wait on
 * a condition variable, so the kick ends it at once.
 */
#ifndef DRED_POLLER_H
#define DRED_POLLER_H

#include <stdint.h>
#include <uv.h>

typedef struct {
  uv_mutex_t mu;
  uv_cond_t cv;
  int kicked;
  uint64_t min_ns, max_ns, idle_max_ns, idle_after_ns;
  uint64_t cur_ns;
  uint64_t idle_since; /* uv_hrtime() when the owner last had work in flight */
  uint64_t sleeps;     /* statistics: timed waits taken */
} dred_poller_t;

int dred_poller_init(dred_poller_t *p, uint64_t min_ns, uint64_t max_ns, uint64_t idle_max_ns,
                     uint64_t idle_after_ns);
void dred_poller_close(dred_poller_t *p);

/* Called by the owner after each poll.  `did_work`: the poll found something to do (then
 * no sleep).  `in_flight`: the owner has operations pending (keeps the short cap). */
void dred_poller_wait(dred_poller_t *p, int did_work, int in_flight);

/* From any thread: end the owner's current or next sleep. */
void dred_poller_kick(dred_poller_t *p);

#endif /* DRED_POLLER_H */
