/*
 * proto.h -- the control messages between dred-master and the workers.
 *
 * Only control travels through the master; operand data moves worker to worker by RMA.
 * Every message is a fixed 8-byte header (magic "DR", version, type, payload length)
 * followed by a little-endian payload whose layout depends on the type.  Encoding is
 * explicit (no struct dumps) so a malformed or foreign message is detected by
 * proto_decode() rather than misread.  All control messages of a pair of processes share
 * one MPI tag on dred's private communicator, so MPI's non-overtaking rule keeps them in
 * order (a GROUP definition always precedes the READY that uses it).
 */
#ifndef DRED_PROTO_H
#define DRED_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define PROTO_MAGIC 0x5244u /* "DR" little-endian */
/* 2: READY carries an explicit error; ABANDON.  3: inline operands (READY's inl/data,
 * INLINE).  4: an explicit tag's key carries its use count (proto_key_explicit).
 * 5: a copy sent on a link is answered with REPLICA_ACK (pool_off -1) once held.
 * 6: PONG reports the worker's pool use.  7: JOIN and WELCOME (a master outside the
 * MPI job, common/mpi/boot.h).  8: in-place absorption (READY's snap, unit and
 * absorbed, TASK's absorb, DONE's absorbed, RECOVER's last, tentative and single).
 * 9: collective kinds (READY's kind; DATA and PUSH; an explicit key names its kind).
 * 10: READY's have (a bcast member holds the data).  11: an allreduce's relay followers
 * (READY's have PROTO_HAVE_FOLLOW, HAVE).  12: node partials (READY's cover).
 * 13: REPLICA carries its member's parameters (a recovered READY states them). */
#define PROTO_VERSION 13u
/* "No member" in the member fields that may name none (RECOVER's last and tentative). */
#define PROTO_NO_MEMBER 0xffffffffu
#define PROTO_HEADER 8u
#define PROTO_MAX_GROUP 65536u /* members per group the wire format accepts */
#define PROTO_MAX_REPLICAS 4u
/* READY's cover: a bitmap of the group's members, bit k at byte k / 8, bit k % 8. */
#define PROTO_COVER_MAX (PROTO_MAX_GROUP / 8u)
#define PROTO_JOB_ID_MAX 64u  /* WELCOME's job id field, NUL included */
#define PROTO_REASON_MAX 256u /* WELCOME's reason field, NUL included */
/* Inline reductions (DRED_INLINE_MAX): the operands of all members of one reduction travel
 * in one INLINE message, so members x bytes per operand is bounded by this; a member's own
 * READY carries at most this much too. */
#define PROTO_INLINE_TOTAL (256u * 1024u)
#define PROTO_INLINE_FIXED 36u /* INLINE's payload before the operands */
#define PROTO_DATA_FIXED 36u   /* DATA's payload before its bytes */
/* The bytes one DATA message carries at most: a result travels in pieces of this size. */
#define PROTO_DATA_MAX PROTO_INLINE_TOTAL
/* DATA frames a sender keeps queued on one link at most (16 MiB): a worker sending a
 * result to dred-master (lib/paths/distribute.c) and dred-master sending it on to each
 * worker (master/main.c) send more only as the link drains, so a result of any size
 * never takes a whole turn of the loop, nor sits a second time in queued frames. */
#define PROTO_DATA_AHEAD 64u

/* The kinds of collective dred runs (READY's kind).  Members that disagree on the kind of
 * a reduction end it with DRED_ERR_MISMATCH (proto_params_agree). */
#define PROTO_KIND_REDUCE 0u
#define PROTO_KIND_ALLREDUCE 1u
#define PROTO_KIND_BCAST 2u
#define PROTO_KINDS 3u

/* READY's have (lib/paths/relay.c): what a member got from its node's relay leader. */
#define PROTO_HAVE_DATA 1u   /* a bcast's member: the whole data                       */
#define PROTO_HAVE_FOLLOW 2u /* a large allreduce's member: will copy it, then send HAVE */
#define PROTO_MAX_GROUP_SIZE (PROTO_HEADER + 16u + 4u * PROTO_MAX_GROUP)
#define PROTO_MAX_INLINE_SIZE (PROTO_HEADER + PROTO_INLINE_FIXED + PROTO_INLINE_TOTAL)
#define PROTO_MAX_SIZE \
  (PROTO_MAX_GROUP_SIZE > PROTO_MAX_INLINE_SIZE ? PROTO_MAX_GROUP_SIZE : PROTO_MAX_INLINE_SIZE)

