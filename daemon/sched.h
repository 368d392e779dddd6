/* sched.h: the device scheduler: per core one fair queue (round-robin across client identities, two classes), one worker thread, leases, and a bounded job history. */
#ifndef NKID_SCHED_H
#define NKID_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include <sys/queue.h>
#include <uv.h>

struct config;
struct metrics_hist;

enum sched_err {
	SCHED_OK = 0,
	SCHED_EFULL = -1,	/* the core's queue is at its limit */
	SCHED_ENOCORE = -2,	/* no such core */
	SCHED_ESTOPPED = -3,	/* shutting down */
	SCHED_ECLIENT = -4,	/* the client is at its limit of jobs */
	SCHED_ETOTAL = -5,	/* nkid is at its limit of queued jobs */
	SCHED_ENOENT = -6,	/* no such job */
	SCHED_EDONE = -7,	/* the job has finished */
};

enum sched_class {
	SCHED_CLASS_INTERACTIVE = 0,	/* default: calls someone waits for */
	SCHED_CLASS_BATCH = 1,	/* warm-up, benchmarks: after interactive work */
	SCHED_NCLASSES
};

/* Why done was called. */
enum sched_outcome {
	SCHED_RAN = 0,		/* work ran (its own result says how it went) */
	SCHED_CANCELLED,	/* cancelled before it started (Cancel) */
	SCHED_EXPIRED,		/* its deadline passed before it started */
	SCHED_GONE,		/* its client went away before it started */
	SCHED_STOPPED,		/* the scheduler closed before it started */
};

enum sched_state {
	SCHED_QUEUED = 0,
	SCHED_RUNNING,		/* work running, or lease granted */
	SCHED_FINISHED,		/* work returned, or lease ended */
};

enum sched_core_state {
	SCHED_CORE_IDLE = 0,
	SCHED_CORE_BUSY,	/* a job runs on it */
	SCHED_CORE_LEASED,	/* a lease holds it */
	SCHED_CORE_UNHEALTHY,	/* the backend reported it failed */
};

struct sched_job;

/* Runs on the core's worker thread; the job holds the core meanwhile. */
typedef void (*sched_work_fn)(struct sched_job *job, unsigned core);
/* Runs on the loop thread once per job: after work (SCHED_RAN) or instead
 * of it. The scheduler does not touch job afterwards. */
typedef void (*sched_done_fn)(struct sched_job *job, int outcome);
/* Leases: runs on the loop thread when the core is the job's. */
typedef void (*sched_grant_fn)(struct sched_job *job);
/* Runs on the loop thread when the job is cancelled (Cancel, the client
 * gone) and it has a cancel hook instead of the default handling. */
typedef void (*sched_cancel_fn)(struct sched_job *job, int outcome);

/*
 * A job or a lease; embedded in its owner, which keeps it alive until
 * done runs (jobs) or sched_lease_end returns (leases). The owner sets
 * the fields above the line, the scheduler those below.
 */
struct sched_job {
	sched_work_fn		 work;		/* NULL: a lease */
	sched_done_fn		 done;		/* jobs */
	sched_grant_fn		 grant;		/* leases */
	sched_cancel_fn		 cancel_cb;	/* may be NULL */
	volatile int		*cancel;	/* set to 1 on cancel; may be NULL */
	uint32_t		 uid;		/* the client: uid + pid */
	uint32_t		 pid;
	int			 cls;		/* enum sched_class */
	uint64_t		 deadline_ns;	/* uv_hrtime; 0: none */
	const char		*kind;		/* "run", "lease", ... (static) */
	const char		*kernel;	/* copied at submit; may be NULL */
	void			*owner;
	int			 here;		/* work may run on the submitting
						 * thread (sched_job_submit) */

	uint64_t		 id;
	unsigned		 core;
	int			 state;		/* enum sched_state */
	int			 outcome;
	int			 stop_reason;	/* why a running job was
						 * asked to stop (outcome) */
	uint64_t		 queued_ns;
	uint64_t		 started_ns;
	uint64_t		 finished_ns;
	int			 event;		/* on the event list */
	int			 event_grant;	/* ... as a grant */
	struct sched_client	*client;	/* while queued */
	struct sched_record	*rec;
	TAILQ_ENTRY(sched_job)	 entry;
};

/* Admission limits, read from the config at each submit. */
struct sched_limits {
	unsigned	max_queue_per_core;	/* limits.max_queue_per_core */
	unsigned	max_queued;		/* jobs.max_queued */
	unsigned	max_per_client;		/* jobs.max_queued_per_client */
	unsigned	history;		/* jobs.history */
};

struct sched_core_info {
	int		state;		/* enum sched_core_state */
	uint64_t	job_id;		/* holder job or lease, 0 if none */
	uint32_t	holder_pid;	/* lease holder, 0 if none */
	uint32_t	holder_uid;
	double		busy_s;		/* held by jobs or leases */
	unsigned	queued;
};

struct sched_counters {
	uint64_t	queued;
	uint64_t	running;	/* jobs running and leases held */
	uint64_t	completed;	/* ran, or lease ended after its grant */
	uint64_t	cancelled;	/* never started: cancelled, expired, gone */
	uint64_t	rejected;	/* refused at admission */
	uint64_t	leases_waiting;	/* queued leases */
	uint64_t	leases_held;	/* granted, not ended */
	uint64_t	leases_granted;	/* ever */
};

