/* sched.c: per-core fair queues (round-robin across uid+pid, interactive before batch), one worker thread per core, leases, and the job history. */
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "daemon/config.h"
#include "daemon/errstr.h"
#include "daemon/log.h"
#include "daemon/metrics_hist.h"
#include "daemon/sched.h"
#include "daemon/wake.h"
#include "daemon/xmalloc.h"

TAILQ_HEAD(sched_queue, sched_job);

/* One client identity's queued jobs on one core and class; in its ring
 * while it has any. */
struct sched_client {
	uint32_t			 uid;
	uint32_t			 pid;
	struct sched_queue		 jobs;
	unsigned			 njobs;
	TAILQ_ENTRY(sched_client)	 entry;
};
TAILQ_HEAD(sched_ring, sched_client);

/* What the history keeps of a job; owned by the scheduler. */
struct sched_record {
	uint64_t			 id;
	const char			*kind;
	char				*kernel;
	uint32_t			 uid;
	uint32_t			 pid;
	int				 core;
	int				 cls;
	int				 started;
	int				 finished;	/* work returned / ended */
	int				 status;	/* -1 until the call ends */
	int				 outcome;
	double				 queued_at;
	double				 started_at;
	double				 finished_at;
	struct sched_job		*job;		/* until done / end */
	TAILQ_ENTRY(sched_record)	 entry;
};
TAILQ_HEAD(sched_records, sched_record);

struct sched_core {
	struct sched		*s;
	unsigned		 index;
	pthread_t		 thread;
	pthread_cond_t		 cond;
	struct sched_ring	 ring[SCHED_NCLASSES];	/* under s->mu */
	unsigned		 nqueued;
	struct sched_job	*holder;	/* running job or granted lease */
	uint64_t		 busy_ns;
	int			 state;		/* enum sched_core_state */
	/* Jobs (not leases), under s->mu: submit to start, start to end. */
	struct metrics_hist	 wait[SCHED_NCLASSES];
	struct metrics_hist	 exec[SCHED_NCLASSES];
};

struct sched {
	uv_loop_t		*loop;
	struct wake		 wake;		/* the loop, for events */
	pthread_mutex_t		 mu;
	int			 quit;
	struct sched_queue	 events;	/* done or grant, under mu */
	unsigned		 ncores;
	struct sched_core	*cores;
	unsigned		 nqueued;	/* all cores */
	struct sched_counters	 counters;	/* under mu */
	uint64_t		 next_id;
	unsigned		 next_core;	/* where a tie is broken next */
	struct sched_records	 records;	/* oldest first */
	size_t			 nfinished;	/* records with a status */
};

static const char *sched_errs[] = {
	"success", "queue full", "no such core", "shutting down",
	"client at its limit of jobs", "too many jobs queued", "no such job",
	"the job has finished",
};

const char *
sched_strerror(int err)
{
	return (ERRSTR(sched_errs, err));
}

const char *
sched_core_state_name(int state)
{
	static const char *names[] = { "idle", "busy", "leased", "unhealthy" };

	if (state < 0 || state > SCHED_CORE_UNHEALTHY)
		return ("unknown");
	return (names[state]);
}

const char *
sched_class_name(int cls)
{
	return (cls == SCHED_CLASS_BATCH ? "batch" : "interactive");
}

double
sched_wall_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((double)ts.tv_sec + (double)ts.tv_nsec / 1e9);
}

void
sched_limits_config(const struct config *cfg, struct sched_limits *l)
{
	l->max_queue_per_core = cfg->max_queue_per_core;
	l->max_queued = cfg->jobs_max_queued;
	l->max_per_client = cfg->jobs_max_per_client;
	l->history = cfg->jobs_history;
}

/* ------------------------------------------------------------ queues */

/* Under mu: the client (uid, pid) of core c and class cls, made if new. */
static struct sched_client *
sched_client_get(struct sched_core *c, int cls, uint32_t uid, uint32_t pid)
{
	struct sched_client	*cl;

	TAILQ_FOREACH(cl, &c->ring[cls], entry) {
		if (cl->uid == uid && cl->pid == pid)
			return (cl);
	}
	cl = xcalloc(1, sizeof *cl);
	cl->uid = uid;
	cl->pid = pid;
	TAILQ_INIT(&cl->jobs);
	TAILQ_INSERT_TAIL(&c->ring[cls], cl, entry);
	return (cl);
}

