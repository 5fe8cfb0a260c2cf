/*
 * grape6.h: the GRAPE-6 / Sapporo2 API of libgrape6 (the nbody-kernels
 * workspace's crate grape6/), for 4th-order Hermite codes written for
 * GRAPE-6 hardware or Sapporo2 (AMUSE ph4, phiGRAPE, ...).
 *
 * Link:   cc ... -I grape6/include -L target/release -lgrape6 \
 *             -Wl,-rpath,"$PWD/target/release"
 * Build:  cargo build --release -p grape6   (target/release/libgrape6.so)
 *
 * The prototypes are Sapporo2's (lib/interfaces/sapporoG6lib.cpp, the
 * declarations AMUSE ph4's grape.h makes), so a code's own declarations
 * agree with these. Plain names take values (the GRAPE-6 C API); names
 * ending in '_' take every argument by reference (Fortran; Sapporo2 exports
 * these). The cluster id is never read.
 *
 * Units and conventions (Sapporo2's):
 *   - j-particles carry GRAPE-6's scaled derivatives: a2 = acceleration / 2,
 *     j6 = jerk / 6 (k18 = snap / 18 and dtj are not used: 4th order).
 *   - g6calc_firsthalf predicts j-addresses 0 .. nj-1 from their tj to ti:
 *         dt = ti - tj
 *         x(ti) = x + dt * (v + dt * (a2 + dt * j6))
 *         v(ti) = v + dt * (2 * a2 + 3 * dt * j6)
 *     in f64, in that order of operations.
 *   - Results have no G: acc = sum_j m_j r_ij / d^3, jerk its time
 *     derivative (not divided by 6), pot = -sum_j m_j / d, with
 *     r_ij = x_j - x_i, d^2 = |r_ij|^2 + eps2, over every j-particle whose
 *     index differs from the i-particle's index (self-interaction skipped by
 *     index, not by address).
 *   - Neighbours: j-particles with another index and |r_ij|^2 < h2[i]
 *     (unsoftened), reported by index, sorted ascending. Nearest neighbour
 *     (g6calc_lasthalf2): the index of the j-particle with the smallest
 *     unsoftened |r_ij|^2 (the lowest address on a tie; -1 if none).
 *
 * Errors (extensions; GRAPE-6 and Sapporo2 crash or compute garbage): every
 * function checks its input before any work and returns one of the G6_*
 * codes below; g6_last_error() returns the message, which names the bad
 * value, and it is also printed to stderr unless GRAPE6_QUIET is set. A
 * failed call changes nothing. g6calc_firsthalf returns void (as in
 * GRAPE-6): its error is reported by g6_last_error() and by the
 * g6calc_lasthalf that follows it.
 *
 * Environment, read by g6_open (g6_npipes before g6_open reads it too):
 *   GRAPE6_NPIPES     i-particles per calculation, 1 to 1048576 (default
 *                     16384, Sapporo2's)
 *   GRAPE6_JMEM       j-particle addresses, 1 to 2^28 (default 4194304)
 *   GRAPE6_NB_MAX     neighbours kept per i-particle, 1 to 2^20 (default 256)
 *   GRAPE6_PRECISION  f64 (default) or mixed: nbody-host's Hermite force
 *                     loops (mixed: force to ~1e-14 relative, jerk ~1e-7)
 *   GRAPE6_BACKEND    where the forces run: cpu (default; nbody-host's SIMD
 *                     loops on all cores), cuda (GPU 0), cuda:N (GPU N), or
 *                     emulator (the GPU kernels on the CPU: slow, for tests).
 *                     cuda needs a libgrape6 built with
 *                       cargo build --release -p grape6 --features cuda
 *                     (which then needs NVIDIA's libcuda.so.1 to load, on
 *                     any backend) and a GPU: otherwise g6_open returns
 *                     G6_ERR_DEVICE. On a GPU the j-particles are predicted
 *                     on the host (as on the CPU) and sent with each
 *                     g6calc_firsthalf; force, jerk and potential come from
 *                     nbody-host's Hermite kernels (the same formulas and
 *                     precisions; the sums in another order, so the last
 *                     bits differ from the CPU's); nearest neighbours and
 *                     lists are found on the host.
 *   GRAPE6_BLOCK      threads per block of the GPU force kernel, a power of
 *                     two from 32 to 1024 (default 128)
 *   GRAPE6_QUIET      set and not "0": messages are stored, not printed
 *   RAYON_NUM_THREADS threads of the force loops (results are the same bits
 *                     on any number)
 *
 * Threads: any thread may call any function; calls are serialised by one
 * lock. There is one library per process (as with Sapporo2).
 *
 * Pointers: NULL where a value must be read or written is G6_ERR_NULL_POINTER;
 * otherwise arrays must hold the elements the call says (ni i-particles, 3
 * components, maxlength neighbours).
 */
