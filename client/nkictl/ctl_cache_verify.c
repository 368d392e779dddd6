/*
 * ctl_cache_verify.c: `nkictl cache verify [MANIFEST]`: the deployment
 * gate. Reads every entry (or every kernel a manifest lists) from a cache
 * directory and checks its digest; exit 0 only if all are present and
 * verify.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

struct ctl_verify {
	char **keys;
	size_t n;
};

static int
ctl_verify_key_cb(void *arg, const struct cache_entry *e)
{
	struct ctl_verify *v = arg;

	if ((v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys))) ==
	    NULL || (v->keys[v->n] = strdup(e->key)) == NULL)
		abort();
	v->n++;
	return 0;
}

static int
ctl_cache_verify_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	struct ctl_verify v = { NULL, 0 };
	ctl_cache_where w = { NULL };
	ctl_manifest m = { NULL, 0 };
	struct cache *c = NULL;
	struct cache_entry e;
	struct cache_key_input in;
	Nkid__V1__KernelRef ref;
	cJSON *o = NULL, *a = NULL, *x;
	char err[1024], key[CACHE_KEY_LEN + 1], digest[CACHE_KEY_LEN + 1];
	const char *name, *state;
	unsigned ok = 0, bad = 0, failed = 0, missing = 0, corrupt = 0;
	size_t i;
	int rc = 0, opt, r;

	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (argc - optind > 1) {
		rc = ctl_usage_fail(ctx, "give at most one MANIFEST");
		goto out;
	}
	if (optind < argc && ctl_manifest_read(argv[optind], &m, err,
	    sizeof(err)) < 0) {
		ctl_errorf(ctx, "cache verify: %s", err);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if ((rc = ctl_cache_open(ctx, &w, 1, &c)) != 0)
		goto out;
	if (m.n > 0) {
		if (*cache_backend(c) == '\0') {
			ctl_errorf(ctx, "cache verify: the cache does not name "
			    "its compiler (nkid never ran on it)");
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		for (i = 0; i < m.n; i++) {
			ctl_manifest_ref(&m, i, &ref);
			memset(&in, 0, sizeof(in));
			in.format = ref.kernel->format;
			cache_digest_hex(ref.kernel->ir.data,
			    ref.kernel->ir.len, digest);
			in.ir_digest = digest;
			in.target = ref.target;
			in.options = ref.options;
			in.backend = cache_backend(c);
			in.compiler_version = cache_compiler_version(c);
			cache_key_compute(&in, key);
			ctl_verify_key_cb(&v, &(struct cache_entry){ .key = "" });
			free(v.keys[i]);
			v.keys[i] = strdup(key);
		}
	} else if ((r = cache_list(c, NULL, 0, ctl_verify_key_cb, &v)) != 0) {
		ctl_errorf(ctx, "cache verify: %s", cache_strerror(r));
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if (ctx->json) {
		o = cJSON_CreateObject();
		a = cJSON_AddArrayToObject(o, "entries");
	}
	for (i = 0; i < v.n; i++) {
		r = cache_get(c, v.keys[i], CACHE_GET_DATA |
		    (m.n > 0 ? 0 : CACHE_GET_ANY), &e);
		name = m.n > 0 ? m.items[i].path : (r == 0 || r ==
		    CACHE_EFAILED || r == CACHE_ESTALE) ? e.kernel : "";
		switch (r) {
		case 0:
			state = "ok";
			ok++;
			break;
		case CACHE_EFAILED:
			/* A cached failure is what a kernel of a manifest
			 * must not be; in a whole-cache check it is data. */
			state = "failed";
			failed++;
			if (m.n > 0)
				bad++;
			else
				ok++;
			break;
		case CACHE_ENOENT:
		case CACHE_ESTALE:
			state = "missing";
			missing++;
			bad++;
			break;
		case CACHE_ECORRUPT:
			state = "corrupt";
			corrupt++;
			bad++;
			break;
		default:
			state = cache_strerror(r);
			bad++;
			break;
		}
		if (a != NULL) {
			x = cJSON_CreateObject();
			cJSON_AddStringToObject(x, "key", v.keys[i]);
			cJSON_AddStringToObject(x, "kernel", name);
			cJSON_AddStringToObject(x, "state", state);
			cJSON_AddItemToArray(a, x);
		} else if (strcmp(state, "ok") != 0)
			fprintf(ctx->out, "%-8s %.16s  %s\n", state, v.keys[i],
			    name);
		if (r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE)
			cache_entry_release(&e);
	}
	if (o != NULL) {
		cJSON_AddNumberToObject(o, "checked", (double)v.n);
		cJSON_AddNumberToObject(o, "ok", ok);
		cJSON_AddNumberToObject(o, "missing", missing);
		cJSON_AddNumberToObject(o, "corrupt", corrupt);
		cJSON_AddNumberToObject(o, "failed", failed);
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "verified %zu: %u ok, %u missing, %u corrupt, "
		    "%u failed\n", v.n, ok, missing, corrupt, failed);
	if (rc == 0 && bad > 0)
		rc = CTL_EXIT_FAIL;
out:
	for (i = 0; i < v.n; i++)
		free(v.keys[i]);
	free(v.keys);
	cache_close(c);
	ctl_manifest_release(&m);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_verify_cmd = {
	.name = "cache verify",
	.usage = "[MANIFEST] [--cache-dir DIR | --state-dir DIR]",
	.help = "check that every entry (or every kernel of MANIFEST) is "
	    "present and matches its digest",
	.exec = ctl_cache_verify_exec,
};
