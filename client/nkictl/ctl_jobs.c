/* ctl_jobs.c: `nkictl jobs [--all]`: the queued and running jobs and leases, and with --all the recently finished ones too. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"

/* Epoch seconds, or null until reached. */
static void
ctl_jobs_time(cJSON *o, const char *key, double t)
{
	if (t > 0)
		cJSON_AddNumberToObject(o, key, t);
	else
		cJSON_AddNullToObject(o, key);
}

/* The fields of a job in --json, before its class. */
static const char *const ctl_jobs_keys[] = {
	"id", "kind", "kernel", "pid", "uid", "core", NULL
};

static cJSON *
ctl_jobs_json(struct ctl_ctx *ctx, const ProtobufCMessage *reply)
{
	const Nkid__V1__JobsReply	*r;
	cJSON				*o, *a, *j;
	size_t				 i;

	r = (const Nkid__V1__JobsReply *)reply;
	o = cJSON_CreateObject();
	if (o == NULL || (a = cJSON_AddArrayToObject(o, "jobs")) == NULL)
		return (o);
	for (i = 0; i < r->n_jobs; i++) {
		const Nkid__V1__Job *k = r->jobs[i];

		if ((j = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(a, j))
			break;
		ctl_json_fields(j, &k->base, ctl_jobs_keys);
		cJSON_AddStringToObject(j, "class", k->job_class);
		cJSON_AddStringToObject(j, "state", k->state);
		ctl_jobs_time(j, "queued_at", k->queued_at);
		ctl_jobs_time(j, "started_at", k->started_at);
		ctl_jobs_time(j, "finished_at", k->finished_at);
		if (*k->status)
			cJSON_AddStringToObject(j, "status", k->status);
		else
			cJSON_AddNullToObject(j, "status");
	}
	return (o);
}

/* "12:34:56" local time, or "-". */
static void
ctl_jobs_clock(double t, char *buf, size_t len)
{
	time_t		s = (time_t)t;
	struct tm	tm;

	if (t <= 0 || localtime_r(&s, &tm) == NULL)
		snprintf(buf, len, "-");
	else
		strftime(buf, len, "%H:%M:%S", &tm);
}

/*
 * How long job k waited for its core and ran, into wait and run: to when
 * it started and finished, or, while it waits or runs, to now ("-" before
 * it started).
 */
void
ctl_jobs_times(const Nkid__V1__Job *k, double now, char *wait, char *run,
    size_t len)
{
	double	start = k->started_at, end = k->finished_at;

	if (k->queued_at > 0)
		ctl_fmt_seconds((start > 0 ? start : end > 0 ? end : now) -
		    k->queued_at, wait, len);
	else
		snprintf(wait, len, "-");
	if (start > 0)
		ctl_fmt_seconds((end > 0 ? end : now) - start, run, len);
	else
		snprintf(run, len, "-");
}

static void
ctl_jobs_human(struct ctl_ctx *ctx, const ProtobufCMessage *reply)
{
	static const struct ctl_table_col cols[] = {
		{ "ID", CTL_TABLE_RIGHT }, { "KIND", 0 },
		{ "KERNEL", CTL_TABLE_TRUNC }, { "PID", CTL_TABLE_RIGHT },
		{ "UID", CTL_TABLE_RIGHT }, { "CORE", CTL_TABLE_RIGHT },
		{ "CLASS", 0 }, { "STATE", 0 }, { "QUEUED", 0 },
		{ "WAIT", CTL_TABLE_RIGHT }, { "RUN", CTL_TABLE_RIGHT },
		{ "STATUS", 0 },
	};
	const Nkid__V1__JobsReply	*r;
	const Nkid__V1__Job		*k;
	struct ctl_table		*t;
	char				 id[24], pid[16], uid[16], core[16];
	char				 q[24], wait[32], run[32];
	double				 now = ctl_fmt_now();
	size_t				 i;

	r = (const Nkid__V1__JobsReply *)reply;
	if (r->n_jobs == 0) {
		fprintf(ctx->out, "no jobs\n");
		return;
	}
	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < r->n_jobs; i++) {
		k = r->jobs[i];
		snprintf(id, sizeof id, "%llu", (unsigned long long)k->id);
		snprintf(pid, sizeof pid, "%u", k->pid);
		snprintf(uid, sizeof uid, "%u", k->uid);
		if (k->core >= 0)
			snprintf(core, sizeof core, "%d", k->core);
		else
			snprintf(core, sizeof core, "any");
		ctl_jobs_clock(k->queued_at, q, sizeof q);
		ctl_jobs_times(k, now, wait, run, sizeof wait);
		ctl_table_row(t, id, k->kind, k->kernel, pid, uid, core,
		    k->job_class, k->state, q, wait, run, k->status);
	}
	ctl_table_print(t, ctx->out);
}

static const struct ctl_opt ctl_jobs_opts[] = {
	{ 'a', "all", NULL, "the recently finished jobs too" },
	CTL_OPT_END
};

static int
ctl_jobs_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__JobsRequest	req = NKID__V1__JOBS_REQUEST__INIT;

	req.all = ctl_args_has(a, "all") > 0;
	return (ctl_call_print(ctx, "Jobs", &req.base,
	    &nkid__v1__jobs_reply__descriptor, ctl_jobs_json, ctl_jobs_human));
}

const struct ctl_cmd ctl_jobs_cmd = {
	.name = "jobs",
	.usage = "[-a|--all]",
	.help = "list queued and running jobs and leases (--all: and finished "
	    "ones)",
	.about =
	    "Columns: ID (for 'nkictl cancel'), KIND (run, simulate,\n"
	    "benchmark, profile, lease), KERNEL, PID and UID of the client,\n"
	    "CORE (any: not chosen yet), CLASS (interactive, batch), STATE,\n"
	    "QUEUED (when it was asked), WAIT (how long it waited for its\n"
	    "core, until now while it waits), RUN (how long it ran or held\n"
	    "the core, until now while it runs) and STATUS (the gRPC status\n"
	    "it ended with). STATE: queued, running, done, failed,\n"
	    "cancelled (ended before it started: cancelled or its client\n"
	    "gone), expired (its deadline passed before it started),\n"
	    "stopped (cancelled after it started).\n",
	.opts = ctl_jobs_opts,
	.exec = ctl_jobs_exec,
};
