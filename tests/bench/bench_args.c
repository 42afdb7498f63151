/*
 * bench_args.c -- dred-bench's command line: the options (dred-bench --help), their
 * defaults, the per-scenario default sizes, and --pin, which pins a rank before MPI starts.
 * The command line is the one run-bench.sh and docs/performance.md use: keep it stable.
 */
#include "bench.h"

bench_opt_t opt;

static size_t parse_size(const char *s) {
  char *end;
  double v = strtod(s, &end);
  size_t mul = 1;
  if (*end == 'k' || *end == 'K') mul = KIB, end++;
  else if (*end == 'm' || *end == 'M') mul = MIB, end++;
  else if (*end == 'g' || *end == 'G') mul = 1024 * MIB, end++;
  if (*end == 'i' || *end == 'I') end++;
  if (*end == 'b' || *end == 'B') end++;
  if (*end != '\0' || v <= 0) die("bad size '%s'", s);
  size_t b = (size_t)(v * (double)mul);
  b -= b % sizeof(double);
  if (b == 0 || b / sizeof(double) > (size_t)INT32_MAX) die("size '%s' out of range", s);
  return b;
}

static int split(char *s, char **out) {
  int n = 0;
  for (char *tok = strtok(s, ","); tok && n < MAXLIST; tok = strtok(NULL, ",")) out[n++] = tok;
  return n;
}

static void usage(void) {
  say("usage: dredrun -n P dred-bench [options]\n"
      "  --scenario LIST   ideal,unbalanced,slow,concurrent,bound,small,loop,overlap or all (default all\n"
      "                    = ideal,unbalanced,concurrent,bound)\n"
      "  --sizes LIST      message sizes, e.g. 128K,1M,8M,32M,128M (default per scenario)\n"
      "  --reps R          timed repetitions per point (default 7)\n"
      "  --warmup W        untimed repetitions per point (default 1)\n"
      "  --quick           fewer sizes (ideal 128K,8M,32M; unbalanced 8M; slow 8M,32M)\n"
      "  --k LIST          unbalanced delay multipliers of the ideal MPI time (default 0,1,10)\n"
      "  --conc LIST       concurrent reductions in flight (default 4,8,16,28)\n"
      "  --conc-size S     size of each concurrent reduction (default 8M)\n"
      "  --send-mem malloc|pool  concurrent: send buffers from malloc (default) or from\n"
      "                    dred_alloc_mem, which dred reads in place (size DRED_POOL_MB for them)\n"
      "  --small-sizes L   sizes of the small scenario (default 8,1K)\n"
      "  --kin LIST        small: reductions in flight per round (default 1,4,16,64)\n"
      "  --rounds N        small: timed rounds per point (default 60; quick 30)\n"
      "  --loop-iters N    loop: iterations (default 3000)\n"
      "  --loop-chunk N    loop: dred and MPI alternate every N iterations (default 100)\n"
      "  --csv FILE        per-call rows (appended)\n"
      "  --summary FILE    per-point medians (default: CSV name with -summary.csv)\n"
      "  --root R          root of the single reductions (default 0)\n"
      "  --pin             pin app rank r of P to CPU r*ncpu/P before MPI starts (slow scenario)\n"
      "  --hogs N          label: CPU hogs running outside (param column of 'slow')\n"
      "  --delay sleep|busy  how a late rank waits in 'unbalanced' (default sleep)\n"
      "  --only dred|mpi   run one contender only (e.g. to measure dred-master's load)\n"
      "  --margin-ms M     common-start margin (default 20)\n"
      "  --seed S          seed of the arrival draws (default 1)\n"
      "  --keep-going      do not stop the run at the first WRONG repetition\n"
      "  --settle-max S    after each call wait up to S s for the process to go idle (default\n"
      "                    10; 0 = do not wait)\n");
}

