/*
 * ops.c -- every predefined MPI op on every C datatype it applies to, through dred_reduce,
 * compared with the result MPI defines (ref_reduce in mpitest.c: gather + MPI_Reduce_local in rank order) on dred_comm() of the same inputs.
 *
 *   dredrun -n P mpi_ops [-s SEED] [-c COUNTS] [-L LARGE] [-e EVERY] [--no-derived|--derived-only]
 *     -s SEED   seed for data and roots (default 12345); roots are the same on every rank
 *     -c LIST   comma-separated counts run for every (op, type) pair (default 1,7,1000)
 *     -L N      a large count (default 100003) ...
 *     -e K      ... run for every K-th (op, type) pair only (default 16; 1 = all)
 *
 * Complex types (C_FLOAT/DOUBLE/LONG_DOUBLE_COMPLEX) get SUM and PROD (factors 1, i, -1, -i,
 * a few 2s; compared by value, so -0 == +0).
 * Data is integer-valued (floating types included) and PROD factors are 1, 2, -1 with at
 * most a few 2s per element, so every combine order gives the exact same bits: the result
 * at the root must equal MPI's byte for byte (element-wise for long double and the pair
 * types, whose padding bytes are unspecified).  Every member's sendbuf must be unchanged.
 * Then (unless --no-derived; alone with --derived-only) contiguous derived types
 * (MPI_Type_contiguous of int, of MPI_DOUBLE_INT, nested, and MPI_Type_dup of double) with
 * SUM, MAX, MAXLOC, BXOR: MPI itself defines predefined ops on predefined types only, so
 * dred must either reduce them element-wise on the base type (compared with MPI_Reduce on
 * the base type) or return DRED_ERR_ARG; crashing is a failure.
 * Prints "PASS <check>" / "FAIL <check>: why" at the root of each check; exits non-zero on
 * every member if any check failed anywhere.
 */
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dred.h"
#include "mpitest.h"

enum cls { K_INT, K_FLT, K_BOOL, K_BYTE, K_PAIR, K_CPLX };

struct pfi { float v; int i; };
struct pdi { double v; int i; };
struct pli { long v; int i; };
struct p2i { int v; int i; };
struct psi { short v; int i; };
struct pldi { long double v; int i; };

struct tinfo {
    const char *name;
    MPI_Datatype dt;
    enum cls cls;
    int size;      /* element extent in bytes */
    int is_signed; /* K_INT */
    int sub;       /* K_FLT: 0 float 1 double 2 long double; K_PAIR: 0..5 as below */
};

