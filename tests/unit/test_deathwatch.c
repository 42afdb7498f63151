/*
 * test_deathwatch.c -- common/deathwatch.c: a SIGKILLed holder is reported once, without
 * waiting for the kernel to tear down its memory; an orderly release or a slot never held
 * is not a death; files that are not a private watch file are refused.
 *
 * Each holder is a forked child (the robust mutex must die with another process); the
 * parent runs the watcher's libuv loop.  Every child is killed and reaped by pid.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>

#include "../../common/deathwatch.h"
#include "../../include/dred_status.h"

static char base[64], path[128];

static int setup(void **state) {
  (void)state;
  /* a mkdtemp(3) template: the X's are replaced by the call below */
  snprintf(base, sizeof base, "/tmp/dred-watch.XXXXXX");
  if (mkdtemp(base) == NULL) return -1;
  snprintf(path, sizeof path, "%s/watch", base);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  unlink(path);
  return rmdir(base);
}

typedef struct {
  int slot, calls;
  uint64_t at_ns;
} seen_t;

static void on_death(dred_watch_t *w, int slot, void *arg) {
  seen_t *s = arg;
  (void)w;
  s->slot = slot;
  s->calls++;
  s->at_ns = uv_hrtime();
}

/* Child: attach, hold `slot`, touch `touch_mb` MiB (a big process takes long to tear
 * down), tell the parent on `fd`, then release and exit if `release`, else wait to be
 * killed. */
static void child(int slot, size_t touch_mb, int release, int fd) {
  dred_watch_t *w = NULL;
  char c = 'h';
  if (dred_watch_attach(path, &w) != 0 || dred_watch_hold(w, slot) != 0) _exit(3);
  if (touch_mb > 0) {
    char *p = malloc(touch_mb << 20);
    if (p == NULL) _exit(4);
    memset(p, 1, touch_mb << 20);
  }
  if (write(fd, &c, 1) != 1) _exit(5);
  if (release) {
    dred_watch_release(w, slot);
    dred_watch_close(w);
    _exit(0);
  }
  for (;;) pause();
}

static pid_t start_child(int slot, size_t touch_mb, int release) {
  int p[2];
  char c;
  pid_t pid;
  assert_int_equal(pipe(p), 0);
  pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    close(p[0]);
    child(slot, touch_mb, release, p[1]);
  }
  close(p[1]);
  assert_int_equal(read(p[0], &c, 1), 1); /* the child holds its slot */
  close(p[0]);
  return pid;
}

static void stop_timer(uv_timer_t *t) { uv_stop(t->loop); }

/* Run `loop` until a death was seen or `ms` passed. */
static void run_for(uv_loop_t *loop, seen_t *seen, unsigned ms) {
  uv_timer_t t;
  uint64_t end = uv_hrtime() + (uint64_t)ms * 1000000ull;
  uv_timer_init(loop, &t);
  while (seen->calls == 0 && uv_hrtime() < end) {
    uv_timer_start(&t, stop_timer, 10, 0);
    uv_run(loop, UV_RUN_DEFAULT);
  }
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void finish(uv_loop_t *loop, dred_watch_t *w) {
  dred_watch_stop(w);
  uv_run(loop, UV_RUN_DEFAULT); /* the async handle's close callback */
  dred_watch_close(w);
  assert_int_equal(uv_loop_close(loop), 0);
}

static void test_kill_is_seen_before_teardown(void **state) {
  uv_loop_t loop;
  dred_watch_t *w = NULL;
  seen_t seen = {-1, 0, 0};
  int slots[] = {2}, st;
  uint64_t t0, reaped;
  pid_t pid;
  (void)state;
  assert_int_equal(dred_watch_create(path, 4, &w), DRED_OK);
  pid = start_child(2, 256, 0);
  uv_loop_init(&loop);
  assert_int_equal(dred_watch_start(w, &loop, slots, 1, on_death, &seen), DRED_OK);
  t0 = uv_hrtime();
  assert_int_equal(kill(pid, SIGKILL), 0);
  run_for(&loop, &seen, 5000);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  reaped = uv_hrtime();
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.slot, 2);
  assert_int_equal(dred_watch_deaths(w), 1);
  /* Timing is the machine's (a loaded VM may take its time); the test asserts only a
   * generous bound and prints what it saw. */
  printf("# kill -> death seen: %.2f ms; kill -> child reaped: %.2f ms (256 MiB touched)\n",
         (double)(seen.at_ns - t0) / 1e6, (double)(reaped - t0) / 1e6);
  assert_true(seen.at_ns - t0 < 2000000000ull);
  finish(&loop, w);
}

