/*
 * snapdir.h -- the snapshot directory at the head of each pool segment (snapdir.c): which
 * operands a node peer can read back from this process's pool, and the absorptions under
 * way in them.
 */
#ifndef DRED_SNAPDIR_H
#define DRED_SNAPDIR_H

#include <stdint.h>

#include "../../common/proto.h"

#define DRED_SNAPDIR_BYTES 32768u /* head of each pool segment: the snapshot directory */
#define DRED_SNAPDIR_SLOT_BYTES 160u /* one slot (snapdir.c); the head's last 64 bytes are
                                        handover.c's beacon */
#define DRED_SNAPDIR_SLOTS ((DRED_SNAPDIR_BYTES - 64u) / DRED_SNAPDIR_SLOT_BYTES)

struct dred_rt;
typedef struct dred_rt dred_rt_t;

int dred_snapdir_usable(const dred_rt_t *rt);
/* Record a snapshot at pool offset `off` of our segment, with the parameters its
 * member's READY states; returns its slot or -1. */
int dred_snapdir_publish(dred_rt_t *rt, uint64_t group, int64_t tag, uint32_t member,
                         int64_t off, uint64_t len, const proto_params_t *params);
void dred_snapdir_retire(dred_rt_t *rt, int slot); /* before the block is freed; -1: none */
/* Absorption's entries in our own slot (absorb.c): what is being absorbed and where, and
 * piece by piece how far it got. */
int dred_snapdir_absorb_begin(dred_rt_t *rt, int slot, uint32_t member, uint32_t prov_worker,
                              int64_t prov_off, int64_t scr_off, uint64_t piece, int exec_left);
void dred_snapdir_piece_ready(dred_rt_t *rt, int slot, uint64_t i); /* result in scratch */
void dred_snapdir_piece_done(dred_rt_t *rt, int slot, uint64_t i);  /* final in the snapshot */
void dred_snapdir_absorb_clear(dred_rt_t *rt, int slot); /* the snapshot is an operand again */
/* A node peer's slot as read (dred_snapdir_view): the snapshot and its absorption. */
typedef struct {
  uint32_t worker;
  const char *base;   /* the snapshot, in that peer's segment */
  int64_t off;
  uint32_t absorbing; /* PROTO_NO_MEMBER: it never absorbed anything */
  uint32_t prov_worker;
  int64_t prov_off, scr_off;
  uint64_t piece;
  int exec_left;
  uint64_t seq;
  void *slot;
  proto_params_t params; /* its member's, as published */
} dred_snapview_t;
/* Find member's snapshot in node peer `worker`'s directory: DRED_OK or PROC_FAILED. */
int dred_snapdir_view(dred_rt_t *rt, uint32_t worker, uint64_t group, int64_t tag,
                      uint32_t member, uint64_t len, dred_snapview_t *v);
/* 1 if the slot did not change since the view was taken (the progress counters aside). */
int dred_snapdir_view_same(const dred_snapview_t *v);
void dred_snapdir_view_progress(const dred_snapview_t *v, uint64_t *done, uint64_t *scr);

#endif /* DRED_SNAPDIR_H */