/* Under mu: take job out of its client's queue. */
static void
sched_queue_remove(struct sched *s, struct sched_job *job)
{
	struct sched_core	*c = &s->cores[job->core];
	struct sched_client	*cl = job->client;

	assert(job->state == SCHED_QUEUED && cl != NULL);
	TAILQ_REMOVE(&cl->jobs, job, entry);
	job->client = NULL;
	if (--cl->njobs == 0) {
		TAILQ_REMOVE(&c->ring[job->cls], cl, entry);
		free(cl);
	}
	c->nqueued--;
	s->nqueued--;
	s->counters.queued--;
	if (job->work == NULL)
		s->counters.leases_waiting--;
}

/*
 * Under mu: the next job of core c. Interactive first (so batch work
 * delays interactive work by at most the one batch job running); within a
 * class the first client of the ring gives its oldest job and goes to the
 * back of the ring.
 */
static struct sched_job *
sched_core_pick(struct sched *s, struct sched_core *c)
{
	struct sched_client	*cl;
	struct sched_job	*job;
	int			 cls;

	for (cls = 0; cls < SCHED_NCLASSES; cls++) {
		if ((cl = TAILQ_FIRST(&c->ring[cls])) == NULL)
			continue;
		job = TAILQ_FIRST(&cl->jobs);
		sched_queue_remove(s, job);
		/* cl may be freed now; if not, it goes to the back. */
		if ((cl = TAILQ_FIRST(&c->ring[cls])) != NULL &&
		    TAILQ_FIRST(&cl->jobs) != NULL && cl->uid == job->uid &&
		    cl->pid == job->pid) {
			TAILQ_REMOVE(&c->ring[cls], cl, entry);
			TAILQ_INSERT_TAIL(&c->ring[cls], cl, entry);
		}
		return (job);
	}
	return (NULL);
}

/* Under mu: hand job to the loop (done, or grant). */
static void
sched_event_push(struct sched *s, struct sched_job *job, int grant)
{
	assert(!job->event);
	job->event = 1;
	job->event_grant = grant;
	TAILQ_INSERT_TAIL(&s->events, job, entry);
	wake_send(&s->wake);
}

/* Under mu: job ends without running. */
static void
sched_job_unrun(struct sched *s, struct sched_job *job, int outcome)
{
	job->state = SCHED_FINISHED;
	job->outcome = outcome;
	job->finished_ns = uv_hrtime();
	if (job->rec != NULL) {
		job->rec->finished = 1;
		job->rec->outcome = outcome;
		job->rec->finished_at = sched_wall_now();
	}
	s->counters.cancelled++;
	if (job->done != NULL)
		sched_event_push(s, job, 0);
}

/* Under mu: job (work or lease) starts on c. */
static void
sched_job_start(struct sched *s, struct sched_core *c, struct sched_job *job,
    uint64_t now)
{
	c->holder = job;
	c->state = job->work != NULL ? SCHED_CORE_BUSY : SCHED_CORE_LEASED;
	job->state = SCHED_RUNNING;
	job->started_ns = now;
	if (job->rec != NULL) {
		job->rec->started = 1;
		job->rec->started_at = sched_wall_now();
	}
	s->counters.running++;
	if (job->work != NULL)
		metrics_hist_observe(&c->wait[job->cls], now - job->queued_ns);
	else {
		s->counters.leases_held++;
		s->counters.leases_granted++;
	}
}

/* Under mu: the holder of c is done with it. */
static void
sched_job_stop(struct sched *s, struct sched_core *c, struct sched_job *job)
{
	assert(c->holder == job);
	job->state = SCHED_FINISHED;
	job->outcome = SCHED_RAN;
	job->finished_ns = uv_hrtime();
	c->busy_ns += job->finished_ns - job->started_ns;
	if (job->work != NULL)
		metrics_hist_observe(&c->exec[job->cls], job->finished_ns -
		    job->started_ns);
	else
		s->counters.leases_held--;
	c->holder = NULL;
	c->state = SCHED_CORE_IDLE;
	if (job->rec != NULL) {
		job->rec->finished = 1;
		job->rec->outcome = SCHED_RAN;
		job->rec->finished_at = sched_wall_now();
	}
	s->counters.running--;
	s->counters.completed++;
}

/*
 * Under mu, on c's worker or (sched_job_submit) the submitting thread:
 * job, just picked, runs now (mu is dropped meanwhile), expires, or is
 * dropped as gone; a lease is granted.
 */
