/* rpc_cache_import.c: CacheImport, a client stream: chunks are spooled off the loop to a nameless temp file of the cache (at most cache.max_bundle_bytes), then the bundle is verified and imported all or nothing off the loop. */
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
#include "daemon/log.h"
#include "daemon/rpc_cache.h"
#include "daemon/xmalloc.h"

/*
 * Past cache.max_bundle_bytes the rest of the upload is read and dropped,
 * so that the client, blocked sending, learns the status when it ends its
 * stream; past this many dropped bytes nkid answers at once.
 */
#define RPC_CACHE_IMPORT_DRAIN_MAX	((uint64_t)256 << 20)

struct rpc_cache_import {
	struct rpc_call		*c;
	int			 fd;		/* the spool; -1 before */
	uint64_t		 size;		/* bytes spooled */
	uint64_t		 max;		/* cache.max_bundle_bytes */
	uint64_t		 dropped;	/* bytes read past max */
	int			 denied;	/* the caller may not import */
	Nkid__V1__CacheChunk	*chunk;		/* being written */
	size_t			 done;		/* of chunk, written */
	uv_fs_t			 fsreq;
	unsigned		 imported;
	unsigned		 skipped;
	int			 rc;		/* 0 or a cache_err */
	char			 name[64];	/* the bundle, in messages */
	char			 err[1024];
	uint64_t		 t0;
};

static void	rpc_cache_import_chunk_cb(struct rpc_call *c,
		    ProtobufCMessage *msg);

/* c->job_release: the call is gone and nothing of ours is in flight. */
static void
rpc_cache_import_release_cb(void *arg)
{
	struct rpc_cache_import	*x = arg;

	if (x->chunk != NULL)
		protobuf_c_message_free_unpacked(&x->chunk->base, NULL);
	if (x->fd != -1)
		close(x->fd);
	free(x);
}

static void
rpc_cache_import_gone(struct rpc_cache_import *x)
{
	log_info("CacheImport from uid %u pid %u: the client went away after "
	    "%llu bytes; nothing imported", x->c->id.uid, x->c->id.pid,
	    (unsigned long long)x->size);
	rpc_finish(x->c, GRPC_STATUS_CANCELLED, "CacheImport: the client went "
	    "away after %llu bytes; nothing imported",
	    (unsigned long long)x->size);
}

/* Off the loop: verify and import the spooled bundle. */
static void
rpc_cache_import_work_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_import	*x = arg;

	/* The entries are the importing uid's (uids differ between
	 * hosts: the exporter's would name someone else here). */
	x->rc = cache_bundle_import_fd(disk, x->fd, x->name,
	    (int64_t)x->c->id.uid, &x->c->cancelled, &x->imported,
	    &x->skipped, x->err, sizeof x->err);
}

static void
rpc_cache_import_done_cb(void *arg)
{
	struct rpc_cache_import		*x = arg;
	struct rpc_call			*c = x->c;
	Nkid__V1__CacheImportReply	 r = NKID__V1__CACHE_IMPORT_REPLY__INIT;

	if (x->rc != 0 && c->cancelled) {
		rpc_cache_import_gone(x);
		return;
	}
	if (x->rc != 0) {
		log_info("CacheImport from uid %u pid %u refused: %s",
		    c->id.uid, c->id.pid, x->err);
		rpc_fail(c, dispatch_status_cache_import(x->rc), "%s", x->err);
		return;
	}
	log_info("CacheImport from uid %u pid %u: %u entr%s imported, %u "
	    "already present (%llu bytes in %.1f ms)", c->id.uid, c->id.pid,
	    x->imported, x->imported == 1 ? "y" : "ies", x->skipped,
	    (unsigned long long)x->size, (double)(uv_hrtime() - x->t0) / 1e6);
	r.imported = x->imported;
	r.skipped = x->skipped;
	rpc_reply(c, &r.base);
}

static void	rpc_cache_import_write(struct rpc_cache_import *x);

static void
rpc_cache_import_written_cb(uv_fs_t *req)
{
	struct rpc_cache_import	*x = req->data;
	struct rpc_call		*c = x->c;
	ssize_t			 n = req->result;

	uv_fs_req_cleanup(req);
	if (c->cancelled) {
		rpc_cache_import_gone(x);
		return;
	}
	if (n < 0) {
		rpc_fail(c, n == UV_ENOSPC || n == -EDQUOT ?
		    GRPC_STATUS_RESOURCE_EXHAUSTED : GRPC_STATUS_INTERNAL,
		    "CacheImport: cannot spool the bundle at byte %llu: %s; "
		    "nothing imported", (unsigned long long)x->size,
		    uv_strerror((int)n));
		return;
	}
	x->done += (size_t)n;
	x->size += (uint64_t)n;
	if (x->done < x->chunk->data.len) {
		rpc_cache_import_write(x);
		return;
	}
	protobuf_c_message_free_unpacked(&x->chunk->base, NULL);
	x->chunk = NULL;
	if (rpc_stream_recv(c, rpc_cache_import_chunk_cb) != 0)
		rpc_fail(c, GRPC_STATUS_INTERNAL, "CacheImport: cannot receive");
}

