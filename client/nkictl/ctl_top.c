/* ctl_top.c: `nkictl top`: a live full-screen view of nkid (ncurses): cores, queues per class, the busiest clients, the cache's hit rate and compile activity, from Status and Jobs once a second; frames of text or JSON with -b or --json. */
#include <curses.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "proto/wire.h"
#include "ctl.h"

/* Most lines of a frame, and of one line. */
#define CTL_TOP_LINES		256
#define CTL_TOP_COLS		512
/* Clients shown. */
#define CTL_TOP_CLIENTS		8
/* Longest wait for a call, beyond the refresh interval. */
#define CTL_TOP_CALL_S		2.0

/* One look at nkid: its Status and Jobs (all: with the finished ones). */
struct ctl_top_sample {
	double				 t;	/* ctl_fmt_mono */
	Nkid__V1__StatusReply		*st;
	Nkid__V1__JobsReply		*jobs;
	int				 rc;	/* CTL_EXIT_*: why not */
	char				 err[1100];
};

/* The figures of a frame, from two samples. */
struct ctl_top_core {
	const Nkid__V1__Core	*core;
	const Nkid__V1__Job	*job;		/* running on it, or NULL */
	double			 busy;		/* percent; < 0: unknown */
};

struct ctl_top_queue {
	const char	*cls;
	unsigned	 queued;
	unsigned	 running;
	double		 oldest_s;		/* of the queued */
};

struct ctl_top_client {
	uint32_t	 pid;
	uint32_t	 uid;
	unsigned	 running;
	unsigned	 queued;
	unsigned	 done;
	double		 busy_s;		/* core time of its jobs */
};

struct ctl_top_view {
	struct ctl_top_core	*cores;
	size_t			 ncores;
	struct ctl_top_queue	 queues[2];
	struct ctl_top_client	*clients;
	size_t			 nclients;
	double			 interval;	/* since the last; 0: none */
	double			 hit_rate;	/* percent; < 0: no lookups */
	double			 hit_rate_now;
	uint64_t		 compiles_now;
	uint64_t		 coalesced_now;
	uint64_t		 failures_now;
};

/* A frame: lines of text, headings marked. */
struct ctl_top_frame {
	char	line[CTL_TOP_LINES][CTL_TOP_COLS];
	int	head[CTL_TOP_LINES];
	size_t	n;
};

struct ctl_top {
	struct ctl_ctx		*ctx;
	struct ctl_top_sample	 prev;
	struct ctl_top_sample	 cur;
	double			 delay;
	int			 curses;
};

static volatile sig_atomic_t	ctl_top_stop;

static void
ctl_top_signal_cb(int sig)
{
	ctl_top_stop = sig;
}

static void
ctl_top_sample_release(struct ctl_top_sample *s)
{
	if (s->st != NULL)
		protobuf_c_message_free_unpacked(&s->st->base, NULL);
	if (s->jobs != NULL)
		protobuf_c_message_free_unpacked(&s->jobs->base, NULL);
	memset(s, 0, sizeof *s);
}

/* Why a call failed, as nkictl says it, into s; nothing printed (the
 * screen is curses'). */
static void
ctl_top_sample_fail(struct ctl_top *tp, struct ctl_top_sample *s,
    const struct ctl_rpc_status *st)
{
	if (st->connect_errno != 0) {
		s->rc = CTL_EXIT_CONNECT;
		snprintf(s->err, sizeof s->err, "cannot connect to nkid at "
		    "'%s': %s", tp->ctx->socket, st->msg);
	} else {
		s->rc = CTL_EXIT_FAIL;
		snprintf(s->err, sizeof s->err, "%s: %s",
		    wire_status_name(st->code), st->msg);
	}
}