static void
sched_core_run(struct sched *s, struct sched_core *c, struct sched_job *job)
{
	uint64_t	now = uv_hrtime();

	if (job->deadline_ns != 0 && now >= job->deadline_ns) {
		sched_job_unrun(s, job, SCHED_EXPIRED);
		return;
	}
	if (job->cancel != NULL && __atomic_load_n(job->cancel,
	    __ATOMIC_ACQUIRE)) {
		sched_job_unrun(s, job, SCHED_GONE);
		return;
	}
	sched_job_start(s, c, job, now);
	if (job->work == NULL) {
		/* A lease: the core is its until sched_lease_end. */
		sched_event_push(s, job, 1);
		return;
	}
	pthread_mutex_unlock(&s->mu);
	job->work(job, c->index);
	pthread_mutex_lock(&s->mu);
	sched_job_stop(s, c, job);
	sched_event_push(s, job, 0);
}

static void *
sched_worker_main(void *arg)
{
	struct sched_core	*c = arg;
	struct sched		*s = c->s;
	struct sched_job	*job;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		job = NULL;
		while (!s->quit && (c->holder != NULL ||
		    (job = sched_core_pick(s, c)) == NULL))
			pthread_cond_wait(&c->cond, &s->mu);
		if (job == NULL)
			break;
		sched_core_run(s, c, job);
	}
	pthread_mutex_unlock(&s->mu);
	return (NULL);
}

static void
sched_wake_cb(void *arg)
{
	struct sched		*s = arg;
	struct sched_job	*job;
	int			 grant;

	for (;;) {
		pthread_mutex_lock(&s->mu);
		if ((job = TAILQ_FIRST(&s->events)) != NULL) {
			TAILQ_REMOVE(&s->events, job, entry);
			job->event = 0;
			grant = job->event_grant;
			if (!grant && job->rec != NULL)
				job->rec->job = NULL;
			if (!grant)
				job->rec = NULL;
		}
		pthread_mutex_unlock(&s->mu);
		if (job == NULL)
			return;
		if (grant)
			job->grant(job);
		else
			job->done(job, job->outcome);
	}
}

void
sched_events_deliver(struct sched *s)
{
	sched_wake_cb(s);
}

/* ------------------------------------------------------------ life */

int
sched_new(struct sched **out, uv_loop_t *loop, unsigned ncores)
{
	struct sched	*s;
	unsigned	 i;
	int		 error, k;

	assert(ncores > 0);
	s = xcalloc(1, sizeof *s);
	s->loop = loop;
	s->ncores = ncores;
	s->next_id = 1;
	TAILQ_INIT(&s->events);
	TAILQ_INIT(&s->records);
	pthread_mutex_init(&s->mu, NULL);
	if ((error = wake_init(&s->wake, loop, sched_wake_cb, s)) != 0)
		fatal("cannot create the scheduler's wakeup: %s",
		    uv_strerror(error));
	s->cores = xcalloc(ncores, sizeof *s->cores);
	for (i = 0; i < ncores; i++) {
		s->cores[i].s = s;
		s->cores[i].index = i;
		pthread_cond_init(&s->cores[i].cond, NULL);
		for (k = 0; k < SCHED_NCLASSES; k++)
			TAILQ_INIT(&s->cores[i].ring[k]);
		if ((error = pthread_create(&s->cores[i].thread, NULL,
		    sched_worker_main, &s->cores[i])) != 0)
			fatal("cannot start the worker of core %u: %s", i,
			    strerror(error));
	}
	*out = s;
	return (0);
}

static void
sched_closed(void *arg)
{
	struct sched		*s = arg;
	struct sched_record	*r;
	unsigned		 i;

	while ((r = TAILQ_FIRST(&s->records)) != NULL) {
		TAILQ_REMOVE(&s->records, r, entry);
		free(r->kernel);
		free(r);
	}
	for (i = 0; i < s->ncores; i++)
		pthread_cond_destroy(&s->cores[i].cond);
	pthread_mutex_destroy(&s->mu);
	free(s->cores);
	free(s);
}

