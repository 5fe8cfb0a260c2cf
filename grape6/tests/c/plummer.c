/*
 * plummer.c: a Plummer sphere through libgrape6 with a 4th-order Hermite
 * block-time-step loop written the way ph4 and phiGRAPE drive GRAPE-6, and
 * the checks of issue 26 item 4:
 *
 *   - energy: |dE/E| <= 1e-7 at t = 1 and at every synchronisation time
 *     (the goal for this sphere), and, given REBOUND IAS15's run of
 *     the same state, every position within 1e-5 of it;
 *   - forces: every 400th block (and the start) against a direct f64 sum
 *     written here, over the j-particles predicted here: relative error of
 *     force and potential <= 1e-13 (f64) or 1e-12 (mixed), jerk <= 1e-12
 *     (f64) or 1e-5 (mixed; its jerk is f32);
 *   - neighbours: on the same blocks, g6calc_lasthalf2's nearest neighbour
 *     and g6_get_neighbour_list's lists (h2 = 0.04) against a brute-force
 *     search, a truncated list's overflow return;
 *   - errors: calls before g6_open, g6_open twice, NaN positions, an active
 *     block of 0 and of g6_npipes() + 1 return their G6_ERR_* codes with a
 *     message, and the run carries on.
 *
 * Usage: plummer INIT.npy [IAS15_T1.npy] [--csv ENERGY.csv] [--t-end T]
 *                [--check-every K]
 *   INIT.npy: (N, 7) float64, x y z vx vy vz m, G = 1 (the committed
 *   nbody-host/tests/data/plummer512.npy); the CSV gets "t,rel_energy_error"
 *   at every synchronisation time (1/64 apart). --t-end (default 1, a
 *   multiple of 1/64; the IAS15 comparison needs 1) and --check-every
 *   (default 400: every K-th block is checked) shorten the run for slow
 *   backends (the software CUDA device: scripts/ci-softcuda.sh).
 * Exit status: 0 all checks pass, 1 a check failed, 2 usage, 4 file I/O.
 * The force precision, pipe count and backend come from GRAPE6_PRECISION,
 * GRAPE6_NPIPES and GRAPE6_BACKEND (scripts/ci-grape6.sh runs f64 with
 * Sapporo2's 16384 pipes and mixed with GRAPE-6's 48 on the CPU;
 * scripts/ci-softcuda.sh a short run on the software CUDA device).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grape6.h"

#define ETA 0.02
#define ETA_S (ETA / 20) /* nbody-host's default starting eta_s */
#define EPS 0.01
#define DT_MAX (1.0 / 64) /* every body is synchronised at multiples of it */
#define DT_MIN (1.0 / (1LL << 40))
#define DE_BOUND 1e-7
#define DX_BOUND 1e-5
#define H2_CHECK 0.04 /* neighbour radius 0.2 on the checked blocks */

typedef double vec3[3];

static int failures = 0;
static double t_end = 1.0;     /* --t-end */
static long check_every = 400; /* --check-every */
#define CHECK(cond, ...)                                                                 \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                         \
            fprintf(stderr, __VA_ARGS__);                                                \
            fprintf(stderr, "\n");                                                       \
            failures++;                                                                  \
        }                                                                                \
    } while (0)

/* A call that must succeed: stop at once otherwise. */
#define MUST(call)                                                                       \
    do {                                                                                 \
        int rc_ = (call);                                                                \
        if (rc_ != G6_OK) {                                                              \
            fprintf(stderr, "FAIL %s:%d: %s returned %d: %s\n", __FILE__, __LINE__,      \
                    #call, rc_, g6_last_error());                                        \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* The code `got` must be `want`, with a message naming `word`. */
static void expect_error(int got, int want, const char *word, const char *what) {
    const char *msg = g6_last_error();
    CHECK(got == want, "%s: returned %d, want %d (%s)", what, got, want, msg);
    CHECK(strstr(msg, word) != NULL, "%s: message \"%s\" lacks \"%s\"", what, msg, word);
}

/* ------------------------------------------------------------ .npy */

/* Reads an (N, 7) little-endian float64 C-order .npy; exits 4 on error. */
static double *load_npy(const char *path, int *n_out) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(4);
    }
    unsigned char magic[8];
    if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0) {
        fprintf(stderr, "%s: not a .npy file\n", path);
        exit(4);
    }
    unsigned char len[4] = {0, 0, 0, 0};
    size_t len_bytes = magic[6] == 1 ? 2 : 4;
    if (fread(len, 1, len_bytes, f) != len_bytes) {
        fprintf(stderr, "%s: truncated header\n", path);
        exit(4);
    }
    size_t hlen = len[0] | (len[1] << 8) | ((size_t)len[2] << 16) | ((size_t)len[3] << 24);
    char *header = calloc(hlen + 1, 1);
    int n = 0, cols = 0;
    const char *shape;
    if (!header || fread(header, 1, hlen, f) != hlen || !strstr(header, "'descr': '<f8'") ||
        !strstr(header, "'fortran_order': False") || !(shape = strstr(header, "'shape': (")) ||
        sscanf(shape, "'shape': (%d, %d)", &n, &cols) != 2 || n < 2 || cols != 7) {
        fprintf(stderr, "%s: want an (N >= 2, 7) '<f8' C-order array; header %s\n", path,
                header ? header : "?");
        exit(4);
    }
    free(header);
    double *data = malloc(sizeof(double) * 7 * (size_t)n);
    if (!data || fread(data, sizeof(double), 7 * (size_t)n, f) != 7 * (size_t)n) {
        fprintf(stderr, "%s: truncated data\n", path);
        exit(4);
    }
    fclose(f);
    *n_out = n;
    return data;
}

