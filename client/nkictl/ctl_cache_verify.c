/* ctl_cache_verify.c: `nkictl cache verify [MANIFEST]`: the deployment gate: read every entry (or every kernel a manifest lists) from a cache directory and check its digest; exit 0 only if all are present and verify. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"
#include "ctl_manifest.h"

/* The keys to check and what was found. */
struct ctl_cache_verify {
	const struct ctl_manifest	 *m;	/* NULL: every entry */
	char				**keys;
	size_t				  n;
	unsigned			  ok;
	unsigned			  bad;
	unsigned			  failed;
	unsigned			  missing;
	unsigned			  corrupt;
	cJSON				 *entries;	/* --json */
};

static void
ctl_cache_verify_add(struct ctl_cache_verify *v, const char *key)
{
	v->keys = reallocarray(v->keys, v->n + 1, sizeof *v->keys);
	if (v->keys == NULL || (v->keys[v->n] = strdup(key)) == NULL)
		abort();
	v->n++;
}

static int
ctl_cache_verify_key_cb(void *arg, const struct cache_entry *e)
{
	ctl_cache_verify_add(arg, e->key);
	return (0);
}

/* The NEFF keys of the manifest's kernels for c's compiler into v. */
static int
ctl_cache_verify_manifest_keys(struct ctl_ctx *ctx, struct cache *c,
    struct ctl_cache_verify *v)
{
	struct cache_key_input	in;
	Nkid__V1__KernelRef	ref;
	char			key[CACHE_KEY_LEN + 1];
	char			digest[CACHE_KEY_LEN + 1];
	size_t			i;

	if (*cache_backend(c) == '\0') {
		ctl_errorf(ctx, "cache verify: the cache does not name its "
		    "compiler (nkid never ran on it)");
		return (CTL_EXIT_FAIL);
	}
	for (i = 0; i < v->m->n; i++) {
		ctl_manifest_ref(v->m, i, &ref);
		memset(&in, 0, sizeof in);
		in.format = ref.kernel->format;
		cache_digest_hex(ref.kernel->ir.data, ref.kernel->ir.len,
		    digest);
		in.ir_digest = digest;
		in.target = ref.target;
		in.options = ref.options;
		in.backend = cache_backend(c);
		in.compiler_version = cache_compiler_version(c);
		cache_key_compute(&in, key);
		ctl_cache_verify_add(v, key);
	}
	return (CTL_EXIT_OK);
}

/* Check key i of v and report it if it is not ok. */
static void
ctl_cache_verify_one(struct ctl_ctx *ctx, struct cache *c,
    struct ctl_cache_verify *v, size_t i)
{
	struct cache_entry	 e;
	const char		*name, *state;
	cJSON			*x;
	int			 r, have;

	r = cache_get(c, v->keys[i], CACHE_GET_DATA |
	    (v->m != NULL ? 0 : CACHE_GET_ANY), &e);
	have = r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE;
	name = v->m != NULL ? v->m->items[i].path : have ? e.kernel : "";
	switch (r) {
	case 0:
		state = "ok";
		v->ok++;
		break;
	case CACHE_EFAILED:
		/* A cached failure is what a kernel of a manifest must not
		 * be; in a whole-cache check it is data. */
		state = "failed";
		v->failed++;
		if (v->m != NULL)
			v->bad++;
		else
			v->ok++;
		break;
	case CACHE_ENOENT:
	case CACHE_ESTALE:
		state = "missing";
		v->missing++;
		v->bad++;
		break;
	case CACHE_ECORRUPT:
		state = "corrupt";
		v->corrupt++;
		v->bad++;
		break;
	default:
		state = cache_strerror(r);
		v->bad++;
		break;
	}
	if (v->entries != NULL) {
		x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "key", v->keys[i]);
		cJSON_AddStringToObject(x, "kernel", name);
		cJSON_AddStringToObject(x, "state", state);
		cJSON_AddItemToArray(v->entries, x);
	} else if (strcmp(state, "ok") != 0)
		fprintf(ctx->out, "%-8s %.16s  %s\n", state, v->keys[i], name);
	if (have)
		cache_entry_release(&e);
}

static const struct ctl_opt ctl_cache_verify_opts[] = {
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_verify_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	struct ctl_cache_verify	 v;
	struct ctl_cache_where	 w = { 0, NULL };
	struct ctl_manifest	 m = { NULL, 0 };
	struct cache		*c = NULL;
	cJSON			*o = NULL;
	char			 err[1024];
	size_t			 i;
	int			 rc, r;

	memset(&v, 0, sizeof v);
	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if (a->argc > 0) {
		if (ctl_manifest_read(a->argv[0], &m, err, sizeof err) < 0) {
			ctl_errorf(ctx, "cache verify: %s", err);
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		v.m = &m;
	}
	if ((rc = ctl_cache_open(ctx, &w, 1, &c)) != 0)
		goto out;
	if (v.m != NULL)
		rc = ctl_cache_verify_manifest_keys(ctx, c, &v);
	else if ((r = cache_list(c, NULL, 0, ctl_cache_verify_key_cb,
	    &v)) != 0) {
		ctl_errorf(ctx, "cache verify: %s", cache_strerror(r));
		rc = CTL_EXIT_FAIL;
	}
	if (rc != CTL_EXIT_OK)
		goto out;
	if (ctx->json) {
		o = cJSON_CreateObject();
		v.entries = cJSON_AddArrayToObject(o, "entries");
	}
	for (i = 0; i < v.n; i++)
		ctl_cache_verify_one(ctx, c, &v, i);
	if (o != NULL) {
		cJSON_AddNumberToObject(o, "checked", (double)v.n);
		cJSON_AddNumberToObject(o, "ok", v.ok);
		cJSON_AddNumberToObject(o, "missing", v.missing);
		cJSON_AddNumberToObject(o, "corrupt", v.corrupt);
		cJSON_AddNumberToObject(o, "failed", v.failed);
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "verified %zu: %u ok, %u missing, %u "
		    "corrupt, %u failed\n", v.n, v.ok, v.missing, v.corrupt,
		    v.failed);
	if (rc == CTL_EXIT_OK && v.bad > 0)
		rc = CTL_EXIT_FAIL;
out:
	for (i = 0; i < v.n; i++)
		free(v.keys[i]);
	free(v.keys);
	cache_close(c);
	ctl_manifest_release(&m);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_verify_cmd = {
	.name = "cache verify",
	.usage = "[MANIFEST] [--cache-dir DIR | --state-dir DIR]",
	.help = "check that every entry (or every kernel of MANIFEST) is "
	    "present and matches its digest",
	.opts = ctl_cache_verify_opts,
	.args = { 0, 1, NULL },
	.exec = ctl_cache_verify_exec,
};
