/* check_sched.c: the scheduler called directly: fairness across identities, classes, caps, deadlines, cancel and drop, leases, history. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <uv.h>

#include "daemon/sched.h"
#include "tests/unit/check_main.h"

static uv_loop_t	 loop;
static struct sched	*s;

/* A job of the tests: who, and what happened to it. */
struct tjob {
	struct sched_job	 sj;
	char			 name[8];
	int			 ran;		/* work called */
	pthread_t		 thread;	/* ... on this thread */
	int			 done;
	int			 outcome;
};

static char	order[256];		/* names in the order work ran */
static int	ndone;
static int	granted;

static void
tjob_work_cb(struct sched_job *sj, unsigned core)
{
	struct tjob	*t = (struct tjob *)sj;

	t->ran = 1;
	t->thread = pthread_self();
	strcat(order, t->name);
	strcat(order, " ");
}

static void
tjob_done_cb(struct sched_job *sj, int outcome)
{
	struct tjob	*t = (struct tjob *)sj;

	t->done = 1;
	t->outcome = outcome;
	ndone++;
}

static void
lease_grant_cb(struct sched_job *sj)
{
	granted++;
}

static void
tjob_init(struct tjob *t, const char *name, uint32_t pid, int cls)
{
	memset(t, 0, sizeof *t);
	snprintf(t->name, sizeof t->name, "%s", name);
	t->sj.work = tjob_work_cb;
	t->sj.done = tjob_done_cb;
	t->sj.uid = 1000;
	t->sj.pid = pid;
	t->sj.cls = cls;
	t->sj.kind = "run";
	t->sj.kernel = name;
}

static const struct sched_limits lim_default = { 100, 1000, 100, 100 };

/* What the last job_submit() was told. */
static char	msg[256];

/* Submit j to core under lim: sched_job_submit()'s code, its words in msg. */
static int
job_submit(struct sched_job *j, int core, const struct sched_limits *lim)
{
	msg[0] = '\0';
	return (sched_job_submit(s, j, core, lim, msg, sizeof msg));
}

static void
submit(struct tjob *t, int core)
{
	ck_assert_int_eq(job_submit(&t->sj, core, &lim_default), 0);
}

/* Run the loop until cond holds (at most ~2 s). */
#define LOOP_UNTIL(cond) do {						\
	int	i_;							\
	for (i_ = 0; i_ < 2000 && !(cond); i_++) {			\
		uv_run(&loop, UV_RUN_NOWAIT);				\
		usleep(1000);						\
	}								\
	ck_assert_msg((cond), "timed out waiting for " #cond);		\
} while (0)

/* A lease that holds core 0 so that jobs queue behind it. */
static void
hold(struct sched_job *lease)
{
	memset(lease, 0, sizeof *lease);
	lease->grant = lease_grant_cb;
	lease->uid = 0;
	lease->pid = 1;
	lease->kind = "lease";
	granted = 0;
	ck_assert_int_eq(job_submit(lease, 0, &lim_default), 0);
	LOOP_UNTIL(granted == 1);
}

static void
setup(void)
{
	ck_assert_int_eq(uv_loop_init(&loop), 0);
	ck_assert_int_eq(sched_new(&s, &loop, 1), 0);
	order[0] = '\0';
	ndone = 0;
}

