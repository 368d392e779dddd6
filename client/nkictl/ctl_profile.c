/* ctl_profile.c: `nkictl profile KERNEL -o DIR`: execute a kernel NUM_EXECS times on one core (Profile) and write its NEFF, traces and summaries into DIR in nki.profile's layout, with the outputs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "model/model.h"
#include "ctl.h"
#include "ctl_kernel_call.h"

/* nkid's bound on num_execs and profile_nth. */
#define CTL_PROFILE_MAX		1000
/* nki.profile's artifact names. */
#define CTL_PROFILE_NEFF	"file.neff"
#define CTL_PROFILE_TRACE	"profile"
#define CTL_PROFILE_TRACE_EXT	".ntff"
#define CTL_PROFILE_REPORTS	"json_reports"

static const struct ctl_opt ctl_profile_opts[] = {
	CTL_KERNEL_CALL_OPTS_INPUT,
	{ 'o', "output-dir", "DIR", "write the profile (" CTL_PROFILE_NEFF ", "
	    CTL_PROFILE_TRACE CTL_PROFILE_TRACE_EXT ", " CTL_PROFILE_REPORTS
	    "/) and the outputs to DIR (default: .)" },
	{ 'n', "num-execs", "N", "execute N times (default: PROFILE_NTH)" },
	{ 0, "profile-nth", "K", "trace executions K, 2K, ... (default 1)" },
	CTL_KERNEL_CALL_OPT_CORE,
	{ 0, "overwrite", NULL, "replace artifacts that exist (default: "
	    "refuse)" },
	CTL_KERNEL_CALL_OPTS_TARGET,
	CTL_KERNEL_CALL_OPTS_RETRY,
	CTL_OPT_END
};

/* The paths of execution n's trace and summary (i: its rank, 0 for the
 * first traced), malloc'd. */
static void
ctl_profile_paths(const char *dir, size_t i, unsigned n, char **trace,
    char **report)
{
	char	stem[64];

	if (i == 0)
		snprintf(stem, sizeof stem, "%s", CTL_PROFILE_TRACE);
	else
		snprintf(stem, sizeof stem, "%s_exec_%u", CTL_PROFILE_TRACE, n);
	if (asprintf(trace, "%s/%s%s", dir, stem, CTL_PROFILE_TRACE_EXT) < 0 ||
	    asprintf(report, "%s/%s/%s.json", dir, CTL_PROFILE_REPORTS,
	    stem) < 0)
		abort();
}

/* The executions Profile traces: nth, 2 nth, ... <= execs (nth alone if
 * execs < nth), as nki.profile. */
static size_t
ctl_profile_count(unsigned long long execs, unsigned long long nth)
{
	return (execs < nth ? 1 : (size_t)(execs / nth));
}

/* Refuse to replace an artifact unless --overwrite. */
static int
ctl_profile_check(struct ctl_ctx *ctx, const char *dir,
    unsigned long long execs, unsigned long long nth)
{
	struct stat	 sb;
	char		*neff, *trace, *report;
	size_t		 i, n = ctl_profile_count(execs, nth);
	int		 rc = CTL_EXIT_OK;

	if (asprintf(&neff, "%s/%s", dir, CTL_PROFILE_NEFF) < 0)
		abort();
	if (stat(neff, &sb) == 0)
		rc = ctl_fail(ctx, "ALREADY_EXISTS", "'%s' exists; give "
		    "--overwrite to replace the profile", neff);
	free(neff);
	for (i = 0; rc == CTL_EXIT_OK && i < n; i++) {
		ctl_profile_paths(dir, i, (unsigned)((i + 1) * nth), &trace,
		    &report);
		if (stat(trace, &sb) == 0 || stat(report, &sb) == 0)
			rc = ctl_fail(ctx, "ALREADY_EXISTS", "'%s' exists; "
			    "give --overwrite to replace the profile",
			    stat(trace, &sb) == 0 ? trace : report);
		free(trace);
		free(report);
	}
	return (rc);
}

