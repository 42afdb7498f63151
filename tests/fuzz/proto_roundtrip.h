/*
 * proto_roundtrip.h -- the decode/encode round-trip check shared by the CMocka test
 * (tests/unit/test_proto.c) and the libFuzzer target (tests/fuzz/fuzz_proto.c).
 *
 * proto_decode() must accept only canonical encodings: whatever it accepts, proto_encode()
 * of the decoded message must give back exactly the same bytes.  If it did not, two peers
 * could read one message two ways (a field the decoder ignores, a flag it widens), which
 * is how a hostile message slips past checks made on the re-encoded form.  A PROTO_GROUP
 * keeps its member list in the input buffer (workers_le), so it is unpacked to host order
 * before re-encoding.  Header-only so each test binary stays a single file.
 */
#ifndef DRED_PROTO_ROUNDTRIP_H
#define DRED_PROTO_ROUNDTRIP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/proto.h"

/* Re-encode decoded message `d` into `out` (PROTO_MAX_SIZE bytes).  Returns the length,
 * 0 if it cannot be encoded. */
static inline size_t proto_rt_reencode(const proto_msg_t *d, uint8_t *out) {
  static uint32_t workers[PROTO_MAX_GROUP];
  uint32_t k;
  if (d->type == PROTO_GROUP) {
    if (d->u.group.n == 0 || d->u.group.n > PROTO_MAX_GROUP) return 0;
    for (k = 0; k < d->u.group.n; k++) workers[k] = proto_group_worker(d, k);
    return proto_encode(d, workers, out, PROTO_MAX_SIZE);
  }
  return proto_encode(d, NULL, out, PROTO_MAX_SIZE);
}

/* Decode `len` bytes at `in`.  Returns -1 if they are refused, 1 if they are accepted and
 * re-encode to the same bytes, 0 if they are accepted but re-encode differently (a bug). */
static inline int proto_rt_check(const uint8_t *in, size_t len, uint8_t *scratch) {
  proto_msg_t d;
  size_t n;
  if (proto_decode(in, len, &d) != 0) return -1;
  n = proto_rt_reencode(&d, scratch);
  return n == len && memcmp(in, scratch, len) == 0;
}

#endif /* DRED_PROTO_ROUNDTRIP_H */
