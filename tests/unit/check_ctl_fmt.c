/*
 * check_ctl_fmt.c: what nkictl prints for people: human units
 * (ctl_fmt.c), tables as wide as their contents (ctl_table.c), the
 * progress line (ctl_progress.c), key abbreviations and signatures
 * (ctl_cache.c).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkid.pb-c.h"
#include "client/nkictl/ctl.h"
#include "client/nkictl/ctl_cache.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("ctl_fmt", NULL, NULL, NULL);
CHECK_TCASE(core, 0);

/* A formatter of doubles, and what it must write for a value. */
struct fmt_case {
	const char	*(*fmt)(double, char *, size_t);
	double		  v;
	const char	 *want;
};

static void
fmt_cases_check(const struct fmt_case *c, size_t n)
{
	char	b[32];
	size_t	i;

	for (i = 0; i < n; i++)
		ck_assert_str_eq(c[i].fmt(c[i].v, b, sizeof b), c[i].want);
}

CHECK_TEST(core, test_ctl_fmt_bytes)
{
	static const struct {
		uint64_t	 n;
		const char	*want;
	} c[] = {
		{ 0, "0 B" },
		{ 1023, "1023 B" },
		{ 1024, "1.00 KiB" },
		{ 1536, "1.50 KiB" },
		{ 15938355, "15.2 MiB" },
		{ 17179869184ULL, "16.0 GiB" },
		{ 163208757248ULL, "152 GiB" },
		{ 10239, "10.0 KiB" },	/* 9.999 KiB is not "10.00 KiB" */
		{ ~0ULL, "16.0 EiB" },
	};
	char	b[32];
	size_t	i;

	for (i = 0; i < sizeof c / sizeof c[0]; i++)
		ck_assert_str_eq(ctl_fmt_bytes(c[i].n, b, sizeof b), c[i].want);
}
END_TEST

CHECK_TEST(core, test_ctl_fmt_durations)
{
	static const struct fmt_case	c[] = {
		{ ctl_fmt_us, 0, "0 s" },
		{ ctl_fmt_us, 3.2, "3.20 us" },
		{ ctl_fmt_us, 850, "850 us" },
		{ ctl_fmt_us, 1250, "1.25 ms" },
		{ ctl_fmt_us, 18800, "18.8 ms" },
		{ ctl_fmt_us, 997000, "997 ms" },
		{ ctl_fmt_us, 2e6, "2.00 s" },
		{ ctl_fmt_seconds, 185, "3m 05s" },
		{ ctl_fmt_seconds, 7260, "2h 01m" },
		{ ctl_fmt_seconds, 93600, "1d 02h" },
		{ ctl_fmt_us, -1, "-" },
		/* 2008147 us, the "queued 2008147 us" */
		{ ctl_fmt_us, 2008147, "2.01 s" },
	};

	fmt_cases_check(c, sizeof c / sizeof c[0]);
}
END_TEST

CHECK_TEST(core, test_ctl_fmt_ages_and_percentages)
{
	char	b[32];

	ck_assert_str_eq(ctl_fmt_age(0, 1000, b, sizeof b), "never");
	ck_assert_str_eq(ctl_fmt_age(999.5, 1000, b, sizeof b), "just now");
	ck_assert_str_eq(ctl_fmt_age(988, 1000, b, sizeof b), "12s ago");
	ck_assert_str_eq(ctl_fmt_age(1000 - 330, 1000, b, sizeof b),
	    "5m ago");
	ck_assert_str_eq(ctl_fmt_age(1e6 - 3 * 3600 - 1, 1e6, b, sizeof b),
	    "3h ago");
	ck_assert_str_eq(ctl_fmt_age(1e6 - 2 * 86400, 1e6, b, sizeof b),
	    "2d ago");
	ck_assert_str_eq(ctl_fmt_time(0, b, sizeof b), "-");
	ck_assert_str_eq(ctl_fmt_percent(1234, 1324, b, sizeof b), "93.2%");
	ck_assert_str_eq(ctl_fmt_percent(0, 0, b, sizeof b), "-");
	ck_assert_str_eq(ctl_fmt_percent(9999, 10000, b, sizeof b), "99.9%");
	ck_assert_str_eq(ctl_fmt_percent(10, 10, b, sizeof b), "100.0%");
	/* the "0 of 17179869184 bytes" */
	ck_assert_str_eq(ctl_fmt_percent(0, 17179869184ULL, b, sizeof b),
	    "0.0%");
}
END_TEST

/* t printed into a string (a memory stream: not a terminal). */
static char *
table_text(struct ctl_table *t)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f = open_memstream(&buf, &len);

	ctl_table_print(t, f);
	fclose(f);
	return (buf);
}

