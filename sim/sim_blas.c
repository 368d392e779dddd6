/* sim_blas.c: OpenBLAS, loaded on first use, single-threaded under the executor's pool, with the kernels of the CPU it runs on. */
/* Floor 0: calls nothing else in sim/. */
#include <cblas.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "sim/sim_impl.h"

#define SIM_BLAS_LIB	"libopenblas.so.0"

static pthread_once_t	  sim_blas_once = PTHREAD_ONCE_INIT;
static __typeof__(cblas_sgemm) *sim_blas_sgemm_fn;
static char		  sim_blas_err[256];

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
}

static void
sim_blas_load(void)
{
	void	(*threads)(int);
	void	*h;

	if ((h = dlopen(SIM_BLAS_LIB, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		snprintf(sim_blas_err, sizeof(sim_blas_err), "%s", dlerror());
		return;
	}
	*(void **)&threads = dlsym(h, "openblas_set_num_threads");
	if (threads != NULL)
		threads(1);
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

void
sim_blas_sgemm(bool trans_a, int M, int N, int K, const float *A, int lda,
    const float *B, int ldb, float beta, float *C, int ldc)
{
	sim_blas_sgemm_fn(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
	    CblasNoTrans, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
}