/* The key of a reduction: the `tag` field of every message below, of the master's
 * instances, of snapshot directory entries and of stored replicas.  The k-th
 * DRED_TAG_AUTO call on a group (k from 0) is -1 - k.  An explicit tag t (>= 0) used for
 * the u-th time on its group (u from 0; every member counts its own calls, which agree
 * because members call a tag's reductions in the same order) is (u << 31) | t.
 *
 * Why the use count: a tag may be reused once its reduction ended, but what the earlier
 * use left behind may outlive it -- a copy that reached a holder's store after the END
 * that dropped the others, a snapshot entry of a member killed before it handled its END.
 * Under the bare tag, recovering the later use's operand for a dead member could read
 * the earlier one's and end DRED_OK with a wrong value; under distinct keys it finds
 * nothing and moves on.  (u wraps after 2^32 uses of one tag.)
 *
 * Explicit tags are per kind (a reduce with tag 5 and an allreduce with tag 5 are two
 * collectives, each counting its own uses): proto_key_kind puts the kind into the use
 * field as u * 4 + kind, so the keys of different kinds never meet (u then wraps after
 * 2^30 uses).  Auto keys are one sequence for all kinds, as MPI orders a communicator's
 * collectives: members that disagree on the kind of the k-th meet under one key and the
 * READYs' kind fields say MISMATCH. */
#define PROTO_KEY_USE_SHIFT 31
static inline int64_t proto_key_explicit(int32_t tag, uint32_t use) {
  return (int64_t)(((uint64_t)use << PROTO_KEY_USE_SHIFT) | (uint32_t)tag);
}
static inline int64_t proto_key_kind(int32_t tag, uint32_t use, uint32_t kind) {
  return proto_key_explicit(tag, use * 4u + (kind & 3u));
}
static inline int64_t proto_key_auto(int64_t seq) { return -1 - seq; }
/* The application's tag of a key (DRED_TAG_AUTO keys: the key itself, < 0). */
static inline int64_t proto_key_tag(int64_t key) {
  return key < 0 ? key : (int64_t)((uint64_t)key & 0x7fffffffu);
}
static inline uint32_t proto_key_use(int64_t key) {
  return key < 0 ? 0u : (uint32_t)((uint64_t)key >> PROTO_KEY_USE_SHIFT);
}
/* For logs: "tag 5#2" is the third reduction with tag 5 on its group. */
#define PROTO_KEY_FMT "%lld#%u"
#define PROTO_KEY_ARG(key) (long long)proto_key_tag(key), (unsigned)proto_key_use(key)