static struct tinfo types[] = {
    {"char", MPI_CHAR, K_INT, 1, CHAR_MIN < 0, 0},
    {"signed_char", MPI_SIGNED_CHAR, K_INT, 1, 1, 0},
    {"unsigned_char", MPI_UNSIGNED_CHAR, K_INT, 1, 0, 0},
    {"short", MPI_SHORT, K_INT, sizeof(short), 1, 0},
    {"unsigned_short", MPI_UNSIGNED_SHORT, K_INT, sizeof(unsigned short), 0, 0},
    {"int", MPI_INT, K_INT, sizeof(int), 1, 0},
    {"unsigned", MPI_UNSIGNED, K_INT, sizeof(unsigned), 0, 0},
    {"long", MPI_LONG, K_INT, sizeof(long), 1, 0},
    {"unsigned_long", MPI_UNSIGNED_LONG, K_INT, sizeof(unsigned long), 0, 0},
    {"long_long", MPI_LONG_LONG, K_INT, sizeof(long long), 1, 0},
    {"unsigned_long_long", MPI_UNSIGNED_LONG_LONG, K_INT, sizeof(unsigned long long), 0, 0},
    {"int8_t", MPI_INT8_T, K_INT, 1, 1, 0},
    {"int16_t", MPI_INT16_T, K_INT, 2, 1, 0},
    {"int32_t", MPI_INT32_T, K_INT, 4, 1, 0},
    {"int64_t", MPI_INT64_T, K_INT, 8, 1, 0},
    {"uint8_t", MPI_UINT8_T, K_INT, 1, 0, 0},
    {"uint16_t", MPI_UINT16_T, K_INT, 2, 0, 0},
    {"uint32_t", MPI_UINT32_T, K_INT, 4, 0, 0},
    {"uint64_t", MPI_UINT64_T, K_INT, 8, 0, 0},
    {"float", MPI_FLOAT, K_FLT, sizeof(float), 1, 0},
    {"double", MPI_DOUBLE, K_FLT, sizeof(double), 1, 1},
    {"long_double", MPI_LONG_DOUBLE, K_FLT, sizeof(long double), 1, 2},
    {"c_float_complex", MPI_C_FLOAT_COMPLEX, K_CPLX, sizeof(float _Complex), 1, 0},
    {"c_double_complex", MPI_C_DOUBLE_COMPLEX, K_CPLX, sizeof(double _Complex), 1, 1},
    {"c_long_double_complex", MPI_C_LONG_DOUBLE_COMPLEX, K_CPLX, sizeof(long double _Complex), 1, 2},
    {"c_bool", MPI_C_BOOL, K_BOOL, sizeof(bool), 0, 0},
    {"byte", MPI_BYTE, K_BYTE, 1, 0, 0},
    {"float_int", MPI_FLOAT_INT, K_PAIR, sizeof(struct pfi), 1, 0},
    {"double_int", MPI_DOUBLE_INT, K_PAIR, sizeof(struct pdi), 1, 1},
    {"long_int", MPI_LONG_INT, K_PAIR, sizeof(struct pli), 1, 2},
    {"2int", MPI_2INT, K_PAIR, sizeof(struct p2i), 1, 3},
    {"short_int", MPI_SHORT_INT, K_PAIR, sizeof(struct psi), 1, 4},
    {"long_double_int", MPI_LONG_DOUBLE_INT, K_PAIR, sizeof(struct pldi), 1, 5},
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

enum opk { O_SUM, O_PROD, O_MAX, O_MIN, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR,
           O_MAXLOC, O_MINLOC, O_N };
static const char *op_names[O_N] = {"sum", "prod", "max", "min", "land", "lor", "lxor",
                                    "band", "bor", "bxor", "maxloc", "minloc"};
static MPI_Op op_handle(int o)
{
    static const MPI_Op h[O_N] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, MPI_LAND, MPI_LOR,
                                  MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC,
                                  MPI_MINLOC};
    return h[o];
}

static int applies(int o, enum cls c)
{
    switch (o) {
    case O_SUM: case O_PROD: return c == K_INT || c == K_FLT || c == K_CPLX;
    case O_MAX: case O_MIN: return c == K_INT || c == K_FLT;
    case O_LAND: case O_LOR: case O_LXOR: return c == K_INT || c == K_BOOL;
    case O_BAND: case O_BOR: case O_BXOR: return c == K_INT || c == K_BYTE;
    default: return c == K_PAIR;
    }
}

static void put_int(unsigned char *p, int size, int64_t v)
{
    switch (size) {
    case 1: { int8_t x = (int8_t)v; memcpy(p, &x, 1); break; }
    case 2: { int16_t x = (int16_t)v; memcpy(p, &x, 2); break; }
    case 4: { int32_t x = (int32_t)v; memcpy(p, &x, 4); break; }
    default: memcpy(p, &v, 8); break;
    }
}

