/* rpc_cache_export.c: CacheExport, a server stream: the bundle is built off the loop into a nameless temp file, then read off the loop and sent in 1 MiB chunks, one in flight. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <uv.h>

#include "nkid.pb-c.h"

#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/dispatch_error.h"
#include "daemon/kcache.h"
#include "daemon/kernel.h"
#include "daemon/log.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

/* Bytes of one CacheChunk, and of the write buffer of the build. */
#define EXPORT_CHUNK	(1024 * 1024)

struct rpc_cache_export {
	struct rpc_call	 *c;
	const char *const *keys;	/* borrowed from c->req */
	size_t		  nkeys;
	int		  pinned_only;
	int64_t		  viewer;	/* kernel_viewer's */
	int		  fd;		/* the bundle; -1 before it exists */
	uint8_t		 *buf;		/* EXPORT_CHUNK bytes */
	size_t		  buffered;	/* build: bytes in buf not written */
	uint64_t	  size;		/* of the bundle */
	uint64_t	  sent;		/* bytes read and handed to gRPC */
	unsigned	  count;	/* entries */
	int		  rc;		/* of the build: 0 or a cache_err */
	int		  werr;		/* errno of a failed write */
	char		  err[1024];
	uv_fs_t		  fsreq;
	uint64_t	  t0;
};

static void	rpc_cache_export_read(struct rpc_cache_export *x);

/* c->job_release: the call is gone and nothing of ours is in flight. */
static void
rpc_cache_export_release_cb(void *arg)
{
	struct rpc_cache_export	*x = arg;

	if (x->fd != -1)
		close(x->fd);
	free(x->buf);
	free(x);
}

/* Off the loop: write buffered bytes to the bundle. 0 or -1 (errno). */
static int
rpc_cache_export_flush(struct rpc_cache_export *x)
{
	size_t	off = 0;
	ssize_t	n;

	while (off < x->buffered) {
		if ((n = write(x->fd, x->buf + off, x->buffered - off)) == -1) {
			if (errno == EINTR)
				continue;
			x->werr = errno;
			return (-1);
		}
		off += (size_t)n;
	}
	x->size += x->buffered;
	x->buffered = 0;
	return (0);
}

/* Off the loop: cache_bundle_export's writer. A client gone stops it. */
static int
rpc_cache_export_write_cb(void *arg, const void *p, size_t n)
{
	struct rpc_cache_export	*x = arg;
	const uint8_t		*b = p;
	size_t			 k;

	if (__atomic_load_n(&x->c->cancelled, __ATOMIC_ACQUIRE)) {
		errno = ECANCELED;
		return (-1);
	}
	while (n > 0) {
		if (x->buffered == EXPORT_CHUNK &&
		    rpc_cache_export_flush(x) == -1)
			return (-1);
		k = EXPORT_CHUNK - x->buffered;
		if (k > n)
			k = n;
		memcpy(x->buf + x->buffered, b, k);
		x->buffered += k;
		b += k;
		n -= k;
	}
	return (0);
}

/* Off the loop: build the whole bundle into a temp file of the cache. */
static void
rpc_cache_export_build_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_export	*x = arg;
	int			 fd;

	if ((fd = cache_bundle_tmp_open(disk, x->err, sizeof x->err)) < 0) {
		x->rc = fd;
		return;
	}
	x->fd = fd;
	x->rc = cache_bundle_export(disk, x->viewer, x->keys, x->nkeys,
	    x->pinned_only, rpc_cache_export_write_cb, x, &x->count, x->err,
	    sizeof x->err);
	if (x->rc == 0 && rpc_cache_export_flush(x) == -1) {
		snprintf(x->err, sizeof x->err, "cannot write the bundle: %s",
		    strerror(x->werr));
		x->rc = CACHE_EIO;
	}
	/* A disk full while writing shows as a write error. */
	if (x->rc == CACHE_EIO && (x->werr == ENOSPC || x->werr == EDQUOT))
		x->rc = CACHE_ENOSPC;
}

static void
rpc_cache_export_gone(struct rpc_cache_export *x)
{
	log_info("CacheExport to uid %u pid %u: the client went away after "
	    "%llu of %llu bytes", x->c->id.uid, x->c->id.pid,
	    (unsigned long long)x->sent, (unsigned long long)x->size);
	rpc_finish(x->c, GRPC_STATUS_CANCELLED, "CacheExport: the client went "
	    "away after %llu of %llu bytes; the bundle is discarded",
	    (unsigned long long)x->sent, (unsigned long long)x->size);
}

