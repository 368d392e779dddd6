/* ctl_cache_show.c: `nkictl cache show KEY`: one entry in full, its signature and compiler log included; KEY may be a unique prefix. */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static void
ctl_cache_show_print(struct ctl_ctx *ctx, const Nkid__V1__CacheEntry *e,
    const Nkid__V1__CacheVerifyResult *v)
{
	char	buf[1024], when[32];
	double	now = ctl_fmt_now();

	ctl_kv(ctx, "key", "%s", e->key);
	ctl_kv(ctx, "kernel", "%s", e->kernel);
	if (v != NULL && v->n_params > 0)
		ctl_kv(ctx, "signature", "%s", ctl_cache_sig_format(v->params,
		    v->n_params, buf, sizeof buf));
	ctl_kv(ctx, "status", "%s%s", e->status, e->pinned ? ", pinned" : "");
	ctl_kv(ctx, "format", "%s", e->format);
	ctl_kv(ctx, "target", "%s", ctl_cache_target(e));
	ctl_kv(ctx, "backend", "%s (%s)", e->backend, e->compiler_version);
	ctl_kv(ctx, "size", "%s (%llu bytes)", ctl_fmt_bytes(e->size, buf,
	    sizeof buf), (unsigned long long)e->size);
	ctl_kv(ctx, "digest", "sha256:%s", e->digest);
	ctl_kv(ctx, "compile", "%s", ctl_fmt_us(e->compile_ms * 1e3, buf,
	    sizeof buf));
	ctl_kv(ctx, "hits", "%llu", (unsigned long long)e->hits);
	ctl_kv(ctx, "created", "%s (%s)", ctl_fmt_time(e->created, when,
	    sizeof when), ctl_fmt_age(e->created, now, buf, sizeof buf));
	ctl_kv(ctx, "last used", "%s (%s)", ctl_fmt_time(e->last_used, when,
	    sizeof when), ctl_fmt_age(e->last_used, now, buf, sizeof buf));
	ctl_text_print(ctx->out, "log:\n", e->log);
}

static int
ctl_cache_show_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CacheVerifyRequest req = NKID__V1__CACHE_VERIFY_REQUEST__INIT;
	struct ctl_cache_listing	 l;
	struct ctl_cache_checked	 v;
	const Nkid__V1__CacheEntry	*e;
	const Nkid__V1__CacheVerifyResult *sig = NULL;
	struct ctl_cache_where		 w = { 0, NULL };
	char				 key[CACHE_KEY_LEN + 1], *keyp = key;
	int				 rc;

	memset(&l, 0, sizeof l);
	memset(&v, 0, sizeof v);
	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0 ||
	    (rc = ctl_cache_key_resolve(ctx, &w, a->argv[0], key)) != 0 ||
	    (rc = ctl_cache_listing_get(ctx, &w, key, 1, &l)) != 0)
		goto out;
	if (l.r->n_entries != 1) {
		rc = ctl_fail(ctx, "NOT_FOUND", "no entry '%s'", key);
		goto out;
	}
	e = l.r->entries[0];
	if (strcmp(e->status, "ok") == 0) {
		req.keys = &keyp;
		req.n_keys = 1;
		req.signatures = 1;
		if ((rc = ctl_cache_checked_get(ctx, &w, &req, &v)) != 0)
			goto out;
		if (v.r->n_results == 1)
			sig = v.r->results[0];
	}
	if (ctx->json)
		rc = ctl_json_print(ctx, ctl_cache_entry_json(e, 1, sig));
	else
		ctl_cache_show_print(ctx, e, sig);
out:
	ctl_cache_checked_release(&v);
	ctl_cache_listing_release(&l);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_show_cmd = {
	.name = "cache show",
	.usage = "KEY " CTL_CACHE_USAGE_DIR,
	.help = "show one cache entry with its signature and compiler log",
	.opts = ctl_cache_opts_dir,
	.args = { 1, 1, CTL_CACHE_KEY_OPERAND },
	.exec = ctl_cache_show_exec,
};