/* integer value of element i on `rank` for op o; h is a per-element hash */
static int64_t int_value(int o, int is_signed, int rank, long i, uint64_t h)
{
    uint64_t a = h, b = mix64(h), c = mix64(b);
    switch (o) {
    case O_SUM: return is_signed ? (int64_t)(h % 21) - 10 : (int64_t)(h % 21);
    case O_PROD:
        if ((rank + i) % 5 == 0) return 2;
        return (is_signed && (h & 1)) ? -1 : 1;
    case O_MAX: case O_MIN: return (int64_t)h;
    case O_LAND: return (h % 8 == 0) ? 0 : 1 + (int64_t)((h >> 8) % 2);
    case O_LOR: return (h % 8 == 0) ? 1 + (int64_t)((h >> 8) % 2) : 0;
    case O_LXOR: return (int64_t)(h % 3);
    case O_BAND: return (int64_t)(a | b | c);
    case O_BOR: return (int64_t)(a & b & c);
    default: return (int64_t)a; /* BXOR */
    }
}

static double flt_value(int o, int rank, long i, uint64_t h)
{
    switch (o) {
    case O_SUM: return (double)((int64_t)(h % 2001) - 1000);
    case O_PROD:
        if ((rank + i) % 5 == 0) return 2.0;
        return (h & 1) ? -1.0 : 1.0;
    default: return (double)((int64_t)(h % 2000001) - 1000000); /* MAX, MIN */
    }
}

static void fill(const struct tinfo *t, int o, void *buf, long n, int rank, uint64_t seed)
{
    unsigned char *p = buf;
    memset(buf, 0, (size_t)n * (size_t)t->size); /* defined padding bytes */
    for (long i = 0; i < n; i++, p += t->size) {
        uint64_t h = mix64(seed ^ mix64(((uint64_t)rank << 40) ^ (uint64_t)i));
        switch (t->cls) {
        case K_INT: put_int(p, t->size, int_value(o, t->is_signed, rank, i, h)); break;
        case K_BYTE: put_int(p, 1, int_value(o, 0, rank, i, h)); break;
        case K_BOOL: {
            bool v = o == O_LAND ? (h % 8 != 0) : o == O_LOR ? (h % 8 == 0) : (h & 1);
            memcpy(p, &v, sizeof v);
            break;
        }
        case K_FLT: {
            double d = flt_value(o, rank, i, h);
            if (t->sub == 0) { float x = (float)d; memcpy(p, &x, sizeof x); }
            else if (t->sub == 1) memcpy(p, &d, sizeof d);
            else { long double x = d; memcpy(p, &x, sizeof x); }
            break;
        }
        case K_CPLX: {
            double re, im;
            if (o == O_SUM) {
                re = (double)((int64_t)(h % 2001) - 1000);
                im = (double)((int64_t)((h >> 20) % 2001) - 1000);
            } else { /* PROD: 1, i, -1, -i, and at most a few 2s per element */
                static const double u[4][2] = {{1, 0}, {0, 1}, {-1, 0}, {0, -1}};
                int k = (int)(h % 4);
                re = u[k][0];
                im = u[k][1];
                if ((rank + i) % 5 == 0) { re = 2; im = 0; }
            }
            if (t->sub == 0) { float _Complex z = (float)re + (float)im * 1.0fi; memcpy(p, &z, sizeof z); }
            else if (t->sub == 1) { double _Complex z = re + im * 1.0i; memcpy(p, &z, sizeof z); }
            else { long double _Complex z = (long double)re + (long double)im * 1.0il; memcpy(p, &z, sizeof z); }
            break;
        }
        case K_PAIR: {
            int v = (int)(h % 6), ix = (int)((h >> 16) % 5); /* many ties in v and ix */
            switch (t->sub) {
            case 0: { struct pfi *e = (void *)p; e->v = (float)v; e->i = ix; break; }
            case 1: { struct pdi *e = (void *)p; e->v = v; e->i = ix; break; }
            case 2: { struct pli *e = (void *)p; e->v = v; e->i = ix; break; }
            case 3: { struct p2i *e = (void *)p; e->v = v; e->i = ix; break; }
            case 4: { struct psi *e = (void *)p; e->v = (short)v; e->i = ix; break; }
            default: { struct pldi *e = (void *)p; e->v = v; e->i = ix; break; }
            }
            break;
        }
        }
    }
}

