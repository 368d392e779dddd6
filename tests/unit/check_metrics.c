/* check_metrics.c: the histogram, the exposition text of a real daemon, and GET /metrics served from the loop. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <grpc/grpc.h>
#include <uv.h>

#include "nkid.pb-c.h"

#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/dispatch.h"
#include "daemon/metrics.h"
#include "daemon/metrics_hist.h"
#include "daemon/metrics_http.h"
#include "daemon/sched.h"
#include "daemon/xmalloc.h"
#include "tests/unit/fake_call.h"
#include "tests/unit/check_main.h"

static uv_loop_t	loop;
static struct daemon	d;
static char		tmpdir[64];

static void
setup(void)
{
	struct config_override	ov = { NULL, NULL };
	char			cache[128];

	check_dir_make(tmpdir, sizeof tmpdir, "check_metrics");
	snprintf(cache, sizeof cache, "%s/cache", tmpdir);
	ck_assert_int_eq(mkdir(cache, 0750), 0);
	ov.state_dir = tmpdir;
	fake_daemon_open(&d, &loop, NULL, &ov);
}

static void
teardown(void)
{
	fake_daemon_close(&d);
	check_dir_remove(tmpdir);
}

CHECK_SUITE("metrics", setup, teardown, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(errors, 0);

/* A call of method name with bytes through dispatch, answered. */
static void
call(const char *name, const void *data, size_t len)
{
	struct fake_call	fc;

	ck_assert_ptr_nonnull(dispatch_method_find(name));
	fake_call_run(&fc, &d, name, data, len);
	fake_call_release(&fc);
}

/* The value of the sample whose line starts with series (name and
 * labels, as rendered), or -1 if there is none. */
static double
sample(const char *text, const char *series)
{
	const char	*p = text;
	size_t		 len = strlen(series);

	while ((p = strstr(p, series)) != NULL) {
		if ((p == text || p[-1] == '\n') && p[len] == ' ')
			return (strtod(p + len + 1, NULL));
		p += len;
	}
	return (-1);
}

/*
 * Every histogram series in text: buckets cumulative, in increasing "le",
 * the +Inf bucket equal to _count; every sample after its family's TYPE.
 * Returns the number of histogram series seen.
 */
static int
histograms_check(const char *text)
{
	char		*copy = xstrdup(text), *line, *save = NULL, *sp;
	char		 family[128] = "", type[16] = "";
	double		 prev_le = -1, prev_v = -1, inf = -1, le, v;
	int		 series = 0;

	for (line = strtok_r(copy, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "# TYPE ", 7) == 0) {
			ck_assert_int_eq(sscanf(line + 7, "%127s %15s", family,
			    type), 2);
			continue;
		}
		if (*line == '#')
			continue;
		ck_assert_msg(strncmp(line, family, strlen(family)) == 0 &&
		    *family != '\0', "sample outside its family: %s", line);
		if (strcmp(type, "histogram") != 0)
			continue;
		sp = strrchr(line, ' ');
		ck_assert_ptr_nonnull(sp);
		v = strtod(sp + 1, NULL);
		if (strstr(line, "_bucket{") != NULL) {
			le = strstr(line, "le=\"+Inf\"") != NULL ? 1e300 :
			    strtod(strstr(line, "le=\"") + 4, NULL);
			ck_assert_msg(le > prev_le && v >= prev_v,
			    "not cumulative: %s", line);
			prev_le = le;
			prev_v = v;
			if (le == 1e300)
				inf = v;
		} else if (strstr(line, "_count{") != NULL) {
			ck_assert_msg(v == inf, "+Inf %g != count: %s", inf,
			    line);
			prev_le = prev_v = inf = -1;
			series++;
		}
	}
	free(copy);
	return (series);
}

