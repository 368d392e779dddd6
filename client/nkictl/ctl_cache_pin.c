/* ctl_cache_pin.c: `nkictl cache pin KEY...` and `nkictl cache unpin KEY...`: pinned entries are never evicted (a deployment set). */
#include "ctl_cache.h"

static int
ctl_cache_pin_key_cb(struct cache *c, const char *key, void *arg)
{
	const int	*unpin = arg;

	return (cache_pin(c, key, !*unpin));
}

static void
ctl_cache_pin_result_cb(const ProtobufCMessage *reply, uint32_t *done,
    char *const **missing, size_t *n_missing)
{
	const Nkid__V1__CachePinReply	*r = (const void *)reply;

	*done = r->changed;
	*missing = r->missing;
	*n_missing = r->n_missing;
}

static void
ctl_cache_pin_set_cb(ProtobufCMessage *req, char **keys, size_t n)
{
	Nkid__V1__CachePinRequest	*r = (void *)req;

	r->keys = keys;
	r->n_keys = n;
}

static int
ctl_cache_pin_already_cb(const Nkid__V1__CacheEntry *e, void *arg)
{
	const int	*unpin = arg;

	return (e->pinned == !*unpin);
}

/* cache pin and cache unpin. */
static int
ctl_cache_pin_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CachePinRequest req = NKID__V1__CACHE_PIN_REQUEST__INIT;
	struct ctl_cache_keys	  k;
	int			  unpin;

	unpin = ctx->cmd == &ctl_cache_unpin_cmd;
	req.unpin = unpin;
	k.method = "CachePin";
	k.reply = &nkid__v1__cache_pin_reply__descriptor;
	k.fn = ctl_cache_pin_key_cb;
	k.arg = &unpin;
	k.result = ctl_cache_pin_result_cb;
	k.what = "changed";
	k.verb = unpin ? "unpinned" : "pinned";
	k.already = ctl_cache_pin_already_cb;
	return (ctl_cache_keys_run(ctx, a, &req.base, ctl_cache_pin_set_cb,
	    &k));
}

const struct ctl_cmd ctl_cache_pin_cmd = {
	.name = "cache pin",
	.usage = CTL_CACHE_KEYS_USAGE,
	.help = "pin cache entries (keys or unique prefixes): never evicted",
	.opts = ctl_cache_opts_dir,
	.args = CTL_CACHE_KEYS_ARGS,
	.exec = ctl_cache_pin_exec,
};

const struct ctl_cmd ctl_cache_unpin_cmd = {
	.name = "cache unpin",
	.usage = CTL_CACHE_KEYS_USAGE,
	.help = "unpin cache entries (keys or unique prefixes)",
	.opts = ctl_cache_opts_dir,
	.args = CTL_CACHE_KEYS_ARGS,
	.exec = ctl_cache_pin_exec,
};
