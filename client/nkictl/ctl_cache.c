/* ctl_cache.c: what the cache commands share: the cache directory options, the offline cache, listings, KEY... results, entries as JSON. */
#include <sys/stat.h>

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "proto/wire.h"
#include "ctl_cache.h"
#include "ctl_rpc.h"

/* How many entries an ambiguous prefix names in its message. */
#define CTL_CACHE_AMBIGUOUS_SHOWN	3
/* How long an offline command waits for nkid to name its cache. */
#define CTL_CACHE_ASK_S			5.0

const struct ctl_opt ctl_cache_opts_dir[] = {
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

/* mkdir -p path, each new directory mode 0750. 0, or -1 with errno. */
static int
ctl_cache_mkdirs(const char *path)
{
	char	buf[4096], *p;

	if (strlen(path) >= sizeof buf) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	strcpy(buf, path);
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0750) == -1 && errno != EEXIST)
			return (-1);
		*p = '/';
	}
	if (mkdir(buf, 0750) == -1 && errno != EEXIST)
		return (-1);
	return (0);
}

/*
 * An offline command pointed at another nkid (-s, $NKID_SOCKET) and given
 * no directory works on that nkid's cache directory, as its Status names
 * it: not on the default one, which is another nkid's.
 */
static int
ctl_cache_where_ask(struct ctl_ctx *ctx, char **dir)
{
	Nkid__V1__StatusRequest	 req = NKID__V1__STATUS_REQUEST__INIT;
	Nkid__V1__StatusReply	*r;
	struct ctl_rpc_status	 st;

	if ((ctx->rpc == NULL && ctl_rpc_open(ctx->socket, &ctx->rpc,
	    &st) < 0) || ctl_rpc_call(ctx->rpc, "Status", &req.base,
	    &nkid__v1__status_reply__descriptor, CTL_CACHE_ASK_S,
	    (ProtobufCMessage **)&r, &st) < 0)
		return (ctl_usage_fail(ctx, "cannot tell which cache directory "
		    "the nkid at '%s' uses (%s): give --cache-dir DIR or "
		    "--state-dir DIR", ctx->socket, st.msg));
	if ((*dir = strdup(r->cache_dir)) == NULL)
		abort();
	protobuf_c_message_free_unpacked(&r->base, NULL);
	return (0);
}

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
	char			err[1024], *asked = NULL;
	int			rc = 0;

	if (w->dir == NULL && strcmp(ctx->socket, CTL_DEFAULT_SOCKET) != 0 &&
	    (rc = ctl_cache_where_ask(ctx, &asked)) != 0)
		return (rc);
	/* A directory named to write into is made, as nkid makes its own. */
	if (!readonly && w->dir != NULL && ctl_cache_mkdirs(w->dir) != 0) {
		ctl_errorf(ctx, "%s: cannot create cache directory '%s': %s",
		    ctx->cmd->name, w->dir, strerror(errno));
		return (CTL_EXIT_FAIL);
	}
	memset(&o, 0, sizeof o);
	o.dir = w->dir != NULL ? w->dir : asked != NULL ? asked :
	    CTL_CACHE_DEFAULT_DIR;
	o.readonly = readonly;
	o.log = ctl_cache_log_cb;
	o.log_arg = ctx;
	if (cache_open(out, &o, err, sizeof err) != 0) {
		ctl_errorf(ctx, "%s: %s", ctx->cmd->name, err);
		rc = CTL_EXIT_FAIL;
	}
	free(asked);
	return (rc);
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

/* A JSON array of n strings. */
static cJSON *
ctl_cache_strings_json(char *const *v, size_t n)
{
	cJSON	*a = cJSON_CreateArray();
	size_t	 i;

	for (i = 0; a != NULL && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return (a);
}

/* Print what a KEY... command did to the keys. */
static int
ctl_cache_keys_print(struct ctl_ctx *ctx, const struct ctl_cache_keys *k,
    char *const *keys, size_t nkeys, uint32_t done, uint32_t same,
    char *const *missing, size_t n_missing)
{
	cJSON	*o;
	size_t	 i;
	int	 rc = 0;

	if (ctx->json) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, k->what, done);
		if (k->already != NULL)
			cJSON_AddNumberToObject(o, "unchanged", same);
		cJSON_AddItemToObject(o, "keys", ctl_cache_strings_json(keys,
		    nkeys));
		cJSON_AddItemToObject(o, "missing",
		    ctl_cache_strings_json(missing, n_missing));
		rc = ctl_json_print(ctx, o);
	} else if (same > 0 && same >= done)
		fprintf(ctx->out, "%u entr%s %s %s already\n", same, same == 1 ?
		    "y" : "ies", same == 1 ? "was" : "were", k->verb);
	else if (same > 0)
		fprintf(ctx->out, "%s %u entr%s (%u %s already)\n", k->verb,
		    done - same, done - same == 1 ? "y" : "ies", same, k->verb);
	else
		fprintf(ctx->out, "%s %u entr%s\n", k->verb, done, done == 1 ?
		    "y" : "ies");
	for (i = 0; i < n_missing; i++)
		ctl_fail(ctx, "NOT_FOUND", "no entry '%s'", missing[i]);
	if (rc == 0 && n_missing > 0)
		rc = CTL_EXIT_FAIL;
	return (rc);
}