/* "7.20 us (model on trn1), critical path dma" from a summary, or "". */
static void
ctl_profile_summary(const ProtobufCBinaryData *js, char *buf, size_t len)
{
	cJSON		*o;
	const cJSON	*t, *c, *s, *g;
	char		 us[32], src[48];

	buf[0] = '\0';
	o = cJSON_ParseWithLength((const char *)js->data, js->len);
	t = cJSON_GetObjectItemCaseSensitive(o, "total_time_us");
	c = cJSON_GetObjectItemCaseSensitive(o, "critical_path_engine");
	s = cJSON_GetObjectItemCaseSensitive(o, "source");
	g = cJSON_GetObjectItemCaseSensitive(o, "target");
	snprintf(src, sizeof src, "%s%s%s", cJSON_IsString(s) ?
	    s->valuestring : "", cJSON_IsString(s) && cJSON_IsString(g) ?
	    " on " : "", cJSON_IsString(s) && cJSON_IsString(g) ?
	    g->valuestring : "");
	if (cJSON_IsNumber(t))
		snprintf(buf, len, "%s%s%s%s%s%s", ctl_fmt_us(t->valuedouble,
		    us, sizeof us), cJSON_IsString(s) ? " (" : "",
		    cJSON_IsString(s) ? src : "",
		    cJSON_IsString(s) ? ")" : "",
		    cJSON_IsString(c) ? ", critical path " : "",
		    cJSON_IsString(c) ? c->valuestring : "");
	cJSON_Delete(o);
}

/* Write the reply's NEFF, traces and summaries into kc->outdir. */
static int
ctl_profile_write(struct ctl_ctx *ctx, const struct ctl_kernel_call *kc,
    const Nkid__V1__ProfileReply *r, cJSON *o)
{
	const Nkid__V1__ProfileTrace	*t;
	cJSON				*arr = NULL, *x;
	char				*neff, *trace, *report, *rdir;
	char				 size[32], sum[128];
	size_t				 i;
	int				 rc;

	if (asprintf(&neff, "%s/%s", kc->outdir, CTL_PROFILE_NEFF) < 0 ||
	    asprintf(&rdir, "%s/%s", kc->outdir, CTL_PROFILE_REPORTS) < 0)
		abort();
	if ((mkdir(kc->outdir, 0777) == -1 && errno != EEXIST) ||
	    (mkdir(rdir, 0777) == -1 && errno != EEXIST)) {
		rc = ctl_fail(ctx, CTL_CODE_LOCAL, "cannot create '%s': %s",
		    rdir, strerror(errno));
		goto out;
	}
	if ((rc = ctl_kernel_call_file_write(ctx, neff, r->neff.data,
	    r->neff.len)) != CTL_EXIT_OK)
		goto out;
	if (o != NULL) {
		cJSON_AddStringToObject(o, "neff_path", neff);
		arr = cJSON_AddArrayToObject(o, "traces");
	} else
		ctl_kv(ctx, "neff", "%s (%s)", neff, ctl_fmt_bytes(r->neff.len,
		    size, sizeof size));
	for (i = 0; rc == CTL_EXIT_OK && i < r->n_traces; i++) {
		t = r->traces[i];
		ctl_profile_paths(kc->outdir, i, t->execution, &trace, &report);
		if ((rc = ctl_kernel_call_file_write(ctx, trace, t->trace.data,
		    t->trace.len)) == CTL_EXIT_OK)
			rc = ctl_kernel_call_file_write(ctx, report,
			    t->summary_json.data, t->summary_json.len);
		ctl_profile_summary(&t->summary_json, sum, sizeof sum);
		if (rc == CTL_EXIT_OK && arr != NULL) {
			x = cJSON_CreateObject();
			cJSON_AddNumberToObject(x, "execution", t->execution);
			cJSON_AddStringToObject(x, "trace_path", trace);
			cJSON_AddStringToObject(x, "summary_path", report);
			cJSON_AddItemToArray(arr, x);
		} else if (rc == CTL_EXIT_OK) {
			ctl_kv(ctx, "trace", "%s (execution %u, %s)", trace,
			    t->execution, ctl_fmt_bytes(t->trace.len, size,
			    sizeof size));
			ctl_kv(ctx, "summary", "%s%s%s", report, *sum ? ": " :
			    "", sum);
		}
		free(trace);
		free(report);
	}
out:
	free(neff);
	free(rdir);
	return (rc);
}

