/* kcache_remote_fleet.c: compile once per fleet: the pull after a local miss, the fleet lock (SET NX PX, renewed, token-checked release), waiting for another host's compile, verification off the loop, and publishing a compile (push, tell the waiters, release the lock). */
#include <sys/queue.h>

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/kcache_remote.h"
#include "daemon/kcache_remote_impl.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

static int	kcache_remote_op_get(struct kcache_remote_op *);
static int	kcache_remote_op_lock(struct kcache_remote_op *);
static void	kcache_remote_op_next(struct kcache_remote_op *,
		    int (*)(struct kcache_remote_op *));
static void	kcache_remote_op_end(struct kcache_remote_op *, int, int);
static void	kcache_remote_tick_start(struct kcache_remote *);
static void	kcache_remote_tick_kick(struct kcache_remote *);

/* ------------------------------------------------------------ locks */

static void
kcache_remote_lock_free(struct kcache_remote_lock *lk)
{
	TAILQ_REMOVE(&lk->r->locks, lk, link);
	free(lk);
}

/* EVAL script on lk's key with its token (and arg, if not NULL). */
static int
kcache_remote_lock_eval(struct kcache_remote_lock *lk, const char *script,
    const char *arg, kcache_remote_reply_cb cb)
{
	const char	*argv[6];
	size_t		 argvlen[6];
	char		 name[sizeof KCACHE_REMOTE_LOCK + CACHE_KEY_LEN];

	snprintf(name, sizeof name, KCACHE_REMOTE_LOCK "%s", lk->key);
	argv[0] = "EVAL";
	argv[1] = script;
	argv[2] = "1";
	argv[3] = name;
	argv[4] = lk->token;
	argv[5] = arg;
	kcache_remote_lens(argv, argvlen, arg != NULL ? 6 : 5);
	return (kcache_remote_command(lk->r, cb, lk, arg != NULL ? 6 : 5, argv,
	    argvlen));
}

/* Release lk if it is still ours (token-checked), and free it. */
void
kcache_remote_lock_release(struct kcache_remote_lock *lk)
{
	if (!lk->lost)
		(void)kcache_remote_lock_eval(lk, KCACHE_REMOTE_LUA_RELEASE,
		    NULL, kcache_remote_ignore_cb);
	kcache_remote_lock_free(lk);
}

static void
kcache_remote_lock_renew_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	struct kcache_remote_lock	*lk;

	/* lk may be gone: find it by address among the held ones. */
	TAILQ_FOREACH(lk, &r->locks, link)
		if (lk == arg)
			break;
	if (lk == NULL)
		return;
	lk->renewing = 0;
	if (err != 0)
		return;
	if (rp->type == REDIS_REPLY_INTEGER && rp->integer == 1) {
		lk->renew_at = uv_now(r->loop) + r->lock_ms / 3;
		return;
	}
	lk->lost = 1;
	log_warn("remote tier '%s': the fleet lock of '%s' expired while it "
	    "was compiled here (remote.lock_ms %u too short, or nkid was "
	    "stopped?); another host may compile it too", r->url_text,
	    lk->key, r->lock_ms);
}

static void
kcache_remote_lock_renew(struct kcache_remote_lock *lk)
{
	char	ms[16];

	snprintf(ms, sizeof ms, "%u", lk->r->lock_ms);
	if (kcache_remote_lock_eval(lk, KCACHE_REMOTE_LUA_RENEW, ms,
	    kcache_remote_lock_renew_cb) == 0)
		lk->renewing = 1;
}

/* ------------------------------------------------------------ resolves */

static void
kcache_remote_op_free(struct kcache_remote_op *op)
{
	free(op->value);
	free(op);
}

/* End op: done runs, op is freed. */
static void
kcache_remote_op_end(struct kcache_remote_op *op, int outcome, int err)
{
	struct kcache_remote		*r = op->r;
	struct kcache_remote_lock	*lk = op->lk;

	if (op->waiting) {
		TAILQ_REMOVE(&r->waits, op, link);
		op->waiting = 0;
	}
	if (outcome != KCACHE_REMOTE_COMPILE && lk != NULL) {
		kcache_remote_lock_release(lk);
		lk = NULL;
	}
	op->done(op->arg, outcome, err, lk);
	kcache_remote_op_free(op);
}

/* End every wait not busy with a call (a busy one ends when it returns). */
void
kcache_remote_waits_end(struct kcache_remote *r, int outcome, int err)
{
	struct kcache_remote_op	*op;

	for (;;) {
		TAILQ_FOREACH(op, &r->waits, link)
			if (!op->busy)
				break;
		if (op == NULL)
			return;
		kcache_remote_op_end(op, outcome, err);
	}
}

