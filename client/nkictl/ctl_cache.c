/* ctl_cache.c: what the cache commands share: the cache directory options, the offline cache, listings, KEY... results, entries as JSON. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto/wire.h"
#include "ctl_cache.h"

int
ctl_cache_where_get(struct ctl_ctx *ctx, const struct ctl_args *a,
    struct ctl_cache_where *w)
{
	const char	*dir = ctl_args_get(a, "cache-dir");
	const char	*state = ctl_args_get(a, "state-dir");

	w->dir = NULL;
	w->offline = dir != NULL || state != NULL ||
	    ctl_args_has(a, "offline") > 0;
	if (dir != NULL && state != NULL)
		return (ctl_usage_fail(ctx, "--cache-dir and --state-dir "
		    "exclude each other"));
	if (dir != NULL)
		w->dir = strdup(dir);
	else if (state != NULL && asprintf(&w->dir, "%s/cache", state) < 0)
		w->dir = NULL;
	if ((dir != NULL || state != NULL) && w->dir == NULL)
		abort();
	return (0);
}

void
ctl_cache_where_release(struct ctl_cache_where *w)
{
	free(w->dir);
	w->dir = NULL;
}

/* cache_list's callback: each entry as a CacheEntry of the reply. */
static int
ctl_cache_list_entry_cb(void *arg, const struct cache_entry *e)
{
	Nkid__V1__CacheListReply	*r = arg;
	Nkid__V1__CacheEntry		*m;

	if ((m = wire_cache_entry_new(e)) == NULL)
		abort();
	r->entries = reallocarray(r->entries, r->n_entries + 1,
	    sizeof *r->entries);
	if (r->entries == NULL)
		abort();
	r->entries[r->n_entries++] = m;
	return (0);
}

/* CacheList done on the cache directory w->dir into r. */
static int
ctl_cache_list_offline(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    const char *prefix, unsigned limit, Nkid__V1__CacheListReply *r)
{
	struct cache	*c;
	int		 rc;

	if ((rc = ctl_cache_open(ctx, w, 1, &c)) != 0)
		return (rc);
	rc = cache_list(c, prefix, limit, ctl_cache_list_entry_cb, r);
	cache_close(c);
	if (rc != 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, cache_strerror(rc));
		return (CTL_EXIT_FAIL);
	}
	return (0);
}

int
ctl_cache_listing_get(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    const char *prefix, unsigned limit, struct ctl_cache_listing *l)
{
	Nkid__V1__CacheListRequest req = NKID__V1__CACHE_LIST_REQUEST__INIT;

	assert(l->r == NULL);
	if (w->offline) {
		nkid__v1__cache_list_reply__init(&l->off);
		l->r = &l->off;
		return (ctl_cache_list_offline(ctx, w, *prefix ? prefix : NULL,
		    limit, &l->off));
	}
	req.prefix = (char *)prefix;
	req.limit = limit;
	return (ctl_call(ctx, "CacheList", &req.base,
	    &nkid__v1__cache_list_reply__descriptor,
	    (ProtobufCMessage **)&l->r));
}

void
ctl_cache_listing_release(struct ctl_cache_listing *l)
{
	size_t	i;

	if (l->r == &l->off) {
		for (i = 0; i < l->off.n_entries; i++)
			nkid__v1__cache_entry__free_unpacked(l->off.entries[i],
			    NULL);
		free(l->off.entries);
	} else if (l->r != NULL)
		protobuf_c_message_free_unpacked(&l->r->base, NULL);
	memset(l, 0, sizeof *l);
}

static void
ctl_cache_log_cb(void *arg, int level, const char *msg)
{
	struct ctl_ctx	*ctx = arg;

	if (level <= CACHE_LOG_WARN)
		fprintf(ctx->err, "nkictl: %s\n", msg);
}

int
ctl_cache_open(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    int readonly, struct cache **out)
{
	struct cache_opts	o;
	char			err[1024];

	memset(&o, 0, sizeof o);
	o.dir = w->dir != NULL ? w->dir : CTL_CACHE_DEFAULT_DIR;
	o.readonly = readonly;
	o.log = ctl_cache_log_cb;
	o.log_arg = ctx;
	if (cache_open(out, &o, err, sizeof err) != 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		return (CTL_EXIT_FAIL);
	}
	return (0);
}

