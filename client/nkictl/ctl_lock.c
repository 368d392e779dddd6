/*
 * ctl_lock.c: `nkictl lock [-c CORE] [-t MAX_SECONDS] [-w WAIT_SECONDS] --
 * CMD [ARG...]`: hold a core through a Lease stream while CMD runs with
 * NEURON_RT_VISIBLE_CORES set, and exit with CMD's status, like flock(1).
 */
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nkid.pb-c.h"
#include "ctl.h"

/* How often the lock checks on CMD while it holds the core. */
#define CTL_LOCK_POLL_S 0.05

static double
ctl_lock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Seconds >= 0 (0 allowed: -w 0 means "only if free now"). */
static int
ctl_lock_parse_wait(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (*s == '\0' || errno != 0 || *end != '\0' || !isfinite(v) ||
	    v < 0 || v > CTL_TIMEOUT_MAX)
		return -1;
	*out = v;
	return 0;
}

/* The failed stream's status, printed as ctl_call does. */
static int
ctl_lock_fail(ctl_ctx *ctx, ctl_rpc_stream *cs)
{
	ctl_rpc_status st;

	if (ctl_rpc_stream_finish(cs, &st) == 0) {
		ctl_errorf(ctx, "lock: the lease ended before it was granted");
		return CTL_EXIT_FAIL;
	}
	return ctl_call_fail(ctx, &st);
}

/* Run argv with the core; returns its wait status, or -1. */
static pid_t
ctl_lock_spawn(ctl_ctx *ctx, char **argv, const char *visible)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	if ((pid = fork()) == -1) {
		ctl_errorf(ctx, "lock: cannot fork: %s", strerror(errno));
		return -1;
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
	return pid;
}

static int
ctl_lock_exec(ctl_ctx *ctx, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "core", required_argument, NULL, 'c' },
		{ "max", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'w' },
		CTL_LONGOPTS_COMMON,
		{ NULL, 0, NULL, 0 },
	};
	Nkid__V1__LeaseRequest req = NKID__V1__LEASE_REQUEST__INIT;
	Nkid__V1__LeaseReply *rep = NULL;
	ctl_rpc_stream *cs = NULL;
	ctl_rpc_status st;
	unsigned long long core = 0;
	double max_s = 0, wait_s = -1, until = 0, left;
	char holder[128], visible[32];
	int c, rc, r, have_core = 0, status;
	pid_t pid;

	while ((c = ctl_opt_next(ctx, argc, argv, "+c:t:w:", longopts, &rc)) !=
	    -1) {
		switch (c) {
		case CTL_OPT_DONE:
			return rc;
		case 'c':
			if (ctl_parse_uint(optarg, 0, 4095, &core) < 0)
				return ctl_usage_fail(ctx, "bad core '%s'",
				    optarg);
			have_core = 1;
			break;
		case 't':
			if (ctl_parse_seconds(optarg, &max_s) < 0)
				return ctl_usage_fail(ctx, "bad maximum '%s': "
				    "want seconds, more than 0", optarg);
			break;
		case 'w':
			if (ctl_lock_parse_wait(optarg, &wait_s) < 0)
				return ctl_usage_fail(ctx, "bad wait '%s': "
				    "want seconds, 0 or more", optarg);
			break;
		}
	}
	if (optind >= argc)
		return ctl_usage_fail(ctx, "no command to run");
	argv += optind;

	if ((rc = ctl_connect(ctx)) != CTL_EXIT_OK)
		return rc;
	if (ctl_rpc_stream_open(ctx->rpc, "Lease", 0, &cs, &st) != 0)
		return ctl_call_fail(ctx, &st);
	snprintf(holder, sizeof(holder), "nkictl lock %s", argv[0]);
	req.core = have_core ? (int32_t)core : -1;
	req.max_seconds = max_s;
	req.holder = holder;
	if (ctl_rpc_stream_send(cs, &req.base) != 0) {
		rc = ctl_lock_fail(ctx, cs);
		goto out;
	}
	if (wait_s >= 0)
		until = ctl_lock_now() + wait_s;
	for (;;) {
		left = wait_s >= 0 ? until - ctl_lock_now() : -1;
		if (wait_s >= 0 && left < 0)
			left = 0;
		r = ctl_rpc_stream_recv(cs, &nkid__v1__lease_reply__descriptor,
		    left, (ProtobufCMessage **)&rep);
		if (r == 2) {
			ctl_errorf(ctx, "lock: %s was not granted within %g s",
			    have_core ? "the core" : "a core", wait_s);
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		if (r != 1) {
			rc = ctl_lock_fail(ctx, cs);
			goto out;
		}
		if (rep->state == NKID__V1__LEASE_REPLY__STATE__GRANTED)
			break;
		if (rep->state != NKID__V1__LEASE_REPLY__STATE__QUEUED) {
			ctl_errorf(ctx, "lock: %s", rep->message);
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		protobuf_c_message_free_unpacked(&rep->base, NULL);
		rep = NULL;
	}
	snprintf(visible, sizeof(visible), "%s", *rep->visible_cores ?
	    rep->visible_cores : "0");
	protobuf_c_message_free_unpacked(&rep->base, NULL);
	rep = NULL;

	if ((pid = ctl_lock_spawn(ctx, argv, visible)) == -1) {
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			break;
		if (r == -1 && errno != EINTR) {
			status = 1 << 8;
			break;
		}
		r = ctl_rpc_stream_recv(cs, &nkid__v1__lease_reply__descriptor,
		    CTL_LOCK_POLL_S, (ProtobufCMessage **)&rep);
		if (r == 2)
			continue;
		/* The lease ended under CMD: expired, cancelled, nkid gone. */
		ctl_errorf(ctx, "lock: %s; stopping '%s'", r == 1 ?
		    rep->message : "the lease was lost (nkid went away)",
		    argv[0]);
		kill(pid, SIGTERM);
		while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
			;
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	/* Release: end the stream and wait for nkid's answer. */
	if (ctl_rpc_stream_close_send(cs) == 0)
		ctl_rpc_stream_finish(cs, &st);
	if (WIFEXITED(status))
		rc = WEXITSTATUS(status);
	else if (WIFSIGNALED(status))
		rc = 128 + WTERMSIG(status);
	else
		rc = CTL_EXIT_FAIL;
out:
	if (rep != NULL)
		protobuf_c_message_free_unpacked(&rep->base, NULL);
	ctl_rpc_stream_free(cs);
	return rc;
}

const ctl_cmd ctl_lock_cmd = {
	.name = "lock",
	.usage = "[-c CORE] [-t MAX_SECONDS] [-w WAIT_SECONDS] -- CMD [ARG...]",
	.help = "run CMD holding a core (NEURON_RT_VISIBLE_CORES set), like "
	    "flock(1)",
	.exec = ctl_lock_exec,
};