static void
rpc_cache_export_sent_cb(struct rpc_call *c, int ok)
{
	struct rpc_cache_export	*x = c->job;

	if (!ok || c->cancelled) {
		rpc_cache_export_gone(x);
		return;
	}
	rpc_cache_export_read(x);
}

static void
rpc_cache_export_read_cb(uv_fs_t *req)
{
	struct rpc_cache_export	*x = req->data;
	struct rpc_call		*c = x->c;
	Nkid__V1__CacheChunk	 chunk = NKID__V1__CACHE_CHUNK__INIT;
	ssize_t			 n = req->result;

	uv_fs_req_cleanup(req);
	if (c->cancelled) {
		rpc_cache_export_gone(x);
		return;
	}
	if (n <= 0) {
		rpc_finish(c, GRPC_STATUS_INTERNAL, "CacheExport: cannot read "
		    "the bundle at byte %llu: %s", (unsigned long long)x->sent,
		    n == 0 ? "it shrank" : uv_strerror((int)n));
		return;
	}
	chunk.data.data = x->buf;
	chunk.data.len = (size_t)n;
	x->sent += (uint64_t)n;
	if (rpc_stream_send(c, &chunk.base, rpc_cache_export_sent_cb) != 0)
		rpc_cache_export_gone(x);
}

/* Read the next chunk off the loop, or end the call after the last. */
static void
rpc_cache_export_read(struct rpc_cache_export *x)
{
	struct rpc_call	*c = x->c;
	uv_buf_t	 b;
	uint64_t	 left = x->size - x->sent;
	int		 error;

	if (left == 0) {
		log_info("CacheExport to uid %u pid %u: %u entr%s, %llu bytes "
		    "in %.1f ms", c->id.uid, c->id.pid, x->count,
		    x->count == 1 ? "y" : "ies", (unsigned long long)x->size,
		    (double)(uv_hrtime() - x->t0) / 1e6);
		rpc_finish(c, GRPC_STATUS_OK, NULL);
		return;
	}
	b = uv_buf_init((char *)x->buf, left < EXPORT_CHUNK ?
	    (unsigned)left : EXPORT_CHUNK);
	x->fsreq.data = x;
	if ((error = uv_fs_read(c->d->loop, &x->fsreq, x->fd, &b, 1,
	    (int64_t)x->sent, rpc_cache_export_read_cb)) != 0)
		rpc_finish(c, GRPC_STATUS_INTERNAL, "CacheExport: cannot read "
		    "the bundle: %s", uv_strerror(error));
}

static void
rpc_cache_export_built_cb(void *arg)
{
	struct rpc_cache_export	*x = arg;
	struct rpc_call		*c = x->c;

	if (c->cancelled) {
		rpc_cache_export_gone(x);
		return;
	}
	if (x->rc != 0) {
		rpc_fail(c, dispatch_status_cache_export(x->rc),
		    "cannot export: %s", x->err);
		return;
	}
	log_debug("CacheExport to pid %u: %u entries, %llu bytes built in "
	    "%.1f ms", c->id.pid, x->count, (unsigned long long)x->size,
	    (double)(uv_hrtime() - x->t0) / 1e6);
	rpc_cache_export_read(x);
}

static void
rpc_cache_export(struct rpc_call *c)
{
	const Nkid__V1__CacheExportRequest	*req = (const void *)c->req;
	struct rpc_cache_export			*x;
	size_t					 i;

	if (req->pinned_only && req->n_keys > 0) {
		rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "CacheExport: "
		    "pinned_only and keys exclude each other");
		return;
	}
	for (i = 0; i < req->n_keys; i++) {
		if (!cache_key_valid(req->keys[i])) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "cannot "
			    "export: '%.80s' is not a NEFF key (64 lower-case "
			    "hex digits)", req->keys[i]);
			return;
		}
	}
	/* The bundle is hashed on the thread pool: libcrypto starts here. */
	cache_crypto_init();
	x = xcalloc(1, sizeof *x);
	x->c = c;
	x->keys = (const char *const *)req->keys;
	x->nkeys = req->n_keys;
	x->pinned_only = req->pinned_only;
	x->viewer = kernel_viewer(c);
	x->fd = -1;
	x->buf = xmalloc(EXPORT_CHUNK);
	x->t0 = uv_hrtime();
	rpc_cache_stream_async(c, "CacheExport", x, rpc_cache_export_release_cb,
	    rpc_cache_export_build_cb, rpc_cache_export_built_cb);
}

const struct rpc_method rpc_cache_export_method = {
	DISPATCH_METHOD_NAME("CacheExport"), .kind = RPC_SERVER_STREAM,
	.cap = CONFIG_CAP_CONTROL, .handler = rpc_cache_export,
};
