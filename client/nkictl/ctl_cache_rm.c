/* ctl_cache_rm.c: `nkictl cache rm KEY...`: remove entries, through nkid or in a cache directory. */
#include "ctl_cache.h"

static int
ctl_cache_rm_key_cb(struct cache *c, const char *key, void *arg)
{
	return (cache_remove(c, key));
}

static void
ctl_cache_rm_result_cb(const ProtobufCMessage *reply, uint32_t *done,
    char *const **missing, size_t *n_missing)
{
	const Nkid__V1__CacheRemoveReply	*r = (const void *)reply;

	*done = r->removed;
	*missing = r->missing;
	*n_missing = r->n_missing;
}

static const struct ctl_cache_keys ctl_cache_rm_keys = {
	.method = "CacheRemove",
	.reply = &nkid__v1__cache_remove_reply__descriptor,
	.fn = ctl_cache_rm_key_cb,
	.result = ctl_cache_rm_result_cb,
	.what = "removed",
	.verb = "removed",
};

static void
ctl_cache_rm_set_cb(ProtobufCMessage *req, char **keys, size_t n)
{
	Nkid__V1__CacheRemoveRequest	*r = (void *)req;

	r->keys = keys;
	r->n_keys = n;
}

static int
ctl_cache_rm_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CacheRemoveRequest req = NKID__V1__CACHE_REMOVE_REQUEST__INIT;

	return (ctl_cache_keys_run(ctx, a, &req.base, ctl_cache_rm_set_cb,
	    &ctl_cache_rm_keys));
}

const struct ctl_cmd ctl_cache_rm_cmd = {
	.name = "cache rm",
	.usage = CTL_CACHE_KEYS_USAGE,
	.help = "remove cache entries (keys or unique prefixes)",
	.opts = ctl_cache_opts_dir,
	.args = CTL_CACHE_KEYS_ARGS,
	.exec = ctl_cache_rm_exec,
};