/* k->fn on each of the n keys in the cache directory of w. */
static int
ctl_cache_keys_apply(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    char **keys, size_t n, const struct ctl_cache_keys *k, uint32_t *done,
    char ***missing, size_t *n_missing)
{
	struct cache	*c;
	size_t		 i;
	int		 rc;

	*done = 0;
	*missing = NULL;
	*n_missing = 0;
	if ((rc = ctl_cache_open(ctx, w, 0, &c)) != 0)
		return (rc);
	if ((*missing = calloc(n + 1, sizeof **missing)) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (k->fn(c, keys[i], k->arg) == 0)
			(*done)++;
		else
			(*missing)[(*n_missing)++] = keys[i];
	}
	cache_close(c);
	return (0);
}

/* Print what a KEY... command did. */
static int
ctl_cache_keys_print(struct ctl_ctx *ctx, const char *what, const char *verb,
    uint32_t done, char *const *missing, size_t n_missing)
{
	cJSON	*o, *a;
	size_t	 i;
	int	 rc = 0;

	if (ctx->json) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, what, done);
		a = cJSON_AddArrayToObject(o, "missing");
		for (i = 0; a != NULL && i < n_missing; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(missing[i]));
		rc = ctl_json_print(ctx, o);
	} else {
		fprintf(ctx->out, "%s %u entr%s\n", verb, done, done == 1 ?
		    "y" : "ies");
		for (i = 0; i < n_missing; i++)
			ctl_errorf(ctx, "%s: no entry '%s'", ctx->cmd->name,
			    missing[i]);
	}
	if (rc == 0 && n_missing > 0)
		rc = CTL_EXIT_FAIL;
	return (rc);
}

int
ctl_cache_keys_run(struct ctl_ctx *ctx, const struct ctl_args *a,
    const ProtobufCMessage *req, const struct ctl_cache_keys *k)
{
	struct ctl_cache_where	  w = { 0, NULL };
	ProtobufCMessage	 *reply = NULL;
	char			**off = NULL;
	char *const		 *missing = NULL;
	uint32_t		  done = 0;
	size_t			  n = 0;
	int			  rc;

	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if (w.offline) {
		rc = ctl_cache_keys_apply(ctx, &w, a->argv, (size_t)a->argc, k,
		    &done, &off, &n);
		missing = off;
	} else if ((rc = ctl_call(ctx, k->method, req, k->reply, &reply)) ==
	    CTL_EXIT_OK)
		k->result(reply, &done, &missing, &n);
	if (rc == CTL_EXIT_OK)
		rc = ctl_cache_keys_print(ctx, k->what, k->verb, done, missing,
		    n);
out:
	free(off);
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
	ctl_cache_where_release(&w);
	return (rc);
}

cJSON *
ctl_cache_entry_json(const Nkid__V1__CacheEntry *m, int with_log)
{
	cJSON	*o = cJSON_CreateObject();

	if (o == NULL)
		return (NULL);
	cJSON_AddStringToObject(o, "key", m->key);
	cJSON_AddStringToObject(o, "kernel", m->kernel);
	cJSON_AddStringToObject(o, "format", m->format);
	cJSON_AddStringToObject(o, "target", m->target);
	cJSON_AddStringToObject(o, "backend", m->backend);
	cJSON_AddStringToObject(o, "compiler_version", m->compiler_version);
	cJSON_AddNumberToObject(o, "size", (double)m->size);
	cJSON_AddNumberToObject(o, "created", m->created);
	cJSON_AddNumberToObject(o, "last_used", m->last_used);
	cJSON_AddNumberToObject(o, "hits", (double)m->hits);
	cJSON_AddNumberToObject(o, "compile_ms", m->compile_ms);
	cJSON_AddBoolToObject(o, "pinned", m->pinned);
	cJSON_AddStringToObject(o, "status", m->status);
	cJSON_AddStringToObject(o, "digest", m->digest);
	if (with_log)
		cJSON_AddStringToObject(o, "log", m->log);
	return (o);
}

cJSON *
ctl_cache_stats_json(const Nkid__V1__CacheStatReply *r)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	cJSON_AddNumberToObject(o, "entries", (double)r->entries);
	cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
	cJSON_AddNumberToObject(o, "max_bytes", (double)r->max_bytes);
	cJSON_AddNumberToObject(o, "hits", (double)r->hits);
	cJSON_AddNumberToObject(o, "misses", (double)r->misses);
	cJSON_AddNumberToObject(o, "compiles", (double)r->compiles);
	cJSON_AddNumberToObject(o, "coalesced", (double)r->coalesced);
	cJSON_AddNumberToObject(o, "failures", (double)r->failures);
	cJSON_AddNumberToObject(o, "evictions", (double)r->evictions);
	cJSON_AddNumberToObject(o, "corrupt", (double)r->corrupt);
	return (o);
}