CHECK_TEST(core, test_metrics_hist_buckets)
{
	struct metrics_hist	h;
	size_t			i;

	memset(&h, 0, sizeof h);
	for (i = 1; i < METRICS_HIST_BUCKETS; i++)
		ck_assert_uint_gt(metrics_hist_bound_ns(i),
		    metrics_hist_bound_ns(i - 1));
	ck_assert_uint_eq(metrics_hist_bound_ns(0), 100000);
	metrics_hist_observe(&h, 0);
	metrics_hist_observe(&h, 100000);		/* le is <= */
	metrics_hist_observe(&h, 100001);
	metrics_hist_observe(&h, 3000000000000ULL);	/* 50 min: +Inf */
	ck_assert_uint_eq(h.counts[0], 2);
	ck_assert_uint_eq(h.counts[1], 1);
	ck_assert_uint_eq(h.counts[METRICS_HIST_BUCKETS], 1);
	ck_assert_uint_eq(h.count, 4);
	ck_assert_uint_eq(h.sum_ns, 200001 + 3000000000000ULL);
}
END_TEST

CHECK_TEST(core, test_metrics_render_rpc)
{
	char	*text;
	size_t	 len;
	int	 i;

	for (i = 0; i < 3; i++)
		call("Ping", "", 0);
	call("Ping", "\xff\xff\xff", 3);	/* malformed: an error */
	call("Status", "", 0);
	text = metrics_render(&d, &len);
	ck_assert_uint_eq(strlen(text), len);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_calls_total{method=\"Ping\"}"), 4);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_errors_total{method=\"Ping\"}"), 1);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_calls_total{method=\"Status\"}"), 1);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_errors_total{method=\"Status\"}"), 0);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_calls_total{method=\"Run\"}"), 0);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_duration_seconds_count{method=\"Ping\"}"), 4);
	ck_assert_double_eq(sample(text,
	    "nkid_rpc_duration_seconds_bucket{method=\"Ping\",le=\"+Inf\"}"),
	    4);
	ck_assert_double_gt(sample(text,
	    "nkid_rpc_duration_seconds_sum{method=\"Ping\"}"), 0);
	ck_assert_double_eq(sample(text, "nkid_build_info{version=\""
	    NKID_VERSION "\"}"), 1);
	ck_assert_double_eq(sample(text,
	    "nkid_backend_info{backend=\"cpu\"}"), 1);
	ck_assert_double_eq(sample(text, "nkid_cores"), 1);
	ck_assert_double_eq(sample(text,
	    "nkid_core_state{core=\"0\",state=\"idle\"}"), 1);
	ck_assert_double_eq(sample(text,
	    "nkid_core_state{core=\"0\",state=\"busy\"}"), 0);
	/* Every method, and per core each class, has a histogram. */
	ck_assert_int_eq(histograms_check(text),
	    (int)dispatch_method_count() + 2 * SCHED_NCLASSES);
	free(text);
}
END_TEST

static void
job_work(struct sched_job *job, unsigned core)
{
	usleep(20000);
}

static void
job_done(struct sched_job *job, int outcome)
{
	*(int *)job->owner = outcome == SCHED_RAN ? 1 : 2;
}

CHECK_TEST(core, test_metrics_render_jobs)
{
	struct sched_limits	lim;
	struct sched_job	a, b;
	char			msg[256], *text;
	size_t			len;
	int			done_a = 0, done_b = 0;

	sched_limits_config(&d.cfg, &lim);
	memset(&a, 0, sizeof a);
	a.work = job_work;
	a.done = job_done;
	a.owner = &done_a;
	a.cls = SCHED_CLASS_BATCH;
	a.uid = 1000;
	a.pid = 1;
	b = a;
	b.owner = &done_b;
	b.pid = 2;
	ck_assert_int_eq(sched_job_submit(d.sched, &a, 0, &lim, msg,
	    sizeof msg), 0);
	ck_assert_int_eq(sched_job_submit(d.sched, &b, 0, &lim, msg,
	    sizeof msg), 0);
	while ((!done_a || !done_b) && uv_run(&loop, UV_RUN_ONCE) != 0)
		;
	ck_assert_int_eq(done_a, 1);
	ck_assert_int_eq(done_b, 1);
	text = metrics_render(&d, &len);
	ck_assert_double_eq(sample(text, "nkid_job_execution_seconds_count"
	    "{core=\"0\",class=\"batch\"}"), 2);
	ck_assert_double_ge(sample(text, "nkid_job_execution_seconds_sum"
	    "{core=\"0\",class=\"batch\"}"), 0.040);
	/* 20 ms is in the 25 ms bucket, not the 10 ms one. */
	ck_assert_double_eq(sample(text, "nkid_job_execution_seconds_bucket"
	    "{core=\"0\",class=\"batch\",le=\"0.01\"}"), 0);
	ck_assert_double_eq(sample(text, "nkid_job_queue_wait_seconds_count"
	    "{core=\"0\",class=\"batch\"}"), 2);
	/* The second waited for the first. */
	ck_assert_double_ge(sample(text, "nkid_job_queue_wait_seconds_sum"
	    "{core=\"0\",class=\"batch\"}"), 0.015);
	ck_assert_double_eq(sample(text, "nkid_job_queue_wait_seconds_count"
	    "{core=\"0\",class=\"interactive\"}"), 0);
	ck_assert_double_eq(sample(text, "nkid_jobs_completed_total"), 2);
	ck_assert_double_ge(sample(text,
	    "nkid_core_busy_seconds_total{core=\"0\"}"), 0.040);
	ck_assert_double_eq(sample(text, "nkid_leases_granted_total"), 0);
	free(text);
}
END_TEST