void
sched_drain(struct sched *s)
{
	struct sched_core	*c;
	struct sched_job	*job;
	unsigned		 i;
	int			 k;

	pthread_mutex_lock(&s->mu);
	s->quit = 1;
	for (i = 0; i < s->ncores; i++) {
		c = &s->cores[i];
		for (k = 0; k < SCHED_NCLASSES; k++) {
			while (TAILQ_FIRST(&c->ring[k]) != NULL) {
				job = TAILQ_FIRST(&TAILQ_FIRST(&c->ring[k])->jobs);
				sched_queue_remove(s, job);
				sched_job_unrun(s, job, SCHED_STOPPED);
			}
		}
		pthread_cond_signal(&c->cond);
	}
	pthread_mutex_unlock(&s->mu);
}

void
sched_free(struct sched *s)
{
	unsigned	i;

	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	for (i = 0; i < s->ncores; i++)
		assert(s->cores[i].holder == NULL ||
		    s->cores[i].holder->work != NULL);
	pthread_mutex_unlock(&s->mu);
	sched_drain(s);
	for (i = 0; i < s->ncores; i++)
		pthread_join(s->cores[i].thread, NULL);
	/* Deliver what finished since the last wakeup. */
	sched_wake_cb(s);
	wake_close(&s->wake, sched_closed);
}

/* ------------------------------------------------------------ jobs */

/* Under mu: jobs of (uid, pid) queued or running, on every core. */
static unsigned
sched_client_load(struct sched *s, uint32_t uid, uint32_t pid)
{
	struct sched_client	*cl;
	struct sched_core	*c;
	unsigned		 i, n = 0;
	int			 k;

	for (i = 0; i < s->ncores; i++) {
		c = &s->cores[i];
		if (c->holder != NULL && c->holder->uid == uid &&
		    c->holder->pid == pid)
			n++;
		for (k = 0; k < SCHED_NCLASSES; k++) {
			TAILQ_FOREACH(cl, &c->ring[k], entry) {
				if (cl->uid == uid && cl->pid == pid)
					n += cl->njobs;
			}
		}
	}
	return (n);
}

static unsigned
sched_core_load_locked(struct sched *s, unsigned i)
{
	return (s->cores[i].nqueued + (s->cores[i].holder != NULL));
}

unsigned
sched_core_load(struct sched *s, unsigned i)
{
	unsigned	n;

	assert(i < s->ncores);
	pthread_mutex_lock(&s->mu);
	n = sched_core_load_locked(s, i);
	pthread_mutex_unlock(&s->mu);
	return (n);
}

int
sched_job_submit(struct sched *s, struct sched_job *job, int core,
    const struct sched_limits *lim, char *msg, size_t msglen)
{
	struct sched_core	*c;
	struct sched_client	*cl;
	struct sched_record	*r;
	unsigned		 i, best, load, best_load = 0, n;
	int			 error = 0;

	assert(job->work != NULL ? job->done != NULL : job->grant != NULL);
	assert(job->cls >= 0 && job->cls < SCHED_NCLASSES);
	if (core < -1 || (core >= 0 && (unsigned)core >= s->ncores)) {
		snprintf(msg, msglen, "core %d does not exist: nkid has %u "
		    "core%s (0 to %u, or -1 for any)", core, s->ncores,
		    s->ncores == 1 ? "" : "s", s->ncores - 1);
		return (SCHED_ENOCORE);
	}
	pthread_mutex_lock(&s->mu);
	if (s->quit) {
		snprintf(msg, msglen, "nkid is stopping");
		error = SCHED_ESTOPPED;
		goto fail;
	}
	if (core < 0) {
		/*
		 * The least loaded core; among equals, the first from
		 * next_core on, so idle cores take turns rather than core 0
		 * taking every job of a light load.
		 */
		best = s->next_core % s->ncores;
		for (n = 0; n < s->ncores; n++) {
			i = (s->next_core + n) % s->ncores;
			load = sched_core_load_locked(s, i);
			if (n == 0 || load < best_load) {
				best = i;
				best_load = load;
			}
		}
		s->next_core = best + 1;
	} else
		best = (unsigned)core;
	c = &s->cores[best];
	if (s->nqueued >= lim->max_queued) {
		snprintf(msg, msglen, "%u jobs are queued, the most nkid takes "
		    "(jobs.max_queued)", s->nqueued);
		error = SCHED_ETOTAL;
		goto fail;
	}
	if (c->nqueued >= lim->max_queue_per_core) {
		snprintf(msg, msglen, "the queue of core %u is full: %u jobs "
		    "(limits.max_queue_per_core)", best, c->nqueued);
		error = SCHED_EFULL;
		goto fail;
	}
	if ((n = sched_client_load(s, job->uid, job->pid)) >=
	    lim->max_per_client) {
		snprintf(msg, msglen, "pid %u (uid %u) already has %u jobs "
		    "queued or running, its limit is %u "
		    "(jobs.max_queued_per_client)", job->pid, job->uid, n,
		    lim->max_per_client);
		error = SCHED_ECLIENT;
		goto fail;
	}
	job->id = s->next_id++;
	job->core = best;
	job->state = SCHED_QUEUED;
	job->outcome = SCHED_RAN;
	job->queued_ns = uv_hrtime();
	job->started_ns = job->finished_ns = 0;
	job->event = 0;

	r = xcalloc(1, sizeof *r);
	r->id = job->id;
	r->kind = job->kind != NULL ? job->kind : "job";
	r->kernel = xstrdup(job->kernel != NULL ? job->kernel : "");
	r->uid = job->uid;
	r->pid = job->pid;
	r->core = (int)best;
	r->cls = job->cls;
	r->status = -1;
	r->queued_at = sched_wall_now();
	r->job = job;
	job->rec = r;
	TAILQ_INSERT_TAIL(&s->records, r, entry);

	cl = sched_client_get(c, job->cls, job->uid, job->pid);
	job->client = cl;
	TAILQ_INSERT_TAIL(&cl->jobs, job, entry);
	cl->njobs++;
	c->nqueued++;
	s->nqueued++;
	s->counters.queued++;
	if (job->work == NULL)
		s->counters.leases_waiting++;
	if (job->here && job->work != NULL && c->holder == NULL &&
	    c->nqueued == 1) {
		/*
		 * The core is idle and this is its only job: run it on this
		 * thread, sparing the hops to the worker and back (its worker
		 * waits on: the core has a holder meanwhile).
		 */
		sched_core_run(s, c, sched_core_pick(s, c));
		if (c->nqueued > 0 && c->holder == NULL)
			pthread_cond_signal(&c->cond);
	} else if (c->holder == NULL)
		pthread_cond_signal(&c->cond);
	pthread_mutex_unlock(&s->mu);
	return (0);
fail:
	s->counters.rejected++;
	pthread_mutex_unlock(&s->mu);
	return (error);
}