/* Ask nkid for Status and Jobs into s. */
static void
ctl_top_sample_take(struct ctl_top *tp, struct ctl_top_sample *s)
{
	Nkid__V1__StatusRequest	sreq = NKID__V1__STATUS_REQUEST__INIT;
	Nkid__V1__JobsRequest	jreq = NKID__V1__JOBS_REQUEST__INIT;
	struct ctl_rpc_status	st;
	double			to = tp->delay + CTL_TOP_CALL_S;

	memset(s, 0, sizeof *s);
	if (tp->ctx->timeout_s < to)
		to = tp->ctx->timeout_s;
	if (tp->ctx->rpc == NULL &&
	    ctl_rpc_open(tp->ctx->socket, &tp->ctx->rpc, &st) < 0) {
		ctl_top_sample_fail(tp, s, &st);
		return;
	}
	jreq.all = 1;
	if (ctl_rpc_call(tp->ctx->rpc, "Status", &sreq.base,
	    &nkid__v1__status_reply__descriptor, to,
	    (ProtobufCMessage **)&s->st, &st) < 0 ||
	    ctl_rpc_call(tp->ctx->rpc, "Jobs", &jreq.base,
	    &nkid__v1__jobs_reply__descriptor, to,
	    (ProtobufCMessage **)&s->jobs, &st) < 0) {
		ctl_top_sample_fail(tp, s, &st);
		return;
	}
	s->t = ctl_fmt_mono();
}

/* ------------------------------------------------------------ figures */

/* The per-core busy time of core index in s, or -1. */
static double
ctl_top_busy_of(const struct ctl_top_sample *s, uint32_t index)
{
	size_t	i;

	for (i = 0; s->st != NULL && i < s->st->n_cores; i++)
		if (s->st->cores[i]->index == index)
			return (s->st->cores[i]->busy_s);
	return (-1);
}

/* The client of pid in v, added if new. */
static struct ctl_top_client *
ctl_top_client(struct ctl_top_view *v, uint32_t pid, uint32_t uid)
{
	size_t	i;

	for (i = 0; i < v->nclients; i++)
		if (v->clients[i].pid == pid)
			return (&v->clients[i]);
	v->clients = reallocarray(v->clients, v->nclients + 1,
	    sizeof *v->clients);
	if (v->clients == NULL)
		abort();
	memset(&v->clients[v->nclients], 0, sizeof v->clients[0]);
	v->clients[v->nclients].pid = pid;
	v->clients[v->nclients].uid = uid;
	return (&v->clients[v->nclients++]);
}

static int
ctl_top_client_cmp_cb(const void *a, const void *b)
{
	const struct ctl_top_client	*x = a, *y = b;

	if (x->busy_s != y->busy_s)
		return (x->busy_s < y->busy_s ? 1 : -1);
	if (x->running + x->queued != y->running + y->queued)
		return (x->running + x->queued < y->running + y->queued ? 1 :
		    -1);
	return (x->pid < y->pid ? -1 : x->pid > y->pid);
}

/* The jobs: queues per class, the job on each core, the clients. */
static void
ctl_top_view_jobs(struct ctl_top_view *v, const Nkid__V1__JobsReply *jr,
    double now)
{
	const Nkid__V1__Job	*j;
	struct ctl_top_client	*c;
	struct ctl_top_queue	*q;
	size_t			 i, k;
	double			 end;

	v->queues[0].cls = "interactive";
	v->queues[1].cls = "batch";
	for (i = 0; jr != NULL && i < jr->n_jobs; i++) {
		j = jr->jobs[i];
		q = strcmp(j->job_class, "batch") == 0 ? &v->queues[1] :
		    &v->queues[0];
		c = ctl_top_client(v, j->pid, j->uid);
		if (strcmp(j->state, "queued") == 0) {
			q->queued++;
			c->queued++;
			if (j->queued_at > 0 &&
			    now - j->queued_at > q->oldest_s)
				q->oldest_s = now - j->queued_at;
		} else if (strcmp(j->state, "running") == 0) {
			q->running++;
			c->running++;
			for (k = 0; k < v->ncores; k++) {
				const Nkid__V1__Core *co = v->cores[k].core;

				if ((int32_t)co->index == j->core ||
				    co->job_id == j->id)
					v->cores[k].job = j;
			}
		} else
			c->done++;
		if (j->started_at > 0) {
			end = j->finished_at > 0 ? j->finished_at : now;
			c->busy_s += end > j->started_at ? end - j->started_at :
			    0;
		}
	}
	if (v->nclients > 0)
		qsort(v->clients, v->nclients, sizeof *v->clients,
		    ctl_top_client_cmp_cb);
}