/* How many of the n keys k->already finds as the command leaves them. */
static int
ctl_cache_keys_already(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    const struct ctl_cache_keys *k, char **keys, size_t n, uint32_t *same)
{
	struct ctl_cache_listing	l;
	size_t				i;
	int				rc;

	*same = 0;
	for (i = 0; i < n; i++) {
		memset(&l, 0, sizeof l);
		rc = ctl_cache_listing_get(ctx, w, keys[i], 1, &l);
		if (rc == 0 && l.r->n_entries == 1 &&
		    k->already(l.r->entries[0], k->arg))
			(*same)++;
		ctl_cache_listing_release(&l);
		if (rc != 0)
			return (rc);
	}
	return (0);
}

int
ctl_cache_keys_run(struct ctl_ctx *ctx, const struct ctl_args *a,
    ProtobufCMessage *req, void (*set)(ProtobufCMessage *, char **, size_t),
    const struct ctl_cache_keys *k)
{
	struct ctl_cache_where	  w = { 0, NULL };
	ProtobufCMessage	 *reply = NULL;
	char			**keys = NULL, **off = NULL;
	char *const		 *missing = NULL;
	uint32_t		  done = 0, same = 0;
	size_t			  n = 0, nkeys = (size_t)a->argc;
	int			  rc;

	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0 ||
	    (rc = ctl_cache_keys_resolve(ctx, &w, a->argv, nkeys, &keys)) != 0)
		goto out;
	if (k->already != NULL && (rc = ctl_cache_keys_already(ctx, &w, k,
	    keys, nkeys, &same)) != 0)
		goto out;
	if (w.offline) {
		rc = ctl_cache_keys_apply(ctx, &w, keys, nkeys, k, &done, &off,
		    &n);
		missing = off;
	} else {
		set(req, keys, nkeys);
		if ((rc = ctl_call(ctx, k->method, req, k->reply, &reply)) ==
		    CTL_EXIT_OK)
			k->result(reply, &done, &missing, &n);
	}
	if (rc == CTL_EXIT_OK)
		rc = ctl_cache_keys_print(ctx, k, keys, nkeys, done, same,
		    missing, n);
out:
	free(off);
	if (reply != NULL)
		protobuf_c_message_free_unpacked(reply, NULL);
	ctl_cache_keys_free(keys, keys != NULL ? nkeys : 0);
	ctl_cache_where_release(&w);
	return (rc);
}

/* ------------------------------------------------------------ keys */

int
ctl_cache_key_resolve(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    const char *prefix, char key[CACHE_KEY_LEN + 1])
{
	struct ctl_cache_listing	 l;
	const Nkid__V1__CacheListReply	*r;
	char				 low[CACHE_KEY_LEN + 1], some[256];
	size_t				 i, len = strlen(prefix), n = 0;
	int				 rc;

	for (i = 0; i < len && i < CACHE_KEY_LEN; i++)
		low[i] = (char)tolower((unsigned char)prefix[i]);
	low[i] = '\0';
	if (len == 0 || len > CACHE_KEY_LEN ||
	    strspn(low, "0123456789abcdef") != len)
		return (ctl_usage_fail(ctx, "bad key '%s': want a key or a "
		    "prefix of one (hex digits)", prefix));
	if (len == CACHE_KEY_LEN) {
		memcpy(key, low, len + 1);
		return (CTL_EXIT_OK);
	}
	memset(&l, 0, sizeof l);
	if ((rc = ctl_cache_listing_get(ctx, w, low,
	    CTL_CACHE_AMBIGUOUS_SHOWN + 1, &l)) != 0)
		goto out;
	r = l.r;
	if (r->n_entries == 1)
		memcpy(key, r->entries[0]->key, CACHE_KEY_LEN + 1);
	else if (r->n_entries == 0)
		rc = ctl_fail(ctx, "NOT_FOUND", "no entry has a key starting "
		    "with '%s'", prefix);
	else {
		some[0] = '\0';
		for (i = 0; i < r->n_entries && i < CTL_CACHE_AMBIGUOUS_SHOWN;
		    i++)
			n += (size_t)snprintf(some + n, n < sizeof some ?
			    sizeof some - n : 0, "%s%.*s (%s)", i ? ", " : "",
			    CTL_CACHE_ABBREV, r->entries[i]->key,
			    r->entries[i]->kernel);
		rc = ctl_fail(ctx, "AMBIGUOUS", "key prefix '%s' is ambiguous: "
		    "%s%s; give more digits", prefix, some, r->n_entries >
		    CTL_CACHE_AMBIGUOUS_SHOWN ? " and more" : "");
	}
out:
	ctl_cache_listing_release(&l);
	return (rc);
}