static void
kcache_remote_op_verify_work_cb(uv_work_t *w)
{
	struct kcache_remote_op		*op = w->data;
	struct kcache_remote	*r = op->r;
	struct cache_entry	 ce;

	op->verify_rc = kcache_remote_entry_decode(r->fkey, r->fkeylen,
	    op->key, r->backend, r->compiler, op->value, op->len, &ce,
	    op->why, sizeof op->why);
	if (op->verify_rc != 0)
		return;
	op->taken = op->accept(op->arg, &ce) == 0;
	cache_entry_release(&ce);
}

static void
kcache_remote_op_verify_after_cb(uv_work_t *w, int status)
{
	struct kcache_remote_op		*op = w->data;
	struct kcache_remote	*r = op->r;

	r->work--;
	op->busy = 0;
	free(op->value);
	op->value = NULL;
	if (status != 0)
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE,
		    KCACHE_REMOTE_EIO);
	else if (op->verify_rc != 0) {
		r->st.rejected++;
		log_warn("remote tier '%s': entry '%s' rejected: %s; never "
		    "served, compiled here instead", r->url_text, op->key,
		    op->why);
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE,
		    KCACHE_REMOTE_EREJECT);
	} else if (op->taken) {
		r->st.hits++;
		r->st.pulled_bytes += op->len;
		kcache_remote_op_end(op, KCACHE_REMOTE_TAKEN, 0);
	} else
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, 0);
}

/* The value at op's key is not an entry at all: rejected, compiled here. */
static void
kcache_remote_op_reject(struct kcache_remote_op *op, const char *why)
{
	struct kcache_remote	*r = op->r;

	r->st.rejected++;
	log_warn("remote tier '%s': entry '%s' rejected: %s; never served, "
	    "compiled here instead", r->url_text, op->key, why);
	kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_EREJECT);
}

static void
kcache_remote_op_missing(struct kcache_remote_op *op)
{
	struct kcache_remote	*r = op->r;

	if (!op->missed) {
		op->missed = 1;
		r->st.misses++;
	}
	if ((op->flags & KCACHE_REMOTE_PULL_ONLY) || !r->writable ||
	    op->lk != NULL) {
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE,
		    KCACHE_REMOTE_ENOENT);
		return;
	}
	kcache_remote_op_next(op, kcache_remote_op_lock);
}

static void
kcache_remote_op_getrange_cb(struct kcache_remote *r, redisReply *rp,
    int err, void *arg)
{
	struct kcache_remote_op	*op = arg;

	op->busy = 0;
	if (err == KCACHE_REMOTE_EWRONGTYPE) {
		kcache_remote_op_reject(op, "it is not a string");
		return;
	}
	if (err == 0 && rp->type != REDIS_REPLY_STRING)
		err = KCACHE_REMOTE_EIO;
	if (err != 0) {
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, err);
		return;
	}
	if (rp->len == 0) {		/* gone since its STRLEN */
		kcache_remote_op_missing(op);
		return;
	}
	/* Take hiredis's buffer rather than copy it: it is malloc'd, and
	 * freeReplyObject frees a NULL str as nothing. */
	op->value = rp->str;
	op->len = rp->len;
	rp->str = NULL;
	rp->len = 0;
	op->busy = 1;
	op->work.data = op;
	r->work++;
	if (uv_queue_work(r->loop, &op->work, kcache_remote_op_verify_work_cb,
	    kcache_remote_op_verify_after_cb) != 0)
		fatal("cannot queue a remote entry's verification");
}

static void
kcache_remote_op_strlen_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	struct kcache_remote_op	*op = arg;
	const char		*argv[4];
	size_t			 argvlen[4];
	char			 name[CACHE_KEY_LEN + 32];
	char			 end[32];

	op->busy = 0;
	if (err == KCACHE_REMOTE_EWRONGTYPE) {
		kcache_remote_op_reject(op, "it is not a string");
		return;
	}
	if (err == 0 && rp->type != REDIS_REPLY_INTEGER)
		err = KCACHE_REMOTE_EIO;
	if (err != 0) {
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, err);
		return;
	}
	op->strlen = rp->integer;
	if (op->strlen <= 0) {
		kcache_remote_op_missing(op);
		return;
	}
	if ((uint64_t)op->strlen > r->max_bytes) {
		r->st.rejected++;
		log_warn("remote tier '%s': entry '%s' rejected: %lld bytes, "
		    "more than remote.max_entry_bytes (%llu), not read; "
		    "compiled here instead", r->url_text, op->key, op->strlen,
		    (unsigned long long)r->max_bytes);
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE,
		    KCACHE_REMOTE_ETOOBIG);
		return;
	}
	/* Read what STRLEN announced, no more (a value that grew since is
	 * cut, and fails its framing check). */
	snprintf(name, sizeof name, KCACHE_REMOTE_NEFF "%s", op->key);
	snprintf(end, sizeof end, "%lld", op->strlen - 1);
	argv[0] = "GETRANGE";
	argv[1] = name;
	argv[2] = "0";
	argv[3] = end;
	kcache_remote_lens(argv, argvlen, 4);
	if ((err = kcache_remote_command_sized(r, kcache_remote_op_getrange_cb,
	    op, 4, argv, argvlen, (uint64_t)op->strlen)) != 0) {
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, err);
		return;
	}
	op->busy = 1;
}

