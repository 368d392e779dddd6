/* sched.c: one worker thread and one FIFO per core; results return to the loop by uv_async. */
#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/log.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"

TAILQ_HEAD(sched_queue, sched_job);

struct sched_core {
	struct sched		*s;
	unsigned		 index;
	pthread_t		 thread;
	struct sched_queue	 queue;		/* under s->mu */
	unsigned		 nqueued;
	struct sched_job	*running;
	uint64_t		 busy_ns;
};

struct sched {
	uv_loop_t		*loop;
	uv_async_t		 async;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cond;
	int			 quit;
	int			 closed;
	struct sched_queue	 done;		/* under mu */
	unsigned		 ncores;
	struct sched_core	*cores;
	struct sched_counters	 counters;	/* under mu */
};

static const char *sched_errs[] = {
	"success", "queue full", "no such core", "shutting down",
};

const char *
sched_strerror(int err)
{
	if (err > 0 || -err >= (int)(sizeof sched_errs / sizeof sched_errs[0]))
		return ("unknown error");
	return (sched_errs[-err]);
}

static void *
sched_worker_main(void *arg)
{
	struct sched_core	*c = arg;
	struct sched		*s = c->s;
	struct sched_job	*job;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (TAILQ_EMPTY(&c->queue) && !s->quit)
			pthread_cond_wait(&s->cond, &s->mu);
		if ((job = TAILQ_FIRST(&c->queue)) == NULL)
			break;		/* quit with an empty queue */
		TAILQ_REMOVE(&c->queue, job, entry);
		c->nqueued--;
		s->counters.queued--;
		job->ran = !(job->cancel != NULL &&
		    __atomic_load_n(job->cancel, __ATOMIC_ACQUIRE));
		if (job->ran) {
			c->running = job;
			s->counters.running++;
			job->started_ns = uv_hrtime();
			pthread_mutex_unlock(&s->mu);
			job->work(job, c->index);
			pthread_mutex_lock(&s->mu);
			job->finished_ns = uv_hrtime();
			c->busy_ns += job->finished_ns - job->started_ns;
			c->running = NULL;
			s->counters.running--;
			s->counters.completed++;
		} else
			s->counters.cancelled++;
		TAILQ_INSERT_TAIL(&s->done, job, entry);
		uv_async_send(&s->async);
	}
	pthread_mutex_unlock(&s->mu);
	return (NULL);
}

static void
sched_async_cb(uv_async_t *async)
{
	struct sched		*s = async->data;
	struct sched_queue	 done;
	struct sched_job	*job;

	TAILQ_INIT(&done);
	pthread_mutex_lock(&s->mu);
	TAILQ_CONCAT(&done, &s->done, entry);
	pthread_mutex_unlock(&s->mu);
	while ((job = TAILQ_FIRST(&done)) != NULL) {
		TAILQ_REMOVE(&done, job, entry);
		job->done(job, job->ran);
	}
}

int
sched_open(struct sched **out, uv_loop_t *loop, unsigned ncores)
{
	struct sched	*s;
	unsigned	 i;
	int		 error;

	assert(ncores > 0);
	s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->ncores = ncores;
	TAILQ_INIT(&s->done);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cond, NULL);
	if ((error = uv_async_init(loop, &s->async, sched_async_cb)) != 0)
		fatal("cannot create the scheduler's async handle: %s",
		    uv_strerror(error));
	s->async.data = s;
	s->cores = xcalloc(ncores, sizeof *s->cores);
	for (i = 0; i < ncores; i++) {
		s->cores[i].s = s;
		s->cores[i].index = i;
		TAILQ_INIT(&s->cores[i].queue);
		if ((error = pthread_create(&s->cores[i].thread, NULL,
		    sched_worker_main, &s->cores[i])) != 0)
			fatal("cannot start the worker of core %u: %s", i,
			    strerror(error));
	}
	*out = s;
	return (0);
}

static void
sched_close_cb(uv_handle_t *h)
{
	struct sched	*s = h->data;

	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cond);
	free(s->cores);
	free(s);
}

void
sched_close(struct sched *s)
{
	unsigned	i;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	for (i = 0; i < s->ncores; i++)
		pthread_join(s->cores[i].thread, NULL);
	/* Deliver what finished since the last wakeup. */
	sched_async_cb(&s->async);
	s->closed = 1;
	uv_close((uv_handle_t *)&s->async, sched_close_cb);
}

int
sched_job_submit(struct sched *s, struct sched_job *job, int core,
    unsigned max_queue)
{
	struct sched_core	*c;
	unsigned		 i, best, load, best_load = 0;

	assert(job->work != NULL && job->done != NULL);
	if (core >= 0 && (unsigned)core >= s->ncores)
		return (SCHED_ENOCORE);
	pthread_mutex_lock(&s->mu);
	if (s->quit) {
		pthread_mutex_unlock(&s->mu);
		return (SCHED_ESTOPPED);
	}
	if (core < 0) {
		best = 0;
		for (i = 0; i < s->ncores; i++) {
			load = s->cores[i].nqueued +
			    (s->cores[i].running != NULL);
			if (i == 0 || load < best_load) {
				best = i;
				best_load = load;
			}
		}
	} else
		best = (unsigned)core;
	c = &s->cores[best];
	if (c->nqueued >= max_queue) {
		pthread_mutex_unlock(&s->mu);
		return (SCHED_EFULL);
	}
	job->core = best;
	job->queued_ns = uv_hrtime();
	job->ran = 0;
	TAILQ_INSERT_TAIL(&c->queue, job, entry);
	c->nqueued++;
	s->counters.queued++;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
	return (0);
}

unsigned
sched_core_count(const struct sched *s)
{
	return (s->ncores);
}

void
sched_core_info(struct sched *s, unsigned i, struct sched_core_info *info)
{
	struct sched_core	*c;
	uint64_t		 busy;

	assert(i < s->ncores);
	c = &s->cores[i];
	pthread_mutex_lock(&s->mu);
	busy = c->busy_ns;
	info->busy = c->running != NULL;
	info->job_id = c->running != NULL ? c->running->id : 0;
	if (c->running != NULL)
		busy += uv_hrtime() - c->running->started_ns;
	info->queued = c->nqueued;
	pthread_mutex_unlock(&s->mu);
	info->busy_s = (double)busy / 1e9;
}

void
sched_counters_get(struct sched *s, struct sched_counters *c)
{
	pthread_mutex_lock(&s->mu);
	*c = s->counters;
	pthread_mutex_unlock(&s->mu);
}