/* One job as the history shows it (sched_jobs_list). Times are seconds
 * since the epoch, 0 until reached. */
struct sched_job_info {
	uint64_t	 id;
	const char	*kind;
	const char	*kernel;	/* "" if none */
	uint32_t	 uid;
	uint32_t	 pid;
	int		 core;
	const char	*cls;		/* "interactive", "batch" */
	const char	*state;		/* queued running done failed cancelled expired */
	double		 queued_at;
	double		 started_at;
	double		 finished_at;
	int		 status;	/* grpc_status_code; -1: not finished */
};

struct sched;

/* The limits of cfg. */
void	sched_limits_config(const struct config *cfg, struct sched_limits *l);

/* Start ncores workers; finished jobs come back through loop. Returns 0;
 * the caller frees *out with sched_free. */
int	sched_new(struct sched **out, uv_loop_t *loop, unsigned ncores);
/*
 * Refuse new jobs (SCHED_ESTOPPED) and drop the queued ones (done with
 * SCHED_STOPPED, through the loop); the running ones go on to their end and
 * each worker ends after its job. Returns at once; sched_free later joins.
 * Idempotent.
 */
void	sched_drain(struct sched *s);
/*
 * Refuse new jobs, drop the queued ones (done with SCHED_STOPPED), let the
 * running ones finish, join the workers and close the loop handle; frees
 * s once the loop has run the close callback. No lease may be held.
 */
void	sched_free(struct sched *s);
/*
 * Queue job on core (-1: the least loaded core, equals in turn) behind the
 * other jobs of its client (uid + pid), round-robin with the other clients,
 * interactive before batch. work (jobs) or grant (leases) must be set. On success
 * job->id is set and done (jobs) is called exactly once later on the loop
 * thread; a lease's grant is called at most once. A job with here set
 * whose core is idle with nothing queued runs its work on the calling
 * thread before this returns (no hop to the core's worker and back; for
 * work known to be short: the caller's thread is blocked meanwhile); done
 * still comes later, through the loop. On failure returns a sched_err
 * and, in msg, the reason with its numbers; nothing to undo.
 */
int	sched_job_submit(struct sched *s, struct sched_job *job, int core,
	    const struct sched_limits *lim, char *msg, size_t msglen);
/*
 * On the loop thread: call the done (or grant) of every job that has
 * finished (or been granted) now, as the loop would on its next turn;
 * after a submit that ran its job on the spot (sched_job_submit, here).
 */
void	sched_events_deliver(struct sched *s);
/*
 * Cancel job on the loop thread. With a cancel hook: calls it. Otherwise
 * sets *job->cancel; a queued job leaves its queue and its done comes later
 * with outcome; a running job stops at the backend's next safe point.
 */
void	sched_job_cancel(struct sched *s, struct sched_job *job, int outcome);
/*
 * End a lease in any state (queued, granted, grant on its way): the core
 * is free at once and no callback for job runs afterwards.
 */
void	sched_lease_end(struct sched *s, struct sched_job *job);
/* The queued or running job with this id, or NULL. */
struct sched_job *sched_job_find(struct sched *s, uint64_t id);
/*
 * Look up job id in the history for Cancel: 0 and *uid (its owner) if it
 * is queued or running, SCHED_EDONE if it has finished, SCHED_ENOENT if
 * unknown.
 */
int	sched_job_owner(struct sched *s, uint64_t id, uint32_t *uid);
/* Record the final gRPC status of job id (its call ended); keeps the
 * history within lim->history finished jobs. Unknown ids are ignored. */
void	sched_job_status_set(struct sched *s, uint64_t id, int status,
	    unsigned history);
/*
 * Call fn for every job known (queued and running; with all, the finished
 * ones kept too), oldest first. The strings are valid during the call.
 * fn runs under the scheduler's lock: it must not call into the scheduler.
 */
void	sched_jobs_list(struct sched *s, int all,
	    void (*fn)(void *arg, const struct sched_job_info *ji), void *arg);
/* Count a job refused before it reached the scheduler. */
void	sched_rejected_add(struct sched *s);

unsigned sched_core_count(const struct sched *s);
/* Queued + running on core i: its load. */
unsigned sched_core_load(struct sched *s, unsigned i);
/* State of core i (< sched_core_count) as seen now. */
void	sched_core_info(struct sched *s, unsigned i,
	    struct sched_core_info *info);
/* Copy the histograms of the jobs (leases not counted) of core i, one
 * per class (SCHED_NCLASSES each): time from submit to start into wait,
 * from start to end into exec. */
void	sched_core_hists(struct sched *s, unsigned i, struct metrics_hist *wait,
	    struct metrics_hist *exec);
void	sched_counters_get(struct sched *s, struct sched_counters *c);
const char *sched_strerror(int err);
const char *sched_core_state_name(int state);
const char *sched_class_name(int cls);
/* Wall clock now, in seconds since the epoch. */
double	sched_wall_now(void);

#endif /* NKID_SCHED_H */
