/* cache_verify.c: CacheVerify: entries (every one, or those named) read back and checked against their digests, each with the state and message that nkid and nkictl report, and the parameters a compiled cpu image declares. */
#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache_impl.h"
#include "sim/sim.h"

/* What an answer of cache_get means for CacheVerify; any other is
 * CACHE_VERIFY_ERROR with cache_strerror's words. */
static const struct cache_verify_outcome {
	int			 rc;
	enum cache_verify_state	 state;
	const char		*message;	/* NULL: none */
} cache_verify_outcomes[] = {
	{ 0, CACHE_VERIFY_OK, NULL },
	{ CACHE_EFAILED, CACHE_VERIFY_FAILED, NULL },
	{ CACHE_ESTALE, CACHE_VERIFY_STALE,
	    "compiled by another backend or compiler version" },
	{ CACHE_ENOENT, CACHE_VERIFY_MISSING, NULL },
	{ CACHE_ECORRUPT, CACHE_VERIFY_CORRUPT,
	    "its blob does not match its digest" },
};
#define CACHE_VERIFY_NOUTCOMES \
	(sizeof cache_verify_outcomes / sizeof cache_verify_outcomes[0])

static char *
cache_verify_strdup(const char *s)
{
	char	*d;

	if ((d = strdup(s != NULL ? s : "")) == NULL)
		abort();
	return (d);
}

struct cache_verify_item *
cache_verify_add(struct cache_verify *v, const char *key, const char *kernel)
{
	struct cache_verify_item	*it;

	assert(strlen(key) <= CACHE_KEY_LEN);
	v->items = reallocarray(v->items, v->n + 1, sizeof *v->items);
	if (v->items == NULL)
		abort();
	it = &v->items[v->n++];
	memset(it, 0, sizeof *it);
	snprintf(it->key, sizeof it->key, "%s", key);
	it->kernel = cache_verify_strdup(kernel);
	it->message = cache_verify_strdup("");
	return (it);
}

void
cache_verify_set(struct cache_verify_item *it, enum cache_verify_state s,
    const char *fmt, ...)
{
	va_list	ap;

	it->state = s;
	free(it->message);
	if (fmt == NULL) {
		it->message = cache_verify_strdup("");
		return;
	}
	va_start(ap, fmt);
	if (vasprintf(&it->message, fmt, ap) < 0)
		abort();
	va_end(ap);
}

/* The parameters of a cpu image into it; none if img is not one. */
static void
cache_verify_signature(struct cache_verify_item *it, const void *img,
    size_t len)
{
	const struct sim_sig		*s;
	struct cache_verify_param	*p;
	struct sim_program		*prog;
	struct sim_diag			 diag;
	size_t				 i, j;

	if (sim_program_load(img, len, &prog, &diag) != SIM_OK)
		return;
	it->nparams = sim_program_nparams(prog);
	if ((it->params = calloc(it->nparams + 1, sizeof *it->params)) == NULL)
		abort();
	for (i = 0; i < it->nparams; i++) {
		s = sim_program_param(prog, i);
		p = &it->params[i];
		p->name = cache_verify_strdup(s->name);
		p->dtype = sim_dtype_name(s->dtype) != NULL ?
		    sim_dtype_name(s->dtype) : "";
		p->rank = (size_t)s->rank;
		if ((p->shape = calloc(p->rank + 1, sizeof *p->shape)) == NULL)
			abort();
		for (j = 0; j < p->rank; j++)
			p->shape[j] = s->shape[j];
	}
	sim_program_free(prog);
}

/* Nonzero if v's viewer may not see key's entry (which may not exist). */
static int
cache_verify_hidden(struct cache *c, const struct cache_verify *v,
    const char *key)
{
	struct cache_entry	e;
	int			r, hidden = 0;

	r = cache_get(c, key, CACHE_GET_ANY, &e);
	if (r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE) {
		hidden = !cache_entry_visible(&e, v->viewer);
		cache_entry_release(&e);
	}
	return (hidden);
}

/* Read and check one entry of v. */
static void
cache_verify_one(struct cache *c, const struct cache_verify *v,
    struct cache_verify_item *it, int flags)
{
	const struct cache_verify_outcome	*o = NULL;
	struct cache_entry			 e;
	size_t					 i;
	int					 r, filled;

	/* Before the blob is read: an entry of another is not even
	 * verified (a corrupt one would say it exists). */
	if (v->filter && !it->proven && cache_verify_hidden(c, v, it->key))
		r = CACHE_ENOENT;
	else
		r = cache_get(c, it->key, CACHE_GET_DATA |
		    ((flags & CACHE_VERIFY_ALL) ? CACHE_GET_ANY : 0), &e);
	filled = r == 0 || r == CACHE_EFAILED || r == CACHE_ESTALE;
	if (filled && it->kernel[0] == '\0') {
		free(it->kernel);
		it->kernel = cache_verify_strdup(e.kernel);
	}
	for (i = 0; i < CACHE_VERIFY_NOUTCOMES; i++)
		if (cache_verify_outcomes[i].rc == r)
			o = &cache_verify_outcomes[i];
	if (o == NULL)
		cache_verify_set(it, CACHE_VERIFY_ERROR, "%s",
		    cache_strerror(r));
	else if (o->state == CACHE_VERIFY_CORRUPT && !c->readonly)
		cache_verify_set(it, o->state, "%s: quarantined", o->message);
	else if (o->state == CACHE_VERIFY_FAILED && e.log != NULL &&
	    e.log[0] != '\0')
		/* A cached failure says why: the compiler's first line. */
		cache_verify_set(it, o->state, "%.*s",
		    (int)strcspn(e.log, "\n"), e.log);
	else if (o->state == CACHE_VERIFY_FAILED)
		cache_verify_set(it, o->state, "the compile failed (no log)");
	else if (o->message != NULL)
		cache_verify_set(it, o->state, "%s", o->message);
	else
		cache_verify_set(it, o->state, NULL);
	if (r == 0 && (flags & CACHE_VERIFY_SIGNATURES))
		cache_verify_signature(it, e.data, e.len);
	if (filled)
		cache_entry_release(&e);
}

static int
cache_verify_list_cb(void *arg, const struct cache_entry *e)
{
	struct cache_verify	*v = arg;

	/* Listed for the viewer: checked without asking again. */
	if (!v->filter || cache_entry_visible(e, v->viewer))
		cache_verify_add(v, e->key, e->kernel)->proven = 1;
	return (0);
}

int
cache_verify_run(struct cache *c, struct cache_verify *v, int flags,
    const volatile int *cancel)
{
	size_t	i;
	int	rc;

	if ((flags & CACHE_VERIFY_ALL) &&
	    (rc = cache_list(c, NULL, 0, cache_verify_list_cb, v)) != 0)
		return (rc);
	for (i = 0; i < v->n && (cancel == NULL || !*cancel); i++)
		if (v->items[i].state == CACHE_VERIFY_UNCHECKED)
			cache_verify_one(c, v, &v->items[i], flags);
	return (0);
}

void
cache_verify_release(struct cache_verify *v)
{
	struct cache_verify_item	*it;
	size_t				 i, j;

	for (i = 0; i < v->n; i++) {
		it = &v->items[i];
		free(it->kernel);
		free(it->message);
		for (j = 0; j < it->nparams; j++) {
			free(it->params[j].name);
			free(it->params[j].shape);
		}
		free(it->params);
	}
	free(v->items);
	v->items = NULL;
	v->n = 0;
}