/* The view of tp's last two samples (the current one must be good). */
static void
ctl_top_view_get(const struct ctl_top *tp, struct ctl_top_view *v)
{
	const Nkid__V1__StatusReply	*st = tp->cur.st, *ps = tp->prev.st;
	const Nkid__V1__CacheStatReply	*k = st->cache, *pk = NULL;
	double				 pb;
	uint64_t			 dh, dm;
	size_t				 i;

	memset(v, 0, sizeof *v);
	if (ps != NULL) {
		v->interval = tp->cur.t - tp->prev.t;
		pk = ps->cache;
	}
	v->ncores = st->n_cores;
	if ((v->cores = calloc(v->ncores + 1, sizeof *v->cores)) == NULL)
		abort();
	for (i = 0; i < v->ncores; i++) {
		v->cores[i].core = st->cores[i];
		v->cores[i].busy = -1;
		pb = ctl_top_busy_of(&tp->prev, st->cores[i]->index);
		if (v->interval > 0 && pb >= 0) {
			v->cores[i].busy = 100.0 * (st->cores[i]->busy_s - pb) /
			    v->interval;
			if (v->cores[i].busy < 0)
				v->cores[i].busy = 0;
			if (v->cores[i].busy > 100)
				v->cores[i].busy = 100;
		}
	}
	ctl_top_view_jobs(v, tp->cur.jobs, ctl_fmt_now());
	v->hit_rate = v->hit_rate_now = -1;
	if (k != NULL && k->hits + k->misses > 0)
		v->hit_rate = 100.0 * (double)k->hits /
		    (double)(k->hits + k->misses);
	if (k != NULL && pk != NULL && k->hits >= pk->hits &&
	    k->misses >= pk->misses && k->compiles >= pk->compiles) {
		dh = k->hits - pk->hits;
		dm = k->misses - pk->misses;
		if (dh + dm > 0)
			v->hit_rate_now = 100.0 * (double)dh /
			    (double)(dh + dm);
		v->compiles_now = k->compiles - pk->compiles;
		v->coalesced_now = k->coalesced >= pk->coalesced ?
		    k->coalesced - pk->coalesced : 0;
		v->failures_now = k->failures >= pk->failures ?
		    k->failures - pk->failures : 0;
	}
}

static void
ctl_top_view_release(struct ctl_top_view *v)
{
	free(v->cores);
	free(v->clients);
	memset(v, 0, sizeof *v);
}

/* ------------------------------------------------------------ text */

static void
ctl_top_add(struct ctl_top_frame *f, int head, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
ctl_top_add(struct ctl_top_frame *f, int head, const char *fmt, ...)
{
	va_list	ap;

	if (f->n == CTL_TOP_LINES)
		return;
	va_start(ap, fmt);
	vsnprintf(f->line[f->n], CTL_TOP_COLS, fmt, ap);
	va_end(ap);
	f->head[f->n++] = head;
}

/* A table into the frame, its heading line marked. */
static void
ctl_top_add_table(struct ctl_top_frame *f, struct ctl_table *t)
{
	char	*buf = NULL, *line, *save = NULL;
	size_t	 len = 0;
	FILE	*m;
	int	 first = 1;

	if ((m = open_memstream(&buf, &len)) == NULL)
		abort();
	ctl_table_print(t, m);
	fclose(m);
	for (line = strtok_r(buf, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		ctl_top_add(f, first, "%s", line);
		first = 0;
	}
	free(buf);
}

static const char *
ctl_top_pct(double p, char *buf, size_t len)
{
	if (p < 0)
		snprintf(buf, len, "-");
	else
		snprintf(buf, len, "%.1f%%", p);
	return (buf);
}

static void
ctl_top_frame_cores(struct ctl_top_frame *f, const struct ctl_top_view *v,
    double now)
{
	static const struct ctl_table_col cols[] = {
		{ "CORE", CTL_TABLE_RIGHT }, { "STATE", 0 },
		{ "BUSY", CTL_TABLE_RIGHT }, { "JOB", CTL_TABLE_RIGHT },
		{ "KIND", 0 }, { "KERNEL", 0 }, { "CLASS", 0 },
		{ "HOLDER", 0 }, { "RUNNING", CTL_TABLE_RIGHT },
	};
	const struct ctl_top_core	*c;
	struct ctl_table		*t;
	char				 idx[16], busy[16], job[24], holder[64];
	char				 wait[32], run[32];
	size_t				 i;

	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < v->ncores; i++) {
		c = &v->cores[i];
		snprintf(idx, sizeof idx, "%u", c->core->index);
		job[0] = holder[0] = run[0] = '\0';
		if (c->core->job_id != 0)
			snprintf(job, sizeof job, "%llu",
			    (unsigned long long)c->core->job_id);
		if (c->job != NULL) {
			snprintf(holder, sizeof holder, "pid %u uid %u",
			    c->job->pid, c->job->uid);
			ctl_jobs_times(c->job, now, wait, run, sizeof run);
		} else if (c->core->holder_pid != 0)
			snprintf(holder, sizeof holder, "pid %u uid %u",
			    c->core->holder_pid, c->core->holder_uid);
		ctl_table_row(t, idx, c->core->state, ctl_top_pct(c->busy, busy,
		    sizeof busy), job, c->job != NULL ? c->job->kind : "",
		    c->job != NULL ? c->job->kernel : "", c->job != NULL ?
		    c->job->job_class : "", holder, run);
	}
	ctl_top_add_table(f, t);
}

static void
ctl_top_frame_queues(struct ctl_top_frame *f, const struct ctl_top_view *v)
{
	static const struct ctl_table_col cols[] = {
		{ "QUEUE", 0 }, { "QUEUED", CTL_TABLE_RIGHT },
		{ "RUNNING", CTL_TABLE_RIGHT },
		{ "OLDEST WAIT", CTL_TABLE_RIGHT },
	};
	struct ctl_table	*t;
	char			 q[16], r[16], w[32];
	size_t			 i;

	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < 2; i++) {
		snprintf(q, sizeof q, "%u", v->queues[i].queued);
		snprintf(r, sizeof r, "%u", v->queues[i].running);
		ctl_table_row(t, v->queues[i].cls, q, r, v->queues[i].queued >
		    0 ? ctl_fmt_seconds(v->queues[i].oldest_s, w, sizeof w) :
		    "");
	}
	ctl_top_add_table(f, t);
}