int
ctl_cache_keys_resolve(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    char *const *prefixes, size_t n, char ***keys)
{
	size_t	i;
	int	rc = CTL_EXIT_OK, r;

	if ((*keys = calloc(n + 1, sizeof **keys)) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		if (((*keys)[i] = malloc(CACHE_KEY_LEN + 1)) == NULL)
			abort();
		(*keys)[i][0] = '\0';
		r = ctl_cache_key_resolve(ctx, w, prefixes[i], (*keys)[i]);
		if (r == CTL_EXIT_CONNECT)
			return (r);
		if (r != CTL_EXIT_OK && rc != CTL_EXIT_USAGE)
			rc = r;
	}
	return (rc);
}

void
ctl_cache_keys_free(char **keys, size_t n)
{
	size_t	i;

	for (i = 0; keys != NULL && i < n; i++)
		free(keys[i]);
	free(keys);
}

const char *
ctl_cache_target(const Nkid__V1__CacheEntry *e)
{
	if (*e->target != '\0')
		return (e->target);
	/* The cpu backend models the default target as a trn1 core. */
	return (strcmp(e->backend, "cpu") == 0 ? "default (trn1)" :
	    "default");
}

int
ctl_cache_abbrev_len(char *const *keys, size_t n)
{
	size_t	i, j, k;
	int	len = CTL_CACHE_ABBREV;

	/* Pairs: listings are short; the common prefix decides. */
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++) {
			for (k = 0; keys[i][k] != '\0' &&
			    keys[i][k] == keys[j][k]; k++)
				;
			if ((int)k + 1 > len)
				len = (int)k + 1;
		}
	return (len > CACHE_KEY_LEN ? CACHE_KEY_LEN : len);
}

/* The fields of a CacheEntry in its JSON object, before log and
 * signature. */
static const char *const ctl_cache_entry_keys[] = {
	"key", "kernel", "format", "target", "backend", "compiler_version",
	"size", "created", "last_used", "hits", "compile_ms", "pinned",
	"status", "digest", NULL
};

cJSON *
ctl_cache_entry_json(const Nkid__V1__CacheEntry *m, int with_log,
    const Nkid__V1__CacheVerifyResult *v)
{
	cJSON	*o = cJSON_CreateObject(), *sig;

	if (o == NULL)
		return (NULL);
	ctl_json_fields(o, &m->base, ctl_cache_entry_keys);
	if (with_log)
		cJSON_AddStringToObject(o, "log", m->log);
	sig = v != NULL ? ctl_cache_sig_json(v->params, v->n_params) : NULL;
	if (sig != NULL)
		cJSON_AddItemToObject(o, "signature", sig);
	else
		cJSON_AddNullToObject(o, "signature");
	return (o);
}

/* The counters of a CacheStat reply in its JSON object. */
static const char *const ctl_cache_stats_keys[] = {
	"entries", "bytes", "max_bytes", "hits", "misses", "compiles",
	"coalesced", "failures", "evictions", "corrupt", NULL
};

cJSON *
ctl_cache_stats_json(const Nkid__V1__CacheStatReply *r)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	ctl_json_fields(o, &r->base, ctl_cache_stats_keys);
	if (r->hits + r->misses > 0)
		cJSON_AddNumberToObject(o, "hit_rate", (double)r->hits /
		    (double)(r->hits + r->misses));
	else
		cJSON_AddNullToObject(o, "hit_rate");
	if (r->zeroed_at > 0)
		cJSON_AddNumberToObject(o, "zeroed_at", r->zeroed_at);
	return (o);
}

/* ------------------------------------------------------------ signatures */

const char *
ctl_cache_sig_format(Nkid__V1__Tensor *const *params, size_t n, char *buf,
    size_t len)
{
	size_t	i, j, k = 0;

	buf[0] = '\0';
	for (i = 0; i < n && k < len; i++) {
		k += (size_t)snprintf(buf + k, len - k, "%s%s: %s[", i ? ", " :
		    "", params[i]->name, params[i]->dtype);
		for (j = 0; j < params[i]->n_shape && k < len; j++)
			k += (size_t)snprintf(buf + k, len - k, "%s%llu", j ?
			    "," : "", (unsigned long long)params[i]->shape[j]);
		if (k < len)
			k += (size_t)snprintf(buf + k, len - k, "]");
	}
	return (buf);
}

