/*
 * ctl_cache.c: helpers of the cache commands: their options, the offline
 * cache directory, listings, KEY... results, entries as JSON, kernel
 * manifests.
 */
#include <assert.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "proto/wire.h"
#include "ctl_cache.h"
#include "ctl_kernel.h"

/* Largest manifest accepted. */
#define CTL_MANIFEST_MAX_BYTES (16u << 20)

int
ctl_cache_where_opt(ctl_cache_where *w, int opt, const char *arg)
{
	if (opt != CTL_CACHE_OPT_DIR && opt != CTL_CACHE_OPT_STATE)
		return 0;
	free(w->dir);
	if (opt == CTL_CACHE_OPT_DIR)
		w->dir = strdup(arg);
	else if (asprintf(&w->dir, "%s/cache", arg) < 0)
		w->dir = NULL;
	if (w->dir == NULL)
		abort();
	return 1;
}

void
ctl_cache_where_release(ctl_cache_where *w)
{
	free(w->dir);
	w->dir = NULL;
}

int
ctl_cache_where_parse(ctl_ctx *ctx, int argc, char **argv,
    ctl_cache_where *w, int *rc)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	int opt;

	*rc = 0;
	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			return -1;
		if (!ctl_cache_where_opt(w, opt, optarg)) {
			*rc = ctl_usage_fail(ctx, "unexpected option");
			return -1;
		}
	}
	return 0;
}

/* cache_list's callback: each entry as a CacheEntry of the reply. */
static int
ctl_cache_list_entry_cb(void *arg, const struct cache_entry *e)
{
	Nkid__V1__CacheListReply *r = arg;
	Nkid__V1__CacheEntry *m;

	if ((m = wire_cache_entry_new(e)) == NULL)
		abort();
	r->entries = reallocarray(r->entries, r->n_entries + 1,
	    sizeof(*r->entries));
	if (r->entries == NULL)
		abort();
	r->entries[r->n_entries++] = m;
	return 0;
}

/* CacheList done on the cache directory w->dir into r. */
static int
ctl_cache_list_offline(ctl_ctx *ctx, const ctl_cache_where *w,
    const char *prefix, unsigned limit, Nkid__V1__CacheListReply *r)
{
	struct cache *c;
	int rc;

	if ((rc = ctl_cache_open(ctx, w, 1, &c)) != 0)
		return rc;
	rc = cache_list(c, prefix, limit, ctl_cache_list_entry_cb, r);
	cache_close(c);
	if (rc != 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, cache_strerror(rc));
		return CTL_EXIT_FAIL;
	}
	return 0;
}

int
ctl_cache_listing_get(ctl_ctx *ctx, const ctl_cache_where *w,
    const char *prefix, unsigned limit, ctl_cache_listing *l)
{
	Nkid__V1__CacheListRequest req = NKID__V1__CACHE_LIST_REQUEST__INIT;

	assert(l->r == NULL);
	if (w->dir != NULL) {
		nkid__v1__cache_list_reply__init(&l->off);
		l->r = &l->off;
		return ctl_cache_list_offline(ctx, w, *prefix ? prefix : NULL,
		    limit, &l->off);
	}
	req.prefix = (char *)prefix;
	req.limit = limit;
	return ctl_call(ctx, "CacheList", &req.base,
	    &nkid__v1__cache_list_reply__descriptor,
	    (ProtobufCMessage **)&l->r);
}

void
ctl_cache_listing_release(ctl_cache_listing *l)
{
	size_t i;

	if (l->r == &l->off) {
		for (i = 0; i < l->off.n_entries; i++)
			nkid__v1__cache_entry__free_unpacked(l->off.entries[i],
			    NULL);
		free(l->off.entries);
	} else if (l->r != NULL)
		protobuf_c_message_free_unpacked(&l->r->base, NULL);
	memset(l, 0, sizeof(*l));
}

int
ctl_cache_keys_parse(ctl_ctx *ctx, int argc, char **argv,
    ctl_cache_where *w, char ***keys, size_t *n, int *rc)
{
	if (ctl_cache_where_parse(ctx, argc, argv, w, rc) < 0)
		return -1;
	if (optind == argc) {
		*rc = ctl_usage_fail(ctx, "give at least one KEY");
		return -1;
	}
	*keys = argv + optind;
	*n = argc - optind;
	return 0;
}

int
ctl_cache_keys_apply(ctl_ctx *ctx, const ctl_cache_where *w, char **keys,
    size_t n, int (*fn)(struct cache *c, const char *key, void *arg),
    void *arg, uint32_t *done, char ***missing, size_t *n_missing)
{
	struct cache *c;
	size_t i;
	int rc;

	*done = 0;
	*missing = NULL;
	*n_missing = 0;
	if ((rc = ctl_cache_open(ctx, w, 0, &c)) != 0)
		return rc;
	if ((*missing = calloc(n + 1, sizeof(**missing))) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (fn(c, keys[i], arg) == 0)
			(*done)++;
		else
			(*missing)[(*n_missing)++] = keys[i];
	}
	cache_close(c);
	return 0;
}