static void
ctl_top_frame_clients(struct ctl_top_frame *f, const struct ctl_top_view *v)
{
	static const struct ctl_table_col cols[] = {
		{ "CLIENT PID", CTL_TABLE_RIGHT }, { "UID", CTL_TABLE_RIGHT },
		{ "RUNNING", CTL_TABLE_RIGHT }, { "QUEUED", CTL_TABLE_RIGHT },
		{ "DONE", CTL_TABLE_RIGHT }, { "CORE TIME", CTL_TABLE_RIGHT },
	};
	const struct ctl_top_client	*c;
	struct ctl_table		*t;
	char				 pid[16], uid[16], r[16], q[16], d[16];
	char				 busy[32];
	size_t				 i;

	if (v->nclients == 0) {
		ctl_top_add(f, 0, "no clients with jobs");
		return;
	}
	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < v->nclients && i < CTL_TOP_CLIENTS; i++) {
		c = &v->clients[i];
		snprintf(pid, sizeof pid, "%u", c->pid);
		snprintf(uid, sizeof uid, "%u", c->uid);
		snprintf(r, sizeof r, "%u", c->running);
		snprintf(q, sizeof q, "%u", c->queued);
		snprintf(d, sizeof d, "%u", c->done);
		ctl_table_row(t, pid, uid, r, q, d, ctl_fmt_seconds(c->busy_s,
		    busy, sizeof busy));
	}
	ctl_top_add_table(f, t);
}

