/* ctl_status.c: `nkictl status`: nkid's identity, paths, cores, counters, and the cache and job sections when nkid sends them. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl_cache.h"
#include "ctl_cache_remote.h"

static const char *
ctl_status_str(const char *s)
{
	return (s != NULL && *s != '\0' ? s : "-");
}

/* The fields of a reply in --json, those of a core and of the job
 * counters. */
static const char *const ctl_status_keys[] = {
	"version", "pid", "uptime_s", "backend", NULL
};
static const char *const ctl_status_path_keys[] = {
	"config_path", "state_dir", "cache_dir", NULL
};
static const char *const ctl_status_core_keys[] = {
	"index", "state", "job_id", "holder_pid", "holder_uid", "busy_s", NULL
};
static const char *const ctl_status_job_keys[] = {
	"queued", "running", "completed", "cancelled", "rejected", NULL
};

static cJSON *
ctl_status_json(struct ctl_ctx *ctx, const ProtobufCMessage *reply)
{
	const Nkid__V1__StatusReply	*r;
	cJSON				*o, *a, *c, *m, *x;
	size_t				 i;

	r = (const Nkid__V1__StatusReply *)reply;
	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	ctl_json_fields(o, &r->base, ctl_status_keys);
	cJSON_AddStringToObject(o, "socket", *r->socket ? r->socket :
	    ctx->socket);
	ctl_json_fields(o, &r->base, ctl_status_path_keys);
	x = cJSON_AddObjectToObject(o, "backend_versions");
	for (i = 0; x != NULL && i < r->n_backend_versions; i++)
		cJSON_AddStringToObject(x, r->backend_versions[i]->key,
		    r->backend_versions[i]->value);

	a = cJSON_AddArrayToObject(o, "cores");
	for (i = 0; a != NULL && i < r->n_cores; i++) {
		c = cJSON_CreateObject();
		if (c == NULL || !cJSON_AddItemToArray(a, c))
			break;
		ctl_json_fields(c, &r->cores[i]->base, ctl_status_core_keys);
	}

	c = cJSON_AddObjectToObject(o, "counters");
	if (c != NULL) {
		const Nkid__V1__Counters *n = r->counters;

		cJSON_AddNumberToObject(c, "connections",
		    n ? (double)n->connections : 0);
		cJSON_AddNumberToObject(c, "refused",
		    n ? (double)n->refused : 0);
		cJSON_AddNumberToObject(c, "active_connections",
		    n ? (double)n->active_connections : 0);
		m = cJSON_AddObjectToObject(c, "methods");
		for (i = 0; n != NULL && m != NULL && i < n->n_methods; i++) {
			x = cJSON_AddObjectToObject(m, n->methods[i]->method);
			if (x == NULL)
				continue;
			cJSON_AddNumberToObject(x, "calls",
			    (double)n->methods[i]->calls);
			cJSON_AddNumberToObject(x, "errors",
			    (double)n->methods[i]->errors);
		}
	}

	if (r->cache != NULL) {
		x = ctl_cache_stats_json(r->cache);
		if (x != NULL && r->cache->remote != NULL)
			cJSON_AddItemToObject(x, "remote",
			    ctl_cache_remote_json(r->cache->remote));
		cJSON_AddItemToObject(o, "cache", x);
	}
	if (r->jobs != NULL && (c = cJSON_AddObjectToObject(o, "jobs"))) {
		ctl_json_fields(c, &r->jobs->base, ctl_status_job_keys);
		a = cJSON_AddArrayToObject(c, "core_busy_s");
		for (i = 0; a != NULL && i < r->n_cores; i++)
			cJSON_AddItemToArray(a,
			    cJSON_CreateNumber(r->cores[i]->busy_s));
	}
	return (o);
}

/* The cores: state, busy time (and its share of nkid's uptime), holder. */
static void
ctl_status_cores(struct ctl_ctx *ctx, const Nkid__V1__StatusReply *r)
{
	static const struct ctl_table_col cols[] = {
		{ "CORE", CTL_TABLE_RIGHT }, { "STATE", 0 },
		{ "BUSY", CTL_TABLE_RIGHT }, { "OF UPTIME", CTL_TABLE_RIGHT },
		{ "HOLDER", 0 },
	};
	const Nkid__V1__Core	*k;
	struct ctl_table	*t;
	char			 idx[16], busy[32], share[16], holder[64];
	size_t			 i;

	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < r->n_cores; i++) {
		k = r->cores[i];
		snprintf(idx, sizeof idx, "%u", k->index);
		holder[0] = '\0';
		if (k->job_id != 0)
			snprintf(holder, sizeof holder, "job %llu",
			    (unsigned long long)k->job_id);
		else if (k->holder_pid != 0)
			snprintf(holder, sizeof holder, "lease pid %u uid %u",
			    k->holder_pid, k->holder_uid);
		ctl_fmt_percent((uint64_t)(k->busy_s * 1e3),
		    (uint64_t)(r->uptime_s * 1e3), share, sizeof share);
		ctl_table_row(t, idx, k->state, ctl_fmt_seconds(k->busy_s, busy,
		    sizeof busy), share, holder);
	}
	ctl_table_print(t, ctx->out);
}