int
ctl_cache_keys_print(ctl_ctx *ctx, const char *what, const char *verb,
    uint32_t done, char *const *missing, size_t n_missing)
{
	size_t i;
	int rc = 0;

	if (ctx->json) {
		cJSON *o = cJSON_CreateObject(), *a;

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
	return rc;
}

static void
ctl_cache_log_cb(void *arg, int level, const char *msg)
{
	ctl_ctx *ctx = arg;

	if (level <= CACHE_LOG_WARN)
		fprintf(ctx->err, "nkictl: %s\n", msg);
}

int
ctl_cache_open(ctl_ctx *ctx, const ctl_cache_where *w, int readonly,
    struct cache **out)
{
	struct cache_opts o;
	char err[1024];

	memset(&o, 0, sizeof(o));
	o.dir = w->dir != NULL ? w->dir : CTL_CACHE_DEFAULT_DIR;
	o.readonly = readonly;
	o.log = ctl_cache_log_cb;
	o.log_arg = ctx;
	if (cache_open(out, &o, err, sizeof(err)) != 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		return CTL_EXIT_FAIL;
	}
	return 0;
}

cJSON *
ctl_cache_entry_json(const Nkid__V1__CacheEntry *m, int with_log)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
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
	return o;
}

static char *
ctl_manifest_str(const cJSON *o, const char *name)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
	char *s;

	if (!cJSON_IsString(v))
		return NULL;
	if ((s = strdup(v->valuestring)) == NULL)
		abort();
	return s;
}

int
ctl_manifest_read(const char *path, ctl_manifest *m, char *err, size_t errlen)
{
	cJSON *root = NULL, *ks, *k;
	char *text = NULL, *dircopy = NULL, *dir, kerr[1024];
	char *gtarget = NULL, *goptions = NULL;
	struct stat st;
	FILE *f = NULL;
	int rc = -1;

	memset(m, 0, sizeof(*m));
	if ((f = fopen(path, "re")) == NULL || fstat(fileno(f), &st) == -1) {
		snprintf(err, errlen, "cannot read manifest '%s': %s", path,
		    strerror(errno));
		goto out;
	}
	if ((unsigned long long)st.st_size > CTL_MANIFEST_MAX_BYTES) {
		snprintf(err, errlen, "manifest '%s' is larger than %u bytes",
		    path, CTL_MANIFEST_MAX_BYTES);
		goto out;
	}
	if ((text = calloc(1, st.st_size + 1)) == NULL ||
	    fread(text, 1, st.st_size, f) != (size_t)st.st_size) {
		snprintf(err, errlen, "cannot read manifest '%s'", path);
		goto out;
	}
	if ((root = cJSON_Parse(text)) == NULL || !cJSON_IsObject(root)) {
		snprintf(err, errlen, "manifest '%s' is not a JSON object",
		    path);
		goto out;
	}
	ks = cJSON_GetObjectItemCaseSensitive(root, "kernels");
	if (!cJSON_IsArray(ks) || cJSON_GetArraySize(ks) == 0) {
		snprintf(err, errlen, "manifest '%s': 'kernels' must be a "
		    "non-empty array", path);
		goto out;
	}
	gtarget = ctl_manifest_str(root, "target");
	goptions = ctl_manifest_str(root, "options");
	if ((dircopy = strdup(path)) == NULL)
		abort();
	dir = dirname(dircopy);
	m->items = calloc(cJSON_GetArraySize(ks), sizeof(*m->items));
	if (m->items == NULL)
		abort();
	cJSON_ArrayForEach(k, ks) {
		ctl_manifest_item *it = &m->items[m->n];
		const char *p;

		if (cJSON_IsString(k))
			p = k->valuestring;
		else if (cJSON_IsObject(k) && cJSON_IsString(
		    cJSON_GetObjectItemCaseSensitive(k, "path")))
			p = cJSON_GetObjectItemCaseSensitive(k,
			    "path")->valuestring;
		else {
			snprintf(err, errlen, "manifest '%s': kernel %zu is "
			    "neither a path nor an object with a 'path'", path,
			    m->n + 1);
			goto out;
		}
		if (p[0] == '/')
			it->path = strdup(p);
		else if (asprintf(&it->path, "%s/%s", dir, p) < 0)
			it->path = NULL;
		if (it->path == NULL)
			abort();
		if (cJSON_IsObject(k)) {
			it->target = ctl_manifest_str(k, "target");
			it->options = ctl_manifest_str(k, "options");
		}
		if (it->target == NULL && gtarget != NULL &&
		    (it->target = strdup(gtarget)) == NULL)
			abort();
		if (it->options == NULL && goptions != NULL &&
		    (it->options = strdup(goptions)) == NULL)
			abort();
		m->n++;
		if (ctl_kernel_read(it->path, &it->ref, kerr, sizeof(kerr)) <
		    0) {
			snprintf(err, errlen, "manifest '%s': %s", path, kerr);
			goto out;
		}
	}
	rc = 0;
out:
	if (rc != 0)
		ctl_manifest_release(m);
	free(gtarget);
	free(goptions);
	free(dircopy);
	cJSON_Delete(root);
	free(text);
	if (f != NULL)
		fclose(f);
	return rc;
}

void
ctl_manifest_release(ctl_manifest *m)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		free(m->items[i].path);
		free(m->items[i].target);
		free(m->items[i].options);
		ctl_kernel_free(m->items[i].ref);
	}
	free(m->items);
	memset(m, 0, sizeof(*m));
}

void
ctl_manifest_ref(const ctl_manifest *m, size_t i, Nkid__V1__KernelRef *ref)
{
	const ctl_manifest_item *it = &m->items[i];

	nkid__v1__kernel_ref__init(ref);
	ref->kernel = it->ref->kernel;
	ref->spec_key = it->ref->spec_key;
	ref->target = it->target != NULL ? it->target : it->ref->target;
	ref->options = it->options != NULL ? it->options : it->ref->options;
}