/* The frame of tp's samples. */
static void
ctl_top_frame_get(const struct ctl_top *tp, struct ctl_top_frame *f)
{
	const Nkid__V1__StatusReply	*st = tp->cur.st;
	const Nkid__V1__CacheStatReply	*k;
	const Nkid__V1__JobCounters	*j;
	struct ctl_top_view		 v;
	char				 b1[32], b2[32], b3[32], b4[32];
	char				 clock[16];
	double				 now = ctl_fmt_now();
	time_t				 tt = (time_t)now;
	struct tm			 tm;

	f->n = 0;
	clock[0] = '\0';
	if (localtime_r(&tt, &tm) != NULL)
		strftime(clock, sizeof clock, "%H:%M:%S", &tm);
	if (st == NULL) {
		ctl_top_add(f, 0, "nkictl top: %s  %s", tp->ctx->socket, clock);
		ctl_top_add(f, 0, "%s", tp->cur.err);
		ctl_top_add(f, 0, "(trying again every %g s; q quits)",
		    tp->delay);
		return;
	}
	ctl_top_view_get(tp, &v);
	ctl_top_add(f, 0, "nkid %s, pid %u, up %s, backend %s, %s  %s",
	    st->version, st->pid, ctl_fmt_seconds(st->uptime_s, b1,
	    sizeof b1), st->backend, *st->socket ? st->socket :
	    tp->ctx->socket, clock);
	if ((j = st->jobs) != NULL)
		ctl_top_add(f, 0, "jobs: %llu running, %llu queued, %llu "
		    "completed, %llu cancelled, %llu rejected; connections: "
		    "%llu active", (unsigned long long)j->running,
		    (unsigned long long)j->queued,
		    (unsigned long long)j->completed,
		    (unsigned long long)j->cancelled,
		    (unsigned long long)j->rejected, st->counters != NULL ?
		    (unsigned long long)st->counters->active_connections : 0);
	if ((k = st->cache) != NULL) {
		ctl_top_add(f, 0, "cache: %llu entries, %s of %s; hit rate %s, "
		    "%s in the last %.1f s", (unsigned long long)k->entries,
		    ctl_fmt_bytes(k->bytes, b1, sizeof b1), k->max_bytes > 0 ?
		    ctl_fmt_bytes(k->max_bytes, b2, sizeof b2) : "no budget",
		    ctl_top_pct(v.hit_rate, b3, sizeof b3),
		    ctl_top_pct(v.hit_rate_now, b4, sizeof b4),
		    v.interval);
		ctl_top_add(f, 0, "compiles: %llu (%llu coalesced, %llu "
		    "failed); %llu in the last %.1f s (%llu coalesced, %llu "
		    "failed)", (unsigned long long)k->compiles,
		    (unsigned long long)k->coalesced,
		    (unsigned long long)k->failures,
		    (unsigned long long)v.compiles_now, v.interval,
		    (unsigned long long)v.coalesced_now,
		    (unsigned long long)v.failures_now);
	}
	if (tp->cur.err[0] != '\0')
		ctl_top_add(f, 0, "%s", tp->cur.err);
	ctl_top_add(f, 0, "%s", "");
	ctl_top_frame_cores(f, &v, now);
	ctl_top_add(f, 0, "%s", "");
	ctl_top_frame_queues(f, &v);
	ctl_top_add(f, 0, "%s", "");
	ctl_top_frame_clients(f, &v);
	ctl_top_view_release(&v);
}

/* ------------------------------------------------------------ json */