/* ------------------------------------------------------------ the system */

static int n, npipes;
static vec3 *x, *v, *acc, *jrk; /* at each body's own time t */
static double *m, *t, *dt;

/* GRAPE-6's scaled derivatives, computed the one way both sides use. */
static void scaled(int i, vec3 a2, vec3 j6) {
    for (int k = 0; k < 3; k++) {
        a2[k] = acc[i][k] / 2;
        j6[k] = jrk[i][k] / 6;
    }
}

/* Body i predicted to tb with the library's formula (grape6.h). */
static void predict(int i, double tb, vec3 xp, vec3 vp) {
    vec3 a2, j6;
    scaled(i, a2, j6);
    double h = tb - t[i];
    for (int k = 0; k < 3; k++) {
        xp[k] = x[i][k] + h * (v[i][k] + h * (a2[k] + h * j6[k]));
        vp[k] = v[i][k] + h * (2 * a2[k] + 3 * h * j6[k]);
    }
}

static void send_j(int i) {
    vec3 a2, j6, k18 = {0, 0, 0};
    scaled(i, a2, j6);
    MUST(g6_set_j_particle(0, i, i, t[i], dt[i], m[i], k18, j6, a2, v[i], x[i]));
}

static double norm(const vec3 a) { return sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]); }

static double rel3(const vec3 got, const vec3 want) {
    vec3 d = {got[0] - want[0], got[1] - want[1], got[2] - want[2]};
    return norm(d) / norm(want);
}

/* Kinetic + potential energy (direct f64 sum, G = 1). */
static double energy(void) {
    double e = 0;
    for (int i = 0; i < n; i++) {
        e += 0.5 * m[i] * (v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2]);
        for (int j = i + 1; j < n; j++) {
            double dx = x[j][0] - x[i][0], dy = x[j][1] - x[i][1], dz = x[j][2] - x[i][2];
            e -= m[i] * m[j] / sqrt(dx * dx + dy * dy + dz * dz + EPS * EPS);
        }
    }
    return e;
}

/* ------------------------------------------------------------ checks */

static double err_force = 0, err_jerk = 0, err_pot = 0;
static int checked_blocks = 0, checked_lists = 0, checked_overflow = 0;

/* Direct f64 field of chunk body (xi, vi) with index `self` from all bodies
 * predicted to tb (positions xj, velocities vj); compares with the library. */
static void check_field(int self, const vec3 xi, const vec3 vi, vec3 *xj, vec3 *vj,
                        const vec3 ga, const vec3 gj, double gpot) {
    vec3 a = {0, 0, 0}, j = {0, 0, 0};
    double pot = 0;
    for (int b = 0; b < n; b++) {
        if (b == self) continue;
        vec3 r = {xj[b][0] - xi[0], xj[b][1] - xi[1], xj[b][2] - xi[2]};
        vec3 w = {vj[b][0] - vi[0], vj[b][1] - vi[1], vj[b][2] - vi[2]};
        double d2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2] + EPS * EPS;
        double d = sqrt(d2), md3 = m[b] / (d2 * d);
        double rv = r[0] * w[0] + r[1] * w[1] + r[2] * w[2];
        for (int k = 0; k < 3; k++) {
            a[k] += md3 * r[k];
            j[k] += md3 * (w[k] - 3 * rv / d2 * r[k]);
        }
        pot -= m[b] / d;
    }
    err_force = fmax(err_force, rel3(ga, a));
    err_jerk = fmax(err_jerk, rel3(gj, j));
    err_pot = fmax(err_pot, fabs((gpot - pot) / pot));
}