#ifndef GRAPE6_H
#define GRAPE6_H

#ifdef __cplusplus
extern "C" {
#endif

/* Return codes. */
#define G6_OK                0  /* success */
#define G6_OVERFLOW          1  /* a neighbour list did not fit (GRAPE-6's own
                                   return): truncated, the count is full */
#define G6_ERR_NOT_OPEN     -1  /* called before g6_open or after g6_close */
#define G6_ERR_ALREADY_OPEN -2  /* g6_open while open (the open library is kept) */
#define G6_ERR_NULL_POINTER -3  /* a pointer to read or write is NULL */
#define G6_ERR_ADDRESS      -4  /* a j-address < 0 or >= GRAPE6_JMEM */
#define G6_ERR_PIPES        -5  /* an active block ni of 0 or > g6_npipes() */
#define G6_ERR_NJ           -6  /* nj < 0, or j-addresses below nj never set */
#define G6_ERR_NOT_FINITE   -7  /* a NaN/inf input, or an infinite force
                                   (coincident bodies at eps2 = 0) */
#define G6_ERR_SEQUENCE     -8  /* lasthalf without its firsthalf (or other
                                   ni/nj), lists without h2, or the results of
                                   a firsthalf that failed */
#define G6_ERR_ARGUMENT     -9  /* eps2 < 0, ipipe out of range, maxlength < 0,
                                   an index carried by two j-particles below nj */
#define G6_ERR_CONFIG      -10  /* a bad GRAPE6_* variable at g6_open */
#define G6_ERR_INTERNAL    -11  /* a bug in libgrape6 (caught, not a crash) */
#define G6_ERR_DEVICE      -12  /* GRAPE6_BACKEND=cuda: no GPU (or a library
                                   built without CUDA) at g6_open, or a driver
                                   error during a calculation */

/* ------------------------------------------------------------ C API */

/* Opens the library with the GRAPE6_* settings: 0, or G6_ERR_ALREADY_OPEN,
 * G6_ERR_CONFIG, G6_ERR_DEVICE. */
int g6_open(int clusterid);

/* Frees the j-memory; g6_open may follow. 0 or G6_ERR_NOT_OPEN. */
int g6_close(int clusterid);

/* i-particles per calculation: send active blocks in chunks of this many
 * (before g6_open: what g6_open will use; G6_ERR_CONFIG if unreadable). */
int g6_npipes(void);

/* GRAPE-6's fixed-point time and position scales: no-ops in f64 (the
 * argument is not read). 0, or G6_ERR_NOT_OPEN. */
int g6_set_tunit(double newtunit);
int g6_set_xunit(double newxunit);

/* The time the next g6calc_firsthalf predicts the j-particles to (finite). */
int g6_set_ti(int clusterid, double ti);

/* Stores j-particle `index` at `address` (0 <= address < GRAPE6_JMEM; the
 * memory grows to the highest address set) with its state at time tj:
 * mass, a2 = acc/2, j6 = jerk/6, v, x (all finite; k18 and dtj unused, k18
 * may be NULL). Overwrites what the address held. Takes effect from the
 * next g6calc_firsthalf. */
int g6_set_j_particle(int clusterid, int address, int index, double tj, double dtj,
                      double mass, double k18[3], double j6[3], double a2[3], double v[3],
                      double x[3]);

/* Begins the calculation of ni (1 .. g6_npipes()) i-particles (index, xi,
 * vi predicted to ti by the caller) from j-addresses 0 .. nj-1 (all set)
 * predicted to ti, softening eps2 (>= 0), neighbour radii squared h2 (NULL:
 * no neighbour lists). aold, j6old, phiold are not read (may be NULL).
 * Errors: g6_last_error(), and the g6calc_lasthalf that follows. */