/* STRLEN, then GETRANGE of that many bytes if it is within
 * remote.max_entry_bytes: a larger value is never read. Returns 0, or an
 * error (nothing sent). */
static int
kcache_remote_op_get(struct kcache_remote_op *op)
{
	struct kcache_remote	*r = op->r;
	const char		*argv[2];
	size_t			 argvlen[2];
	char			 name[CACHE_KEY_LEN + 32];
	int			 err;

	snprintf(name, sizeof name, KCACHE_REMOTE_NEFF "%s", op->key);
	argv[0] = "STRLEN";
	argv[1] = name;
	kcache_remote_lens(argv, argvlen, 2);
	op->strlen = -1;
	if ((err = kcache_remote_command(r, kcache_remote_op_strlen_cb, op, 2,
	    argv, argvlen)) != 0)
		return (err);
	op->busy = 1;
	return (0);
}

/* The next step of op (kcache_remote_op_get, kcache_remote_op_lock), or
 * its end if it cannot be sent. */
static void
kcache_remote_op_next(struct kcache_remote_op *op,
    int (*step)(struct kcache_remote_op *))
{
	int	err;

	if ((err = step(op)) != 0)
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, err);
}

static void
kcache_remote_op_wait(struct kcache_remote_op *op)
{
	struct kcache_remote	*r = op->r;
	uint64_t		 now = uv_now(r->loop);

	if (!op->waited) {
		op->waited = 1;
		r->st.locks_waited++;
		op->wait_end = now + r->wait_ms;
		log_debug("remote tier '%s': '%s' is being compiled by another "
		    "host; waiting for it", r->url_text, op->key);
	}
	if (now >= op->wait_end) {
		log_info("remote tier '%s': waited %u ms for another host's "
		    "compile of '%s' (remote.lock_wait_ms); compiling it here",
		    r->url_text, r->wait_ms, op->key);
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE,
		    KCACHE_REMOTE_ENOENT);
		return;
	}
	op->waiting = 1;
	if (op->woken)
		op->next_poll = now;
	else
		op->next_poll = now + r->poll_ms;
	TAILQ_INSERT_TAIL(&r->waits, op, link);
	kcache_remote_tick_start(r);
}

/* A lock no host of the fleet set: ignore it (counted, logged once) and
 * compile here without a lock; the push that follows serves the fleet. */
static void
kcache_remote_op_lock_ignore(struct kcache_remote_op *op, const char *why)
{
	struct kcache_remote	*r = op->r;

	r->st.locks_ignored++;
	if (!r->ignored_logged) {
		r->ignored_logged = 1;
		log_warn("remote tier '%s': the fleet lock of '%s' is not "
		    "one a host of the fleet set (%s): ignored, compiled "
		    "here (logged once; counted in locks_ignored)",
		    r->url_text, op->key, why);
	} else
		log_debug("remote tier '%s': the fleet lock of '%s' ignored "
		    "(%s)", r->url_text, op->key, why);
	kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, KCACHE_REMOTE_ENOENT);
}

static void
kcache_remote_op_lock_taken(struct kcache_remote_op *op)
{
	struct kcache_remote		*r = op->r;
	struct kcache_remote_lock	*lk;

	lk = xcalloc(1, sizeof *lk);
	lk->r = r;
	memcpy(lk->key, op->key, sizeof lk->key);
	memcpy(lk->token, op->token, sizeof lk->token);
	lk->renew_at = uv_now(r->loop) + r->lock_ms / 3;
	TAILQ_INSERT_TAIL(&r->locks, lk, link);
	kcache_remote_tick_start(r);
	op->lk = lk;
	r->st.locks_taken++;
	/* Another host may have pushed it and released its lock between
	 * our pull and this lock: pull once more. */
	kcache_remote_op_next(op, kcache_remote_op_get);
}

