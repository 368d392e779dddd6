/* ctl_ping.c: `nkictl ping [-f] [-n COUNT] [-b BYTES]`: COUNT round trips over one channel (or the fast path), with their latency distribution in microseconds. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "client/libnkid/nkid_fastpath.h"
#include "proto/wire.h"
#include "ctl.h"

#define CTL_PING_MAX_COUNT	10000000ULL
#define CTL_PING_MAX_BYTES	(64ULL << 20)

static int
ctl_ping_compare_cb(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* Nearest-rank percentile p (0..100) of n sorted samples (n >= 1). */
static double
ctl_ping_percentile(const double *v, size_t n, double p)
{
	size_t	k = (size_t)(p / 100.0 * n + 0.999999999);

	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (v[k - 1]);
}

static const struct ctl_opt ctl_ping_opts[] = {
	{ 'n', "count", "COUNT", "how many round trips (default 1)" },
	{ 'b', "bytes", "BYTES", "payload of each ping, echoed (default 0)" },
	{ 'f', "fast", NULL, "over the fast path for warm calls, not gRPC" },
	CTL_OPT_END
};

/* Print the summary of count samples (sorted) of us microseconds. */
static int
ctl_ping_print(struct ctl_ctx *ctx, const double *us, size_t count,
    unsigned long long bytes, double sum, int fast)
{
	cJSON	*o;
	char	 a[32], b[32], c[32], d[32];

	if (!ctx->json) {
		fprintf(ctx->out, "%zu ping%s to nkid at '%s'%s: min %s, p50 %s, "
		    "p99 %s, max %s\n", count, count == 1 ? "" : "s",
		    ctx->socket, fast ? " (fast path)" : "", ctl_fmt_us(us[0], a, sizeof a),
		    ctl_fmt_us(ctl_ping_percentile(us, count, 50), b, sizeof b),
		    ctl_fmt_us(ctl_ping_percentile(us, count, 99), c, sizeof c),
		    ctl_fmt_us(us[count - 1], d, sizeof d));
		return (CTL_EXIT_OK);
	}
	if ((o = cJSON_CreateObject()) != NULL) {
		cJSON_AddStringToObject(o, "socket", ctx->socket);
		cJSON_AddNumberToObject(o, "count", (double)count);
		cJSON_AddNumberToObject(o, "bytes", (double)bytes);
		cJSON_AddStringToObject(o, "path", fast ? "fast" : "grpc");
		cJSON_AddNumberToObject(o, "min_us", us[0]);
		cJSON_AddNumberToObject(o, "p50_us",
		    ctl_ping_percentile(us, count, 50));
		cJSON_AddNumberToObject(o, "p99_us",
		    ctl_ping_percentile(us, count, 99));
		cJSON_AddNumberToObject(o, "max_us", us[count - 1]);
		cJSON_AddNumberToObject(o, "mean_us", sum / count);
	}
	return (ctl_json_print(ctx, o));
}

/* One ping over the fast path fp: 0, or an exit code after a message. */
static int
ctl_ping_fast(struct ctl_ctx *ctx, struct nkid_fastpath *fp,
    const uint8_t *req, size_t len, unsigned long long bytes)
{
	struct nkid_fastpath_reply	 r;
	Nkid__V1__PingReply		*reply;
	int				 error;

	error = nkid_fastpath_call(fp, FASTPATH_M_PING, req, len,
	    (unsigned)(ctx->timeout_s * 1000), &r);
	if (error != 0) {
		ctl_errorf(ctx, "ping: fast path to nkid at '%s': %s",
		    ctx->socket, nkid_fastpath_strerror(error));
		return (CTL_EXIT_CONNECT);
	}
	if (r.status != 0) {
		ctl_errorf(ctx, "ping: %s: %.*s", wire_status_name(r.status),
		    (int)r.message_len, r.message);
		return (CTL_EXIT_FAIL);
	}
	reply = nkid__v1__ping_reply__unpack(NULL, r.len, r.data);
	if (reply == NULL || reply->payload.len != bytes) {
		ctl_errorf(ctx, "ping: a malformed reply over the fast path");
		if (reply != NULL)
			protobuf_c_message_free_unpacked(&reply->base, NULL);
		return (CTL_EXIT_FAIL);
	}
	protobuf_c_message_free_unpacked(&reply->base, NULL);
	return (0);
}

