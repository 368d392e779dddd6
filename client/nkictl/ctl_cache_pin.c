/*
 * ctl_cache_pin.c: `nkictl cache pin KEY...` and `nkictl cache unpin
 * KEY...`: pinned entries are never evicted (a deployment set).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

static int
ctl_cache_pin_key_cb(struct cache *c, const char *key, void *arg)
{
	const int *unpin = arg;

	return cache_pin(c, key, !*unpin);
}

static int
ctl_cache_pin_run(ctl_ctx *ctx, int argc, char **argv, int unpin)
{
	Nkid__V1__CachePinRequest req = NKID__V1__CACHE_PIN_REQUEST__INIT;
	Nkid__V1__CachePinReply *r = NULL, off = NKID__V1__CACHE_PIN_REPLY__INIT;
	ctl_cache_where w = { NULL };
	int rc;

	if (ctl_cache_keys_parse(ctx, argc, argv, &w, &req.keys, &req.n_keys,
	    &rc) < 0)
		goto out;
	req.unpin = unpin;
	if (w.dir != NULL) {
		if ((rc = ctl_cache_keys_apply(ctx, &w, req.keys, req.n_keys,
		    ctl_cache_pin_key_cb, &unpin, &off.changed, &off.missing,
		    &off.n_missing)) != 0)
			goto out;
		r = &off;
	} else if ((rc = ctl_call(ctx, "CachePin", &req.base,
	    &nkid__v1__cache_pin_reply__descriptor, (ProtobufCMessage **)&r))
	    != 0)
		goto out;
	rc = ctl_cache_keys_print(ctx, "changed", unpin ? "unpinned" :
	    "pinned", r->changed, r->missing, r->n_missing);
out:
	free(off.missing);
	if (r != NULL && r != &off)
		protobuf_c_message_free_unpacked(&r->base, NULL);
	ctl_cache_where_release(&w);
	return rc;
}

static int
ctl_cache_pin_exec(ctl_ctx *ctx, int argc, char **argv)
{
	return ctl_cache_pin_run(ctx, argc, argv, 0);
}

static int
ctl_cache_unpin_exec(ctl_ctx *ctx, int argc, char **argv)
{
	return ctl_cache_pin_run(ctx, argc, argv, 1);
}

const ctl_cmd ctl_cache_pin_cmd = {
	.name = "cache pin",
	.usage = "KEY... [--cache-dir DIR | --state-dir DIR]",
	.help = "pin cache entries: never evicted",
	.exec = ctl_cache_pin_exec,
};

const ctl_cmd ctl_cache_unpin_cmd = {
	.name = "cache unpin",
	.usage = "KEY... [--cache-dir DIR | --state-dir DIR]",
	.help = "unpin cache entries",
	.exec = ctl_cache_unpin_exec,
};