void g6calc_firsthalf(int clusterid, int nj, int ni, int index[], double xi[][3],
                      double vi[][3], double aold[][3], double j6old[][3], double phiold[],
                      double eps2, double h2[]);

/* Finishes the calculation begun with the same nj and ni: acc, jerk, pot of
 * each i-particle (index, xi, vi, eps2, h2 are those of g6calc_firsthalf and
 * are not read again). May be called again for the same results. Nothing
 * is written on error. */
int g6calc_lasthalf(int clusterid, int nj, int ni, int index[], double xi[][3],
                    double vi[][3], double eps2, double h2[], double acc[][3],
                    double jerk[][3], double pot[]);

/* g6calc_lasthalf and each i-particle's nearest neighbour's index. */
int g6calc_lasthalf2(int clusterid, int nj, int ni, int index[], double xi[][3],
                     double vi[][3], double eps2, double h2[], double acc[][3],
                     double jerk[][3], double pot[], int nnbindex[]);

/* GRAPE-6 hardware housekeeping: no-ops (0 once open). */
int g6_initialize_jp_buffer(int clusterid, int buf_size);
int g6_flush_jp_buffer(int clusterid);
int g6_reset(int clusterid);
int g6_reset_fofpga(int clusterid);

/* Finds the neighbour lists of the last calculation (begun with h2): 0, or
 * G6_OVERFLOW if some i-particle has more than GRAPE6_NB_MAX neighbours
 * (its list keeps the first GRAPE6_NB_MAX by address). */
int g6_read_neighbour_list(int clusterid);

/* The sorted indices of i-particle ipipe's (0 .. ni-1) neighbours: at most
 * maxlength written to neighbour_list, *n_neighbours = the full count.
 * 0, or G6_OVERFLOW if the count exceeds what was written. */
int g6_get_neighbour_list(int clusterid, int ipipe, int maxlength, int *n_neighbours,
                          int neighbour_list[]);

/* The message of this thread's last call into the library ("" if it
 * succeeded), e.g. "g6calc_firsthalf: ni = 0: an active block must have 1 to
 * g6_npipes() = 16384 i-particles ... (G6_ERR_PIPES)". Valid until this
 * thread's next call. An extension. */
const char *g6_last_error(void);

/* ------------------------------------------------------------ Fortran API
 * The same functions with every argument by reference (gfortran and most
 * Fortran compilers append '_': `call g6calc_firsthalf(cid, nj, ni, ...)`,
 * `ierr = g6_open(cid)`). Fortran arrays x(3, n) are C's double[n][3]. */
int g6_open_(int *clusterid);
int g6_close_(int *clusterid);
int g6_npipes_(void);
int g6_set_tunit_(double *newtunit);
int g6_set_xunit_(double *newxunit);
int g6_set_ti_(int *clusterid, double *ti);
int g6_set_j_particle_(int *clusterid, int *address, int *index, double *tj, double *dtj,
                       double *mass, double k18[3], double j6[3], double a2[3], double v[3],
                       double x[3]);
void g6calc_firsthalf_(int *clusterid, int *nj, int *ni, int index[], double xi[][3],
                       double vi[][3], double aold[][3], double j6old[][3], double phiold[],
                       double *eps2, double h2[]);
int g6calc_lasthalf_(int *clusterid, int *nj, int *ni, int index[], double xi[][3],
                     double vi[][3], double *eps2, double h2[], double acc[][3],
                     double jerk[][3], double pot[]);
int g6calc_lasthalf2_(int *clusterid, int *nj, int *ni, int index[], double xi[][3],
                      double vi[][3], double *eps2, double h2[], double acc[][3],
                      double jerk[][3], double pot[], int nnbindex[]);
int g6_initialize_jp_buffer_(int *clusterid, int *buf_size);
int g6_flush_jp_buffer_(int *clusterid);
int g6_reset_(int *clusterid);
int g6_reset_fofpga_(int *clusterid);
int g6_read_neighbour_list_(int *clusterid);
int g6_get_neighbour_list_(int *clusterid, int *ipipe, int *maxlength, int *n_neighbours,
                           int neighbour_list[]);

#ifdef __cplusplus
}
#endif

#endif /* GRAPE6_H */