static int
ctl_ping_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__PingRequest	 req = NKID__V1__PING_REQUEST__INIT;
	Nkid__V1__PingReply	*reply;
	struct ctl_rpc_status	 st;
	unsigned long long	 count = 1, bytes = 0;
	double			*us = NULL, sum = 0, t0;
	struct nkid_fastpath	*fp = NULL;
	uint8_t			*payload = NULL, *packed = NULL;
	size_t			 i, plen = 0;
	int			 rc, fast = ctl_args_has(a, "fast");
	char			 err[512];

	if ((rc = ctl_args_uint(ctx, a, "count", 1, CTL_PING_MAX_COUNT,
	    &count)) != 0 || (rc = ctl_args_uint(ctx, a, "bytes", 0,
	    CTL_PING_MAX_BYTES, &bytes)) != 0)
		return (rc);
	if ((rc = ctl_connect(ctx)) != CTL_EXIT_OK)
		return (rc);
	us = malloc(count * sizeof *us);
	payload = bytes > 0 ? calloc(1, bytes) : NULL;
	if (us == NULL || (bytes > 0 && payload == NULL)) {
		ctl_errorf(ctx, "ping: out of memory for %llu samples", count);
		rc = CTL_EXIT_FAIL;
		goto out;
	}
	req.payload.data = payload;
	req.payload.len = bytes;
	if (fast) {
		if (nkid_fastpath_open(ctx->socket, &fp, err, sizeof err) != 0) {
			ctl_errorf(ctx, "ping: %s", err);
			rc = CTL_EXIT_CONNECT;
			goto out;
		}
		plen = protobuf_c_message_get_packed_size(&req.base);
		if ((packed = malloc(plen + 1)) == NULL) {
			ctl_errorf(ctx, "ping: out of memory");
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		protobuf_c_message_pack(&req.base, packed);
	}
	for (i = 0; i < count; i++) {
		t0 = ctl_fmt_mono() * 1e6;
		if (fast) {
			if ((rc = ctl_ping_fast(ctx, fp, packed, plen,
			    bytes)) != 0)
				goto out;
			us[i] = ctl_fmt_mono() * 1e6 - t0;
			sum += us[i];
			continue;
		}
		if (ctl_rpc_call(ctx->rpc, "Ping", &req.base,
		    &nkid__v1__ping_reply__descriptor, ctx->timeout_s,
		    (ProtobufCMessage **)&reply, &st) < 0) {
			rc = ctl_call_fail(ctx, &st);
			goto out;
		}
		us[i] = ctl_fmt_mono() * 1e6 - t0;
		sum += us[i];
		if (reply->payload.len != bytes) {
			ctl_errorf(ctx, "ping: reply of %zu bytes to a payload "
			    "of %llu", reply->payload.len, bytes);
			protobuf_c_message_free_unpacked(&reply->base, NULL);
			rc = CTL_EXIT_FAIL;
			goto out;
		}
		protobuf_c_message_free_unpacked(&reply->base, NULL);
	}
	qsort(us, count, sizeof *us, ctl_ping_compare_cb);
	rc = ctl_ping_print(ctx, us, count, bytes, sum, fast);
out:
	nkid_fastpath_close(fp);
	free(packed);
	free(payload);
	free(us);
	return (rc);
}

const struct ctl_cmd ctl_ping_cmd = {
	.name = "ping",
	.usage = "[-f] [-n COUNT] [-b BYTES]",
	.help = "time COUNT round trips to nkid (default 1) with a payload of "
	    "BYTES",
	.opts = ctl_ping_opts,
	.exec = ctl_ping_exec,
};