/* Write the rest of x->chunk off the loop (pwrite at x->size). */
static void
rpc_cache_import_write(struct rpc_cache_import *x)
{
	uv_buf_t	b;
	int		error;

	b = uv_buf_init((char *)x->chunk->data.data + x->done,
	    (unsigned)(x->chunk->data.len - x->done));
	x->fsreq.data = x;
	if ((error = uv_fs_write(x->c->d->loop, &x->fsreq, x->fd, &b, 1,
	    (int64_t)x->size, rpc_cache_import_written_cb)) != 0)
		rpc_fail(x->c, GRPC_STATUS_INTERNAL, "CacheImport: cannot "
		    "spool the bundle: %s", uv_strerror(error));
}

static void
rpc_cache_import_too_big(struct rpc_cache_import *x)
{
	uint32_t	self = (uint32_t)geteuid();

	if (x->denied)
		rpc_fail(x->c, GRPC_STATUS_PERMISSION_DENIED, "CacheImport "
		    "writes the cache every client is served from: only root "
		    "or nkid's own uid %u may import (you are uid %u)", self,
		    x->c->id.uid);
	else
		rpc_fail(x->c, GRPC_STATUS_RESOURCE_EXHAUSTED, "CacheImport: "
		    "the bundle is larger than %llu bytes "
		    "(cache.max_bundle_bytes); nothing imported",
		    (unsigned long long)x->max);
}

static void
rpc_cache_import_chunk_cb(struct rpc_call *c, ProtobufCMessage *msg)
{
	struct rpc_cache_import	*x = c->job;
	Nkid__V1__CacheChunk	*chunk = (Nkid__V1__CacheChunk *)msg;

	if (msg == NULL) {
		if (c->cancelled) {
			rpc_cache_import_gone(x);
			return;
		}
		if (x->dropped > 0 || x->denied) {
			rpc_cache_import_too_big(x);
			return;
		}
		if (x->size == 0) {
			rpc_fail(c, GRPC_STATUS_INVALID_ARGUMENT, "CacheImport: "
			    "the stream ended without a bundle");
			return;
		}
		kcache_async(c->d->kcache, rpc_cache_import_work_cb,
		    rpc_cache_import_done_cb, x);
		return;
	}
	if (x->dropped > 0 || chunk->data.len > x->max - x->size) {
		/* Too big: read the rest and drop it (bounded), then say so. */
		x->dropped += chunk->data.len;
		protobuf_c_message_free_unpacked(msg, NULL);
		if (x->dropped > RPC_CACHE_IMPORT_DRAIN_MAX ||
		    rpc_stream_recv(c, rpc_cache_import_chunk_cb) != 0)
			rpc_cache_import_too_big(x);
		return;
	}
	if (chunk->data.len == 0) {
		protobuf_c_message_free_unpacked(msg, NULL);
		if (rpc_stream_recv(c, rpc_cache_import_chunk_cb) != 0)
			rpc_fail(c, GRPC_STATUS_INTERNAL, "CacheImport: cannot "
			    "receive");
		return;
	}
	x->chunk = chunk;
	x->done = 0;
	rpc_cache_import_write(x);
}

/* Off the loop: the spool file. */
static void
rpc_cache_import_open_cb(struct cache *disk, void *arg)
{
	struct rpc_cache_import	*x = arg;
	int			 fd;

	if ((fd = cache_bundle_tmp_open(disk, x->err, sizeof x->err)) < 0)
		x->rc = fd;
	else
		x->fd = fd;
}

static void
rpc_cache_import_opened_cb(void *arg)
{
	struct rpc_cache_import	*x = arg;
	struct rpc_call		*c = x->c;

	if (x->rc != 0) {
		rpc_fail(c, dispatch_status_cache_import(x->rc),
		    "CacheImport: %s", x->err);
		return;
	}
	if (c->cancelled) {
		rpc_cache_import_gone(x);
		return;
	}
	if (rpc_stream_recv(c, rpc_cache_import_chunk_cb) != 0)
		rpc_fail(c, GRPC_STATUS_INTERNAL, "CacheImport: cannot receive");
}

/*
 * Import writes the cache every client is served from: root and nkid's
 * own uid only (docs/cache.md, "Who may export and import").
 */
static void
rpc_cache_import(struct rpc_call *c)
{
	struct rpc_cache_import	*x;
	uint32_t		 self = (uint32_t)geteuid();

	if (c->id.uid != 0 && c->id.uid != self) {
		/* Refused, but only once the upload ends (its bytes are read
		 * and dropped), so that a client blocked sending hears it. */
		x = xcalloc(1, sizeof *x);
		x->c = c;
		x->fd = -1;
		x->denied = 1;
		c->job = x;
		c->job_release = rpc_cache_import_release_cb;
		if (rpc_stream_recv(c, rpc_cache_import_chunk_cb) != 0)
			rpc_cache_import_too_big(x);
		return;
	}
	/* The bundle is hashed on the thread pool: libcrypto starts here. */
	cache_crypto_init();
	x = xcalloc(1, sizeof *x);
	x->c = c;
	x->fd = -1;
	x->max = c->d->cfg.cache_max_bundle_bytes;
	x->t0 = uv_hrtime();
	snprintf(x->name, sizeof x->name, "upload from pid %u", c->id.pid);
	rpc_cache_stream_async(c, "CacheImport", x, rpc_cache_import_release_cb,
	    rpc_cache_import_open_cb, rpc_cache_import_opened_cb);
}

const struct rpc_method rpc_cache_import_method = {
	DISPATCH_METHOD_NAME("CacheImport"), .kind = RPC_CLIENT_STREAM,
	.cap = CONFIG_CAP_CHUNK, .handler = rpc_cache_import,
};