static void
teardown(void)
{
	sched_free(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(uv_loop_close(&loop), 0);
}

CHECK_SUITE("sched", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 0);
CHECK_TCASE(errors, 0);

CHECK_TEST(core, test_sched_fair_round_robin)
{
	struct sched_job	lease;
	struct tjob		a1, a2, a3, b1, b2, c1;

	hold(&lease);
	tjob_init(&a1, "a1", 10, SCHED_CLASS_INTERACTIVE);
	tjob_init(&a2, "a2", 10, SCHED_CLASS_INTERACTIVE);
	tjob_init(&a3, "a3", 10, SCHED_CLASS_INTERACTIVE);
	tjob_init(&b1, "b1", 20, SCHED_CLASS_INTERACTIVE);
	tjob_init(&b2, "b2", 20, SCHED_CLASS_INTERACTIVE);
	tjob_init(&c1, "c1", 30, SCHED_CLASS_INTERACTIVE);
	/* a floods first; b and c still get their turns. */
	submit(&a1, 0); submit(&a2, 0); submit(&a3, 0);
	submit(&b1, 0); submit(&b2, 0); submit(&c1, 0);
	sched_lease_end(s, &lease);
	LOOP_UNTIL(ndone == 6);
	ck_assert_str_eq(order, "a1 b1 c1 a2 b2 a3 ");
	ck_assert_int_eq(a1.outcome, SCHED_RAN);
}
END_TEST

CHECK_TEST(core, test_sched_batch_after_interactive)
{
	struct sched_job	lease;
	struct tjob		b1, b2, i1, i2;

	hold(&lease);
	tjob_init(&b1, "b1", 10, SCHED_CLASS_BATCH);
	tjob_init(&b2, "b2", 10, SCHED_CLASS_BATCH);
	tjob_init(&i1, "i1", 20, SCHED_CLASS_INTERACTIVE);
	tjob_init(&i2, "i2", 30, SCHED_CLASS_INTERACTIVE);
	submit(&b1, 0); submit(&b2, 0); submit(&i1, 0); submit(&i2, 0);
	sched_lease_end(s, &lease);
	LOOP_UNTIL(ndone == 4);
	ck_assert_str_eq(order, "i1 i2 b1 b2 ");
}
END_TEST

CHECK_TEST(core, test_sched_least_loaded_core)
{
	struct sched_job	lease;
	struct tjob		j;

	sched_free(s);
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(sched_new(&s, &loop, 3), 0);
	hold(&lease);			/* core 0 is loaded */
	tjob_init(&j, "j", 10, SCHED_CLASS_INTERACTIVE);
	submit(&j, -1);
	ck_assert_uint_eq(j.sj.core, 1);
	LOOP_UNTIL(ndone == 1);
	sched_lease_end(s, &lease);
}
END_TEST

CHECK_TEST(limits, test_sched_caps_with_numbers)
{
	struct sched_job	lease;
	struct sched_limits	lim = { 3, 4, 2, 100 };
	struct sched_counters	sc;
	struct tjob		t[6];
	int			i;

	hold(&lease);
	for (i = 0; i < 6; i++)
		tjob_init(&t[i], "t", 10 + (uint32_t)i / 2,
		    SCHED_CLASS_INTERACTIVE);
	ck_assert_int_eq(job_submit(&t[0].sj, 0, &lim), 0);
	ck_assert_int_eq(job_submit(&t[1].sj, 0, &lim), 0);
	/* pid 10 has 2: over its limit of 2. */
	tjob_init(&t[2], "t", 10, SCHED_CLASS_INTERACTIVE);
	ck_assert_int_eq(job_submit(&t[2].sj, 0, &lim), SCHED_ECLIENT);
	ck_assert_str_eq(msg, "pid 10 (uid 1000) already has 2 jobs queued or "
	    "running, its limit is 2 (jobs.max_queued_per_client)");
	tjob_init(&t[2], "t", 11, SCHED_CLASS_INTERACTIVE);
	ck_assert_int_eq(job_submit(&t[2].sj, 0, &lim), 0);
	/* 3 queued on core 0: its queue is full. */
	ck_assert_int_eq(job_submit(&t[3].sj, 0, &lim), SCHED_EFULL);
	ck_assert_str_eq(msg, "the queue of core 0 is full: 3 jobs "
	    "(limits.max_queue_per_core)");
	lim.max_queue_per_core = 100;
	ck_assert_int_eq(job_submit(&t[3].sj, 0, &lim), 0);
	ck_assert_int_eq(job_submit(&t[4].sj, 0, &lim), SCHED_ETOTAL);
	ck_assert_str_eq(msg, "4 jobs are queued, the most nkid takes "
	    "(jobs.max_queued)");
	ck_assert_int_eq(job_submit(&t[4].sj, 1, &lim), SCHED_ENOCORE);
	ck_assert_ptr_nonnull(strstr(msg, "core 1 does not exist"));
	sched_counters_get(s, &sc);
	ck_assert_uint_eq(sc.rejected, 3);	/* ENOCORE is bad input */
	ck_assert_uint_eq(sc.queued, 4);
	sched_lease_end(s, &lease);
	LOOP_UNTIL(ndone == 4);
}
END_TEST

CHECK_TEST(limits, test_sched_deadline_never_runs)
{
	struct sched_job	lease;
	struct tjob		late, ok;

	hold(&lease);
	tjob_init(&late, "late", 10, SCHED_CLASS_INTERACTIVE);
	late.sj.deadline_ns = uv_hrtime() + 1000000;	/* 1 ms */
	tjob_init(&ok, "ok", 20, SCHED_CLASS_INTERACTIVE);
	ok.sj.deadline_ns = uv_hrtime() + 60ULL * 1000000000;
	submit(&late, 0);
	submit(&ok, 0);
	usleep(5000);
	sched_lease_end(s, &lease);
	LOOP_UNTIL(ndone == 2);
	ck_assert_int_eq(late.ran, 0);
	ck_assert_int_eq(late.outcome, SCHED_EXPIRED);
	ck_assert_int_eq(ok.ran, 1);
	ck_assert_str_eq(order, "ok ");
}
END_TEST

CHECK_TEST(errors, test_sched_cancel_drops_queued)
{
	struct sched_job	lease;
	struct sched_counters	sc;
	struct tjob		gone, cancelled, kept;
	volatile int		flag = 0;
	uint32_t		uid;

	hold(&lease);
	tjob_init(&gone, "gone", 10, SCHED_CLASS_INTERACTIVE);
	gone.sj.cancel = &flag;
	tjob_init(&cancelled, "cxl", 20, SCHED_CLASS_INTERACTIVE);
	tjob_init(&kept, "kept", 30, SCHED_CLASS_INTERACTIVE);
	submit(&gone, 0); submit(&cancelled, 0); submit(&kept, 0);
	ck_assert_ptr_eq(sched_job_find(s, cancelled.sj.id), &cancelled.sj);
	ck_assert_int_eq(sched_job_owner(s, cancelled.sj.id, &uid), 0);
	ck_assert_uint_eq(uid, 1000);
	/* The client went away: dropped at once, done without running. */
	sched_job_cancel(s, &gone.sj, SCHED_GONE);
	ck_assert_int_eq(flag, 1);
	sched_job_cancel(s, &cancelled.sj, SCHED_CANCELLED);
	LOOP_UNTIL(ndone == 2);
	ck_assert_int_eq(gone.outcome, SCHED_GONE);
	ck_assert_int_eq(cancelled.outcome, SCHED_CANCELLED);
	sched_lease_end(s, &lease);
	LOOP_UNTIL(ndone == 3);
	ck_assert_int_eq(gone.ran, 0);
	ck_assert_int_eq(cancelled.ran, 0);
	ck_assert_str_eq(order, "kept ");
	sched_counters_get(s, &sc);
	ck_assert_uint_eq(sc.cancelled, 2);
	ck_assert_uint_eq(sc.completed, 2);	/* the lease and kept */
	ck_assert_int_eq(sched_job_owner(s, 99999, &uid), SCHED_ENOENT);
}
END_TEST

CHECK_TEST(core, test_sched_lease_states)
{
	struct sched_job	lease, queued;
	struct sched_core_info	ci;

	hold(&lease);
	sched_core_info(s, 0, &ci);
	ck_assert_int_eq(ci.state, SCHED_CORE_LEASED);
	ck_assert_uint_eq(ci.holder_pid, 1);
	ck_assert_uint_eq(ci.job_id, lease.id);
	/* A second lease queues; ended while queued, it never hears. */
	memset(&queued, 0, sizeof queued);
	queued.grant = lease_grant_cb;
	queued.pid = 2;
	ck_assert_int_eq(job_submit(&queued, 0, &lim_default), 0);
	ck_assert_uint_eq(sched_core_load(s, 0), 2);
	sched_lease_end(s, &queued);
	sched_lease_end(s, &lease);
	uv_run(&loop, UV_RUN_NOWAIT);
	usleep(20000);
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(granted, 1);
	sched_core_info(s, 0, &ci);
	ck_assert_int_eq(ci.state, SCHED_CORE_IDLE);
	ck_assert(ci.busy_s > 0);
}
END_TEST

struct list_ctx {
	int	n;
	char	states[256];
};

static void
list_cb(void *arg, const struct sched_job_info *ji)
{
	struct list_ctx	*l = arg;

	l->n++;
	strcat(l->states, ji->state);
	strcat(l->states, " ");
}

CHECK_TEST(core, test_sched_history_bounded)
{
	struct tjob	t[4];
	struct list_ctx	l;
	int		i;

	for (i = 0; i < 4; i++) {
		tjob_init(&t[i], "h", 10, SCHED_CLASS_INTERACTIVE);
		submit(&t[i], 0);
	}
	LOOP_UNTIL(ndone == 4);
	sched_job_status_set(s, t[0].sj.id, 0, 2);
	sched_job_status_set(s, t[1].sj.id, 13, 2);
	memset(&l, 0, sizeof l);
	sched_jobs_list(s, 1, list_cb, &l);
	ck_assert_str_eq(l.states, "done failed running running ");
	memset(&l, 0, sizeof l);
	sched_jobs_list(s, 0, list_cb, &l);
	ck_assert_int_eq(l.n, 2);
	/* A third finished job pushes the oldest out (history 2); it ran,
	 * then was cancelled: "stopped" ("cancelled" never started). */
	sched_job_status_set(s, t[2].sj.id, 1, 2);
	memset(&l, 0, sizeof l);
	sched_jobs_list(s, 1, list_cb, &l);
	ck_assert_str_eq(l.states, "failed stopped running ");
	ck_assert_int_eq(sched_job_owner(s, t[0].sj.id, &(uint32_t){0}),
	    SCHED_ENOENT);
	ck_assert_int_eq(sched_job_owner(s, t[1].sj.id, &(uint32_t){0}),
	    SCHED_EDONE);
}
END_TEST

CHECK_TEST(errors, test_sched_close_drops_queued)
{
	struct sched_job	lease;
	struct tjob		t;

	hold(&lease);
	tjob_init(&t, "t", 10, SCHED_CLASS_INTERACTIVE);
	submit(&t, 0);
	sched_lease_end(s, &lease);
	/* Whatever has not started when it closes is STOPPED, never run. */
	sched_free(s);
	s = NULL;
	uv_run(&loop, UV_RUN_DEFAULT);
	ck_assert_int_eq(t.done, 1);
	ck_assert(t.outcome == SCHED_STOPPED || t.outcome == SCHED_RAN);
	ck_assert_int_eq(t.ran, t.outcome == SCHED_RAN);
	ck_assert_int_eq(sched_new(&s, &loop, 1), 0);
}
END_TEST

static volatile int	release_blocker;

/* Work that runs until release_blocker is set. */
static void
tjob_block_cb(struct sched_job *sj, unsigned core)
{
	tjob_work_cb(sj, core);
	while (!__atomic_load_n(&release_blocker, __ATOMIC_ACQUIRE))
		usleep(1000);
}

CHECK_TEST(errors, test_sched_drain_answers_queued_keeps_running)
{
	struct tjob	running, q1, q2, late;

	release_blocker = 0;
	tjob_init(&running, "run", 10, SCHED_CLASS_INTERACTIVE);
	running.sj.work = tjob_block_cb;
	submit(&running, 0);
	LOOP_UNTIL(__atomic_load_n(&running.ran, __ATOMIC_ACQUIRE));
	tjob_init(&q1, "q1", 20, SCHED_CLASS_INTERACTIVE);
	tjob_init(&q2, "q2", 30, SCHED_CLASS_BATCH);
	submit(&q1, 0); submit(&q2, 0);
	/* nkid stopping: the queued jobs are answered now, never run. */
	sched_drain(s);
	LOOP_UNTIL(ndone == 2);
	ck_assert_int_eq(q1.outcome, SCHED_STOPPED);
	ck_assert_int_eq(q2.outcome, SCHED_STOPPED);
	ck_assert_int_eq(q1.ran + q2.ran, 0);
	ck_assert_int_eq(running.done, 0);
	/* A job submitted later is refused, in words. */
	tjob_init(&late, "late", 40, SCHED_CLASS_INTERACTIVE);
	ck_assert_int_eq(job_submit(&late.sj, -1, &lim_default),
	    SCHED_ESTOPPED);
	ck_assert_str_eq(msg, "nkid is stopping");
	/* The running one goes on to its end. */
	__atomic_store_n(&release_blocker, 1, __ATOMIC_RELEASE);
	LOOP_UNTIL(ndone == 3);
	ck_assert_int_eq(running.outcome, SCHED_RAN);
	ck_assert_str_eq(order, "run ");
	/* Again: nothing more to do (sched_free drains once more). */
	sched_drain(s);
}
END_TEST

CHECK_TEST(core, test_sched_here_runs_on_the_spot)
{
	struct sched_job	lease;
	struct tjob		a, b, c;

	/* An idle core: the work runs before submit returns, on this
	 * thread; done comes later, from the loop (or a delivery). */
	tjob_init(&a, "a", 10, SCHED_CLASS_INTERACTIVE);
	a.sj.here = 1;
	submit(&a, 0);
	ck_assert_int_eq(a.ran, 1);
	ck_assert(pthread_equal(a.thread, pthread_self()));
	ck_assert_int_eq(a.done, 0);
	sched_events_deliver(s);
	ck_assert_int_eq(a.done, 1);
	ck_assert_int_eq(a.outcome, SCHED_RAN);
	/* A busy core: it waits its turn and runs on the core's worker. */
	hold(&lease);
	tjob_init(&b, "b", 10, SCHED_CLASS_INTERACTIVE);
	b.sj.here = 1;
	submit(&b, 0);
	ck_assert_int_eq(b.ran, 0);
	sched_lease_end(s, &lease);
	LOOP_UNTIL(b.done);
	ck_assert_int_eq(b.outcome, SCHED_RAN);
	ck_assert(!pthread_equal(b.thread, pthread_self()));
	/* Past its deadline: never runs, even on the spot. */
	tjob_init(&c, "c", 10, SCHED_CLASS_INTERACTIVE);
	c.sj.here = 1;
	c.sj.deadline_ns = 1;
	submit(&c, 0);
	sched_events_deliver(s);
	ck_assert_int_eq(c.done, 1);
	ck_assert_int_eq(c.ran, 0);
	ck_assert_int_eq(c.outcome, SCHED_EXPIRED);
	ck_assert_str_eq(order, "a b ");
}
END_TEST