CHECK_TEST(core, test_ctl_table_widths_fit_contents)
{
	static const struct ctl_table_col cols[] = {
		{ "ID", CTL_TABLE_RIGHT }, { "KIND", 0 },
		{ "KERNEL", CTL_TABLE_TRUNC }, { "STATE", 0 },
	};
	struct ctl_table	*t;
	char			*s, *long_name;

	t = ctl_table_new(cols, 4);
	ctl_table_row(t, "7", "run", "vector_add", "running");
	ctl_table_row(t, "12", "benchmark", "mm", "");
	ck_assert_uint_eq(ctl_table_rows(t), 2);
	s = table_text(t);
	/* every column as wide as its widest cell, two blanks apart: a long
	 * KIND shifts nothing, the numbers align right, "" is "-" */
	ck_assert_str_eq(s,
	    "ID  KIND       KERNEL      STATE\n"
	    " 7  run        vector_add  running\n"
	    "12  benchmark  mm          -\n");
	free(s);

	/* off a terminal nothing is cut, however long */
	long_name = calloc(1, 301);
	memset(long_name, 'k', 300);
	t = ctl_table_new(cols, 4);
	ctl_table_row(t, "1", "run", long_name, "done");
	s = table_text(t);
	ck_assert_ptr_nonnull(strstr(s, long_name));
	ck_assert_ptr_nonnull(strstr(s, "  done\n"));
	free(s);
	free(long_name);
}
END_TEST

CHECK_TEST(core, test_ctl_progress_line)
{
	struct ctl_progress	p;
	struct ctl_ctx		ctx;
	char			b[256];

	memset(&ctx, 0, sizeof ctx);
	ctx.err = fopen("/dev/null", "w");
	ctl_progress_init(&p, &ctx, "export", NULL, 48ULL << 20);
	/* not a terminal: nothing is drawn */
	ck_assert_int_eq(p.on, 0);
	ctl_progress_set(&p, 12ULL << 20);
	ck_assert_int_eq(p.drawn, 0);
	ck_assert_str_eq(ctl_progress_line(&p, 2.0, b, sizeof b),
	    "export: 12.0 MiB of 48.0 MiB (25%), 6.00 MiB/s, ETA 6s");
	/* no rate in the first half second */
	ck_assert_str_eq(ctl_progress_line(&p, 0.1, b, sizeof b),
	    "export: 12.0 MiB of 48.0 MiB (25%)");
	/* a total that was short is no total */
	p.done = 50ULL << 20;
	ck_assert_str_eq(ctl_progress_line(&p, 10.0, b, sizeof b),
	    "export: 50.0 MiB, 5.00 MiB/s");
	p.total = 0;
	ck_assert_str_eq(ctl_progress_line(&p, 10.0, b, sizeof b),
	    "export: 50.0 MiB, 5.00 MiB/s");
	/* counted in kernels, an ETA in minutes */
	ctl_progress_init(&p, &ctx, "warmup", "kernels", 400);
	p.done = 12;
	ck_assert_str_eq(ctl_progress_line(&p, 4.0, b, sizeof b),
	    "warmup: 12 of 400 kernels (3%), 3 kernels/s, ETA 2m 09s");
	p.done = 400;
	ck_assert_str_eq(ctl_progress_line(&p, 8.0, b, sizeof b),
	    "warmup: 400 of 400 kernels (100%), 50 kernels/s");
	fclose(ctx.err);
}
END_TEST

CHECK_TEST(core, test_ctl_cache_abbrev_and_signature)
{
	Nkid__V1__Tensor	 t[2] = { NKID__V1__TENSOR__INIT,
				    NKID__V1__TENSOR__INIT };
	Nkid__V1__Tensor	*tp[2] = { &t[0], &t[1] };
	uint64_t		 s0[2] = { 128, 512 }, s1[1] = { 4 };
	char			*keys[3], b[256];

	keys[0] = "3f576008475cc5c9ea6b1fcf3a9feaf3"
	    "6c9e9cb8bfc1d8d0867920d584bb0c99";
	keys[1] = "02b67e00370c5fc04d04e4184ef1d12d"
	    "66bdde2809a7ef5857350073d8eb2c7b";
	keys[2] = "3f576008475cc5c9ea6b000000000000"
	    "0000000000000000000000000000000a";
	ck_assert_int_eq(ctl_cache_abbrev_len(keys, 2), 16);
	/* two keys that share 20 digits are told apart with 21 */
	ck_assert_int_eq(ctl_cache_abbrev_len(keys, 3), 21);
	ck_assert_int_eq(ctl_cache_abbrev_len(keys, 0), 16);

	t[0].name = "x";
	t[0].dtype = "float32";
	t[0].n_shape = 2;
	t[0].shape = s0;
	t[1].name = "idx";
	t[1].dtype = "int8";
	t[1].n_shape = 1;
	t[1].shape = s1;
	ck_assert_str_eq(ctl_cache_sig_format(tp, 2, b, sizeof b),
	    "x: float32[128,512], idx: int8[4]");
	ck_assert_str_eq(ctl_cache_sig_format(tp, 0, b, sizeof b), "");
	/* cut, never overrun */
	ck_assert_str_eq(ctl_cache_sig_format(tp, 2, b, 10), "x: float3");
}
END_TEST