cJSON *
ctl_cache_sig_json(Nkid__V1__Tensor *const *params, size_t n)
{
	cJSON	*a, *o, *sh;
	size_t	 i, j;

	if (n == 0 || (a = cJSON_CreateArray()) == NULL)
		return (NULL);
	for (i = 0; i < n; i++) {
		if ((o = cJSON_CreateObject()) == NULL)
			break;
		cJSON_AddItemToArray(a, o);
		cJSON_AddStringToObject(o, "name", params[i]->name);
		cJSON_AddStringToObject(o, "dtype", params[i]->dtype);
		sh = cJSON_AddArrayToObject(o, "shape");
		for (j = 0; sh != NULL && j < params[i]->n_shape; j++)
			cJSON_AddItemToArray(sh, cJSON_CreateNumber(
			    (double)params[i]->shape[j]));
	}
	return (a);
}

/* ------------------------------------------------------------ verify */

/* The results of req into r, checked in the cache directory c as nkid's
 * CacheVerify checks them (cache_verify_run). */
static int
ctl_cache_checked_offline(struct ctl_ctx *ctx, struct cache *c,
    const Nkid__V1__CacheVerifyRequest *req, Nkid__V1__CacheVerifyReply *r)
{
	const Nkid__V1__LookupRequest	*k;
	struct cache_key_input		 in;
	struct cache_verify		 v = { NULL, 0, 0, 0 };
	char				 key[CACHE_KEY_LEN + 1];
	size_t				 i;
	int				 flags = 0, rc;

	if (req->n_kernels > 0 && *cache_backend(c) == '\0')
		return (ctl_fail(ctx, "FAILED_PRECONDITION", "the cache does "
		    "not name its compiler (nkid never ran on it)"));
	if (req->n_keys == 0 && req->n_kernels == 0)
		flags |= CACHE_VERIFY_ALL;
	if (req->signatures)
		flags |= CACHE_VERIFY_SIGNATURES;
	for (i = 0; i < req->n_keys; i++)
		cache_verify_add(&v, req->keys[i], NULL);
	for (i = 0; i < req->n_kernels; i++) {
		k = req->kernels[i];
		memset(&in, 0, sizeof in);
		in.format = k->format;
		in.ir_digest = k->ir_digest;
		in.target = k->target;
		in.options = k->options;
		in.backend = cache_backend(c);
		in.compiler_version = cache_compiler_version(c);
		cache_key_compute(&in, key);
		cache_verify_add(&v, key, NULL);
	}
	if ((rc = cache_verify_run(c, &v, flags, NULL)) != 0) {
		cache_verify_release(&v);
		return (ctl_fail(ctx, CTL_CODE_LOCAL, "%s",
		    cache_strerror(rc)));
	}
	if ((r->results = calloc(v.n + 1, sizeof *r->results)) == NULL)
		abort();
	for (i = 0; i < v.n; i++)
		if ((r->results[r->n_results++] =
		    wire_cache_verify_result_new(&v.items[i])) == NULL)
			abort();
	cache_verify_release(&v);
	return (CTL_EXIT_OK);
}

int
ctl_cache_checked_get(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    const Nkid__V1__CacheVerifyRequest *req, struct ctl_cache_checked *v)
{
	struct cache	*c;
	int		 rc;

	assert(v->r == NULL);
	if (!w->offline)
		return (ctl_call(ctx, "CacheVerify", &req->base,
		    &nkid__v1__cache_verify_reply__descriptor,
		    (ProtobufCMessage **)&v->r));
	nkid__v1__cache_verify_reply__init(&v->off);
	v->r = &v->off;
	if ((rc = ctl_cache_open(ctx, w, 1, &c)) != 0)
		return (rc);
	rc = ctl_cache_checked_offline(ctx, c, req, &v->off);
	cache_close(c);
	return (rc);
}

void
ctl_cache_checked_release(struct ctl_cache_checked *v)
{
	size_t	i;

	if (v->r == &v->off) {
		for (i = 0; i < v->off.n_results; i++)
			nkid__v1__cache_verify_result__free_unpacked(
			    v->off.results[i], NULL);
		free(v->off.results);
	} else if (v->r != NULL)
		protobuf_c_message_free_unpacked(&v->r->base, NULL);
	memset(v, 0, sizeof *v);
}