static int
ctl_profile_exec(struct ctl_ctx *ctx, struct ctl_args *a)
{
	Nkid__V1__ProfileRequest req = NKID__V1__PROFILE_REQUEST__INIT;
	const Nkid__V1__ProfileReply	*r;
	struct ctl_kernel_call		 kc;
	unsigned long long		 execs = 0, nth = 1;
	const char			*target;
	cJSON				*o;
	int				 rc;

	memset(&kc, 0, sizeof kc);
	if ((rc = ctl_args_uint(ctx, a, "profile-nth", 1, CTL_PROFILE_MAX,
	    &nth)) != 0 || (rc = ctl_args_uint(ctx, a, "num-execs", 1,
	    CTL_PROFILE_MAX, &execs)) != 0)
		return (rc);
	/* The model takes the targets NKI names; refuse others here. */
	target = ctl_args_get(a, "target");
	if (target != NULL && *target != '\0' &&
	    model_target_canon(target) == NULL)
		return (ctl_usage_fail(ctx, "unknown target '%s': NKI names %s",
		    target, MODEL_TARGET_NAMES));
	if (execs == 0)
		execs = nth;
	if ((rc = ctl_kernel_call_init(ctx, a, &kc)) != CTL_EXIT_OK)
		goto out;
	if (!ctl_args_has(a, "overwrite") && (rc = ctl_profile_check(ctx,
	    kc.outdir, execs, nth)) != CTL_EXIT_OK)
		goto out;
	req.num_execs = (uint32_t)execs;
	req.profile_nth = (uint32_t)nth;
	if ((rc = ctl_kernel_call_send(ctx, &kc, "Profile", &req.base,
	    &nkid__v1__profile_reply__descriptor)) != CTL_EXIT_OK)
		goto out;
	r = (const Nkid__V1__ProfileReply *)kc.reply;
	o = ctl_kernel_call_head_print(ctx, &kc, NULL, r->neff_key);
	if ((rc = ctl_profile_write(ctx, &kc, r, o)) != CTL_EXIT_OK) {
		cJSON_Delete(o);
		goto out;
	}
	rc = ctl_kernel_call_outputs_write(ctx, &kc, o, r->outputs,
	    r->n_outputs);
out:
	ctl_kernel_call_release(&kc);
	return (rc);
}

const struct ctl_cmd ctl_profile_cmd = {
	.name = "profile",
	.usage = "KERNEL [-i [NAME=]FILE.npy]... [-o DIR] [-n N] "
	    "[--profile-nth K] [-c CORE] [--overwrite] [--target T] "
	    "[--options OPTS] [--retry-failed]",
	.help = "profile a traced kernel: its NEFF, traces and summaries "
	    "written to DIR as nki.profile writes them",
	.about =
	    "Executions PROFILE_NTH, 2*PROFILE_NTH, ... up to N are traced.\n"
	    "DIR gets file.neff, profile.ntff (then profile_exec_K.ntff)\n"
	    "and json_reports/profile.json (...), as nki.profile writes\n"
	    "them (docs/profile.md), and the outputs as NAME.npy.\n",
	.opts = ctl_profile_opts,
	.args = CTL_KERNEL_CALL_ARGS,
	.timeout_s = CTL_TIMEOUT_KERNEL,
	.exec = ctl_profile_exec,
};