static void test_orderly_release_is_not_a_death(void **state) {
  uv_loop_t loop;
  dred_watch_t *w = NULL;
  seen_t seen = {-1, 0, 0};
  int slots[] = {0, 1}, st;
  pid_t pid;
  (void)state;
  assert_int_equal(dred_watch_create(path, 2, &w), DRED_OK);
  uv_loop_init(&loop);
  /* Watching before anyone holds: slot 1 is never held, slot 0 is held, then released. */
  assert_int_equal(dred_watch_start(w, &loop, slots, 2, on_death, &seen), DRED_OK);
  pid = start_child(0, 0, 1);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  run_for(&loop, &seen, 400);
  assert_int_equal(seen.calls, 0);
  assert_int_equal(dred_watch_deaths(w), 0);
  finish(&loop, w);
}

static void test_dead_after_watch_started_early(void **state) {
  uv_loop_t loop;
  dred_watch_t *w = NULL;
  seen_t seen = {-1, 0, 0};
  int slots[] = {1}, st;
  pid_t pid;
  (void)state;
  assert_int_equal(dred_watch_create(path, 2, &w), DRED_OK);
  uv_loop_init(&loop);
  /* The watch thread starts on a FREE slot (naps), the holder comes later, then dies. */
  assert_int_equal(dred_watch_start(w, &loop, slots, 1, on_death, &seen), DRED_OK);
  run_for(&loop, &seen, 50);
  pid = start_child(1, 0, 0);
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, &st, 0), pid);
  run_for(&loop, &seen, 5000);
  assert_int_equal(seen.calls, 1);
  assert_int_equal(seen.slot, 1);
  finish(&loop, w);
}

static void test_refusals(void **state) {
  dred_watch_t *w = NULL, *w2 = NULL;
  char other[160];
  int fd, slots[] = {5};
  uv_loop_t loop;
  (void)state;
  assert_int_equal(dred_watch_create(path, 0, &w), DRED_ERR_ARG);
  assert_int_equal(dred_watch_create(path, 2, &w), DRED_OK);
  assert_int_equal(dred_watch_create(path, 2, &w2), DRED_ERR_INTERNAL); /* exists */
  assert_int_equal(dred_watch_hold(w, 2), DRED_ERR_ARG);                /* out of range */
  uv_loop_init(&loop);
  assert_int_equal(dred_watch_start(w, &loop, slots, 1, on_death, NULL), DRED_ERR_ARG);
  assert_int_equal(uv_loop_close(&loop), 0);
  /* group/other access: refused */
  assert_int_equal(chmod(path, 0644), 0);
  assert_int_equal(dred_watch_attach(path, &w2), DRED_ERR_INTERNAL);
  assert_int_equal(chmod(path, 0600), 0);
  assert_int_equal(dred_watch_attach(path, &w2), DRED_OK);
  dred_watch_close(w2);
  /* a symlink is not followed */
  snprintf(other, sizeof other, "%s/link", base);
  assert_int_equal(symlink(path, other), 0);
  assert_int_equal(dred_watch_attach(other, &w2), DRED_ERR_INTERNAL);
  unlink(other);
  /* not a watch file (no magic, wrong size) */
  snprintf(other, sizeof other, "%s/junk", base);
  fd = open(other, O_CREAT | O_WRONLY, 0600);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "0123456789abcdef0123456789abcdef", 32), 32);
  close(fd);
  assert_int_equal(dred_watch_attach(other, &w2), DRED_ERR_INTERNAL);
  unlink(other);
  dred_watch_close(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_kill_is_seen_before_teardown, setup, teardown),
      cmocka_unit_test_setup_teardown(test_orderly_release_is_not_a_death, setup, teardown),
      cmocka_unit_test_setup_teardown(test_dead_after_watch_started_early, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refusals, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
