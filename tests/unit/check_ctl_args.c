/*
 * check_ctl_args.c: nkictl's command table, option parsing, exit codes and
 * input placement, driven through ctl_main and the helpers directly (no
 * nkid needed: connection failures are made with missing and dead sockets).
 */
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "nkid.pb-c.h"
#include "nkir.pb-c.h"
#include "client/nkictl/ctl.h"
#include "client/nkictl/ctl_kernel.h"
#include "client/nkictl/ctl_tensor.h"
#include "client/nkictl/npy.h"

static char tmpdir[] = "/tmp/check_ctl_args.XXXXXX";
static char *out_buf, *err_buf;

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	unsetenv(CTL_SOCKET_ENV);
}

static void
teardown(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
	strcpy(tmpdir, "/tmp/check_ctl_args.XXXXXX");
	free(out_buf);
	free(err_buf);
	out_buf = err_buf = NULL;
}

/* Run ctl_main on a NULL-terminated word list; out_buf and err_buf hold
 * what it printed. */
static int
run_ctl(const char *first, ...)
{
	char *argv[64];
	size_t olen, elen;
	FILE *out, *err;
	va_list ap;
	int argc = 0, rc;

	free(out_buf);
	free(err_buf);
	out = open_memstream(&out_buf, &olen);
	err = open_memstream(&err_buf, &elen);
	argv[argc++] = "nkictl";
	va_start(ap, first);
	for (const char *w = first; w != NULL; w = va_arg(ap, const char *))
		argv[argc++] = (char *)w;
	va_end(ap);
	argv[argc] = NULL;
	rc = ctl_main(argc, argv, out, err);
	fclose(out);
	fclose(err);
	return rc;
}

/* ------------------------------------------------------------ table */

START_TEST(test_ctl_table_sorted_and_complete)
{
	size_t i;

	ck_assert_uint_gt(ctl_cmd_count, 0);
	for (i = 0; i < ctl_cmd_count; i++) {
		const ctl_cmd *c = ctl_cmd_table[i];
		size_t hl = strlen(c->help);

		ck_assert_ptr_nonnull(c->name);
		ck_assert_ptr_nonnull(c->usage);
		ck_assert_ptr_nonnull(c->exec);
		ck_assert_uint_gt(hl, 0);
		ck_assert_msg(c->help[0] >= 'a' && c->help[0] <= 'z' &&
		    c->help[hl - 1] != '.', "help of '%s': lower case, no final "
		    "period", c->name);
		if (i > 0)
			ck_assert_msg(strcmp(ctl_cmd_table[i - 1]->name,
			    c->name) < 0, "'%s' before '%s': table not sorted",
			    ctl_cmd_table[i - 1]->name, c->name);
	}
}
END_TEST

static int
fake_exec(ctl_ctx *ctx, int argc, char **argv)
{
	return 0;
}

START_TEST(test_ctl_find_words_and_groups)
{
	static const ctl_cmd cache_ls = { "cache ls", "", "x", 0, fake_exec };
	static const ctl_cmd cache_rm = { "cache rm", "", "x", 0, fake_exec };
	static const ctl_cmd cancel = { "cancel", "", "x", 0, fake_exec };
	static const ctl_cmd compile = { "compile", "", "x", 0, fake_exec };
	static const ctl_cmd *const t[] = { &cache_ls, &cache_rm, &cancel,
	    &compile };
	char *a1[] = { "cache", "ls", "-l" }, *a2[] = { "cancel", "ls" },
	    *a3[] = { "cache" }, *a4[] = { "cache", "nope" },
	    *a5[] = { "status" }, *a6[] = { "compile" };
	int used = 0;

	ck_assert_ptr_eq(ctl_cmd_find(t, 4, 3, a1, &used), &cache_ls);
	ck_assert_int_eq(used, 2);
	ck_assert_ptr_eq(ctl_cmd_find(t, 4, 2, a2, &used), &cancel);
	ck_assert_int_eq(used, 1);
	ck_assert_ptr_null(ctl_cmd_find(t, 4, 1, a3, &used));
	ck_assert_ptr_null(ctl_cmd_find(t, 4, 2, a4, &used));
	ck_assert(ctl_cmd_is_group(t, 4, "cache"));
	ck_assert(!ctl_cmd_is_group(t, 4, "cach"));
	ck_assert(!ctl_cmd_is_group(t, 4, "cancel"));
	ck_assert_ptr_null(ctl_cmd_find(t, 4, 1, a5, &used));
	ck_assert_ptr_eq(ctl_cmd_find(t, 4, 1, a6, &used), &compile);
	/* the real table */
	ck_assert_ptr_eq(ctl_cmd_find(ctl_cmd_table, ctl_cmd_count, 1, a5,
	    &used), &ctl_status_cmd);
}
END_TEST