static int cmp_int(const void *a, const void *b) {
    int x_ = *(const int *)a, y_ = *(const int *)b;
    return (x_ > y_) - (x_ < y_);
}

/* The nearest neighbour and neighbour list of pipe `pipe` (body `self` at
 * xi) against a brute-force search over xj. Pairs within 1e-12 of the
 * boundary h2 may go either way (rounding). */
static void check_neighbours(int pipe, int self, const vec3 xi, vec3 *xj, int nnb) {
    static int *list = NULL;
    if (!list) list = malloc(sizeof(int) * (size_t)n);
    double best = INFINITY;
    for (int b = 0; b < n; b++) {
        if (b == self) continue;
        double dx = xj[b][0] - xi[0], dy = xj[b][1] - xi[1], dz = xj[b][2] - xi[2];
        best = fmin(best, dx * dx + dy * dy + dz * dz);
    }
    CHECK(nnb >= 0 && nnb < n && nnb != self, "pipe %d: nearest neighbour %d", pipe, nnb);
    if (nnb >= 0 && nnb < n) {
        double dx = xj[nnb][0] - xi[0], dy = xj[nnb][1] - xi[1], dz = xj[nnb][2] - xi[2];
        double r2 = dx * dx + dy * dy + dz * dz;
        CHECK(r2 <= best * (1 + 1e-12), "pipe %d: nearest %d at r^2 %g, brute force %g", pipe,
              nnb, r2, best);
    }
    int count = -1;
    MUST(g6_get_neighbour_list(0, pipe, n, &count, list));
    int sure = 0;
    for (int b = 0; b < n; b++) {
        if (b == self) continue;
        double dx = xj[b][0] - xi[0], dy = xj[b][1] - xi[1], dz = xj[b][2] - xi[2];
        double r2 = dx * dx + dy * dy + dz * dz;
        int in = bsearch(&b, list, (size_t)count, sizeof(int), cmp_int) != NULL;
        if (fabs(r2 - H2_CHECK) <= 1e-12 * H2_CHECK) continue;
        sure += r2 < H2_CHECK;
        CHECK(in == (r2 < H2_CHECK), "pipe %d (body %d): body %d at r^2 %.17g %s the list",
              pipe, self, b, r2, in ? "wrongly in" : "missing from");
    }
    CHECK(count >= sure, "pipe %d: %d neighbours listed, %d found", pipe, count, sure);
    for (int k = 1; k < count; k++) CHECK(list[k - 1] < list[k], "pipe %d: list not sorted", pipe);
    checked_lists++;
    /* A list cut short: G6_OVERFLOW, the full count, the first entries. */
    if (count >= 2 && checked_overflow < 20) {
        int cut[2], c2 = -1;
        int rc = g6_get_neighbour_list(0, pipe, count - 1 < 2 ? count - 1 : 2, &c2, cut);
        CHECK(rc == G6_OVERFLOW && c2 == count && cut[0] == list[0],
              "pipe %d: truncated list: rc %d count %d (%d) first %d (%d): %s", pipe, rc, c2,
              count, cut[0], list[0], g6_last_error());
        checked_overflow++;
    }
}

/* ------------------------------------------------------------ forces */

static int *ci;
static vec3 *cx, *cv, *ca, *cj, *ca2, *cj6;
static double *cpot, *ch2;
static int *cnn;
static vec3 *pxj, *pvj; /* every body predicted, for the checks */

/* Acceleration, jerk, potential of bodies list[0..na) at time tb from
 * their predicted states (xp, vp), in chunks of g6_npipes(), as ph4 does.
 * With `check`, each chunk is compared with the direct sum and searched
 * for neighbours. */