/* -1 if equal, else the index of the first differing element */
static long compare(const struct tinfo *t, const void *got, const void *exp, long n)
{
    const unsigned char *g = got, *e = exp;
    if (t->cls == K_CPLX) {
        for (long i = 0; i < n; i++, g += t->size, e += t->size) {
            int same;
            if (t->sub == 0) { float _Complex a, b; memcpy(&a, g, sizeof a); memcpy(&b, e, sizeof b); same = a == b; }
            else if (t->sub == 1) { double _Complex a, b; memcpy(&a, g, sizeof a); memcpy(&b, e, sizeof b); same = a == b; }
            else { long double _Complex a, b; memcpy(&a, g, sizeof a); memcpy(&b, e, sizeof b); same = a == b; }
            if (!same) return i;
        }
        return -1;
    }
    if (t->cls != K_PAIR && !(t->cls == K_FLT && t->sub == 2)) {
        if (memcmp(got, exp, (size_t)n * (size_t)t->size) == 0) return -1;
        for (long i = 0; i < n; i++)
            if (memcmp(g + i * t->size, e + i * t->size, (size_t)t->size)) return i;
        return -1;
    }
    for (long i = 0; i < n; i++, g += t->size, e += t->size) {
        int same;
        if (t->cls == K_FLT) {
            long double a, b;
            memcpy(&a, g, sizeof a); memcpy(&b, e, sizeof b);
            same = a == b;
        } else {
            switch (t->sub) {
            case 0: { const struct pfi *a = (const void *)g, *b = (const void *)e;
                      same = a->v == b->v && a->i == b->i; break; }
            case 1: { const struct pdi *a = (const void *)g, *b = (const void *)e;
                      same = a->v == b->v && a->i == b->i; break; }
            case 2: { const struct pli *a = (const void *)g, *b = (const void *)e;
                      same = a->v == b->v && a->i == b->i; break; }
            case 3: { const struct p2i *a = (const void *)g, *b = (const void *)e;
                      same = a->v == b->v && a->i == b->i; break; }
            case 4: { const struct psi *a = (const void *)g, *b = (const void *)e;
                      same = a->v == b->v && a->i == b->i; break; }
            default: { const struct pldi *a = (const void *)g, *b = (const void *)e;
                       same = a->v == b->v && a->i == b->i; break; }
            }
        }
        if (!same) return i;
    }
    return -1;
}

static void hexdump(char *out, size_t cap, const void *p, int n)
{
    const unsigned char *b = p;
    size_t k = 0;
    for (int i = 0; i < n && k + 3 < cap; i++) k += (size_t)snprintf(out + k, cap - k, "%02x", b[i]);
}