static cJSON *
ctl_top_json(const struct ctl_top *tp)
{
	struct ctl_top_view	 v;
	cJSON			*o, *a, *x;
	size_t			 i;

	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	cJSON_AddNumberToObject(o, "time", ctl_fmt_now());
	if (tp->cur.st == NULL) {
		x = cJSON_AddObjectToObject(o, "error");
		cJSON_AddStringToObject(x, "message", tp->cur.err);
		return (o);
	}
	ctl_top_view_get(tp, &v);
	cJSON_AddNumberToObject(o, "interval_s", v.interval);
	a = cJSON_AddArrayToObject(o, "cores");
	for (i = 0; a != NULL && i < v.ncores; i++) {
		x = cJSON_CreateObject();
		cJSON_AddItemToArray(a, x);
		cJSON_AddNumberToObject(x, "index", v.cores[i].core->index);
		cJSON_AddStringToObject(x, "state", v.cores[i].core->state);
		if (v.cores[i].busy >= 0)
			cJSON_AddNumberToObject(x, "busy_percent",
			    v.cores[i].busy);
		else
			cJSON_AddNullToObject(x, "busy_percent");
		cJSON_AddNumberToObject(x, "job_id",
		    (double)v.cores[i].core->job_id);
		if (v.cores[i].job != NULL) {
			cJSON_AddStringToObject(x, "kind",
			    v.cores[i].job->kind);
			cJSON_AddStringToObject(x, "kernel",
			    v.cores[i].job->kernel);
			cJSON_AddNumberToObject(x, "pid", v.cores[i].job->pid);
			cJSON_AddNumberToObject(x, "uid", v.cores[i].job->uid);
		} else {
			cJSON_AddNumberToObject(x, "pid",
			    v.cores[i].core->holder_pid);
			cJSON_AddNumberToObject(x, "uid",
			    v.cores[i].core->holder_uid);
		}
	}
	x = cJSON_AddObjectToObject(o, "queues");
	for (i = 0; x != NULL && i < 2; i++) {
		cJSON *q = cJSON_AddObjectToObject(x, v.queues[i].cls);

		cJSON_AddNumberToObject(q, "queued", v.queues[i].queued);
		cJSON_AddNumberToObject(q, "running", v.queues[i].running);
		cJSON_AddNumberToObject(q, "oldest_wait_s",
		    v.queues[i].oldest_s);
	}
	a = cJSON_AddArrayToObject(o, "clients");
	for (i = 0; a != NULL && i < v.nclients; i++) {
		x = cJSON_CreateObject();
		cJSON_AddItemToArray(a, x);
		cJSON_AddNumberToObject(x, "pid", v.clients[i].pid);
		cJSON_AddNumberToObject(x, "uid", v.clients[i].uid);
		cJSON_AddNumberToObject(x, "running", v.clients[i].running);
		cJSON_AddNumberToObject(x, "queued", v.clients[i].queued);
		cJSON_AddNumberToObject(x, "done", v.clients[i].done);
		cJSON_AddNumberToObject(x, "busy_s", v.clients[i].busy_s);
	}
	x = cJSON_AddObjectToObject(o, "cache");
	if (x != NULL) {
		if (v.hit_rate >= 0)
			cJSON_AddNumberToObject(x, "hit_rate", v.hit_rate /
			    100);
		else
			cJSON_AddNullToObject(x, "hit_rate");
		if (v.hit_rate_now >= 0)
			cJSON_AddNumberToObject(x, "hit_rate_interval",
			    v.hit_rate_now / 100);
		else
			cJSON_AddNullToObject(x, "hit_rate_interval");
		cJSON_AddNumberToObject(x, "compiles_interval",
		    (double)v.compiles_now);
		cJSON_AddNumberToObject(x, "coalesced_interval",
		    (double)v.coalesced_now);
		cJSON_AddNumberToObject(x, "failures_interval",
		    (double)v.failures_now);
	}
	ctl_top_view_release(&v);
	return (o);
}

/* ------------------------------------------------------------ screen */

/* Draw f: curses sends only what changed since the last refresh. */
static void
ctl_top_draw(const struct ctl_top_frame *f)
{
	size_t	i;

	erase();
	for (i = 0; i < f->n && (int)i < LINES - 1; i++) {
		if (f->head[i])
			attron(A_BOLD);
		mvaddnstr((int)i, 0, f->line[i], COLS);
		if (f->head[i])
			attroff(A_BOLD);
	}
	mvaddnstr(LINES - 1, 0, "q: quit", COLS);
	refresh();
}

/* Wait for a key until the next refresh is due; nonzero to quit. */
static int
ctl_top_wait(double until)
{
	double	left;
	int	ch;

	while (!ctl_top_stop) {
		left = until - ctl_fmt_mono();
		if (left <= 0)
			return (0);
		timeout((int)(left * 1000) + 1);
		ch = getch();
		if (ch == 'q' || ch == 'Q')
			return (1);
		if (ch == KEY_RESIZE)
			return (0);
	}
	return (1);
}

/* One sample and its frame (or JSON object) out. */
static void
ctl_top_step(struct ctl_top *tp, struct ctl_top_frame *f)
{
	ctl_top_sample_release(&tp->prev);
	if (tp->cur.st != NULL)
		tp->prev = tp->cur;
	else
		ctl_top_sample_release(&tp->cur);
	memset(&tp->cur, 0, sizeof tp->cur);
	ctl_top_sample_take(tp, &tp->cur);
	if (tp->ctx->json && !tp->curses) {
		ctl_json_print(tp->ctx, ctl_top_json(tp));
		fflush(tp->ctx->out);
		return;
	}
	ctl_top_frame_get(tp, f);
	if (tp->curses)
		ctl_top_draw(f);
}

static void
ctl_top_print(struct ctl_ctx *ctx, const struct ctl_top_frame *f, int sep)
{
	size_t	i;

	if (sep)
		fputc('\n', ctx->out);
	for (i = 0; i < f->n; i++)
		fprintf(ctx->out, "%s\n", f->line[i]);
	fflush(ctx->out);
}

