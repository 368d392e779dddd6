/*
 * ctl_cache_rm.c: `nkictl cache rm KEY...`: remove entries, through nkid
 * or in a cache directory.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_rm_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		CTL_LONGOPTS_COMMON, CTL_CACHE_LONGOPTS_DIR, { 0, 0, 0, 0 } };
	Nkid__V1__CacheRemoveRequest req = NKID__V1__CACHE_REMOVE_REQUEST__INIT;
	Nkid__V1__CacheRemoveReply *r = NULL,
	    off = NKID__V1__CACHE_REMOVE_REPLY__INIT;
	ctl_cache_where w = { NULL };
	struct cache *c = NULL;
	size_t i;
	int rc = 0, opt;

	while ((opt = ctl_opt_next(ctx, argc, argv, "", longopts, &rc)) != -1) {
		if (opt == CTL_OPT_DONE)
			goto out;
		if (!ctl_cache_where_opt(&w, opt, optarg)) {
			rc = ctl_usage_fail(ctx, "unexpected option");
			goto out;
		}
	}
	if (optind == argc) {
		rc = ctl_usage_fail(ctx, "give at least one KEY");
		goto out;
	}
	req.keys = argv + optind;
	req.n_keys = argc - optind;
	if (w.dir != NULL) {
		if ((rc = ctl_cache_open(ctx, &w, 0, &c)) != 0)
			goto out;
		off.missing = calloc(req.n_keys, sizeof(char *));
		for (i = 0; i < req.n_keys; i++) {
			if (cache_remove(c, req.keys[i]) == 0)
				off.removed++;
			else
				off.missing[off.n_missing++] = req.keys[i];
		}
		r = &off;
	} else if ((rc = ctl_call(ctx, "CacheRemove", &req.base,
	    &nkid__v1__cache_remove_reply__descriptor,
	    (ProtobufCMessage **)&r)) != 0)
		goto out;
	if (ctx->json) {
		cJSON *o = cJSON_CreateObject(), *a;

		cJSON_AddNumberToObject(o, "removed", r->removed);
		a = cJSON_AddArrayToObject(o, "missing");
		for (i = 0; a != NULL && i < r->n_missing; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(
			    r->missing[i]));
		rc = ctl_json_print(ctx, o);
	} else {
		fprintf(ctx->out, "removed %u entr%s\n", r->removed,
		    r->removed == 1 ? "y" : "ies");
		for (i = 0; i < r->n_missing; i++)
			ctl_errorf(ctx, "cache rm: no entry '%s'",
			    r->missing[i]);
	}
	if (rc == 0 && r->n_missing > 0)
		rc = CTL_EXIT_FAIL;
out:
	if (r == &off)
		free(off.missing);
	else if (r != NULL)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	cache_close(c);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_rm_cmd = {
	.name = "cache rm",
	.usage = "KEY... [--cache-dir DIR | --state-dir DIR]",
	.help = "remove cache entries",
	.exec = ctl_cache_rm_exec,
};
