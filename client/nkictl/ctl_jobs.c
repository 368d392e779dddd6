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

static cJSON *
ctl_jobs_json(const Nkid__V1__JobsReply *r)
{
	cJSON	*o = cJSON_CreateObject(), *a, *j;
	size_t	 i;

	if (o == NULL || (a = cJSON_AddArrayToObject(o, "jobs")) == NULL)
		return (o);
	for (i = 0; i < r->n_jobs; i++) {
		const Nkid__V1__Job *k = r->jobs[i];

		if ((j = cJSON_CreateObject()) == NULL ||
		    !cJSON_AddItemToArray(a, j))
			break;
		cJSON_AddNumberToObject(j, "id", (double)k->id);
		cJSON_AddStringToObject(j, "kind", k->kind);
		cJSON_AddStringToObject(j, "kernel", k->kernel);
		cJSON_AddNumberToObject(j, "pid", k->pid);
		cJSON_AddNumberToObject(j, "uid", k->uid);
		cJSON_AddNumberToObject(j, "core", k->core);
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

/* "12:34:56.789" local time, or "-". */
static void
ctl_jobs_clock(double t, char *buf, size_t len)
{
	time_t		s = (time_t)t;
	struct tm	tm;

	if (t <= 0 || localtime_r(&s, &tm) == NULL) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%02d:%02d:%02d.%03d", tm.tm_hour, tm.tm_min,
	    tm.tm_sec, (int)((t - (double)s) * 1000));
}

static void
ctl_jobs_human(struct ctl_ctx *ctx, const Nkid__V1__JobsReply *r)
{
	char	q[24], wait[24], run[24];
	size_t	i;

	if (r->n_jobs == 0) {
		fprintf(ctx->out, "no jobs\n");
		return;
	}
	fprintf(ctx->out, "%6s  %-6s %-20s %7s %6s %4s  %-11s %-9s %-12s %8s "
	    "%8s  %s\n", "ID", "KIND", "KERNEL", "PID", "UID", "CORE", "CLASS",
	    "STATE", "QUEUED", "WAIT", "RUN", "STATUS");
	for (i = 0; i < r->n_jobs; i++) {
		const Nkid__V1__Job *k = r->jobs[i];
		double end = k->finished_at;

		ctl_jobs_clock(k->queued_at, q, sizeof q);
		if (k->started_at > 0)
			snprintf(wait, sizeof wait, "%.3fs",
			    k->started_at - k->queued_at);
		else
			snprintf(wait, sizeof wait, "-");
		if (k->started_at > 0 && end > 0)
			snprintf(run, sizeof run, "%.3fs",
			    end - k->started_at);
		else
			snprintf(run, sizeof run, "-");
		fprintf(ctx->out, "%6llu  %-6s %-20.20s %7u %6u %4d  %-11s "
		    "%-9s %-12s %8s %8s  %s\n", (unsigned long long)k->id,
		    k->kind, *k->kernel ? k->kernel : "-", k->pid, k->uid,
		    k->core,
		    k->job_class, k->state, q, wait, run,
		    *k->status ? k->status : "-");
	}
}

static const struct ctl_opt ctl_jobs_opts[] = {
	{ 'a', "all", NULL, "the recently finished jobs too" },
	CTL_OPT_END
};

static int
ctl_jobs_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__JobsRequest	 req = NKID__V1__JOBS_REQUEST__INIT;
	Nkid__V1__JobsReply	*reply;
	int			 rc;

	req.all = ctl_args_has(a, "all") > 0;
	rc = ctl_call(ctx, "Jobs", &req.base, &nkid__v1__jobs_reply__descriptor,
	    (ProtobufCMessage **)&reply);
	if (rc != CTL_EXIT_OK)
		return (rc);
	if (ctx->json)
		rc = ctl_json_print(ctx, ctl_jobs_json(reply));
	else
		ctl_jobs_human(ctx, reply);
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return (rc);
}

const struct ctl_cmd ctl_jobs_cmd = {
	.name = "jobs",
	.usage = "[-a|--all]",
	.help = "list queued and running jobs and leases (--all: and finished "
	    "ones)",
	.opts = ctl_jobs_opts,
	.exec = ctl_jobs_exec,
};