void parse(int argc, char **argv) {
  static struct option lo[] = {
      {"scenario", 1, 0, 's'}, {"sizes", 1, 0, 'z'},   {"reps", 1, 0, 'r'},
      {"warmup", 1, 0, 'w'},   {"quick", 0, 0, 'q'},   {"k", 1, 0, 'k'},
      {"conc", 1, 0, 'c'},     {"conc-size", 1, 0, 'C'}, {"csv", 1, 0, 'o'},
      {"summary", 1, 0, 'S'},  {"root", 1, 0, 'R'},    {"pin", 0, 0, 'p'},
      {"hogs", 1, 0, 'H'},     {"delay", 1, 0, 'd'},   {"only", 1, 0, 'O'},
      {"margin-ms", 1, 0, 'M'}, {"seed", 1, 0, 'e'},   {"help", 0, 0, 'h'},
      {"keep-going", 0, 0, 'K'}, {"settle-max", 1, 0, 'Q'},
      {"small-sizes", 1, 0, 'Z'}, {"kin", 1, 0, 'I'}, {"rounds", 1, 0, 'N'},
      {"loop-iters", 1, 0, 'L'}, {"loop-chunk", 1, 0, 'J'}, {"send-mem", 1, 0, 'm'},
      {0, 0, 0, 0}};
  char *items[MAXLIST];
  opt.reps = 7;
  opt.warmup = 1;
  opt.conc_bytes = 8 * MIB;
  opt.margin_ms = 20;
  opt.settle_max_s = 10;
  opt.seed = 1;
  opt.run_dred = opt.run_mpi = 1;
  int c;
  opterr = 0;
  while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (c) {
    case 's': {
      char *s = strdup(optarg);
      int n = split(s, items);
      for (int i = 0; i < n; i++) {
        if (!strcmp(items[i], "ideal")) opt.scen |= S_IDEAL;
        else if (!strcmp(items[i], "unbalanced")) opt.scen |= S_UNBAL;
        else if (!strcmp(items[i], "slow")) opt.scen |= S_SLOW;
        else if (!strcmp(items[i], "concurrent")) opt.scen |= S_CONC;
        else if (!strcmp(items[i], "bound")) opt.scen |= S_BOUND;
        else if (!strcmp(items[i], "small")) opt.scen |= S_SMALL;
        else if (!strcmp(items[i], "loop")) opt.scen |= S_LOOP;
        else if (!strcmp(items[i], "overlap")) opt.scen |= S_OVERLAP;
        else if (!strcmp(items[i], "all")) opt.scen |= S_IDEAL | S_UNBAL | S_CONC | S_BOUND;
        else die("unknown scenario '%s'", items[i]);
      }
      free(s);
      break;
    }
    case 'z': {
      char *s = strdup(optarg);
      int n = split(s, items);
      for (int i = 0; i < n; i++) opt.sizes[i] = parse_size(items[i]);
      opt.nsizes = n;
      free(s);
      break;
    }
    case 'r': opt.reps = atoi(optarg); break;
    case 'w': opt.warmup = atoi(optarg); break;
    case 'q': opt.quick = 1; break;
    case 'k': {
      char *s = strdup(optarg);
      opt.nk = split(s, items);
      for (int i = 0; i < opt.nk; i++) opt.k[i] = atof(items[i]);
      free(s);
      break;
    }
    case 'c': {
      char *s = strdup(optarg);
      opt.nconc = split(s, items);
      for (int i = 0; i < opt.nconc; i++) opt.conc[i] = atoi(items[i]);
      free(s);
      break;
    }
    case 'C': opt.conc_bytes = parse_size(optarg); break;
    case 'm':
      if (!strcmp(optarg, "pool")) opt.send_pool = 1;
      else if (strcmp(optarg, "malloc")) die("--send-mem malloc|pool");
      break;
    case 'o': opt.csv = optarg; break;
    case 'S': opt.summary = optarg; break;
    case 'R': opt.root = atoi(optarg); break;
    case 'p': opt.pin = 1; break;
    case 'H': opt.hogs = atoi(optarg); break;
    case 'd':
      if (!strcmp(optarg, "busy")) opt.busy_delay = 1;
      else if (strcmp(optarg, "sleep")) die("--delay sleep|busy");
      break;
    case 'O':
      if (!strcmp(optarg, "dred")) opt.run_mpi = 0;
      else if (!strcmp(optarg, "mpi")) opt.run_dred = 0;
      else die("--only dred|mpi");
      break;
    case 'M': opt.margin_ms = atof(optarg); break;
    case 'e': opt.seed = strtoull(optarg, NULL, 10); break;
    case 'K': opt.keep_going = 1; break;
    case 'Q': opt.settle_max_s = atof(optarg); break;
    case 'Z': {
      char *s = strdup(optarg);
      int n = split(s, items);
      for (int i = 0; i < n; i++) opt.small_sizes[i] = parse_size(items[i]);
      opt.nsmall_sizes = n;
      free(s);
      break;
    }
    case 'I': {
      char *s = strdup(optarg);
      opt.nkin = split(s, items);
      for (int i = 0; i < opt.nkin; i++)
        if ((opt.kin[i] = atoi(items[i])) < 1) die("--kin: counts >= 1");
      free(s);
      break;
    }
    case 'N': opt.rounds = atoi(optarg); break;
    case 'L': opt.loop_iters = atoi(optarg); break;
    case 'J': opt.loop_chunk = atoi(optarg); break;
    case 'h': usage(); exit(0);
    default: usage(); die("bad option '%s'", argv[optind - 1]);
    }
  }
  if (!opt.scen) opt.scen = S_IDEAL | S_UNBAL | S_CONC | S_BOUND;
  if (opt.reps < 1 || opt.warmup < 0) die("--reps >= 1, --warmup >= 0");
  if (!opt.nk) { opt.k[0] = 0; opt.k[1] = 1; opt.k[2] = 10; opt.nk = 3; }
  if (!opt.nsmall_sizes) { opt.small_sizes[0] = 8; opt.small_sizes[1] = KIB; opt.nsmall_sizes = 2; }
  if (!opt.nkin) { opt.kin[0] = 1; opt.kin[1] = 4; opt.kin[2] = 16; opt.kin[3] = 64; opt.nkin = 4; }
  if (opt.rounds <= 0) opt.rounds = opt.quick ? 30 : 60;
  if (opt.loop_iters <= 0) opt.loop_iters = 3000;
  if (opt.loop_chunk <= 0) opt.loop_chunk = 100;
  if (!opt.nconc) { opt.conc[0] = 4; opt.conc[1] = 8; opt.conc[2] = 16; opt.conc[3] = 28; opt.nconc = 4; }
}

