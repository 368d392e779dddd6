/* nkid.c: the daemon's entry point: options, config, start, signals, orderly stop. */
#include <sys/stat.h>

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <grpc/grpc.h>
#include <systemd/sd-daemon.h>
#include <uv.h>

#include "cache/cache.h"
#include "daemon/backend.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/fastpath.h"
#include "daemon/kcache.h"
#include "daemon/log.h"
#include "daemon/metrics_http.h"
#include "daemon/sched.h"
#include "daemon/server.h"

#ifndef NKID_VERSION
#define NKID_VERSION "unknown"
#endif

struct nkid_main {
	struct daemon	 d;
	const char	*config_path;	/* NULL: defaults only */
	int		 verbose;
	uv_signal_t	 sigterm;
	uv_signal_t	 sigint;
	uv_signal_t	 sighup;
	uv_timer_t	 watchdog;
	int		 watchdog_on;
	int		 stopped;
	int		 stops;		/* the server and the fast path */
};

static const struct option nkid_longopts[] = {
	{ "config",	required_argument,	NULL, 'c' },
	{ "socket",	required_argument,	NULL, 's' },
	{ "state-dir",	required_argument,	NULL, 'S' },
	{ "check",	no_argument,		NULL, 'n' },
	{ "verbose",	no_argument,		NULL, 'v' },
	{ "version",	no_argument,		NULL, 'V' },
	{ "help",	no_argument,		NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void
nkid_usage(FILE *f)
{
	fprintf(f,
	    "usage: nkid [-c FILE] [-s SOCKET] [--state-dir DIR] [-n] [-v] "
	    "[--version] [--help]\n"
	    "\n"
	    "  -c, --config FILE   read FILE (default %s if it exists)\n"
	    "  -s, --socket PATH   listen on PATH instead of the config's socket\n"
	    "      --state-dir DIR keep state in DIR and the cache in DIR/cache\n"
	    "  -n, --check         check the config and exit (with -v: print it)\n"
	    "  -v, --verbose       log at debug level\n"
	    "      --version       print the version and exit\n"
	    "  -h, --help          print this help and exit\n"
	    "\n"
	    "Signals: SIGTERM/SIGINT stop (queued jobs and new calls are answered\n"
	    "UNAVAILABLE, retryable; running calls get shutdown_grace_ms),\n"
	    "SIGHUP reloads the config. See docs/config.md.\n",
	    CONFIG_DEFAULT_PATH);
}

/* mkdir -p of path with mode for the directories it creates. */
static int
nkid_mkdirs(const char *path, mode_t mode)
{
	char	buf[4096], *p;

	if (strlen(path) >= sizeof buf) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	strcpy(buf, path);
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			return (-1);
		*p = '/';
	}
	if (mkdir(buf, mode) == -1 && errno != EEXIST)
		return (-1);
	return (0);
}

static void
nkid_handles_close(struct nkid_main *nm)
{
	uv_close((uv_handle_t *)&nm->sigterm, NULL);
	uv_close((uv_handle_t *)&nm->sigint, NULL);
	uv_close((uv_handle_t *)&nm->sighup, NULL);
	if (nm->watchdog_on)
		uv_close((uv_handle_t *)&nm->watchdog, NULL);
}

static void
nkid_timer_unref_cb(uv_handle_t *h, void *arg)
{
	if (h->type == UV_TIMER && uv_is_active(h))
		uv_unref(h);
}

/* The server has shut gRPC down and the fast path's calls are over: stop
 * the workers, let the loop end. */
static void
nkid_stopped_cb(void *arg)
{
	struct nkid_main	*nm = arg;

	if (--nm->stops > 0)
		return;
	nm->stopped = 1;
	fastpath_free(nm->d.fastpath);
	nm->d.fastpath = NULL;
	/*
	 * No call is left: a timer still armed (the cache's batch of memory
	 * hits, due within a second) must not hold the exit; what it would do
	 * is done on the way out (kcache_close). Work still on the thread pool
	 * (a compile whose call went away) keeps the loop until it ends.
	 */
	uv_walk(nm->d.loop, nkid_timer_unref_cb, NULL);
	metrics_http_close(nm->d.metrics);
	nm->d.metrics = NULL;
	sched_free(nm->d.sched);
	nm->d.sched = NULL;
	nkid_handles_close(nm);
}

static void
nkid_stop(struct nkid_main *nm, const char *why)
{
	if (nm->d.stopping) {
		log_info("%s: already stopping", why);
		return;
	}
	nm->d.stopping = 1;
	log_info("%s: stopping", why);
	sd_notify(0, "STOPPING=1");
	/* Queued jobs are answered now, UNAVAILABLE and retryable, for the
	 * next nkid; the running ones get shutdown_grace_ms. */
	sched_drain(nm->d.sched);
	nm->stops = 1 + (nm->d.fastpath != NULL);
	if (nm->d.fastpath != NULL)
		fastpath_stop(nm->d.fastpath, nkid_stopped_cb, nm);
	server_stop(nm->d.server, nkid_stopped_cb, nm);
}

/* What config_load cannot know: the names in the backend table. On
 * failure cfg is released. */
static int
nkid_config_check(struct config *cfg, const char *path, char *err,
    size_t errlen)
{
	if (backend_config_check(cfg, path != NULL ? path :
	    "(built-in defaults)", err, errlen) != 0) {
		config_release(cfg);
		return (-1);
	}
	return (0);
}

static void
nkid_reload(struct nkid_main *nm)
{
	struct daemon	*d = &nm->d;
	struct config	 next;
	char		 err[1024];
	uint64_t	 oldcap = 0, newcap = 0;
	int		 i;

	sd_notify(0, "RELOADING=1");
	if (config_load(&next, nm->config_path, &d->ov, err, sizeof err) !=
	    0 || nkid_config_check(&next, nm->config_path, err,
	    sizeof err) != 0) {
		log_warn("reload refused, keeping the running config: %s", err);
		sd_notify(0, "READY=1");
		return;
	}
	for (i = 0; i < CONFIG_CAP_COUNT; i++) {
		if (config_cap_bytes(&d->cfg, i) > oldcap)
			oldcap = config_cap_bytes(&d->cfg, i);
		if (config_cap_bytes(&next, i) > newcap)
			newcap = config_cap_bytes(&next, i);
	}
	/* The systemd socket's real path replaced the configured one. */
	free(next.socket);
	next.socket = strdup(d->cfg.socket);
	if (next.socket == NULL)
		fatal("out of memory");
	i = config_reload_merge(&d->cfg, &next);
	if (newcap > oldcap)
		log_warn("config: the largest message cap grew to %llu bytes; "
		    "gRPC keeps %llu until a restart",
		    (unsigned long long)newcap, (unsigned long long)oldcap);
	config_release(&d->cfg);
	d->cfg = next;
	if (!nm->verbose)
		log_level_set(d->cfg.log_level);
	kcache_config_apply(d->kcache, &d->cfg);
	log_info("reloaded '%s': %d setting%s changed",
	    d->cfg.path != NULL ? d->cfg.path : "(defaults)", i,
	    i == 1 ? "" : "s");
	sd_notify(0, "READY=1");
}

static void
nkid_signal_cb(uv_signal_t *h, int signum)
{
	struct nkid_main	*nm = h->data;

	switch (signum) {
	case SIGHUP:
		nkid_reload(nm);
		break;
	case SIGTERM:
		nkid_stop(nm, "SIGTERM");
		break;
	case SIGINT:
		nkid_stop(nm, "SIGINT");
		break;
	}
}

static void
nkid_watchdog_cb(uv_timer_t *t)
{
	sd_notify(0, "WATCHDOG=1");
}

static void
nkid_signal_start(struct nkid_main *nm, uv_signal_t *h, int signum)
{
	uv_signal_init(nm->d.loop, h);
	h->data = nm;
	uv_signal_start(h, nkid_signal_cb, signum);
}

int
main(int argc, char **argv)
{
	static struct nkid_main	 nm;
	struct config_override	 ov = { NULL, NULL };
	struct config		 cfg;
	uv_loop_t		 loop;
	char			 err[1024], dir[PATH_MAX];
	uint64_t		 usec = 0;
	int			 ch, check = 0, error, metrics_fd;

	signal(SIGPIPE, SIG_IGN);
	log_open("nkid");
	while ((ch = getopt_long(argc, argv, "c:s:nvh", nkid_longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'c':
			nm.config_path = optarg;
			break;
		case 's':
			ov.socket = optarg;
			break;
		case 'S':
			ov.state_dir = optarg;
			break;
		case 'n':
			check = 1;
			break;
		case 'v':
			nm.verbose = 1;
			break;
		case 'V':
			printf("nkid %s (gRPC core %s, libuv %s)\n",
			    NKID_VERSION, grpc_version_string(),
			    uv_version_string());
			return (0);
		case 'h':
			nkid_usage(stdout);
			return (0);
		default:
			nkid_usage(stderr);
			return (2);
		}
	}
	if (optind != argc) {
		fprintf(stderr, "nkid: unexpected argument '%s'\n",
		    argv[optind]);
		nkid_usage(stderr);
		return (2);
	}
	if (ov.socket != NULL && ov.socket[0] != '/') {
		fprintf(stderr, "nkid: socket '%s' must be an absolute path\n",
		    ov.socket);
		return (2);
	}
	if (ov.state_dir != NULL && ov.state_dir[0] != '/') {
		fprintf(stderr, "nkid: state dir '%s' must be an absolute "
		    "path\n", ov.state_dir);
		return (2);
	}
	if (nm.config_path == NULL && access(CONFIG_DEFAULT_PATH, F_OK) == 0)
		nm.config_path = CONFIG_DEFAULT_PATH;
	if (config_load(&cfg, nm.config_path, &ov, err, sizeof err) != 0 ||
	    nkid_config_check(&cfg, nm.config_path, err, sizeof err) != 0) {
		fprintf(stderr, "nkid: %s\n", err);
		return (1);
	}
	if (check) {
		if (nm.verbose)
			config_dump(&cfg, stdout);
		if (strcmp(cfg.remote_mode, "off") != 0 &&
		    config_remote_url_reach(cfg.remote_url,
		    cfg.remote_timeout_ms, err, sizeof err) != 0)
			fprintf(stderr, "nkid: warning: remote tier '%s' "
			    "cannot be reached from here: %s\n",
			    cfg.remote_url, err);
		printf("nkid: config '%s' is valid\n", nm.config_path != NULL ?
		    nm.config_path : "(built-in defaults)");
		config_release(&cfg);
		return (0);
	}
	log_level_set(nm.verbose ? LOG_LEVEL_DEBUG : cfg.log_level);
	if (nkid_mkdirs(cfg.state_dir, 0750) == -1)
		fatal("cannot create state_dir '%s': %s (try --state-dir DIR)",
		    cfg.state_dir, strerror(errno));
	if (nkid_mkdirs(cfg.cache_dir, 0750) == -1)
		fatal("cannot create cache_dir '%s': %s (try --state-dir DIR)",
		    cfg.cache_dir, strerror(errno));
	/* What nkid keeps there no other user may replace. */
	if (cache_dir_secure("state_dir", cfg.state_dir, err,
	    sizeof err) != 0 || cache_dir_secure("cache_dir", cfg.cache_dir,
	    err, sizeof err) != 0)
		fatal("%s", err);
	/* Before any thread: it rewrites LISTEN_FDS for the server. */
	if (metrics_http_systemd_take(&metrics_fd, err, sizeof err) != 0)
		fatal("%s", err);

	grpc_init();
	if ((error = uv_loop_init(&loop)) != 0)
		fatal("cannot create the event loop: %s", uv_strerror(error));
	if (daemon_init(&nm.d, &loop, &cfg, err, sizeof err) != 0)
		fatal("%s", err);
	nm.d.ov = ov;
	if (metrics_http_open(&nm.d.metrics, &nm.d, metrics_fd, err,
	    sizeof err) != 0 || server_open(&nm.d, err, sizeof err) != 0) {
		log_error("%s", err);
		metrics_http_close(nm.d.metrics);
		daemon_release(&nm.d);
		uv_run(&loop, UV_RUN_DEFAULT);
		uv_loop_close(&loop);
		grpc_shutdown();
		return (1);
	}
	/* Rendezvous sockets go beside the socket, where clients look. */
	snprintf(dir, sizeof dir, "%s", server_socket_path(nm.d.server));
	nm.d.fastpath = fastpath_new(&nm.d, dirname(dir));
	nkid_signal_start(&nm, &nm.sigterm, SIGTERM);
	nkid_signal_start(&nm, &nm.sigint, SIGINT);
	nkid_signal_start(&nm, &nm.sighup, SIGHUP);
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		uv_timer_init(&loop, &nm.watchdog);
		uv_timer_start(&nm.watchdog, nkid_watchdog_cb, 0,
		    usec / 2000 > 0 ? usec / 2000 : 1);
		nm.watchdog_on = 1;
	}
	log_info("nkid %s serving on '%s': backend '%s', %u core%s, config "
	    "'%s', pid %ld", NKID_VERSION, nm.d.cfg.socket,
	    nm.d.cfg.backend, sched_core_count(nm.d.sched),
	    sched_core_count(nm.d.sched) == 1 ? "" : "s",
	    nm.d.cfg.path != NULL ? nm.d.cfg.path : "(defaults)",
	    (long)getpid());
	sd_notifyf(0, "READY=1\nSTATUS=serving on %s\nMAINPID=%ld",
	    nm.d.cfg.socket, (long)getpid());

	uv_run(&loop, UV_RUN_DEFAULT);

	server_close(nm.d.server);
	daemon_release(&nm.d);
	uv_run(&loop, UV_RUN_DEFAULT);
	if ((error = uv_loop_close(&loop)) != 0)
		log_warn("event loop not empty at exit: %s",
		    uv_strerror(error));
	grpc_shutdown();
	log_info("stopped");
	return (0);
}