/* The answer to SET NX PX: OK (ours), nil (held), anything else odd. */
static void
kcache_remote_op_set_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	struct kcache_remote_op	*op = arg;

	if (err != 0)
		op->lock_set = -1;
	else if (rp->type == REDIS_REPLY_STATUS)
		op->lock_set = 1;
	else if (rp->type == REDIS_REPLY_NIL)
		op->lock_set = 0;
	else
		op->lock_set = -1;
}

/* The answer to TYPE: a status ("string", "hash", "none", ...). */
static void
kcache_remote_op_type_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	struct kcache_remote_op	*op = arg;

	op->lock_type[0] = '\0';
	if (err == 0 && rp->type == REDIS_REPLY_STATUS && rp->str != NULL)
		snprintf(op->lock_type, sizeof op->lock_type, "%s", rp->str);
}

/* The answer to PTTL, last of the three: decide. */
static void
kcache_remote_op_lock_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	struct kcache_remote_op	*op = arg;
	char			 why[96];

	op->busy = 0;
	if (err == 0 && (rp->type != REDIS_REPLY_INTEGER ||
	    op->lock_set < 0 || op->lock_type[0] == '\0'))
		err = KCACHE_REMOTE_EIO;
	if (err != 0) {
		kcache_remote_op_end(op, KCACHE_REMOTE_COMPILE, err);
		return;
	}
	if (op->lock_set == 1) {
		kcache_remote_op_lock_taken(op);
		return;
	}
	/* Held. By a host of the fleet only if it is a string whose time
	 * to live is set and no longer than a lock of ours. */
	if (strcmp(op->lock_type, "none") == 0 || rp->integer == -2) {
		/* Released between SET and TYPE: try again at the poll. */
		kcache_remote_op_wait(op);
		return;
	}
	if (strcmp(op->lock_type, "string") != 0) {
		snprintf(why, sizeof why, "a %.16s, not a string",
		    op->lock_type);
		kcache_remote_op_lock_ignore(op, why);
		return;
	}
	if (rp->integer < 0) {
		kcache_remote_op_lock_ignore(op, "it never expires");
		return;
	}
	if ((unsigned long long)rp->integer > r->lock_ms) {
		snprintf(why, sizeof why, "it expires in %lld ms, more than "
		    "remote.lock_ms %u", rp->integer, r->lock_ms);
		kcache_remote_op_lock_ignore(op, why);
		return;
	}
	kcache_remote_op_wait(op);
}

/* SET the lock NX PX lock_ms with a token of ours, and in the same round
 * trip its TYPE and PTTL (whose lock it is, if not ours). Returns 0, or
 * an error (nothing sent). */
static int
kcache_remote_op_lock(struct kcache_remote_op *op)
{
	struct kcache_remote	*r = op->r;
	const char		*argv[6];
	size_t			 argvlen[6];
	char			 name[CACHE_KEY_LEN + 32];
	char			 ms[16];
	int			 err;

	snprintf(name, sizeof name, KCACHE_REMOTE_LOCK "%s", op->key);
	snprintf(ms, sizeof ms, "%u", r->lock_ms);
	snprintf(op->token, sizeof op->token, "%s:%llu", r->token_base,
	    (unsigned long long)++r->token_seq);
	argv[0] = "SET";
	argv[1] = name;
	argv[2] = op->token;
	argv[3] = "NX";
	argv[4] = "PX";
	argv[5] = ms;
	kcache_remote_lens(argv, argvlen, 6);
	op->lock_set = -1;
	op->lock_type[0] = '\0';
	if ((err = kcache_remote_command(r, kcache_remote_op_set_cb, op, 6,
	    argv, argvlen)) != 0)
		return (err);
	/* Cannot fail right after SET went: same connection, same turn. */
	argv[0] = "TYPE";
	kcache_remote_lens(argv, argvlen, 2);
	(void)kcache_remote_command(r, kcache_remote_op_type_cb, op, 2, argv,
	    argvlen);
	argv[0] = "PTTL";
	kcache_remote_lens(argv, argvlen, 2);
	(void)kcache_remote_command(r, kcache_remote_op_lock_cb, op, 2, argv,
	    argvlen);
	op->busy = 1;
	return (0);
}