void
sched_rejected_add(struct sched *s)
{
	pthread_mutex_lock(&s->mu);
	s->counters.rejected++;
	pthread_mutex_unlock(&s->mu);
}

void
sched_job_cancel(struct sched *s, struct sched_job *job, int outcome)
{
	assert(outcome != SCHED_RAN);
	if (job->cancel_cb != NULL) {
		job->cancel_cb(job, outcome);
		return;
	}
	if (job->cancel != NULL)
		__atomic_store_n(job->cancel, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&s->mu);
	if (job->state == SCHED_QUEUED) {
		sched_queue_remove(s, job);
		sched_job_unrun(s, job, outcome);
	} else if (job->stop_reason == 0)
		job->stop_reason = outcome;
	pthread_mutex_unlock(&s->mu);
}

void
sched_lease_end(struct sched *s, struct sched_job *job)
{
	struct sched_core	*c;

	assert(job->work == NULL);
	pthread_mutex_lock(&s->mu);
	switch (job->state) {
	case SCHED_QUEUED:
		sched_queue_remove(s, job);
		sched_job_unrun(s, job, SCHED_GONE);
		break;
	case SCHED_RUNNING:
		c = &s->cores[job->core];
		sched_job_stop(s, c, job);
		pthread_cond_signal(&c->cond);
		break;
	default:
		break;
	}
	if (job->event) {
		TAILQ_REMOVE(&s->events, job, entry);
		job->event = 0;
	}
	if (job->rec != NULL)
		job->rec->job = NULL;
	job->rec = NULL;
	pthread_mutex_unlock(&s->mu);
}

static struct sched_record *
sched_record_find(struct sched *s, uint64_t id)
{
	struct sched_record	*r;

	TAILQ_FOREACH_REVERSE(r, &s->records, sched_records, entry) {
		if (r->id == id)
			return (r);
		if (r->id < id)
			break;
	}
	return (NULL);
}

struct sched_job *
sched_job_find(struct sched *s, uint64_t id)
{
	struct sched_record	*r;
	struct sched_job	*job = NULL;

	pthread_mutex_lock(&s->mu);
	if ((r = sched_record_find(s, id)) != NULL && !r->finished)
		job = r->job;
	pthread_mutex_unlock(&s->mu);
	return (job);
}