/* Pin this process (and every thread it will create) before MPI starts, in blocks as
 * consecutive ranks share a node on a cluster: app rank r = world rank - 1 (world rank 0 is
 * dred-master) of P goes to allowed CPU r * n / P.  With 2 CPUs: ranks 0..P/2-1 on the first,
 * P/2..P-1 on the last, where run-bench.sh puts the hogs.  (Round-robin placement would make
 * the slow ranks exactly the leaves of MPI's binomial tree rooted at 0, which do nothing but
 * expose their buffer: 4 hogs there slow neither contender.) */
void pin_self(void) {
  const char *e = getenv("PMI_RANK");
  if (!e) e = getenv("PMIX_RANK");
  if (!e) {
    fprintf(stderr, "dred-bench: --pin: no PMI_RANK in the environment; not pinning\n");
    return;
  }
  const char *z = getenv("PMI_SIZE");
  if (!z) z = getenv("PMIX_SIZE");
  int wr = atoi(e), r = wr > 0 ? wr - 1 : 0, papp = z ? atoi(z) - 1 : 0;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  int cpus[CPU_SETSIZE], n = 0;
  for (int i = 0; i < CPU_SETSIZE; i++)
    if (CPU_ISSET(i, &set)) cpus[n++] = i;
  if (n == 0) return;
  CPU_ZERO(&set);
  CPU_SET(papp > 0 ? cpus[(long)r * n / papp] : cpus[r % n], &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) perror("dred-bench: sched_setaffinity");
}

void single_sizes(unsigned which, size_t *out, int *n) {
  static const size_t full_ideal[] = {128 * KIB, 256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB,
                                      4 * MIB, 8 * MIB, 16 * MIB, 32 * MIB, 64 * MIB, 128 * MIB};
  if (opt.nsizes) {
    memcpy(out, opt.sizes, sizeof(size_t) * (size_t)opt.nsizes);
    *n = opt.nsizes;
    return;
  }
  if (which == S_IDEAL && !opt.quick) {
    memcpy(out, full_ideal, sizeof full_ideal);
    *n = 11;
  } else if (which == S_IDEAL) {
    out[0] = 128 * KIB; out[1] = 8 * MIB; out[2] = 32 * MIB;
    *n = 3;
  } else if (which == S_BOUND) {
    out[0] = 32 * MIB;
    *n = 1;
  } else if (opt.quick && which == S_UNBAL) {
    out[0] = 8 * MIB;
    *n = 1;
  } else if (opt.quick) {
    out[0] = 8 * MIB; out[1] = 32 * MIB;
    *n = 2;
  } else {
    out[0] = 128 * KIB; out[1] = 8 * MIB; out[2] = 32 * MIB;
    *n = 3;
  }
}