typedef enum {
  /* worker -> master */
  PROTO_GROUP = 1,       /* define a group: id, member list (worker ranks)          */
  PROTO_READY = 2,       /* a member's operand (or a recovered copy) is ready       */
  PROTO_DONE = 3,        /* a task finished                                         */
  PROTO_PONG = 4,        /* heartbeat answer                                        */
  PROTO_BYE = 5,         /* the worker is finalising                                */
  PROTO_RECOVER_FAILED = 6, /* no usable replica for a RECOVER                      */
  PROTO_ABANDON = 9,     /* this member gives up on a reduction it announced (its
                            dred_finalize ran out of DRED_FINALIZE_WAIT_S): end it
                            for every member with `error`                            */
  PROTO_JOIN = 11,       /* a master outside the MPI job only: the worker's node and
                            the master's node as the workers see it (stage 0), then
                            "set up, ping me from now on" (stage 1)                  */
  PROTO_HAVE = 12,       /* an allreduce member whose READY said it follows its node's
                            relay leader (have PROTO_HAVE_FOLLOW): it copied the whole
                            result from the leader (error 0: send it END alone), or
                            the relay failed (error: send it the result); RECOVER's
                            layout                                                   */
  /* worker -> worker */
  PROTO_REPLICA = 7,     /* a replica of my operand: in my pool at pool_off, or its
                            len bytes follow this frame on the link (pool_off -1)     */
  PROTO_REPLICA_ACK = 8, /* your shared-memory replica is stored: release it; pool_off
                           * -1: the copy you sent on the link is held (len 0: dropped) */
  PROTO_SERVE = 10,      /* I read your buffer by MPI_Rget for task task_id from now
                            on (on 1) / no more (on 0): drive MPI's progress meanwhile
                            (dynamic-window RMA needs the target to poll)             */
  /* master -> worker */
  PROTO_TASK = 20,       /* combine the provider's buffer into yours                */
  PROTO_END = 21,        /* a reduction ended with a status                         */
  PROTO_PING = 22,       /* heartbeat                                               */
  PROTO_FAILED = 23,     /* a worker was declared failed                            */
  PROTO_RECOVER = 24,    /* load a member's operand from a replica                  */
  PROTO_SHUTDOWN = 25,   /* every worker said BYE: leave                            */
  PROTO_INLINE = 26,     /* to the root of an inline reduction (to every member of an
                            inline allreduce): every member's operand, in member
                            order (a reduce root's own slot is zeros): fold them       */
  PROTO_WELCOME = 27,    /* a master outside the MPI job only, once every worker
                            joined: its verdict on the job (status, reason), the job
                            id and its heartbeat interval (the MPMD start-up
                            broadcasts the same over MPI, common/mpi/boot.h)        */
  /* both ways */
  PROTO_DATA = 28,       /* a piece of a collective's result (allreduce, bcast): from
                            the member holding it to the master, and from the master
                            to every other member, in order, offset by offset       */
  /* master -> worker */
  PROTO_PUSH = 29        /* to the member holding an allreduce's whole result: send it
                            to the master as DATA (end's layout; status unused)      */
} proto_type_t;

/* A reference to a buffer in another process's memory, as its owner announced it.  It
 * names the owner and the length so the reader can check it against what it knows for
 * itself (lib/shm/segment.h) before it reads a byte. */
typedef struct {
  uint64_t addr;     /* address in the owner's address space (its dynamic RMA window) */
  int64_t pool_off;  /* offset in the owner's shared-memory pool segment, or -1      */
  uint64_t len;      /* bytes: the reduction's count x extent                        */
  uint32_t owner;    /* private-communicator rank of the process whose memory it is  */
} proto_buf_t;

/* How a task ended, as its executor reports it in DONE (`status`) and as the master's
 * journal records it (tasks.status; dredstat prints the names).  The numbers belong to
 * the wire format and to the journal's schema, so they are fixed; 2 names no outcome and
 * the master refuses a DONE carrying it, as any unknown status.  No outcome says the
 * executor's own buffer was damaged: a task that reads another process builds its result
 * out of place (lib/mpi/combine.c, dred_dp_task_abort). */
typedef enum {
  PROTO_TASK_OK = 0,
  PROTO_TASK_PROVIDER_LOST = 1, /* the provider's data could not be read; the executor's
                                   own buffer is intact                                  */
  PROTO_TASK_ERROR = 3          /* a local error (e.g. the op failed): ends the instance */
} proto_task_status_t;

/* What the members of a reduction must agree on: the parameter fields of their READYs.
 * dred-master compares every READY of an instance with the first (master/sched/sched.c); the
 * members of a one-node group compare them in their shared-memory slot (lib/shm/meet.c).
 * One definition, so both paths call the same thing a mismatch. */
typedef struct {
  uint64_t count;
  uint32_t type_size; /* MPI_Type_size of the datatype                   */
  uint32_t extent;    /* bytes per element in the workers' buffers        */
  uint32_t type_sig;  /* type-signature fingerprint (lib/engine/typecheck.c)  */
  uint32_t root;      /* group rank of the root                          */
  int32_t op;         /* the op handle (predefined ops compare exactly)  */
  uint8_t op_is_user; /* user ops compare only by commutativity          */
  uint8_t commutative;
  uint8_t inl;        /* an inline reduction: operands travel in READY    */
  uint8_t kind;       /* PROTO_KIND_*                                     */
} proto_params_t;