static void forces(int na, const int *list, vec3 *xp, vec3 *vp, double tb, vec3 *anew,
                   vec3 *jnew, double *pnew, int check) {
    MUST(g6_set_ti(0, tb));
    if (check)
        for (int b = 0; b < n; b++) predict(b, tb, pxj[b], pvj[b]);
    for (int off = 0; off < na; off += npipes) {
        int ni = na - off < npipes ? na - off : npipes;
        for (int k = 0; k < ni; k++) {
            int i = list[off + k];
            ci[k] = i;
            memcpy(cx[k], xp[off + k], sizeof(vec3));
            memcpy(cv[k], vp[off + k], sizeof(vec3));
            scaled(i, ca2[k], cj6[k]);
            ch2[k] = check ? H2_CHECK : 0.0;
        }
        g6calc_firsthalf(0, n, ni, ci, cx, cv, ca2, cj6, cpot, EPS * EPS, ch2);
        if (check) {
            MUST(g6calc_lasthalf2(0, n, ni, ci, cx, cv, EPS * EPS, ch2, ca, cj, cpot, cnn));
            MUST(g6_read_neighbour_list(0));
        } else {
            MUST(g6calc_lasthalf(0, n, ni, ci, cx, cv, EPS * EPS, ch2, ca, cj, cpot));
        }
        for (int k = 0; k < ni; k++) {
            memcpy(anew[off + k], ca[k], sizeof(vec3));
            memcpy(jnew[off + k], cj[k], sizeof(vec3));
            pnew[off + k] = cpot[k];
            if (check) {
                check_field(ci[k], cx[k], cv[k], pxj, pvj, ca[k], cj[k], cpot[k]);
                check_neighbours(k, ci[k], cx[k], pxj, cnn[k]);
            }
        }
    }
    checked_blocks += check;
}

/* The largest power of two <= want and <= cap that divides tb. */
static double quantise(double want, double cap, double tb) {
    double s = cap;
    while (s > want && s >= DT_MIN) s /= 2;
    while (fmod(tb, s) != 0 && s >= DT_MIN) s /= 2;
    if (s < DT_MIN) {
        fprintf(stderr, "FAIL: time step %g below %g at t = %g\n", want, DT_MIN, tb);
        exit(1);
    }
    return s;
}

/* ------------------------------------------------------------ errors */

static void check_errors_before_open(void) {
    expect_error(g6_set_ti(0, 0.0), G6_ERR_NOT_OPEN, "g6_open", "g6_set_ti before g6_open");
    int rc = g6_read_neighbour_list(0);
    expect_error(rc, G6_ERR_NOT_OPEN, "not open", "g6_read_neighbour_list before g6_open");
}