/* ------------------------------------------------------------ http */

struct http_get {
	struct sockaddr_storage	 addr;
	socklen_t		 addrlen;
	const char		*request;
	char			 reply[256 * 1024];
	size_t			 len;
	uv_async_t		 async;
};

/* The client, on its own thread: one request, the reply until EOF. */
static void *
http_get_main(void *arg)
{
	struct http_get	*g = arg;
	ssize_t		 n;
	int		 fd;

	fd = socket(g->addr.ss_family, SOCK_STREAM, 0);
	if (fd != -1 && connect(fd, (struct sockaddr *)&g->addr,
	    g->addrlen) == 0 && write(fd, g->request, strlen(g->request)) ==
	    (ssize_t)strlen(g->request)) {
		while (g->len < sizeof g->reply - 1 && (n = read(fd,
		    g->reply + g->len, sizeof g->reply - 1 - g->len)) > 0)
			g->len += (size_t)n;
	}
	g->reply[g->len] = '\0';
	if (fd != -1)
		close(fd);
	uv_async_send(&g->async);
	return (NULL);
}

static void
http_get_done_cb(uv_async_t *a)
{
	uv_close((uv_handle_t *)a, NULL);
}

/* Send request to addr while the loop runs; the reply in g->reply. */
static void
http_get(struct http_get *g, const char *request)
{
	pthread_t	t;

	g->request = request;
	g->len = 0;
	ck_assert_int_eq(uv_async_init(&loop, &g->async, http_get_done_cb), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, http_get_main, g), 0);
	while (!uv_is_closing((uv_handle_t *)&g->async))
		uv_run(&loop, UV_RUN_ONCE);
	uv_run(&loop, UV_RUN_NOWAIT);
	pthread_join(t, NULL);
}

static void
listen_set(const char *spec)
{
	free(d.cfg.metrics_listen);
	d.cfg.metrics_listen = xstrdup(spec);
}

