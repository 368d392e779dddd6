/* ctl_cache_import.c: `nkictl cache import FILE`: send a bundle to nkid (CacheImport), which verifies it and imports it all or nothing; or, with --offline, do that in the cache directory of a stopped nkid. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

/* Bytes of one CacheChunk (nkid's default cap is 16 MiB). */
#define CTL_CACHE_IMPORT_CHUNK	(1024 * 1024)

/* --offline: import into the cache directory. */
static int
ctl_cache_import_offline(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    const char *path, Nkid__V1__CacheImportReply *r)
{
	struct cache	*c = NULL;
	unsigned	 imported, skipped;
	char		 err[1024];
	int		 rc;

	if ((rc = ctl_cache_open(ctx, w, 0, &c)) != 0)
		return (rc);
	if (cache_bundle_import(c, path, &imported, &skipped, err,
	    sizeof err) != 0) {
		ctl_errorf(ctx, "cache import: %s", err);
		rc = CTL_EXIT_FAIL;
	} else {
		r->imported = imported;
		r->skipped = skipped;
	}
	cache_close(c);
	return (rc);
}

/*
 * nkid names an uploaded bundle "upload from pid N" (it never sees the
 * file): say FILE instead in its message.
 */
static void
ctl_cache_import_name(struct ctl_rpc_status *st, const char *path)
{
	char	upload[64], *at, rest[sizeof st->msg];

	snprintf(upload, sizeof upload, "'upload from pid %ld'",
	    (long)getpid());
	if ((at = strstr(st->msg, upload)) == NULL)
		return;
	snprintf(rest, sizeof rest, "%s", at + strlen(upload));
	snprintf(at, sizeof st->msg - (size_t)(at - st->msg), "'%s'%s", path,
	    rest);
}

/* Stream FILE to nkid; nkid answers once it has imported it, or why not. */
static int
ctl_cache_import_online(struct ctl_ctx *ctx, const char *path,
    Nkid__V1__CacheImportReply *r)
{
	Nkid__V1__CacheChunk chunk = NKID__V1__CACHE_CHUNK__INIT;
	Nkid__V1__CacheImportReply	*reply = NULL;
	struct ctl_rpc_stream		*cs = NULL;
	struct ctl_rpc_status		 st;
	struct ctl_progress		 pr;
	struct stat			 sb;
	uint64_t			 sent = 0;
	uint8_t				*buf = NULL;
	ssize_t				 n = 0;
	int				 rc, fd, got = 0;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1 ||
	    fstat(fd, &sb) == -1) {
		ctl_errorf(ctx, "cache import: cannot read bundle '%s': %s",
		    path, strerror(errno));
		if (fd != -1)
			close(fd);
		return (CTL_EXIT_FAIL);
	}
	ctl_progress_init(&pr, ctx, "import", NULL, S_ISREG(sb.st_mode) ?
	    (uint64_t)sb.st_size : 0);
	if ((buf = malloc(CTL_CACHE_IMPORT_CHUNK)) == NULL)
		abort();
	if ((rc = ctl_connect(ctx)) != CTL_EXIT_OK)
		goto out;
	if (ctl_rpc_stream_open(ctx->rpc, "CacheImport", ctx->timeout_s, &cs,
	    &st) != 0) {
		rc = ctl_call_fail(ctx, &st);
		goto out;
	}
	for (;;) {
		n = read(fd, buf, CTL_CACHE_IMPORT_CHUNK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		chunk.data.data = buf;
		chunk.data.len = (size_t)n;
		/* -1: nkid ended the call (its status says why). */
		if (ctl_rpc_stream_send(cs, &chunk.base) != 0)
			break;
		sent += (uint64_t)n;
		ctl_progress_set(&pr, sent);
	}
	ctl_progress_end(&pr);
	if (n == -1) {
		ctl_errorf(ctx, "cache import: cannot read bundle '%s': %s",
		    path, strerror(errno));
		rc = CTL_EXIT_FAIL;
		goto out;	/* the stream is cancelled: nothing imported */
	}
	if (n == 0) {
		ctl_rpc_stream_close_send(cs);
		got = ctl_rpc_stream_recv(cs,
		    &nkid__v1__cache_import_reply__descriptor, -1,
		    (ProtobufCMessage **)&reply) == 1;
	}
	if (ctl_rpc_stream_finish(cs, &st) != 0) {
		ctl_cache_import_name(&st, path);
		rc = ctl_call_fail(ctx, &st);
	} else if (!got) {
		ctl_errorf(ctx, "cache import: nkid sent no reply");
		rc = CTL_EXIT_FAIL;
	} else {
		r->imported = reply->imported;
		r->skipped = reply->skipped;
	}
out:
	ctl_progress_end(&pr);
	if (reply != NULL)
		protobuf_c_message_free_unpacked(&reply->base, NULL);
	ctl_rpc_stream_free(cs);
	free(buf);
	close(fd);
	return (rc);
}

static const struct ctl_opt ctl_cache_import_opts[] = {
	CTL_CACHE_OPT_OFFLINE,
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_import_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__CacheImportReply r = NKID__V1__CACHE_IMPORT_REPLY__INIT;
	struct ctl_cache_where		 w = { 0, NULL };
	cJSON				*o;
	int				 rc;

	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if (w.offline)
		rc = ctl_cache_import_offline(ctx, &w, a->argv[0], &r);
	else
		rc = ctl_cache_import_online(ctx, a->argv[0], &r);
	if (rc != 0)
		goto out;
	if (ctx->json) {
		o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "imported", r.imported);
		cJSON_AddNumberToObject(o, "skipped", r.skipped);
		cJSON_AddBoolToObject(o, "offline", w.offline);
		rc = ctl_json_print(ctx, o);
	} else
		fprintf(ctx->out, "imported %u entr%s (%u already present)\n",
		    r.imported, r.imported == 1 ? "y" : "ies", r.skipped);
out:
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_import_cmd = {
	.name = "cache import",
	.usage = "FILE [--offline] " CTL_CACHE_USAGE_DIR,
	.help = "import a bundle, all or nothing, after verifying every digest "
	    "(through nkid, or --offline into a cache directory)",
	.about =
	    "On a terminal a progress line shows the bytes sent, rate and\n"
	    "ETA. Importing through nkid is for root and nkid's own uid.\n",
	.opts = ctl_cache_import_opts,
	.args = { 1, 1, "FILE (the bundle)" },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_cache_import_exec,
};