/* The methods that were called, with their errors. */
static void
ctl_status_methods(struct ctl_ctx *ctx, const Nkid__V1__Counters *n)
{
	static const struct ctl_table_col cols[] = {
		{ "METHOD", 0 }, { "CALLS", CTL_TABLE_RIGHT },
		{ "ERRORS", CTL_TABLE_RIGHT },
	};
	struct ctl_table	*t;
	char			 calls[24], errors[24];
	size_t			 i;

	t = ctl_table_new(cols, sizeof cols / sizeof cols[0]);
	for (i = 0; i < n->n_methods; i++) {
		if (n->methods[i]->calls == 0)
			continue;
		snprintf(calls, sizeof calls, "%llu",
		    (unsigned long long)n->methods[i]->calls);
		snprintf(errors, sizeof errors, "%llu",
		    (unsigned long long)n->methods[i]->errors);
		ctl_table_row(t, n->methods[i]->method, calls, errors);
	}
	if (ctl_table_rows(t) == 0) {
		ctl_table_free(t);
		return;
	}
	fputc('\n', ctx->out);
	ctl_table_print(t, ctx->out);
}

static void
ctl_status_human(struct ctl_ctx *ctx, const ProtobufCMessage *reply)
{
	const Nkid__V1__StatusReply	*r;
	const Nkid__V1__Counters	*n;
	const Nkid__V1__CacheStatReply	*k;
	const Nkid__V1__JobCounters	*j;
	char				 b1[32], b2[32], b3[32], key[40];
	size_t				 i;

	r = (const Nkid__V1__StatusReply *)reply;
	n = r->counters;
	k = r->cache;
	j = r->jobs;
	ctl_kv(ctx, "version", "%s", ctl_status_str(r->version));
	ctl_kv(ctx, "pid", "%u", r->pid);
	ctl_kv(ctx, "uptime", "%s", ctl_fmt_seconds(r->uptime_s, b1,
	    sizeof b1));
	ctl_kv(ctx, "backend", "%s", ctl_status_str(r->backend));
	for (i = 0; i < r->n_backend_versions; i++) {
		snprintf(key, sizeof key, "  %s", r->backend_versions[i]->key);
		ctl_kv(ctx, key, "%s", r->backend_versions[i]->value);
	}
	ctl_kv(ctx, "socket", "%s", *r->socket ? r->socket : ctx->socket);
	ctl_kv(ctx, "config", "%s", ctl_status_str(r->config_path));
	ctl_kv(ctx, "state dir", "%s", ctl_status_str(r->state_dir));
	ctl_kv(ctx, "cache dir", "%s", ctl_status_str(r->cache_dir));
	if (n != NULL)
		ctl_kv(ctx, "connections", "%llu (%llu active, %llu refused)",
		    (unsigned long long)n->connections,
		    (unsigned long long)n->active_connections,
		    (unsigned long long)n->refused);
	if (j != NULL)
		ctl_kv(ctx, "jobs", "%llu queued, %llu running, %llu "
		    "completed, %llu cancelled, %llu rejected",
		    (unsigned long long)j->queued,
		    (unsigned long long)j->running,
		    (unsigned long long)j->completed,
		    (unsigned long long)j->cancelled,
		    (unsigned long long)j->rejected);
	if (k != NULL) {
		ctl_kv(ctx, "cache", "%llu entries, %s of %s",
		    (unsigned long long)k->entries, ctl_fmt_bytes(k->bytes, b1,
		    sizeof b1), k->max_bytes > 0 ? ctl_fmt_bytes(k->max_bytes,
		    b2, sizeof b2) : "no budget");
		ctl_kv(ctx, "cache hit rate", "%s (%llu hit%s, %llu miss%s)",
		    ctl_fmt_percent(k->hits, k->hits + k->misses, b3,
		    sizeof b3), (unsigned long long)k->hits,
		    k->hits == 1 ? "" : "s", (unsigned long long)k->misses,
		    k->misses == 1 ? "" : "es");
		ctl_kv(ctx, "compiles", "%llu (%llu coalesced, %llu failed)",
		    (unsigned long long)k->compiles,
		    (unsigned long long)k->coalesced,
		    (unsigned long long)k->failures);
		ctl_kv(ctx, "evictions", "%llu (%llu corrupt)",
		    (unsigned long long)k->evictions,
		    (unsigned long long)k->corrupt);
		if (k->remote != NULL)
			ctl_cache_remote_print(ctx, k->remote);
	}
	if (r->n_cores > 0) {
		fputc('\n', ctx->out);
		ctl_status_cores(ctx, r);
	}
	if (n != NULL)
		ctl_status_methods(ctx, n);
}

static int
ctl_status_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__StatusRequest	req = NKID__V1__STATUS_REQUEST__INIT;

	return (ctl_call_print(ctx, "Status", &req.base,
	    &nkid__v1__status_reply__descriptor, ctl_status_json,
	    ctl_status_human));
}

const struct ctl_cmd ctl_status_cmd = {
	.name = "status",
	.usage = "",
	.help = "show nkid's version, paths, counters, cache hit rate, cores "
	    "and the methods called",
	.exec = ctl_status_exec,
};
