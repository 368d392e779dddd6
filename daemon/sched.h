/* sched.h: device work queues, one FIFO and one worker thread per core (the fair scheduler replaces it). */
#ifndef NKID_SCHED_H
#define NKID_SCHED_H

#include <stdint.h>

#include <sys/queue.h>
#include <uv.h>

enum sched_err {
	SCHED_OK = 0,
	SCHED_EFULL = -1,	/* the core's queue is at its limit */
	SCHED_ENOCORE = -2,	/* no such core */
	SCHED_ESTOPPED = -3,	/* shutting down */
};

struct sched_job;

/* Runs on the core's worker thread. */
typedef void (*sched_work_fn)(struct sched_job *job, unsigned core);
/* Runs on the loop thread after work (ran = 1) or instead of it when the
 * job was cancelled before it started (ran = 0). */
typedef void (*sched_done_fn)(struct sched_job *job, int ran);

/* A job; embedded in its owner, which keeps it alive until done. */
struct sched_job {
	sched_work_fn		 work;
	sched_done_fn		 done;
	const volatile int	*cancel;	/* may be NULL */
	uint64_t		 id;
	unsigned		 core;		/* set by sched_job_submit */
	uint64_t		 queued_ns;
	uint64_t		 started_ns;
	uint64_t		 finished_ns;
	int			 ran;
	TAILQ_ENTRY(sched_job)	 entry;
};

struct sched_core_info {
	int		busy;
	uint64_t	job_id;
	double		busy_s;
	unsigned	queued;
};

struct sched_counters {
	uint64_t	queued;
	uint64_t	running;
	uint64_t	completed;
	uint64_t	cancelled;
};

struct sched;

/* Start ncores workers; finished jobs come back through loop. The caller
 * frees *out with sched_close. */
int	sched_open(struct sched **out, uv_loop_t *loop, unsigned ncores);
/* Refuse new jobs, let the workers finish what is queued (cancelled jobs
 * are skipped), join them and close the loop handle; frees s once the
 * loop has run the close callback. */
void	sched_close(struct sched *s);
/*
 * Queue job on core (-1: the least loaded core), at most max_queue jobs
 * waiting per core. job->work and job->done must be set. On success
 * job->done is called exactly once, later, on the loop thread.
 */
int	sched_job_submit(struct sched *s, struct sched_job *job, int core,
	    unsigned max_queue);
unsigned sched_core_count(const struct sched *s);
/* State of core i (< sched_core_count) as seen now. */
void	sched_core_info(struct sched *s, unsigned i,
	    struct sched_core_info *info);
void	sched_counters_get(struct sched *s, struct sched_counters *c);
const char *sched_strerror(int err);

#endif /* NKID_SCHED_H */