static void check_errors_while_open(void) {
    expect_error(g6_open(0), G6_ERR_ALREADY_OPEN, "already open", "g6_open twice");
    vec3 bad = {0.0, NAN, 0.0}, z = {0, 0, 0};
    expect_error(g6_set_j_particle(0, 0, 0, 0.0, 0.0, 1.0, z, z, z, z, bad), G6_ERR_NOT_FINITE,
                 "NaN", "a NaN position");
    /* An active block of 0, then one more than the pipes. */
    int *idx = calloc((size_t)npipes + 1, sizeof(int));
    vec3 *xi = calloc((size_t)npipes + 1, sizeof(vec3));
    vec3 *out = calloc((size_t)npipes + 1, sizeof(vec3));
    double *pot = calloc((size_t)npipes + 1, sizeof(double));
    for (int k = 0; k <= npipes; k++) idx[k] = k % n;
    g6calc_firsthalf(0, n, 0, idx, xi, xi, xi, xi, pot, 0.01, pot);
    expect_error(G6_ERR_PIPES, G6_ERR_PIPES, "ni = 0", "g6calc_firsthalf with ni = 0");
    int rc = g6calc_lasthalf(0, n, 0, idx, xi, xi, 0.01, pot, out, out, pot);
    expect_error(rc, G6_ERR_PIPES, "firsthalf", "g6calc_lasthalf after ni = 0");
    g6calc_firsthalf(0, n, npipes + 1, idx, xi, xi, xi, xi, pot, 0.01, pot);
    rc = g6calc_lasthalf(0, n, npipes + 1, idx, xi, xi, 0.01, pot, out, out, pot);
    expect_error(rc, G6_ERR_PIPES, "g6_npipes()", "ni = g6_npipes() + 1");
    free(idx);
    free(xi);
    free(out);
    free(pot);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv) {
    const char *init = NULL, *ref = NULL, *csv = NULL;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--csv") == 0 && a + 1 < argc)
            csv = argv[++a];
        else if (strcmp(argv[a], "--t-end") == 0 && a + 1 < argc)
            t_end = strtod(argv[++a], NULL);
        else if (strcmp(argv[a], "--check-every") == 0 && a + 1 < argc)
            check_every = strtol(argv[++a], NULL, 10);
        else if (!init)
            init = argv[a];
        else if (!ref)
            ref = argv[a];
        else
            init = NULL, a = argc;
    }
    if (!init || !(t_end > 0 && t_end <= 1 && fmod(t_end, DT_MAX) == 0) || check_every < 1 ||
        (ref && t_end != 1.0)) {
        fprintf(stderr,
                "usage: %s INIT.npy [IAS15_T1.npy] [--csv ENERGY.csv] [--t-end T] "
                "[--check-every K]\n  (T a multiple of 1/64 in (0, 1], 1 with IAS15_T1.npy; "
                "K >= 1)\n",
                argv[0]);
        return 2;
    }
    double *data = load_npy(init, &n);
    x = calloc((size_t)n, sizeof(vec3));
    v = calloc((size_t)n, sizeof(vec3));
    acc = calloc((size_t)n, sizeof(vec3));
    jrk = calloc((size_t)n, sizeof(vec3));
    m = calloc((size_t)n, sizeof(double));
    t = calloc((size_t)n, sizeof(double));
    dt = calloc((size_t)n, sizeof(double));
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            x[i][k] = data[7 * i + k];
            v[i][k] = data[7 * i + 3 + k];
        }
        m[i] = data[7 * i + 6];
    }
    FILE *out = NULL;
    if (csv && !(out = fopen(csv, "w"))) {
        perror(csv);
        return 4;
    }

    check_errors_before_open();
    MUST(g6_open(0));
    npipes = g6_npipes();
    CHECK(npipes > 0, "g6_npipes() = %d", npipes);
    const char *prec = getenv("GRAPE6_PRECISION");
    int mixed = prec && strcmp(prec, "mixed") == 0;
    double tol_force = mixed ? 1e-12 : 1e-13, tol_jerk = mixed ? 1e-5 : 1e-12;
    MUST(g6_set_tunit(51));
    MUST(g6_set_xunit(51));
    MUST(g6_initialize_jp_buffer(0, 1024));
    check_errors_while_open();

    int cap = npipes < n ? npipes : n;
    ci = malloc(sizeof(int) * (size_t)cap);
    cnn = malloc(sizeof(int) * (size_t)cap);
    cx = malloc(sizeof(vec3) * (size_t)cap);
    cv = malloc(sizeof(vec3) * (size_t)cap);
    ca = malloc(sizeof(vec3) * (size_t)cap);
    cj = malloc(sizeof(vec3) * (size_t)cap);
    ca2 = malloc(sizeof(vec3) * (size_t)cap);
    cj6 = malloc(sizeof(vec3) * (size_t)cap);
    cpot = malloc(sizeof(double) * (size_t)cap);
    ch2 = malloc(sizeof(double) * (size_t)cap);
    pxj = malloc(sizeof(vec3) * (size_t)n);
    pvj = malloc(sizeof(vec3) * (size_t)n);
    int *list = malloc(sizeof(int) * (size_t)n);
    vec3 *xp = malloc(sizeof(vec3) * (size_t)n), *vp = malloc(sizeof(vec3) * (size_t)n);
    vec3 *anew = malloc(sizeof(vec3) * (size_t)n), *jnew = malloc(sizeof(vec3) * (size_t)n);
    double *pnew = malloc(sizeof(double) * (size_t)n);

    /* The start: every body's force and jerk (j-particles with a = j = 0 at
     * t = 0, so the prediction to ti = 0 is the position itself). */
    for (int i = 0; i < n; i++) send_j(i);
    MUST(g6_flush_jp_buffer(0));
    for (int i = 0; i < n; i++) {
        list[i] = i;
        memcpy(xp[i], x[i], sizeof(vec3));
        memcpy(vp[i], v[i], sizeof(vec3));
    }
    forces(n, list, xp, vp, 0.0, anew, jnew, pnew, 1);
    memcpy(acc, anew, sizeof(vec3) * (size_t)n);
    memcpy(jrk, jnew, sizeof(vec3) * (size_t)n);
    double e0 = energy(), pot_lib = 0, kin = 0;
    for (int i = 0; i < n; i++) {
        pot_lib += 0.5 * m[i] * pnew[i];
        kin += 0.5 * m[i] * (v[i][0] * v[i][0] + v[i][1] * v[i][1] + v[i][2] * v[i][2]);
    }
    CHECK(fabs((kin + pot_lib - e0) / e0) < 1e-13, "energy from g6 potentials %.17g vs %.17g",
          kin + pot_lib, e0);
    for (int i = 0; i < n; i++) {
        dt[i] = quantise(ETA_S * norm(acc[i]) / norm(jrk[i]), DT_MAX, 0.0);
        send_j(i);
    }
    if (out) fprintf(out, "t,rel_energy_error\n0,0\n");

    /* Block steps. */
    long blocks = 0, evals = 0;
    double tsys = 0, de_max = 0;
    while (tsys < t_end) {
        double tb = INFINITY;
        for (int i = 0; i < n; i++) tb = fmin(tb, t[i] + dt[i]);
        int na = 0;
        for (int i = 0; i < n; i++)
            if (t[i] + dt[i] == tb) list[na++] = i;
        for (int k = 0; k < na; k++) predict(list[k], tb, xp[k], vp[k]);
        forces(na, list, xp, vp, tb, anew, jnew, pnew, blocks % check_every == 0);
        for (int k = 0; k < na; k++) {
            int i = list[k];
            double h = tb - t[i], h2 = h * h, h3 = h2 * h, h4 = h3 * h, h5 = h4 * h;
            vec3 s1, c;
            for (int d = 0; d < 3; d++) {
                double da = acc[i][d] - anew[k][d];
                double s0 = (-6 * da - h * (4 * jrk[i][d] + 2 * jnew[k][d])) / h2;
                c[d] = (12 * da + 6 * h * (jrk[i][d] + jnew[k][d])) / h3;
                x[i][d] = xp[k][d] + s0 * h4 / 24 + c[d] * h5 / 120;
                v[i][d] = vp[k][d] + s0 * h3 / 6 + c[d] * h4 / 24;
                s1[d] = s0 + c[d] * h;
                acc[i][d] = anew[k][d];
                jrk[i][d] = jnew[k][d];
            }
            double a1 = norm(acc[i]), j1 = norm(jrk[i]), sn = norm(s1), cr = norm(c);
            double want = sqrt(ETA * (a1 * sn + j1 * j1) / (j1 * cr + sn * sn));
            t[i] = tb;
            dt[i] = quantise(want, fmin(2 * h, DT_MAX), tb);
            send_j(i);
        }
        tsys = tb;
        blocks++;
        evals += na;
        if (fmod(tsys, DT_MAX) == 0) {
            double de = fabs((energy() - e0) / e0);
            de_max = fmax(de_max, de);
            if (out) fprintf(out, "%.10g,%.6e\n", tsys, de);
        }
    }
    if (out) fclose(out);
    double de = fabs((energy() - e0) / e0);

    double dx = -1;
    if (ref) {
        int nr;
        double *r = load_npy(ref, &nr);
        CHECK(nr == n, "%s has %d rows, want %d", ref, nr, n);
        dx = 0;
        for (int i = 0; i < n && i < nr; i++)
            for (int k = 0; k < 3; k++) dx = fmax(dx, fabs(x[i][k] - r[7 * i + k]));
        free(r);
        CHECK(dx <= DX_BOUND, "max position difference to IAS15 %.3e > %.0e", dx, DX_BOUND);
    }
    CHECK(de <= DE_BOUND && de_max <= DE_BOUND, "|dE/E| %.3e (max %.3e) > %.0e", de, de_max,
          DE_BOUND);
    CHECK(err_force <= tol_force, "force error %.2e > %.0e", err_force, tol_force);
    CHECK(err_pot <= tol_force, "potential error %.2e > %.0e", err_pot, tol_force);
    CHECK(err_jerk <= tol_jerk, "jerk error %.2e > %.0e", err_jerk, tol_jerk);
    CHECK(checked_blocks >= 5 && checked_lists >= 500 && checked_overflow >= 5,
          "too few checks: %d blocks, %d lists, %d overflows", checked_blocks, checked_lists,
          checked_overflow);

    MUST(g6_close(0));
    expect_error(g6_close(0), G6_ERR_NOT_OPEN, "g6_open", "g6_close twice");

    const char *backend = getenv("GRAPE6_BACKEND");
    printf("grape6 plummer: n=%d npipes=%d precision=%s backend=%s t=%g eta=%g eps=%g "
           "block_steps=%ld force_evals=%ld |dE/E|=%.3e max_|dE/E|=%.3e max_dx_ias15=%.3e "
           "force_err=%.2e jerk_err=%.2e pot_err=%.2e checked_blocks=%d checked_lists=%d "
           "failures=%d %s\n",
           n, npipes, mixed ? "mixed" : "f64", backend ? backend : "cpu", tsys, ETA, EPS, blocks,
           evals, de, de_max, dx,
           err_force, err_jerk, err_pot, checked_blocks, checked_lists, failures,
           failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
