/* ctl_cache_export.c: `nkictl cache export FILE [--pinned | KEY...]`: a self-verifying bundle from nkid (CacheExport) or, with --offline, from a cache directory (docs/cache.md), written to FILE through a temp file that is synced, checked and renamed: never a partial FILE, and never in place of anything but a regular file (`-`: standard output). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ctl_cache.h"

/* The temp file a signal removes (nkictl handles one export at a time). */
static volatile sig_atomic_t	ctl_cache_export_armed;
static char			ctl_cache_export_tmp[4096];

static void
ctl_cache_export_signal_cb(int sig)
{
	if (ctl_cache_export_armed)
		unlink(ctl_cache_export_tmp);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Where the bytes go: the temp file, and the progress line. */
struct ctl_cache_export_out {
	int			fd;
	unsigned long long	bytes;
	int			error;	/* errno of a failed write */
	struct ctl_progress	progress;
};

static int
ctl_cache_export_write_cb(void *arg, const void *p, size_t n)
{
	struct ctl_cache_export_out	*o = arg;
	const char			*b = p;
	ssize_t				 w;

	while (n > 0) {
		if ((w = write(o->fd, b, n)) == -1) {
			if (errno == EINTR)
				continue;
			o->error = errno;
			return (-1);
		}
		b += w;
		n -= (size_t)w;
		o->bytes += (unsigned long long)w;
	}
	ctl_progress_set(&o->progress, o->bytes);
	return (0);
}

/* --offline: the bundle from the cache directory. */
static int
ctl_cache_export_offline(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    char **keys, size_t nkeys, int pinned, struct ctl_cache_export_out *o)
{
	struct cache	*c = NULL;
	unsigned	 count;
	char		 err[1024];
	int		 rc;

	if ((rc = ctl_cache_open(ctx, w, 1, &c)) != 0)
		return (rc);
	if (cache_bundle_export(c, CACHE_VIEW_ALL,
	    (const char *const *)keys, nkeys, pinned,
	    ctl_cache_export_write_cb, o, &count, err, sizeof err) != 0) {
		ctl_errorf(ctx, "cache export: %s", err);
		rc = CTL_EXIT_FAIL;
	}
	cache_close(c);
	return (rc);
}

/* The bundle from nkid: one CacheExport stream. */
static int
ctl_cache_export_online(struct ctl_ctx *ctx, char **keys, size_t nkeys,
    int pinned,
    struct ctl_cache_export_out *o, const char *tmp)
{
	Nkid__V1__CacheExportRequest req = NKID__V1__CACHE_EXPORT_REQUEST__INIT;
	Nkid__V1__CacheChunk		*chunk;
	struct ctl_rpc_stream		*cs = NULL;
	struct ctl_rpc_status		 st;
	int				 rc, r;

	if ((rc = ctl_connect(ctx)) != CTL_EXIT_OK)
		return (rc);
	if (ctl_rpc_stream_open(ctx->rpc, "CacheExport", ctx->timeout_s, &cs,
	    &st) != 0)
		return (ctl_call_fail(ctx, &st));
	req.pinned_only = pinned;
	req.keys = keys;
	req.n_keys = nkeys;
	if (ctl_rpc_stream_send(cs, &req.base) == 0)
		ctl_rpc_stream_close_send(cs);
	for (;;) {
		r = ctl_rpc_stream_recv(cs, &nkid__v1__cache_chunk__descriptor,
		    -1, (ProtobufCMessage **)&chunk);
		if (r != 1)
			break;
		r = ctl_cache_export_write_cb(o, chunk->data.data,
		    chunk->data.len);
		protobuf_c_message_free_unpacked(&chunk->base, NULL);
		if (r != 0) {
			ctl_errorf(ctx, "cache export: cannot write '%s': %s",
			    tmp, strerror(o->error));
			rc = CTL_EXIT_FAIL;
			goto out;
		}
	}
	if (ctl_rpc_stream_finish(cs, &st) != 0)
		rc = ctl_call_fail(ctx, &st);
	else if (r != 0) {
		ctl_errorf(ctx, "cache export: a malformed CacheChunk from "
		    "nkid");
		rc = CTL_EXIT_FAIL;
	}
out:
	ctl_rpc_stream_free(cs);
	return (rc);
}

/*
 * About how many bytes the bundle of keys (or the pinned entries, or all)
 * will have, for the progress line's ETA: the entries' sizes (a bundle
 * adds its headers). 0 if unknown.
 */
static uint64_t
ctl_cache_export_estimate(struct ctl_ctx *ctx, const struct ctl_cache_where *w,
    char **keys, size_t nkeys, int pinned)
{
	struct ctl_cache_listing	 l;
	const Nkid__V1__CacheEntry	*e;
	uint64_t			 total = 0;
	size_t				 i, j;

	memset(&l, 0, sizeof l);
	if (ctl_cache_listing_get(ctx, w, "", 0, &l) == 0)
		for (i = 0; i < l.r->n_entries; i++) {
			e = l.r->entries[i];
			for (j = 0; j < nkeys; j++)
				if (strcmp(keys[j], e->key) == 0)
					break;
			if (nkeys > 0 ? j < nkeys : !pinned || e->pinned)
				total += e->size;
		}
	ctl_cache_listing_release(&l);
	return (total);
}

/*
 * 0 if path is free to be replaced by the bundle: nothing there, or a
 * regular file (a symbolic link, a device, a FIFO or a directory is never
 * replaced). Else prints why and returns CTL_EXIT_FAIL.
 */
static int
ctl_cache_export_target_ok(struct ctl_ctx *ctx, const char *path)
{
	struct stat	sb;
	const char	*what;

	if (lstat(path, &sb) == -1)
		return (errno == ENOENT ? 0 : (ctl_errorf(ctx, "cache export: "
		    "cannot check '%s': %s", path, strerror(errno)),
		    CTL_EXIT_FAIL));
	if (S_ISREG(sb.st_mode))
		return (0);
	what = S_ISLNK(sb.st_mode) ? "a symbolic link" : S_ISCHR(sb.st_mode) ?
	    "a character device" : S_ISBLK(sb.st_mode) ? "a block device" :
	    S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISDIR(sb.st_mode) ?
	    "a directory" : S_ISSOCK(sb.st_mode) ? "a socket" :
	    "not a regular file";
	ctl_errorf(ctx, "cache export: '%s' is %s: a bundle replaces only a "
	    "regular file (use - for standard output)", path, what);
	return (CTL_EXIT_FAIL);
}

/* Copy the checked bundle in fd to standard output. */
static int
ctl_cache_export_stdout(struct ctl_ctx *ctx, int fd)
{
	char	buf[65536];
	ssize_t	n, w, off;

	if (lseek(fd, 0, SEEK_SET) == -1)
		goto fail;
	fflush(ctx->out);
	while ((n = read(fd, buf, sizeof buf)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			goto fail;
		for (off = 0; off < n; off += w)
			if ((w = write(STDOUT_FILENO, buf + off, n - off)) ==
			    -1) {
				ctl_errorf(ctx, "cache export: cannot write to "
				    "standard output: %s", strerror(errno));
				return (CTL_EXIT_FAIL);
			}
	}
	return (CTL_EXIT_OK);
fail:
	ctl_errorf(ctx, "cache export: cannot read the bundle back: %s",
	    strerror(errno));
	return (CTL_EXIT_FAIL);
}

/* fsync the directory of path, so that the rename lasts. */
static void
ctl_cache_export_sync_dir(const char *path)
{
	char	*copy = strdup(path);
	int	 fd;

	if (copy == NULL)
		abort();
	if ((fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) !=
	    -1) {
		fsync(fd);
		close(fd);
	}
	free(copy);
}

/*
 * Make the bundle written to o->fd (the temp file) FILE at path: synced,
 * checked as an import would check it (its entries counted into *count),
 * closed and renamed. Returns CTL_EXIT_OK or CTL_EXIT_FAIL (printed).
 */
static int
ctl_cache_export_finish(struct ctl_ctx *ctx, struct ctl_cache_export_out *o,
    const char *path, unsigned *count)
{
	char	err[1024];
	int	fd = o->fd, r;

	o->fd = -1;
	if (fsync(fd) != 0) {
		close(fd);
		goto fail;
	}
	if (cache_bundle_verify_fd(fd, path, count, err, sizeof err) != 0) {
		close(fd);
		ctl_errorf(ctx, "cache export: %s", err);
		return (CTL_EXIT_FAIL);
	}
	if (strcmp(path, "-") == 0) {
		r = ctl_cache_export_stdout(ctx, fd);
		close(fd);
		return (r);
	}
	if (close(fd) != 0)
		goto fail;
	/* Checked again: what may have appeared at path meanwhile. */
	if ((r = ctl_cache_export_target_ok(ctx, path)) != 0)
		return (r);
	if (rename(ctl_cache_export_tmp, path) == -1) {
		ctl_errorf(ctx, "cache export: cannot rename to '%s': %s", path,
		    strerror(errno));
		return (CTL_EXIT_FAIL);
	}
	ctl_cache_export_armed = 0;
	ctl_cache_export_sync_dir(path);
	return (CTL_EXIT_OK);
fail:
	ctl_errorf(ctx, "cache export: cannot write '%s': %s",
	    ctl_cache_export_tmp, strerror(errno));
	return (CTL_EXIT_FAIL);
}

static const struct ctl_opt ctl_cache_export_opts[] = {
	{ 0, "pinned", NULL, "export the pinned entries (default: all)" },
	CTL_CACHE_OPT_OFFLINE,
	CTL_CACHE_OPTS_DIR,
	CTL_OPT_END
};

static int
ctl_cache_export_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	static const int		 sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	struct ctl_cache_where		 w = { 0, NULL };
	struct ctl_cache_export_out	 o;
	struct sigaction		 sa, old[3];
	const char			*path = a->argv[0], *tmpdir;
	char				**keys = NULL;
	cJSON				*j;
	char				 size[32];
	unsigned			 count = 0;
	uint64_t			 total = 0;
	mode_t				 mask;
	size_t				 nkeys = (size_t)(a->argc - 1);
	int				 rc, i, pinned, armed = 0;

	memset(&o, 0, sizeof o);
	o.fd = -1;
	pinned = ctl_args_has(a, "pinned") > 0;
	if ((rc = ctl_cache_where_get(ctx, a, &w)) != 0)
		goto out;
	if (pinned && nkeys > 0) {
		rc = ctl_usage_fail(ctx, "--pinned and KEY... exclude each "
		    "other");
		goto out;
	}
	if ((rc = ctl_cache_keys_resolve(ctx, &w, a->argv + 1, nkeys,
	    &keys)) != 0)
		goto out;
	if (isatty(fileno(ctx->err)))
		total = ctl_cache_export_estimate(ctx, &w, keys, nkeys,
		    pinned);
	ctl_progress_init(&o.progress, ctx, "export", NULL, total);
	if (strcmp(path, "-") != 0 &&
	    (rc = ctl_cache_export_target_ok(ctx, path)) != 0)
		goto out;
	/* Standard output: built and checked in a temp file first. */
	tmpdir = getenv("TMPDIR");
	if (tmpdir == NULL || *tmpdir != '/')
		tmpdir = "/tmp";
	if ((strcmp(path, "-") == 0 ? snprintf(ctl_cache_export_tmp,
	    sizeof ctl_cache_export_tmp, "%s/nkictl-export.XXXXXX", tmpdir) :
	    snprintf(ctl_cache_export_tmp, sizeof ctl_cache_export_tmp,
	    "%s.XXXXXX", path)) >= (int)sizeof ctl_cache_export_tmp) {
		rc = ctl_usage_fail(ctx, "the path '%s' is too long", path);
		goto out;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = ctl_cache_export_signal_cb;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	armed = 1;
	if ((o.fd = mkostemp(ctl_cache_export_tmp, O_CLOEXEC)) == -1) {
		ctl_errorf(ctx, "cache export: cannot write '%s': %s", path,
		    strerror(errno));
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	ctl_cache_export_armed = 1;
	if (strcmp(path, "-") == 0) {
		/* Nameless from now on: nothing to leave behind. */
		unlink(ctl_cache_export_tmp);
		ctl_cache_export_armed = 0;
	}
	/* A bundle is an ordinary file: the umask's mode, not mkstemp's. */
	mask = umask(0);
	umask(mask);
	fchmod(o.fd, 0666 & ~mask);

	if (w.offline)
		rc = ctl_cache_export_offline(ctx, &w, keys, nkeys, pinned,
		    &o);
	else
		rc = ctl_cache_export_online(ctx, keys, nkeys, pinned, &o,
		    ctl_cache_export_tmp);
	ctl_progress_end(&o.progress);
	if (rc != CTL_EXIT_OK ||
	    (rc = ctl_cache_export_finish(ctx, &o, path, &count)) !=
	    CTL_EXIT_OK)
		goto out;
	if (strcmp(path, "-") == 0)
		fprintf(ctx->err, "exported %u entr%s to standard output "
		    "(%s)\n", count, count == 1 ? "y" : "ies",
		    ctl_fmt_bytes(o.bytes, size, sizeof size));
	else if (ctx->json) {
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "bundle", path);
		cJSON_AddNumberToObject(j, "entries", count);
		cJSON_AddNumberToObject(j, "bytes", (double)o.bytes);
		cJSON_AddBoolToObject(j, "offline", w.offline);
		rc = ctl_json_print(ctx, j);
	} else
		fprintf(ctx->out, "exported %u entr%s to %s (%s)\n", count,
		    count == 1 ? "y" : "ies", path, ctl_fmt_bytes(o.bytes, size,
		    sizeof size));
out:
	ctl_progress_end(&o.progress);
	ctl_cache_keys_free(keys, keys != NULL ? nkeys : 0);
	if (o.fd != -1)
		close(o.fd);
	if (ctl_cache_export_armed) {
		unlink(ctl_cache_export_tmp);
		ctl_cache_export_armed = 0;
	}
	if (armed)
		for (i = 0; i < 3; i++)
			sigaction(sigs[i], &old[i], NULL);
	ctl_cache_where_release(&w);
	return (rc);
}

const struct ctl_cmd ctl_cache_export_cmd = {
	.name = "cache export",
	.usage = "FILE [--pinned | KEY...] [--offline] [--cache-dir DIR | "
	    "--state-dir DIR]",	/* KEY: a key or a unique prefix of one */
	.help = "write cache entries to a self-verifying bundle (through nkid, "
	    "or --offline from a cache directory)",
	.about =
	    "KEY is a key or a unique prefix of one. FILE is written\n"
	    "through a temp file that is synced and checked before it is\n"
	    "renamed; it replaces only a regular file (never a device,\n"
	    "FIFO, directory or symbolic link); - writes the checked bundle\n"
	    "to standard output. On a terminal a progress line shows bytes,\n"
	    "rate and ETA.\n",
	.opts = ctl_cache_export_opts,
	.args = { 1, -1, "FILE (the bundle to write)" },
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_cache_export_exec,
};