CHECK_TEST(core, test_metrics_http_serves_from_loop)
{
	static struct http_get	 g;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&g.addr;
	struct metrics_http	*mh;
	char			 err[512];
	const char		*where;
	int			 stalled;

	listen_set("127.0.0.1:0");
	ck_assert_msg(metrics_http_open(&mh, &d, -1, err, sizeof err) == 0,
	    "%s", err);
	ck_assert_ptr_nonnull(mh);
	where = metrics_http_where(mh);
	ck_assert_int_eq(strncmp(where, "127.0.0.1:", 10), 0);
	memset(&g.addr, 0, sizeof g.addr);
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin->sin_port = htons((uint16_t)atoi(where + 10));
	g.addrlen = sizeof *sin;
	call("Ping", "", 0);

	http_get(&g, "GET /metrics HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(g.reply, " 200 OK\r\n") != NULL, "%s", g.reply);
	ck_assert_ptr_nonnull(strstr(g.reply, "Content-Type: "
	    METRICS_CONTENT_TYPE "\r\n"));
	ck_assert_ptr_nonnull(strstr(g.reply,
	    "\nnkid_rpc_calls_total{method=\"Ping\"} 1\n"));
	http_get(&g, "GET / HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(g.reply, " 404 ") != NULL, "%s", g.reply);
	ck_assert_ptr_nonnull(strstr(g.reply, "/metrics"));
	http_get(&g, "DELETE /metrics HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(g.reply, " 405 ") != NULL, "%s", g.reply);
	ck_assert_ptr_nonnull(strstr(g.reply, "Allow: GET, HEAD\r\n"));
	http_get(&g, "HEAD /metrics HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(g.reply, " 200 OK\r\n") != NULL, "%s", g.reply);
	ck_assert_ptr_null(strstr(g.reply, "nkid_build_info"));
	/* Not HTTP at all (a TLS hello): closed at once, nkid serves on. */
	http_get(&g, "\x16\x03\x01\x02\xfc\x03\x03\r\n\r\n");
	ck_assert_msg(g.len == 0 || strstr(g.reply, " 400 ") != NULL, "%s",
	    g.reply);
	/* A scraper stalled half-way through its request holds up no one. */
	stalled = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_eq(connect(stalled, (struct sockaddr *)&g.addr,
	    g.addrlen), 0);
	ck_assert_int_eq(write(stalled, "GET /met", 8), 8);
	http_get(&g, "GET /metrics HTTP/1.1\r\nHost: x\r\n"
	    "Connection: close\r\n\r\n");
	ck_assert_msg(strstr(g.reply, " 200 OK\r\n") != NULL, "%s", g.reply);
	close(stalled);

	metrics_http_close(mh);
	uv_run(&loop, UV_RUN_NOWAIT);
}
END_TEST

CHECK_TEST(core, test_metrics_http_unix)
{
	static struct http_get	 g;
	struct sockaddr_un	*sun = (struct sockaddr_un *)&g.addr;
	struct metrics_http	*mh;
	char			 path[sizeof sun->sun_path], err[512];
	int			 fd;

	snprintf(path, sizeof path, "%s/metrics.sock", tmpdir);
	/* A stale socket file (its owner gone) is replaced. */
	memset(&g.addr, 0, sizeof g.addr);
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof sun->sun_path, "%s", path);
	g.addrlen = sizeof *sun;
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)sun, sizeof *sun), 0);
	close(fd);
	listen_set(path);
	ck_assert_msg(metrics_http_open(&mh, &d, -1, err, sizeof err) == 0,
	    "%s", err);
	ck_assert_str_eq(metrics_http_where(mh), path);
	http_get(&g, "GET /metrics HTTP/1.0\r\n\r\n");
	ck_assert_msg(strstr(g.reply, " 200 OK\r\n") != NULL, "%s", g.reply);

	/* A live one is not taken over. */
	{
		struct metrics_http	*mh2;

		char	 want[256];

		ck_assert_int_eq(metrics_http_open(&mh2, &d, -1, err,
		    sizeof err), -1);
		snprintf(want, sizeof want, "cannot listen on metrics.listen "
		    "'%s': another process is serving it", path);
		ck_assert_str_eq(err, want);
		ck_assert_ptr_null(mh2);
	}
	metrics_http_close(mh);
	uv_run(&loop, UV_RUN_NOWAIT);
	ck_assert_int_eq(access(path, F_OK), -1);
}
END_TEST

CHECK_TEST(errors, test_metrics_http_errors)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof sin;
	struct metrics_http	*mh = (struct metrics_http *)&mh;
	char			 spec[64], want[128], err[512];
	int			 fd;

	/* Off: nothing configured, nothing passed. */
	listen_set("");
	ck_assert_int_eq(metrics_http_open(&mh, &d, -1, err, sizeof err), 0);
	ck_assert_ptr_null(mh);

	/* A port someone else has. */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof sin);
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof sin), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	snprintf(spec, sizeof spec, "127.0.0.1:%u", ntohs(sin.sin_port));
	listen_set(spec);
	ck_assert_int_eq(metrics_http_open(&mh, &d, -1, err, sizeof err), -1);
	snprintf(want, sizeof want, "cannot listen on metrics.listen '%s': "
	    "Address already in use", spec);
	ck_assert_str_eq(err, want);
	ck_assert_ptr_null(mh);
	close(fd);

	/* A directory that does not exist. */
	listen_set("/nonexistent/dir/metrics.sock");
	ck_assert_int_eq(metrics_http_open(&mh, &d, -1, err, sizeof err), -1);
	ck_assert_str_eq(err, "cannot listen on metrics.listen "
	    "'/nonexistent/dir/metrics.sock': No such file or directory");
}
END_TEST