int
kcache_remote_resolve(struct kcache_remote *r, const char *key, int flags,
    kcache_remote_accept_cb accept, kcache_remote_done_cb done, void *arg)
{
	struct kcache_remote_op	*op;

	assert(r != NULL && cache_key_valid(key) && accept != NULL &&
	    done != NULL);
	if (!kcache_remote_usable(r)) {
		r->st.skipped++;
		return (KCACHE_REMOTE_EDOWN);
	}
	op = xcalloc(1, sizeof *op);
	op->r = r;
	memcpy(op->key, key, sizeof op->key);
	op->flags = flags;
	op->accept = accept;
	op->done = done;
	op->arg = arg;
	if (kcache_remote_op_get(op) != 0) {
		kcache_remote_op_free(op);
		r->st.skipped++;
		return (KCACHE_REMOTE_EDOWN);
	}
	return (0);
}

/* ------------------------------------------------------------ the tick */

static void
kcache_remote_tick_cb(uv_timer_t *t)
{
	struct kcache_remote		*r = t->data;
	struct kcache_remote_lock	*lk;
	struct kcache_remote_op			*op;
	uint64_t			 now = uv_now(r->loop);

	if (r->stopping != NULL && *r->stopping)
		kcache_remote_waits_end(r, KCACHE_REMOTE_STOP,
		    KCACHE_REMOTE_EDOWN);
	for (;;) {
		TAILQ_FOREACH(op, &r->waits, link)
			if (!op->busy && (now >= op->next_poll ||
			    now >= op->wait_end))
				break;
		if (op == NULL)
			break;
		TAILQ_REMOVE(&r->waits, op, link);
		op->waiting = 0;
		if (now >= op->wait_end) {
			kcache_remote_op_wait(op);		/* ends it */
			continue;
		}
		/* Told that a compile ended: pull. Else (a poll) try the
		 * lock: free again if the holder died or ended. */
		if (op->woken) {
			op->woken = 0;
			kcache_remote_op_next(op, kcache_remote_op_get);
		} else
			kcache_remote_op_next(op, kcache_remote_op_lock);
	}
	TAILQ_FOREACH(lk, &r->locks, link)
		if (!lk->renewing && !lk->lost && now >= lk->renew_at)
			kcache_remote_lock_renew(lk);
	if (TAILQ_EMPTY(&r->waits) && TAILQ_EMPTY(&r->locks))
		uv_timer_stop(&r->tick);
}

/* Tick every poll_ms while there are waits or locks. */
static void
kcache_remote_tick_start(struct kcache_remote *r)
{
	if (!r->closing && !uv_is_active((uv_handle_t *)&r->tick))
		uv_timer_start(&r->tick, kcache_remote_tick_cb, r->poll_ms,
		    r->poll_ms);
}

/* Tick now: a wait was told its compile ended. */
static void
kcache_remote_tick_kick(struct kcache_remote *r)
{
	if (!r->closing)
		uv_timer_start(&r->tick, kcache_remote_tick_cb, 0, r->poll_ms);
}

void
kcache_remote_wake(struct kcache_remote *r, const char *key)
{
	struct kcache_remote_op	*op;
	int			 n = 0;

	TAILQ_FOREACH(op, &r->waits, link) {
		if (strcmp(op->key, key) != 0)
			continue;
		op->woken = 1;
		op->next_poll = 0;
		n++;
	}
	if (n > 0)
		kcache_remote_tick_kick(r);
}

/* ------------------------------------------------------------ publish */

static void
kcache_remote_publish_cb(struct kcache_remote *r, redisReply *rp, int err,
    void *arg)
{
	if (err != 0 || rp->type != REDIS_REPLY_STATUS)
		return;
	r->st.pushes++;
	r->st.pushed_bytes += (uintptr_t)arg;
}

void
kcache_remote_publish(struct kcache_remote *r, const char *key,
    struct kcache_remote_lock *lk, void *value, size_t len, int failed)
{
	const char	*argv[3];
	size_t		 argvlen[3];
	int		 err = KCACHE_REMOTE_EDOWN;

	assert(r != NULL && key != NULL);
	if (value != NULL && r->writable && kcache_remote_usable(r))
		kcache_remote_set(r, key, value, len, failed,
		    kcache_remote_publish_cb,
		    (void *)(uintptr_t)len, &err);
	else if (value != NULL && r->writable)
		r->st.skipped++;
	/* hiredis has copied the value into its buffer. */
	free(value);
	if (lk != NULL)
		kcache_remote_lock_release(lk);
	if (err != 0 && lk == NULL)
		return;
	argv[0] = "PUBLISH";
	argv[1] = r->channel;
	argv[2] = key;
	kcache_remote_lens(argv, argvlen, 3);
	(void)kcache_remote_command(r, kcache_remote_ignore_cb, NULL, 3, argv,
	    argvlen);
}