typedef struct {
  proto_type_t type;
  union {
    struct {
      uint64_t id;
      uint32_t n;
      const uint8_t *workers_le; /* n little-endian u32, points into the decoded buffer */
    } group;
    struct {
      uint64_t group;
      int64_t tag;
      uint32_t member, root;
      uint64_t count;
      uint32_t type_size, extent;
      uint32_t type_sig; /* type-signature fingerprint (lib/engine/typecheck.c) */
      int32_t op;
      uint8_t op_is_user, commutative, recovered, nreplicas;
      uint32_t replicas[PROTO_MAX_REPLICAS];
      proto_buf_t buf;
      /* 0, or why this member joined without a buffer (DRED_ERR_NOMEM): the reduction
       * then ends with this status for every member.  An explicit field, so a member
       * that cannot allocate is never mistaken for one that disagrees (MISMATCH). */
      int32_t error;
      /* 1: an inline reduction (small operands, DRED_INLINE_MAX): no buffer, no replicas;
       * a non-root member's operand (count x extent bytes, dred's layout) is `data`, the
       * root sends none (data_len 0).  `data` points into the decoded buffer. */
      uint8_t inl;
      uint32_t data_len;
      const uint8_t *data;
      /* The reduction's slot in its node's meeting place (lib/paths/meetpath.c) was mixed:
       * these members met there (bit k: member k) and send no READY.  Non-zero means a
       * mismatch: the master ends the reduction with DRED_ERR_MISMATCH and counts them as
       * arrived and told. */
      uint64_t meet_mask;
      /* Absorption (lib/robust/absorb.c).  snap: the buffer is the member's own operand
       * snapshot, listed in its pool's directory, so a task may absorb another snapshot
       * into it in place.  In a recovered READY, unit: the buffer holds `member`'s unit
       * (its snapshot as it stands: its own operand and every unit absorbed into it), not
       * its operand alone; absorbed: that unit includes the RECOVER's tentative one. */
      uint8_t snap, unit, absorbed;
      /* PROTO_KIND_*: which collective the member called */
      uint8_t kind;
      /* PROTO_HAVE_DATA: a bcast's non-root that already holds the whole data (it copied
       * it from its node's relay leader, lib/paths/relay.c): it is sent no DATA, only
       * END.  PROTO_HAVE_FOLLOW: a large allreduce's member that will copy the result
       * from its node's relay leader: it is sent nothing until its HAVE says how that
       * went.  0: neither. */
      uint8_t have;
      /* A node partial (master/sched/sched.c, on_partial): 0, or the bytes of a bitmap of
       * the members whose operands `buf` holds already combined -- `member` (the holder)
       * among them, and the root only if it is the holder.  Those members send no READY
       * of their own and are owed an END all the same.  Only in a reduce that is not
       * inline, not recovered, with no have, meet_mask or snap (an error: the fold
       * failed, and every covered member is told it).  On the wire
       * exactly (n + 7) / 8 bytes for a group of n (the scheduler checks n).  Points into
       * the caller's bitmap (encode) or the decoded frame (decode), as `data` does. */
      uint32_t cover_len;
      const uint8_t *cover;
    } ready;
    struct {
      uint64_t group;
      int64_t tag;
      uint32_t n;        /* members                                                  */
      uint32_t root;     /* the root's member rank: its slot carries nothing (zeros) */
      uint64_t bytes;    /* per member; n x bytes <= PROTO_INLINE_TOTAL               */
      const uint8_t *data; /* n x bytes, member k at k x bytes; into the decoded buffer */
    } inl;
    struct {
      uint64_t group;
      int64_t tag;
      uint64_t offset;   /* where `data` goes in the result                          */
      uint64_t total;    /* the result's bytes (count x extent)                       */
      uint32_t len;      /* <= PROTO_DATA_MAX                                         */
      const uint8_t *data; /* into the decoded buffer, or the sender's memory          */
    } data;
    struct {
      uint64_t task_id;
      uint32_t status;
      int32_t error;
      uint64_t exec_ns;
      proto_buf_t buf;
      uint8_t absorbed; /* the task absorbed the provider in place (TASK's absorb) */
    } done;
    struct {
      uint64_t seq;
      /* PONG only: the worker's shared-memory pool, bytes (status socket, dredstat) */
      uint64_t pool_used, pool_size, pool_peak;
      uint64_t pool_fallbacks; /* buffers that did not fit and went to private memory */
      uint64_t meet_done; /* PONG and BYE: reductions that met in shared memory
                           * (lib/paths/meetpath.c), never seen by the master */
    } ping; /* PING and PONG */
    struct {
      uint64_t group;
      int64_t tag;
      uint32_t member;
      int32_t error;
      /* RECOVER only (master/sched/sched_recover.c): what the member's snapshot should hold --
       * `last` the member whose unit it absorbed most recently, `tentative` one whose
       * absorption may have been under way when its owner died (PROTO_NO_MEMBER: none);
       * single: only the member's own operand will do, not its snapshot's unit. */
      uint32_t last, tentative;
      uint8_t single;
    } recover; /* RECOVER (error unused), RECOVER_FAILED and ABANDON */
    struct {
      uint64_t task_id;
      uint64_t group;
      int64_t tag;
      uint32_t provider, prov_member, exec_member;
      uint64_t count;
      uint8_t exec_is_left;
      proto_buf_t buf;
      /* both buffers are their members' snapshots on one node: the executor may absorb
       * the provider's into its own in place (lib/robust/absorb.c) */
      uint8_t absorb;
    } task;
    struct {
      uint64_t group;
      int64_t tag;
      int32_t status;
    } end;
    struct {
      uint32_t worker;
    } failed;
    struct {
      uint32_t stage;       /* 0: arrived; 1: set up (answers PINGs from now on)     */
      uint32_t node;        /* the worker's node (named by its lowest rank)          */
      uint32_t master_node; /* the node the workers place the master on (0: none)    */
    } join;
    struct {
      int32_t status;       /* DRED_OK, or why the master refuses the job             */
      uint32_t heartbeat_ms;
      /* NUL-terminated strings, at most PROTO_JOB_ID_MAX / PROTO_REASON_MAX bytes with
       * the NUL; decoded, they point into the received frame (valid as a GROUP's list) */
      const char *job_id, *reason;
    } welcome;
    struct {
      uint64_t task_id;
      uint8_t on;
    } serve;
    struct {
      uint64_t group;
      int64_t tag;
      uint32_t member;
      uint64_t len;
      int64_t pool_off;
      /* REPLICA alone: the parameters the member's READY states, kept with the copy so
       * that a READY recovering the member from it states them too (recover.c): a
       * member that dies before its own READY is still compared with the others */
      proto_params_t params;
    } replica; /* REPLICA and REPLICA_ACK */
  } u;
} proto_msg_t;


