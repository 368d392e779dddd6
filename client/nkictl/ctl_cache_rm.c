/*
 * ctl_cache_rm.c: `nkictl cache rm KEY...`: remove entries, through nkid
 * or in a cache directory.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_rm_key_cb(struct cache *c, const char *key, void *arg)
{
	return cache_remove(c, key);
}

static int
ctl_cache_rm_exec(ctl_ctx *ctx, int argc, char **argv)
{
	Nkid__V1__CacheRemoveRequest req = NKID__V1__CACHE_REMOVE_REQUEST__INIT;
	Nkid__V1__CacheRemoveReply *r = NULL,
	    off = NKID__V1__CACHE_REMOVE_REPLY__INIT;
	ctl_cache_where w = { NULL };
	int rc;

	if (ctl_cache_keys_parse(ctx, argc, argv, &w, &req.keys, &req.n_keys,
	    &rc) < 0)
		goto out;
	if (w.dir != NULL) {
		if ((rc = ctl_cache_keys_apply(ctx, &w, req.keys, req.n_keys,
		    ctl_cache_rm_key_cb, NULL, &off.removed, &off.missing,
		    &off.n_missing)) != 0)
			goto out;
		r = &off;
	} else if ((rc = ctl_call(ctx, "CacheRemove", &req.base,
	    &nkid__v1__cache_remove_reply__descriptor,
	    (ProtobufCMessage **)&r)) != 0)
		goto out;
	rc = ctl_cache_keys_print(ctx, "removed", "removed", r->removed,
	    r->missing, r->n_missing);
out:
	free(off.missing);
	if (r != NULL && r != &off)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	ctl_cache_where_release(&w);
	return rc;
}

const ctl_cmd ctl_cache_rm_cmd = {
	.name = "cache rm",
	.usage = "KEY... [--cache-dir DIR | --state-dir DIR]",
	.help = "remove cache entries",
	.exec = ctl_cache_rm_exec,
};