int
sched_job_owner(struct sched *s, uint64_t id, uint32_t *uid)
{
	struct sched_record	*r;
	int			 error = 0;

	pthread_mutex_lock(&s->mu);
	if ((r = sched_record_find(s, id)) == NULL)
		error = SCHED_ENOENT;
	else {
		*uid = r->uid;
		if (r->finished || r->job == NULL)
			error = SCHED_EDONE;
	}
	pthread_mutex_unlock(&s->mu);
	return (error);
}

void
sched_job_status_set(struct sched *s, uint64_t id, int status,
    unsigned history)
{
	struct sched_record	*r, *next;

	pthread_mutex_lock(&s->mu);
	if ((r = sched_record_find(s, id)) != NULL && r->status < 0) {
		r->status = status;
		if (!r->finished) {
			/* Answered before the work ended (the worker still
			 * has it): the times come when it does. */
			r->finished_at = 0;
		}
		s->nfinished++;
	}
	/* Oldest finished records go first. */
	for (r = TAILQ_FIRST(&s->records); r != NULL &&
	    s->nfinished > history; r = next) {
		next = TAILQ_NEXT(r, entry);
		if (r->status < 0 || r->job != NULL)
			continue;
		TAILQ_REMOVE(&s->records, r, entry);
		s->nfinished--;
		free(r->kernel);
		free(r);
	}
	pthread_mutex_unlock(&s->mu);
}

/* The state the history shows. */
static const char *
sched_record_state(const struct sched_record *r)
{
	if (r->status < 0 || (!r->finished && r->job != NULL))
		return (r->started ? "running" : "queued");
	if (r->status == 0)
		return ("done");
	if (!r->started && r->outcome == SCHED_EXPIRED)
		return ("expired");
	/* Cancelled once started: it held its core for RUN. */
	if (r->status == 1 /* CANCELLED */ && r->started)
		return ("stopped");
	if (r->status == 1 /* CANCELLED */ || (!r->started &&
	    r->outcome != SCHED_RAN))
		return ("cancelled");
	if (r->status == 4 /* DEADLINE_EXCEEDED */ && !r->started)
		return ("expired");
	return ("failed");
}

void
sched_jobs_list(struct sched *s, int all,
    void (*fn)(void *arg, const struct sched_job_info *ji), void *arg)
{
	struct sched_record	*r;
	struct sched_job_info	 ji;

	pthread_mutex_lock(&s->mu);
	TAILQ_FOREACH(r, &s->records, entry) {
		memset(&ji, 0, sizeof ji);
		ji.state = sched_record_state(r);
		if (!all && strcmp(ji.state, "queued") != 0 &&
		    strcmp(ji.state, "running") != 0)
			continue;
		ji.id = r->id;
		ji.kind = r->kind;
		ji.kernel = r->kernel;
		ji.uid = r->uid;
		ji.pid = r->pid;
		ji.core = r->core;
		ji.cls = sched_class_name(r->cls);
		ji.queued_at = r->queued_at;
		ji.started_at = r->started ? r->started_at : 0;
		ji.finished_at = r->finished ? r->finished_at : 0;
		ji.status = r->status;
		fn(arg, &ji);
	}
	pthread_mutex_unlock(&s->mu);
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
	memset(info, 0, sizeof *info);
	c = &s->cores[i];
	pthread_mutex_lock(&s->mu);
	busy = c->busy_ns;
	info->state = c->state;
	if (c->holder != NULL) {
		info->job_id = c->holder->id;
		if (c->holder->work == NULL) {
			info->holder_pid = c->holder->pid;
			info->holder_uid = c->holder->uid;
		}
		busy += uv_hrtime() - c->holder->started_ns;
	}
	info->queued = c->nqueued;
	pthread_mutex_unlock(&s->mu);
	info->busy_s = (double)busy / 1e9;
}

void
sched_core_hists(struct sched *s, unsigned i, struct metrics_hist *wait,
    struct metrics_hist *exec)
{
	assert(i < s->ncores);
	pthread_mutex_lock(&s->mu);
	memcpy(wait, s->cores[i].wait, sizeof s->cores[i].wait);
	memcpy(exec, s->cores[i].exec, sizeof s->cores[i].exec);
	pthread_mutex_unlock(&s->mu);
}

void
sched_counters_get(struct sched *s, struct sched_counters *c)
{
	pthread_mutex_lock(&s->mu);
	*c = s->counters;
	pthread_mutex_unlock(&s->mu);
}