int main(int argc, char **argv)
{
    uint64_t seed = 12345;
    char counts_arg[256] = "1,7,1000";
    long large = 100003;
    int every = 16;
    int predefined = 1, derived = 1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-s") && i + 1 < argc) seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) snprintf(counts_arg, sizeof counts_arg, "%s", argv[++i]);
        else if (!strcmp(argv[i], "-L") && i + 1 < argc) large = strtol(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "-e") && i + 1 < argc) every = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--no-derived")) derived = 0;
        else if (!strcmp(argv[i], "--derived-only")) predefined = 0;
    }
    if (every < 1) every = 1;
    long counts[16];
    int ncounts = 0;
    for (char *tok = strtok(counts_arg, ","); tok && ncounts < 15; tok = strtok(NULL, ","))
        counts[ncounts++] = strtol(tok, NULL, 0);

    test_init(&argc, &argv, "ops");

    /* the C structs must have MPI's extents for the pair types */
    for (int t = 0; t < NTYPES; t++) {
        MPI_Aint lb, ext;
        MPI_Type_get_extent(types[t].dt, &lb, &ext);
        if (ext != types[t].size) {
            if (g_rank == 0)
                fail("ops/setup: %s extent %ld != C size %d", types[t].name, (long)ext,
                     types[t].size);
            types[t].size = -1;
        }
    }

    uint64_t root_rng = seed * 7 + 1;
    double t_dred = 0, t_mpi = 0;
    int combo = 0, nchecks = 0;
    for (int o = 0; o < (predefined ? O_N : 0); o++) {
        for (int t = 0; t < NTYPES; t++) {
            const struct tinfo *ti = &types[t];
            if (!applies(o, ti->cls) || ti->size < 0) continue;
            long mycounts[17];
            int nmy = 0;
            for (int c = 0; c < ncounts; c++) mycounts[nmy++] = counts[c];
            if (large > 0 && combo % every == 0) mycounts[nmy++] = large;
            combo++;
            for (int c = 0; c < nmy; c++) {
                long n = mycounts[c];
                root_rng = mix64(root_rng);
                int root = (int)(root_rng % (uint64_t)g_size);
                uint64_t dseed = mix64(seed ^ ((uint64_t)combo << 20) ^ (uint64_t)n);
                size_t bytes = (size_t)n * (size_t)ti->size;
                unsigned char *sbuf = malloc(bytes ? bytes : 1);
                unsigned char *scopy = n <= 1000 ? malloc(bytes ? bytes : 1) : NULL;
                unsigned char *rd = g_rank == root ? malloc(bytes ? bytes : 1) : NULL;
                unsigned char *rm = g_rank == root ? malloc(bytes ? bytes : 1) : NULL;
                int lf = 0;
                if (!sbuf || (n <= 1000 && !scopy) || (g_rank == root && (!rd || !rm))) {
                    fail("ops/%s/%s/n=%ld: out of memory", op_names[o], ti->name, n);
                    lf = 1;
                    MPI_Abort(MPI_COMM_WORLD, 2);
                }
                fill(ti, o, sbuf, n, g_rank, dseed);
                if (scopy) memcpy(scopy, sbuf, bytes);
                if (rd) memset(rd, 0xA5, bytes);
                if (rm) memset(rm, 0x5A, bytes);

                char check[160];
                snprintf(check, sizeof check, "ops/%s/%s/n=%ld/root=%d", op_names[o], ti->name,
                         n, root);
                set_step("dred_reduce %s", check);
                double t0 = now_s();
                int st = dred_reduce(sbuf, rd, (int)n, ti->dt, op_handle(o), root, g_comm);
                double t1 = now_s();
                set_step("ref_reduce %s", check);
                ref_reduce(sbuf, rm, (int)n, ti->dt, op_handle(o), root, g_comm);
                t_dred += t1 - t0;
                t_mpi += now_s() - t1;

                if (st != DRED_OK) {
                    fail("%s: dred_reduce returned %d (%s)", check, st, dred_strerror(st));
                    lf = 1;
                } else if (g_rank == root) {
                    long bad = compare(ti, rd, rm, n);
                    if (bad >= 0) {
                        char hg[80], he[80];
                        hexdump(hg, sizeof hg, rd + bad * ti->size, ti->size);
                        hexdump(he, sizeof he, rm + bad * ti->size, ti->size);
                        fail("%s: element %ld differs: dred %s, expected %s", check, bad, hg, he);
                        lf = 1;
                    }
                }
                if (scopy && memcmp(scopy, sbuf, bytes)) {
                    fail("%s: sendbuf modified by dred_reduce", check);
                    lf = 1;
                }
                if (!lf && g_rank == root) pass("%s", check);
                nchecks++;
                free(sbuf); free(scopy); free(rd); free(rm);
            }
        }
    }
    /* contiguous derived datatypes with predefined ops.  MPI defines predefined ops on
     * predefined types only (MPICH's MPI_Reduce aborts on MPI_SUM over a contiguous type),
     * while dred.h accepts contiguous derived types: dred must either reduce them element by
     * element of the base type, or reject them with DRED_ERR_ARG -- never crash.  The
     * expected value is MPI_Reduce on the base type with count * elements-per-item. */
    if (derived)
    {
        MPI_Datatype c3int, dupd, c2di, c3s, c2c3s;
        MPI_Type_contiguous(3, MPI_INT, &c3int);
        MPI_Type_dup(MPI_DOUBLE, &dupd);
        MPI_Type_contiguous(2, MPI_DOUBLE_INT, &c2di);
        MPI_Type_contiguous(3, MPI_SHORT, &c3s);
        MPI_Type_contiguous(2, c3s, &c2c3s);
        MPI_Type_commit(&c3int); MPI_Type_commit(&dupd); MPI_Type_commit(&c2di);
        MPI_Type_commit(&c3s); MPI_Type_commit(&c2c3s);
        struct { const char *name; MPI_Datatype dt; int base; int per; int op; } dv[] = {
            {"contig3_int", c3int, 5, 3, O_SUM},          /* base: index into types[] */
            {"dup_double", dupd, 20, 1, O_MAX},
            {"contig2_double_int", c2di, 28, 2, O_MAXLOC},
            {"contig2_contig3_short", c2c3s, 3, 6, O_BXOR},
        };
        for (unsigned d = 0; d < sizeof dv / sizeof dv[0]; d++) {
            const struct tinfo *bt = &types[dv[d].base];
            static const int ns[3] = {1, 33, 5000};
            for (int c = 0; c < 3; c++) {
                long n = ns[c], nb = n * dv[d].per; /* elements of the base type */
                root_rng = mix64(root_rng);
                int root = (int)(root_rng % (uint64_t)g_size);
                size_t bytes = (size_t)nb * (size_t)bt->size;
                unsigned char *sbuf = malloc(bytes), *rd = malloc(bytes), *rm = malloc(bytes);
                fill(bt, dv[d].op, sbuf, nb, g_rank, mix64(seed ^ (uint64_t)(d * 10 + (unsigned)c)));
                memset(rd, 0xA5, bytes);
                memset(rm, 0x5A, bytes);
                char check[160];
                snprintf(check, sizeof check, "ops/derived/%s/%s/n=%ld/root=%d", op_names[dv[d].op],
                         dv[d].name, n, root);
                set_step("dred_reduce %s", check);
                int st = dred_reduce(sbuf, rd, (int)n, dv[d].dt, op_handle(dv[d].op), root, g_comm);
                set_step("ref_reduce (base type) %s", check);
                ref_reduce(sbuf, rm, (int)nb, bt->dt, op_handle(dv[d].op), root, g_comm);
                if (st == DRED_ERR_ARG) {
                    if (g_rank == root) pass("%s: rejected with DRED_ERR_ARG", check);
                } else if (st != DRED_OK)
                    fail("%s: dred_reduce returned %d (%s)", check, st, dred_strerror(st));
                else if (g_rank == root) {
                    long bad = compare(bt, rd, rm, nb);
                    if (bad >= 0) fail("%s: base element %ld differs from the reference (ref_reduce)", check, bad);
                    else pass("%s: reduced element-wise", check);
                }
                nchecks++;
                free(sbuf); free(rd); free(rm);
            }
        }
        MPI_Type_free(&c3int); MPI_Type_free(&dupd); MPI_Type_free(&c2di);
        MPI_Type_free(&c2c3s); MPI_Type_free(&c3s);
    }
    if (g_rank == 0)
        printf("ops: %d reductions, %d (op, type) pairs; member 0 spent %.2f s in dred_reduce, "
               "%.2f s in MPI_Reduce\n", nchecks, combo, t_dred, t_mpi);
    return test_finish();
}
