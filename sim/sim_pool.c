/* sim_pool.c: the executor's worker threads: one small pool per process, started on first use, that runs the independent parts of a kernel or of one op. */
/* Floor 0: calls nothing else in sim/. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "sim/sim_impl.h"

/* How long a thread with nothing to do spins before it sleeps, in pause
 * instructions (40 to 140 cycles each: some tens of microseconds): an op
 * split over the pool hands the next op's parts out tens of microseconds
 * later, and waking a sleeping thread costs about that. */
#define SIM_POOL_SPINS		512

/* One sim_pool_run call: tasks [0, n) handed out in order. */
struct sim_pool_job {
	void			(*fn)(void *, unsigned, unsigned);
	void			*arg;
	unsigned		 n;
	unsigned		 want;		/* workers that may still join */
	unsigned		 inside;	/* workers that joined and have
					 * not left (under mu) */
	atomic_uint		 next;		/* next task to hand out */
	atomic_uint		 left;		/* tasks not finished */
	struct sim_pool_job	*link;
};

static struct {
	pthread_mutex_t		 mu;
	pthread_cond_t		 work;		/* a job was queued */
	pthread_cond_t		 left;		/* a worker left a job */
	struct sim_pool_job	*head;		/* jobs workers may join */
	unsigned		 nworkers;	/* slots 1 .. nworkers */
	unsigned		 sleeping;
	atomic_uint		 gen;		/* bumped for every job */
	bool			 forkable;
} sim_pool = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
	.left = PTHREAD_COND_INITIALIZER,
};

static inline void
sim_pool_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* Spin until *v differs from old, or SIM_POOL_SPINS pauses passed; true
 * if it changed. */
static bool
sim_pool_spin(atomic_uint *v, unsigned old)
{
	unsigned	i;

	for (i = 0; i < SIM_POOL_SPINS; i++) {
		if (atomic_load_explicit(v, memory_order_acquire) != old)
			return (true);
		sim_pool_relax();
	}
	return (atomic_load_explicit(v, memory_order_acquire) != old);
}

/* Run the job's tasks until none is left to hand out. */
static void
sim_pool_drain(struct sim_pool_job *job, unsigned slot)
{
	unsigned	t;

	while ((t = atomic_fetch_add(&job->next, 1)) < job->n) {
		job->fn(job->arg, t, slot);
		atomic_fetch_sub_explicit(&job->left, 1, memory_order_release);
	}
}

/* Unlink job from the queue if it is there (under mu). */
static void
sim_pool_unlink(struct sim_pool_job *job)
{
	struct sim_pool_job	**pp;

	for (pp = &sim_pool.head; *pp != NULL; pp = &(*pp)->link)
		if (*pp == job) {
			*pp = job->link;
			return;
		}
}

static void *
sim_pool_worker(void *a)
{
	unsigned		 slot = (unsigned)(uintptr_t)a, g;
	struct sim_pool_job	*job;

	pthread_mutex_lock(&sim_pool.mu);
	for (;;) {
		if ((job = sim_pool.head) == NULL) {
			g = atomic_load(&sim_pool.gen);
			pthread_mutex_unlock(&sim_pool.mu);
			sim_pool_spin(&sim_pool.gen, g);
			pthread_mutex_lock(&sim_pool.mu);
			if (sim_pool.head == NULL) {
				sim_pool.sleeping++;
				pthread_cond_wait(&sim_pool.work, &sim_pool.mu);
				sim_pool.sleeping--;
			}
			continue;
		}
		if (--job->want == 0)
			sim_pool_unlink(job);
		job->inside++;
		pthread_mutex_unlock(&sim_pool.mu);
		sim_pool_drain(job, slot);
		pthread_mutex_lock(&sim_pool.mu);
		if (--job->inside == 0)
			pthread_cond_broadcast(&sim_pool.left);
	}
	return (NULL);
}

/* A child of fork has none of the workers: start again from none. */
static void
sim_pool_atfork_child(void)
{
	pthread_mutex_init(&sim_pool.mu, NULL);
	pthread_cond_init(&sim_pool.work, NULL);
	pthread_cond_init(&sim_pool.left, NULL);
	sim_pool.head = NULL;
	sim_pool.nworkers = 0;
	sim_pool.sleeping = 0;
}

/* Start workers until there are n (under mu); fewer if the system
 * refuses threads. */
static void
sim_pool_grow(unsigned n)
{
	pthread_attr_t	attr;
	pthread_t	tid;

	if (!sim_pool.forkable) {
		pthread_atfork(NULL, NULL, sim_pool_atfork_child);
		sim_pool.forkable = true;
	}
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	while (sim_pool.nworkers < n) {
		if (pthread_create(&tid, &attr, sim_pool_worker,
		    (void *)(uintptr_t)(sim_pool.nworkers + 1)) != 0)
			break;
		sim_pool.nworkers++;
	}
	pthread_attr_destroy(&attr);
}

void
sim_pool_run(unsigned threads, unsigned n,
    void (*fn)(void *arg, unsigned task, unsigned slot), void *arg)
{
	struct sim_pool_job	job;
	unsigned		 t;

	if (n == 0)
		return;
	if (threads > SIM_POOL_MAX)
		threads = SIM_POOL_MAX;
	if (threads <= 1 || n == 1) {
		fn(arg, n - 1, 0);
		for (t = 0; t + 1 < n; t++)
			fn(arg, t, 0);
		return;
	}
	memset(&job, 0, sizeof(job));
	job.fn = fn;
	job.arg = arg;
	job.n = n - 1;
	job.want = threads - 1 < n - 1 ? threads - 1 : n - 1;
	atomic_init(&job.next, 0);
	atomic_init(&job.left, n - 1);
	pthread_mutex_lock(&sim_pool.mu);
	if (sim_pool.nworkers < threads - 1)
		sim_pool_grow(threads - 1);
	job.link = sim_pool.head;
	sim_pool.head = &job;
	atomic_fetch_add(&sim_pool.gen, 1);
	if (sim_pool.sleeping > 0)
		pthread_cond_broadcast(&sim_pool.work);
	pthread_mutex_unlock(&sim_pool.mu);

	fn(arg, n - 1, 0);
	sim_pool_drain(&job, 0);
	while ((t = atomic_load_explicit(&job.left, memory_order_acquire)) >
	    0)
		if (!sim_pool_spin(&job.left, t))
			break;
	pthread_mutex_lock(&sim_pool.mu);
	sim_pool_unlink(&job);
	while (job.inside > 0)
		pthread_cond_wait(&sim_pool.left, &sim_pool.mu);
	pthread_mutex_unlock(&sim_pool.mu);
	/* every worker that joined has left: all tasks are done */
}