static const struct ctl_opt ctl_top_opts[] = {
	{ 'd', "delay", "S", "refresh every S seconds (default 1)" },
	{ 'n', "iterations", "N", "stop after N refreshes (default: until q)" },
	{ 'b', "batch", NULL, "print frames of text instead of a screen (also "
	    "--json: one object a frame)" },
	CTL_OPT_END
};

static int
ctl_top_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	static const int		 sigs[2] = { SIGINT, SIGTERM };
	struct ctl_top			 tp;
	struct ctl_top_frame		*f;
	struct sigaction		 sa, old[2];
	unsigned long long		 n = 0, i;
	double				 next;
	int				 rc, k;

	memset(&tp, 0, sizeof tp);
	tp.ctx = ctx;
	tp.delay = 1;
	if ((rc = ctl_args_seconds(ctx, a, "delay", 0, &tp.delay)) != 0 ||
	    (rc = ctl_args_uint(ctx, a, "iterations", 1, 1ULL << 40, &n)) != 0)
		return (rc);
	tp.curses = !ctx->json && !ctl_args_has(a, "batch");
	if (tp.curses && (!isatty(fileno(ctx->out)) || !isatty(STDIN_FILENO)))
		return (ctl_usage_fail(ctx, "the screen needs a terminal; give "
		    "-b (or --json) for frames on a pipe"));
	if ((f = calloc(1, sizeof *f)) == NULL)
		abort();
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ctl_top_signal_cb;
	sigemptyset(&sa.sa_mask);
	ctl_top_stop = 0;
	for (k = 0; k < 2; k++)
		sigaction(sigs[k], &sa, &old[k]);
	if (tp.curses) {
		initscr();
		cbreak();
		noecho();
		nonl();
		keypad(stdscr, TRUE);
		curs_set(0);
	}
	next = ctl_fmt_mono();
	/*
	 * Frames on a pipe are read once: the first already covers an
	 * interval (a look now, the frame S seconds later), where the
	 * screen draws at once and fills the interval figures in next.
	 */
	if (!tp.curses) {
		ctl_top_sample_take(&tp, &tp.cur);
		next += tp.delay;
		while (tp.cur.rc == CTL_EXIT_OK && !ctl_top_stop &&
		    ctl_fmt_mono() < next)
			usleep(20000);
	}
	for (i = 0; !ctl_top_stop && (n == 0 || i < n); i++) {
		ctl_top_step(&tp, f);
		if (!tp.curses && !ctx->json)
			ctl_top_print(ctx, f, i > 0);
		if (ctl_top_stop || (n > 0 && i + 1 == n))
			break;
		next += tp.delay;
		if (tp.curses) {
			if (ctl_top_wait(next))
				break;
		} else
			while (!ctl_top_stop && ctl_fmt_mono() < next)
				usleep(20000);
		if (ctl_top_stop)
			break;
	}
	if (tp.curses)
		endwin();
	for (k = 0; k < 2; k++)
		sigaction(sigs[k], &old[k], NULL);
	/* Frames on a pipe end with how the last look went. */
	rc = tp.curses ? CTL_EXIT_OK : tp.cur.rc;
	if (rc != CTL_EXIT_OK)
		ctl_error(ctx, rc == CTL_EXIT_CONNECT ? CTL_CODE_UNAVAILABLE :
		    CTL_CODE_LOCAL, "top: %s", tp.cur.err);
	if (ctl_top_stop == SIGINT)
		rc = 128 + SIGINT;
	ctl_top_sample_release(&tp.prev);
	ctl_top_sample_release(&tp.cur);
	free(f);
	return (rc);
}

const struct ctl_cmd ctl_top_cmd = {
	.name = "top",
	.usage = "[-d S] [-n N] [-b]",
	.help = "a live view of cores, queues, the busiest clients, the cache "
	    "hit rate and compiles; q quits",
	.about =
	    "Every S seconds: each core's state, busy share of the\n"
	    "interval, the job on it and its holder; the queued and running\n"
	    "jobs per class and the oldest wait; the clients (pids) with\n"
	    "the most core time among nkid's recent jobs; the cache's hit\n"
	    "rate, overall and in the interval, and the compiles of the\n"
	    "interval. Keys: q quits. Only what changed is redrawn. -b\n"
	    "prints frames of text (--json: a JSON object a frame), for N\n"
	    "refreshes with -n.\n",
	.opts = ctl_top_opts,
	.exec = ctl_top_exec,
};