/* Whether READY `m`'s cover names member k. */
int proto_cover_has(const proto_msg_t *m, uint32_t k);

/* The agreement fields of a READY. */
proto_params_t proto_params_of(const proto_msg_t *ready);
/* 1 if two members' parameters agree (a reduction may go on), 0 for DRED_ERR_MISMATCH. */
int proto_params_agree(const proto_params_t *a, const proto_params_t *b);
/* Put `p` into READY `ready`'s agreement fields (proto_params_of's inverse). */
void proto_params_set(proto_msg_t *ready, const proto_params_t *p);

/* Encode `m` into `buf` (capacity `cap`).  Returns the length, or 0 if `m` is invalid or
 * does not fit.  For PROTO_GROUP pass the member list in `group_workers` (host order). */
size_t proto_encode(const proto_msg_t *m, const uint32_t *group_workers, uint8_t *buf, size_t cap);

/* Decode `len` bytes.  Returns 0, or DRED_ERR_ARG for a malformed message (bad magic,
 * version, unknown type, length that does not match the type, out-of-range counts). */
int proto_decode(const uint8_t *buf, size_t len, proto_msg_t *m);

/* Member k of a decoded PROTO_GROUP. */
uint32_t proto_group_worker(const proto_msg_t *m, uint32_t k);

/* The group id of an ordered member list (FNV-1a 64 over n and the worker ranks). */
uint64_t proto_group_id(uint32_t n, const uint32_t *workers);

const char *proto_type_name(int type);

/* A proto_task_status_t in words ("ok", "provider lost", ...); "unknown" otherwise. */
const char *proto_task_status_name(int status);

#endif /* DRED_PROTO_H */
