/* ctl_lock.c: `nkictl lock [-c CORE] [-t S] [-w S] -- CMD [ARG...]`: hold a core through a Lease stream while CMD runs with NEURON_RT_VISIBLE_CORES set, and exit with CMD's status, like flock(1). */
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "ctl.h"

/* How often the lock checks on CMD while it holds the core. */
#define CTL_LOCK_POLL_S		0.05
/* How long the release waits for nkid's answer. */
#define CTL_LOCK_RELEASE_S	10.0

/* The failed stream's status, printed as ctl_call does. */
static int
ctl_lock_fail(struct ctl_ctx *ctx, struct ctl_rpc_stream *cs)
{
	struct ctl_rpc_status	st;

	if (ctl_rpc_stream_finish(cs, &st) == 0) {
		return (ctl_fail(ctx, "ABORTED", "the lease ended before it "
		    "was granted"));
	}
	return (ctl_call_fail(ctx, &st));
}

/* Run argv with the core; returns its wait status, or -1. */
static pid_t
ctl_lock_spawn(struct ctl_ctx *ctx, char **argv, const char *visible)
{
	pid_t	parent = getpid(), pid;

	fflush(NULL);
	if ((pid = fork()) == -1) {
		ctl_errorf(ctx, "lock: cannot fork: %s", strerror(errno));
		return (-1);
	}
	if (pid == 0) {
		/* CMD must not outlive the lease: if nkictl dies, so does it. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(128 + SIGTERM);
		setenv("NEURON_RT_VISIBLE_CORES", visible, 1);
		execvp(argv[0], argv);
		fprintf(stderr, "nkictl: lock: cannot run '%s': %s\n", argv[0],
		    strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	return (pid);
}

/*
 * Wait until the lease asked on cs is granted, at most wait_s seconds
 * (< 0: forever); then the core it gives goes to *core and the value of
 * NEURON_RT_VISIBLE_CORES to visible. Returns CTL_EXIT_OK, or the
 * failure (printed).
 */
static int
ctl_lock_acquire(struct ctl_ctx *ctx, struct ctl_rpc_stream *cs,
    double wait_s, int have_core, unsigned *core, char *visible, size_t len)
{
	Nkid__V1__LeaseReply	*rep;
	double			 until = 0, left = -1;
	int			 r, state;

	if (wait_s >= 0)
		until = ctl_fmt_mono() + wait_s;
	for (;;) {
		if (wait_s >= 0 && (left = until - ctl_fmt_mono()) < 0)
			left = 0;
		r = ctl_rpc_stream_recv(cs, &nkid__v1__lease_reply__descriptor,
		    left, (ProtobufCMessage **)&rep);
		if (r == 2)
			return (ctl_fail(ctx, "DEADLINE_EXCEEDED", "%s was not "
			    "granted within %g s", have_core ? "the core" :
			    "a core", wait_s));
		if (r != 1)
			return (ctl_lock_fail(ctx, cs));
		state = rep->state;
		if (state == NKID__V1__LEASE_REPLY__STATE__GRANTED) {
			snprintf(visible, len, "%s", *rep->visible_cores !=
			    '\0' ? rep->visible_cores : "0");
			*core = rep->core;
		} else if (state != NKID__V1__LEASE_REPLY__STATE__QUEUED)
			ctl_fail(ctx, "ABORTED", "%s", rep->message);
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		if (state == NKID__V1__LEASE_REPLY__STATE__GRANTED)
			return (CTL_EXIT_OK);
		if (state != NKID__V1__LEASE_REPLY__STATE__QUEUED)
			return (CTL_EXIT_FAIL);
	}
}

/*
 * Hold the lease on cs while CMD (pid) runs; stop CMD if the lease ends
 * under it (expired, cancelled, nkid gone). Returns CTL_EXIT_OK with
 * *status CMD's wait status, or CTL_EXIT_FAIL (printed).
 */
static int
ctl_lock_hold(struct ctl_ctx *ctx, struct ctl_rpc_stream *cs, pid_t pid,
    const char *cmd, int *status)
{
	Nkid__V1__LeaseReply	*rep;
	int			 r;

	for (;;) {
		r = waitpid(pid, status, WNOHANG);
		if (r == pid)
			return (CTL_EXIT_OK);
		if (r == -1 && errno != EINTR) {
			*status = 1 << 8;
			return (CTL_EXIT_OK);
		}
		r = ctl_rpc_stream_recv(cs, &nkid__v1__lease_reply__descriptor,
		    CTL_LOCK_POLL_S, (ProtobufCMessage **)&rep);
		if (r == 2)
			continue;
		ctl_fail(ctx, "ABORTED", "%s; stopping '%s'", r == 1 ?
		    rep->message : "the lease was lost (nkid went away)", cmd);
		if (r == 1)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		kill(pid, SIGTERM);
		while (waitpid(pid, status, 0) == -1 && errno == EINTR)
			;
		return (CTL_EXIT_FAIL);
	}
}

/*
 * After the half-close: read what nkid still sends (its RELEASED message)
 * until the stream ends, then the status. gRPC delivers the status only
 * once every message before it was read: finishing without reading hung
 * when the command ended before a receive was armed. Bounded: nkid
 * answers a release at once.
 */
static void
ctl_lock_release(struct ctl_rpc_stream *cs, struct ctl_rpc_status *st)
{
	Nkid__V1__LeaseReply	*rep;
	int			 r, polls = 0;

	while ((r = ctl_rpc_stream_recv(cs, &nkid__v1__lease_reply__descriptor,
	    CTL_LOCK_POLL_S, (ProtobufCMessage **)&rep)) != 0 && r != -1) {
		if (r == 1)
			protobuf_c_message_free_unpacked(&rep->base, NULL);
		else if (++polls * CTL_LOCK_POLL_S > 30) {
			ctl_rpc_stream_cancel(cs);
			break;
		}
	}
	ctl_rpc_stream_finish(cs, st);
}

/* --json: what the lease was, after CMD's own output. */
static void
ctl_lock_json(struct ctl_ctx *ctx, unsigned core, const char *visible,
    double waited, double held, int status)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return;
	cJSON_AddNumberToObject(o, "core", core);
	cJSON_AddStringToObject(o, "visible_cores", visible);
	cJSON_AddNumberToObject(o, "waited_s", waited);
	cJSON_AddNumberToObject(o, "held_s", held);
	if (WIFEXITED(status))
		cJSON_AddNumberToObject(o, "exit", WEXITSTATUS(status));
	else
		cJSON_AddNullToObject(o, "exit");
	if (WIFSIGNALED(status))
		cJSON_AddNumberToObject(o, "signal", WTERMSIG(status));
	else
		cJSON_AddNullToObject(o, "signal");
	fflush(NULL);
	ctl_json_print(ctx, o);
}

static const struct ctl_opt ctl_lock_opts[] = {
	{ 'c', "core", "CORE", "hold this core (default: any)" },
	{ 't', "max", "MAX_SECONDS", "end the lease after MAX_SECONDS" },
	{ 'w', "wait", "WAIT_SECONDS", "give up if no core is granted within "
	    "WAIT_SECONDS (0: only if one is free now)" },
	{ 'E', "conflict-exit-code", "N", "exit N when -w gives up (default "
	    "1, as flock(1))" },
	CTL_OPT_END
};

static int
ctl_lock_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__LeaseRequest	 req = NKID__V1__LEASE_REQUEST__INIT;
	struct ctl_rpc_stream	*cs = NULL;
	struct ctl_rpc_status	 st;
	unsigned long long	 core = 0, conflict = CTL_EXIT_FAIL;
	unsigned		 got = 0;
	double			 max_s = 0, wait_s = -1, t0, t1 = 0;
	char			 holder[128], visible[32];
	int			 rc, status;
	pid_t			 pid;

	if ((rc = ctl_args_uint(ctx, a, "core", 0, 4095, &core)) != 0 ||
	    (rc = ctl_args_seconds(ctx, a, "max", 0, &max_s)) != 0 ||
	    (rc = ctl_args_seconds(ctx, a, "wait", 1, &wait_s)) != 0 ||
	    (rc = ctl_args_uint(ctx, a, "conflict-exit-code", 0, 255,
	    &conflict)) != 0)
		return (rc);
	if ((rc = ctl_connect(ctx)) != CTL_EXIT_OK)
		return (rc);
	if (ctl_rpc_stream_open(ctx->rpc, "Lease", 0, &cs, &st) != 0)
		return (ctl_call_fail(ctx, &st));
	snprintf(holder, sizeof holder, "nkictl lock %s", a->argv[0]);
	req.core = ctl_args_has(a, "core") ? (int32_t)core : -1;
	req.max_seconds = max_s;
	req.holder = holder;
	t0 = ctl_fmt_mono();
	if (ctl_rpc_stream_send(cs, &req.base) != 0)
		rc = ctl_lock_fail(ctx, cs);
	else
		rc = ctl_lock_acquire(ctx, cs, wait_s, ctl_args_has(a, "core"),
		    &got, visible, sizeof visible);
	if (rc == CTL_EXIT_FAIL && strcmp(ctx->err_code,
	    "DEADLINE_EXCEEDED") == 0)
		rc = (int)conflict;
	if (rc != CTL_EXIT_OK)
		goto out;
	t1 = ctl_fmt_mono();
	if ((pid = ctl_lock_spawn(ctx, a->argv, visible)) == -1) {
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	if ((rc = ctl_lock_hold(ctx, cs, pid, a->argv[0], &status)) !=
	    CTL_EXIT_OK)
		goto out;
	/* Release: end the stream and wait for nkid's answer. */
	if (ctl_rpc_stream_close_send(cs) == 0)
		ctl_lock_release(cs, &st);
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	else
		rc = CTL_EXIT_FAIL;
	if (ctx->json)
		ctl_lock_json(ctx, got, visible, t1 - t0, ctl_fmt_mono() - t1,
		    status);
out:
	ctl_rpc_stream_free(cs);
	return (rc);
}

const struct ctl_cmd ctl_lock_cmd = {
	.name = "lock",
	.usage = "[-c CORE] [-t MAX_SECONDS] [-w WAIT_SECONDS] [-E N] -- CMD "
	    "[ARG...]",
	.help = "run CMD holding a core (NEURON_RT_VISIBLE_CORES set), like "
	    "flock(1)",
	.about =
	    "The exit status is CMD's (128+N if a signal N ended it) once\n"
	    "it ran. Before: -E's N (default 1) when -w gives up, 1 when\n"
	    "the lease fails, 2 usage, 3 nkid cannot be reached. With\n"
	    "--json one object follows CMD's output: core, visible_cores,\n"
	    "waited_s, held_s, exit, signal.\n",
	.opts = ctl_lock_opts,
	.args = { 1, -1, "CMD (the command to run)" },
	.flags = CTL_CMD_OPTS_FIRST,
	.exec = ctl_lock_exec,
};