/* ------------------------------------------------------------ usage */

START_TEST(test_ctl_usage_exit_codes)
{
	ck_assert_int_eq(run_ctl(NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "usage: nkictl"));
	ck_assert_int_eq(run_ctl("bogus", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown command 'bogus'"));
	ck_assert_int_eq(run_ctl("--bogus", "status", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--bogus'"));
	ck_assert_int_eq(run_ctl("-x", "status", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("-s", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "needs a value"));
	ck_assert_int_eq(run_ctl("-s", "", "status", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--timeout", "0", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--timeout", "-1", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("--timeout=abc", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "bad timeout 'abc'"));
	ck_assert_int_eq(run_ctl("--timeout", "nan", "status", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("status", "extra", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: status: unexpected "
	    "argument 'extra'"));
	ck_assert_ptr_nonnull(strstr(err_buf, "usage: nkictl"));
	ck_assert_int_eq(run_ctl("status", "-x", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '-x'"));
	ck_assert_int_eq(run_ctl("status", "--nope", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--nope'"));
	ck_assert_int_eq(run_ctl("ping", "-n", "0", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("ping", "-n", "abc", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("ping", "-n", "-3", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("ping", "-n", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "option '-n' needs a value"));
	ck_assert_int_eq(run_ctl("ping", "-n", "99999999999", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("run", NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "missing KERNEL"));
	ck_assert_int_eq(run_ctl("run", "k", "x.npy", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("run", "k", "-c", "x", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("compile", "k", "-i", "a=b.npy", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("simulate", "k", "--batch", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "unknown option '--batch'"));
	ck_assert_int_eq(run_ctl("help", "nope", NULL), CTL_EXIT_USAGE);
	ck_assert_int_eq(run_ctl("help", "status", "x", NULL), CTL_EXIT_USAGE);
}
END_TEST

START_TEST(test_ctl_help_and_version_succeed)
{
	size_t i;

	ck_assert_int_eq(run_ctl("help", NULL), CTL_EXIT_OK);
	for (i = 0; i < ctl_cmd_count; i++)
		ck_assert_ptr_nonnull(strstr(out_buf, ctl_cmd_table[i]->name));
	ck_assert_int_eq(run_ctl("--help", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "exit status"));
	ck_assert_int_eq(run_ctl("help", "run", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "-i [NAME=]FILE.npy"));
	ck_assert_int_eq(run_ctl("run", "--help", NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "usage: nkictl"));
	ck_assert_int_eq(run_ctl("status", "-h", NULL), CTL_EXIT_OK);
	ck_assert_int_eq(run_ctl("--version", NULL), CTL_EXIT_OK);
	ck_assert_str_eq(out_buf, "nkictl " NKID_VERSION "\n");
	ck_assert_str_eq(err_buf, "");
}
END_TEST

START_TEST(test_ctl_parse_numbers)
{
	unsigned long long v;
	double d;

	ck_assert_int_eq(ctl_parse_uint("10", 1, 10, &v), 0);
	ck_assert_uint_eq(v, 10);
	ck_assert_int_eq(ctl_parse_uint("11", 1, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("0", 1, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint(" 1", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("+1", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("1x", 0, 10, &v), -1);
	ck_assert_int_eq(ctl_parse_uint("99999999999999999999999", 0,
	    ~0ULL, &v), -1);
	ck_assert_int_eq(ctl_parse_seconds("0.25", &d), 0);
	ck_assert(d == 0.25);
	ck_assert_int_eq(ctl_parse_seconds("inf", &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("1e300", &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("0", &d), -1);
	ck_assert_int_eq(ctl_parse_seconds("5s", &d), -1);
}
END_TEST

/* ------------------------------------------------------------ connect */

START_TEST(test_ctl_cannot_connect_exits_3)
{
	char sock[600], file[600];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	FILE *f;
	int fd;

	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "status",
	    NULL), CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "nkictl: cannot connect to nkid "
	    "at '/nonexistent/nkid.sock': No such file or directory\n"));
	ck_assert_ptr_nonnull(strstr(err_buf, "systemctl status nkid"));
	ck_assert_str_eq(out_buf, "");

	/* $NKID_SOCKET when there is no -s; -s wins over it */
	setenv(CTL_SOCKET_ENV, "/nonexistent/env.sock", 1);
	ck_assert_int_eq(run_ctl("ping", NULL), CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "'/nonexistent/env.sock'"));
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/s.sock", "ping", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "'/nonexistent/s.sock'"));
	unsetenv(CTL_SOCKET_ENV);

	/* a regular file */
	snprintf(file, sizeof(file), "%s/file", tmpdir);
	f = fopen(file, "w");
	fclose(f);
	ck_assert_int_eq(run_ctl("-s", file, "status", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "not a socket"));

	/* a socket nobody listens on: gRPC says UNAVAILABLE, the probe
	 * tells why */
	snprintf(sock, sizeof(sock), "%s/dead.sock", tmpdir);
	ck_assert_uint_lt(strlen(sock), sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(run_ctl("-s", sock, "--timeout", "5", "status",
	    NULL), CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "Connection refused"));
	close(fd);

	/* a path too long for a Unix socket */
	memset(sock, 'a', 200);
	sock[0] = '/';
	sock[200] = '\0';
	ck_assert_int_eq(run_ctl("-s", sock, "status", NULL),
	    CTL_EXIT_CONNECT);
	ck_assert_ptr_nonnull(strstr(err_buf, "longer than"));
}
END_TEST

START_TEST(test_ctl_version_without_nkid)
{
	cJSON *o;

	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "version",
	    NULL), CTL_EXIT_OK);
	ck_assert_ptr_nonnull(strstr(out_buf, "nkictl " NKID_VERSION "\n"));
	ck_assert_ptr_nonnull(strstr(out_buf, "No such file or directory"));
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "--json",
	    "version", NULL), CTL_EXIT_OK);
	o = cJSON_Parse(out_buf);
	ck_assert_ptr_nonnull(o);
	ck_assert_str_eq(cJSON_GetObjectItem(o, "client")->valuestring,
	    NKID_VERSION);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(o, "daemon")));
	ck_assert(cJSON_IsString(cJSON_GetObjectItem(o, "error")));
	cJSON_Delete(o);
	/* --json after the command works too */
	ck_assert_int_eq(run_ctl("-s", "/nonexistent/nkid.sock", "version",
	    "--json", NULL), CTL_EXIT_OK);
	ck_assert_int_eq(out_buf[0], '{');
}
END_TEST

/* ------------------------------------------------------------ inputs */

/* A saved kernel file (magic + KernelRef) of the given format with params
 * a (float32), b (bfloat16), q (float8_e5m2); returns it read back. */
static Nkid__V1__KernelRef *
kernel_make(const char *format)
{
	Nkir__V1__Kernel ir = NKIR__V1__KERNEL__INIT;
	Nkir__V1__Tensor t[3] = { NKIR__V1__TENSOR__INIT,
	    NKIR__V1__TENSOR__INIT, NKIR__V1__TENSOR__INIT };
	Nkir__V1__Tensor *tp[3] = { &t[0], &t[1], &t[2] };
	Nkir__V1__Param p[3] = { NKIR__V1__PARAM__INIT, NKIR__V1__PARAM__INIT,
	    NKIR__V1__PARAM__INIT };
	Nkir__V1__Param *pp[3] = { &p[0], &p[1], &p[2] };
	Nkid__V1__Kernel k = NKID__V1__KERNEL__INIT;
	Nkid__V1__KernelRef ref = NKID__V1__KERNEL_REF__INIT, *back;
	uint8_t irbuf[512], kbuf[1024];
	char path[600], err[1024];
	FILE *f;
	size_t n;

	t[0].dtype = NKIR__V1__DTYPE__DT_FLOAT32;
	t[1].dtype = NKIR__V1__DTYPE__DT_BFLOAT16;
	t[2].dtype = NKIR__V1__DTYPE__DT_FP8_E5M2;
	p[0].name = "a";
	p[0].tensor = 0;
	p[1].name = "b";
	p[1].tensor = 1;
	p[2].name = "q";
	p[2].tensor = 2;
	ir.name = "k";
	ir.n_tensors = 3;
	ir.tensors = tp;
	ir.n_params = 3;
	ir.params = pp;
	ck_assert_uint_lt(nkir__v1__kernel__get_packed_size(&ir),
	    sizeof(irbuf));
	n = nkir__v1__kernel__pack(&ir, irbuf);
	k.name = "k";
	k.format = (char *)format;
	k.ir.data = irbuf;
	k.ir.len = n;
	ref.kernel = &k;
	ref.target = "trn2";
	memcpy(kbuf, CTL_KERNEL_MAGIC, CTL_KERNEL_MAGIC_LEN);
	n = CTL_KERNEL_MAGIC_LEN + nkid__v1__kernel_ref__pack(&ref,
	    kbuf + CTL_KERNEL_MAGIC_LEN);
	snprintf(path, sizeof(path), "%s/k.kernel", tmpdir);
	f = fopen(path, "wb");
	ck_assert_uint_eq(fwrite(kbuf, 1, n, f), n);
	fclose(f);
	ck_assert_msg(ctl_kernel_read(path, &back, err, sizeof(err)) == 0,
	    "%s", err);
	ck_assert_str_eq(back->kernel->format, format);
	ck_assert_str_eq(back->target, "trn2");
	return back;
}

static const char *
npy_make(const char *name, const char *dtype, size_t n)
{
	static char path[600];
	char err[1024], data[64] = { 0 };
	uint64_t shape[1] = { n };

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ck_assert_msg(npy_array_write(path, dtype, 1, shape, data,
	    n * npy_dtype_size(dtype), err, sizeof(err)) == 0, "%s", err);
	return path;
}

static int
inputs(Nkid__V1__KernelRef *k, ctl_inputs *in, ...)
{
	char *specs[16];
	size_t olen, elen, n = 0;
	ctl_ctx ctx;
	va_list ap;
	int rc;

	memset(&ctx, 0, sizeof(ctx));
	ctx.cmd = &ctl_run_cmd;
	free(out_buf);
	free(err_buf);
	ctx.out = open_memstream(&out_buf, &olen);
	ctx.err = open_memstream(&err_buf, &elen);
	va_start(ap, in);
	for (char *s = va_arg(ap, char *); s != NULL; s = va_arg(ap, char *))
		specs[n++] = strdup(s);
	va_end(ap);
	rc = ctl_inputs_load(&ctx, k->kernel, specs, n, in);
	while (n > 0)
		free(specs[--n]);
	fclose(ctx.out);
	fclose(ctx.err);
	return rc;
}

START_TEST(test_ctl_inputs_placed_by_name)
{
	Nkid__V1__KernelRef *k = kernel_make("nkir/1");
	char sa[700], sb[700], sq[700], sbad[700];
	ctl_inputs in;

	snprintf(sa, sizeof(sa), "a=%s", npy_make("a.npy", "float32", 4));
	snprintf(sb, sizeof(sb), "b=%s", npy_make("b.npy", "bfloat16", 4));
	/* a '<V1' file: takes the parameter's float8 dtype */
	snprintf(sq, sizeof(sq), "q=%s", npy_make("q.npy", "float8_e4m3fn", 4));

	/* by name, in any order */
	ck_assert_int_eq(inputs(k, &in, sq, sa, sb, NULL), CTL_EXIT_OK);
	ck_assert_uint_eq(in.n, 3);
	ck_assert_str_eq(in.ptrs[0]->name, "a");
	ck_assert_str_eq(in.ptrs[0]->dtype, "float32");
	ck_assert_str_eq(in.ptrs[1]->name, "b");
	ck_assert_str_eq(in.ptrs[1]->dtype, "bfloat16");
	ck_assert_str_eq(in.ptrs[2]->name, "q");
	ck_assert_str_eq(in.ptrs[2]->dtype, "float8_e5m2");
	ck_assert_uint_eq(in.ptrs[0]->data.len, 16);
	ctl_inputs_release(&in);

	/* unnamed ones fill the rest in order */
	ck_assert_int_eq(inputs(k, &in, sb, sa + 2, sq + 2, NULL), CTL_EXIT_OK);
	ck_assert_str_eq(in.ptrs[0]->name, "a");
	ck_assert_str_eq(in.ptrs[0]->dtype, "float32");
	ck_assert_str_eq(in.ptrs[2]->dtype, "float8_e5m2");
	ctl_inputs_release(&in);

	/* usage errors: unknown name, twice, missing, too many */
	ck_assert_int_eq(inputs(k, &in, sa, sb, "zz=x.npy", NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "no parameter 'zz' (parameters: "
	    "a, b, q)"));
	ctl_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, sa, sa, sq, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "input 'a' given twice"));
	ctl_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, sa, sb, NULL), CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "missing input 'q'"));
	ctl_inputs_release(&in);
	ck_assert_int_eq(inputs(k, &in, sa, sb, sq, sa + 2, NULL),
	    CTL_EXIT_USAGE);
	ck_assert_ptr_nonnull(strstr(err_buf, "takes 3 inputs"));
	ctl_inputs_release(&in);

	/* file errors: missing file, a '<V1' file for a float32 parameter */
	ck_assert_int_eq(inputs(k, &in, "a=/nonexistent.npy", sb, sq, NULL),
	    CTL_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(err_buf, "cannot read "
	    "'/nonexistent.npy'"));
	ctl_inputs_release(&in);
	snprintf(sbad, sizeof(sbad), "a=%s", sq + 2);
	ck_assert_int_eq(inputs(k, &in, sbad, sb, sq, NULL), CTL_EXIT_FAIL);
	ck_assert_ptr_nonnull(strstr(err_buf, "raw 1-byte dtype"));
	ctl_inputs_release(&in);
	ctl_kernel_free(k);
}
END_TEST

START_TEST(test_ctl_inputs_opaque_format_in_order)
{
	Nkid__V1__KernelRef *k = kernel_make("penguin");
	char sa[700];
	ctl_inputs in;

	snprintf(sa, sizeof(sa), "x=%s", npy_make("a.npy", "int8", 3));
	ck_assert_int_eq(inputs(k, &in, sa + 2, sa, NULL), CTL_EXIT_OK);
	ck_assert_uint_eq(in.n, 2);
	ck_assert_str_eq(in.ptrs[0]->name, "");
	ck_assert_str_eq(in.ptrs[1]->name, "x");
	ck_assert_str_eq(in.ptrs[1]->dtype, "int8");
	ctl_inputs_release(&in);
	ctl_kernel_free(k);
}
END_TEST

START_TEST(test_ctl_input_spec_split)
{
	char *name, *file;

	ck_assert_int_eq(ctl_input_spec_split("a_1=x=y.npy", &name, &file), 0);
	ck_assert_str_eq(name, "a_1");
	ck_assert_str_eq(file, "x=y.npy");
	free(name);
	ck_assert_int_eq(ctl_input_spec_split("./a=b.npy", &name, &file), 0);
	ck_assert_ptr_null(name);
	ck_assert_str_eq(file, "./a=b.npy");
	free(file);
	ck_assert_int_eq(ctl_input_spec_split("=b.npy", &name, &file), 0);
	ck_assert_ptr_null(name);
	free(file);
	ck_assert_int_eq(ctl_input_spec_split("1a=b.npy", &name, &file), 0);
	ck_assert_ptr_null(name);
	free(file);
}
END_TEST

START_TEST(test_ctl_kernel_read_errors)
{
	Nkid__V1__KernelRef *k;
	char path[600], err[1024];
	FILE *f;

	ck_assert_int_eq(ctl_kernel_read("/nonexistent.nkir", &k, err,
	    sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "cannot read kernel "
	    "'/nonexistent.nkir'"));
	snprintf(path, sizeof(path), "%s/junk", tmpdir);
	f = fopen(path, "w");
	fputs("\xff\xff\xff not a kernel", f);
	fclose(f);
	ck_assert_int_eq(ctl_kernel_read(path, &k, err, sizeof(err)), -1);
	ck_assert_ptr_null(k);
	ck_assert_ptr_nonnull(strstr(err, "not a saved kernel"));
	/* the magic, then garbage; then nothing */
	f = fopen(path, "w");
	fputs(CTL_KERNEL_MAGIC "\xff\xff\xff", f);
	fclose(f);
	ck_assert_int_eq(ctl_kernel_read(path, &k, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "malformed"));
	f = fopen(path, "w");
	fputs(CTL_KERNEL_MAGIC, f);
	fclose(f);
	ck_assert_int_eq(ctl_kernel_read(path, &k, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no kernel"));
	/* a directory */
	ck_assert_int_eq(ctl_kernel_read(tmpdir, &k, err, sizeof(err)), -1);
}
END_TEST

START_TEST(test_ctl_outputs_names_stay_in_dir)
{
	Nkid__V1__Tensor t[3] = { NKID__V1__TENSOR__INIT,
	    NKID__V1__TENSOR__INIT, NKID__V1__TENSOR__INIT };
	Nkid__V1__Tensor *tp[3] = { &t[0], &t[1], &t[2] };
	uint64_t shape[1] = { 2 };
	uint8_t data[8] = { 0 };
	char dir[600], p[700];
	size_t olen, elen;
	ctl_ctx ctx;
	int i;

	for (i = 0; i < 3; i++) {
		t[i].dtype = "float32";
		t[i].n_shape = 1;
		t[i].shape = shape;
		t[i].data.data = data;
		t[i].data.len = 8;
	}
	t[0].name = "../evil";
	t[1].name = "c";
	t[2].name = "c";
	memset(&ctx, 0, sizeof(ctx));
	ctx.cmd = &ctl_run_cmd;
	ctx.out = open_memstream(&out_buf, &olen);
	ctx.err = open_memstream(&err_buf, &elen);
	snprintf(dir, sizeof(dir), "%s/out", tmpdir);
	ck_assert_int_eq(ctl_outputs_write(&ctx, dir, tp, 3, NULL),
	    CTL_EXIT_OK);
	fclose(ctx.out);
	fclose(ctx.err);
	snprintf(p, sizeof(p), "%s/output0.npy", dir);
	ck_assert_int_eq(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/c.npy", dir);
	ck_assert_int_eq(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/c_2.npy", dir);
	ck_assert_int_eq(access(p, F_OK), 0);
	snprintf(p, sizeof(p), "%s/evil.npy", tmpdir);
	ck_assert_int_ne(access(p, F_OK), 0);
	ck_assert_ptr_nonnull(strstr(out_buf, "(2,)"));
}
END_TEST

static Suite *
args_suite(void)
{
	Suite *s = suite_create("ctl_args");
	TCase *tc;

	tc = tcase_create("core");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ctl_table_sorted_and_complete);
	tcase_add_test(tc, test_ctl_find_words_and_groups);
	tcase_add_test(tc, test_ctl_help_and_version_succeed);
	tcase_add_test(tc, test_ctl_parse_numbers);
	tcase_add_test(tc, test_ctl_input_spec_split);
	tcase_add_test(tc, test_ctl_inputs_placed_by_name);
	tcase_add_test(tc, test_ctl_inputs_opaque_format_in_order);
	tcase_add_test(tc, test_ctl_outputs_names_stay_in_dir);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_ctl_usage_exit_codes);
	tcase_add_test(tc, test_ctl_cannot_connect_exits_3);
	tcase_add_test(tc, test_ctl_version_without_nkid);
	tcase_add_test(tc, test_ctl_kernel_read_errors);
	tcase_set_timeout(tc, 20);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(args_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
