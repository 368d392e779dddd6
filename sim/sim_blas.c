/* sim_blas.c: OpenBLAS, loaded on first use, single-threaded under the executor's pool but for the largest products, with the kernels of the CPU it runs on. */
/* Floor 0: calls nothing else in sim/. */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim_impl.h"

#define SIM_BLAS_LIB	"libopenblas.so.0"

static pthread_once_t	  sim_blas_once = PTHREAD_ONCE_INIT;
static __typeof__(cblas_sgemm) *sim_blas_sgemm_fn;
static void		(*sim_blas_threads_fn)(int);
static char		  sim_blas_err[256];

/*
 * OpenBLAS's thread count is one number for the whole process (0.3.21 has
 * no per-call count): a threaded call holds this for writing while it
 * sets the count, calls and sets it back to 1; every other call holds it
 * for reading, so that none of them runs while the count is not 1.
 */
static pthread_rwlock_t	  sim_blas_lock;
static atomic_ulong	  sim_blas_threaded;	/* calls on its threads */

/*
 * Before main, while the process has one thread: OpenBLAS picks its
 * kernels once, when it is loaded, by the CPU's model number, and
 * OpenBLAS 0.3.21 (Debian 12) takes a CPU newer than it knows (Emerald
 * Rapids, model 207) for a Prescott: SSE3 kernels, a third of the speed
 * of its AVX-512 ones. Name the kernels by what the CPU can do instead,
 * unless the environment already does; and no threads of OpenBLAS's own
 * (the pool has them). Both only for OpenBLAS, which this process loads
 * after (sim_blas_load), and the programs it starts.
 */
static void __attribute__((constructor))
sim_blas_environ(void)
{
	__builtin_cpu_init();
	if (getenv("OPENBLAS_CORETYPE") == NULL) {
		if (__builtin_cpu_supports("avx512f") &&
		    __builtin_cpu_supports("avx512bw") &&
		    __builtin_cpu_supports("avx512dq") &&
		    __builtin_cpu_supports("avx512vl"))
			setenv("OPENBLAS_CORETYPE", "SkylakeX", 0);
		else if (__builtin_cpu_supports("avx2") &&
		    __builtin_cpu_supports("fma"))
			setenv("OPENBLAS_CORETYPE", "Haswell", 0);
	}
	setenv("OPENBLAS_NUM_THREADS", "1", 0);
	/* OpenBLAS's own threads spin 2^28 cycles (~0.1 s) after each
	 * threaded call before they sleep, taking a CPU from the pool and
	 * the daemon: 2^10, then sleep (waking one costs tens of us, a
	 * threaded call is milliseconds). */
	setenv("OPENBLAS_THREAD_TIMEOUT", "10", 0);
}

static void
sim_blas_load(void)
{
	pthread_rwlockattr_t	 attr;
	void			*h;

	/* a threaded call is not kept waiting by a stream of small ones */
	pthread_rwlockattr_init(&attr);
	pthread_rwlockattr_setkind_np(&attr,
	    PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&sim_blas_lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	if ((h = dlopen(SIM_BLAS_LIB, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(sim_blas_err, sizeof(sim_blas_err), "%s", dlerror());
		return;
	}
	*(void **)&sim_blas_threads_fn = dlsym(h, "openblas_set_num_threads");
	if (sim_blas_threads_fn != NULL)
		sim_blas_threads_fn(1);
	*(void **)&sim_blas_sgemm_fn = dlsym(h, "cblas_sgemm");
	if (sim_blas_sgemm_fn == NULL)
		snprintf(sim_blas_err, sizeof(sim_blas_err), "%s has no "
		    "cblas_sgemm", SIM_BLAS_LIB);
}

const char *
sim_blas_open(void)
{
	pthread_once(&sim_blas_once, sim_blas_load);
	return (sim_blas_sgemm_fn != NULL ? NULL : sim_blas_err);
}

/*
 * OpenBLAS splits a threaded product by rows and columns of C, each
 * element the same dot product over K in the same blocks as on one
 * thread: the bits do not depend on threads.
 */
void
sim_blas_sgemm(unsigned threads, bool trans_a, int M, int N, int K,
    const float *A, int lda, const float *B, int ldb, float beta, float *C,
    int ldc)
{
	if (threads > SIM_POOL_MAX)
		threads = SIM_POOL_MAX;
	if (threads > 1 && sim_blas_threads_fn != NULL) {
		pthread_rwlock_wrlock(&sim_blas_lock);
		sim_blas_threads_fn((int)threads);
		atomic_fetch_add_explicit(&sim_blas_threaded, 1,
		    memory_order_relaxed);
	} else {
		threads = 1;
		pthread_rwlock_rdlock(&sim_blas_lock);
	}
	sim_blas_sgemm_fn(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
	    CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
	if (threads > 1)
		sim_blas_threads_fn(1);
	pthread_rwlock_unlock(&sim_blas_lock);
}

unsigned long
sim_blas_threaded_calls(void)
{
	return (atomic_load_explicit(&sim_blas_threaded, memory_order_relaxed));
}
