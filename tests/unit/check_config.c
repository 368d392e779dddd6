/* check_config.c: the config table: defaults, every kind of bad input, overrides, reload merge. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "daemon/backend.h"
#include "daemon/config.h"
#include "tests/unit/check_main.h"

CHECK_SUITE("config", NULL, NULL, NULL);
CHECK_TCASE(core, 0);
CHECK_TCASE(limits, 0);
CHECK_TCASE(errors, 0);
CHECK_TCASE(recovery, 0);

static char	err[1024];

static int
load(struct config *cfg, const char *json)
{
	err[0] = '\0';
	return (config_load_string(cfg, "t.json", json, strlen(json), NULL,
	    err, sizeof err));
}

CHECK_TEST(core, test_config_defaults)
{
	struct config	cfg;

	ck_assert_int_eq(config_load(&cfg, NULL, NULL, err, sizeof err), 0);
	ck_assert_str_eq(cfg.socket, "/run/nkid/nkid.sock");
	ck_assert_uint_eq(cfg.socket_mode, 0660);
	ck_assert_str_eq(cfg.socket_group, "");
	ck_assert_str_eq(cfg.state_dir, "/var/lib/nkid");
	ck_assert_str_eq(cfg.cache_dir, "/var/cache/nkid");
	ck_assert_str_eq(cfg.lock_dir, "/run/nkid/lock");
	ck_assert_str_eq(cfg.backend, "cpu");
	ck_assert_uint_eq(cfg.cpu_cores, 1);
	ck_assert_uint_eq(cfg.n_allow_uids, 0);
	ck_assert_uint_eq(cfg.max_conn_per_uid, 128);
	ck_assert_uint_eq(cfg.shutdown_grace_ms, 1000);
	ck_assert_uint_eq(config_cap_bytes(&cfg, CONFIG_CAP_TENSOR),
	    1024ULL * 1024 * 1024);
	ck_assert_uint_eq(config_cap_bytes(&cfg, CONFIG_CAP_CONTROL),
	    1024 * 1024);
	ck_assert_ptr_null(cfg.path);
	config_release(&cfg);
}
END_TEST

CHECK_TEST(core, test_config_values_parsed)
{
	struct config	cfg;

	ck_assert_int_eq(load(&cfg, "{\"socket\": \"/tmp/a.sock\", "
	    "\"socket_mode\": \"0600\", \"cpu\": {\"cores\": 4}, "
	    "\"access\": {\"allow_uids\": [1000, \"root\"], "
	    "\"allow_gids\": [\"root\"], \"max_connections_per_uid\": 3}, "
	    "\"limits\": {\"max_message_bytes\": {\"control\": \"64KiB\", "
	    "\"tensor\": 1048576}}, \"log_level\": \"debug\"}"), 0);
	ck_assert_str_eq(cfg.socket, "/tmp/a.sock");
	ck_assert_uint_eq(cfg.socket_mode, 0600);
	ck_assert_uint_eq(cfg.cpu_cores, 4);
	ck_assert_uint_eq(cfg.n_allow_uids, 2);
	ck_assert_uint_eq(cfg.allow_uids[0], 1000);
	ck_assert_uint_eq(cfg.allow_uids[1], 0);
	ck_assert_uint_eq(cfg.n_allow_gids, 1);
	ck_assert_uint_eq(cfg.max_conn_per_uid, 3);
	ck_assert_uint_eq(config_cap_bytes(&cfg, CONFIG_CAP_CONTROL), 65536);
	ck_assert_uint_eq(config_cap_bytes(&cfg, CONFIG_CAP_TENSOR), 1048576);
	ck_assert_int_eq(cfg.log_level, 3);
	config_release(&cfg);
}
END_TEST

CHECK_TEST(core, test_config_state_dir_override)
{
	struct config		cfg;
	struct config_override	ov = { "/tmp/o.sock", "/tmp/st" };
	const char		*j = "{\"socket\": \"/tmp/a.sock\"}";

	ck_assert_int_eq(config_load_string(&cfg, "t", j, strlen(j), &ov, err,
	    sizeof err), 0);
	ck_assert_str_eq(cfg.socket, "/tmp/o.sock");
	ck_assert_str_eq(cfg.state_dir, "/tmp/st");
	ck_assert_str_eq(cfg.cache_dir, "/tmp/st/cache");
	ck_assert_str_eq(cfg.lock_dir, "/tmp/st/lock");
	config_release(&cfg);
}
END_TEST

CHECK_TEST(core, test_config_shipped_files_valid)
{
	static const char *files[] = { "config/nkid.json", "config/dev.json",
	    "config/test.json" };
	struct config	cfg;
	size_t		i;

	for (i = 0; i < sizeof files / sizeof files[0]; i++) {
		if (access(files[i], R_OK) != 0)
			continue;	/* run from another directory */
		ck_assert_msg(config_load(&cfg, files[i], NULL, err,
		    sizeof err) == 0, "%s", err);
		ck_assert_str_eq(cfg.path, files[i]);
		config_release(&cfg);
	}
}
END_TEST

CHECK_TEST(limits, test_config_limits_bounds_inclusive)
{
	struct config	cfg;

	ck_assert_int_eq(load(&cfg, "{\"cpu\": {\"cores\": 256}}"), 0);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, "{\"cpu\": {\"cores\": 1}}"), 0);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, "{\"shutdown_grace_ms\": 0}"), 0);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, "{\"cpu\": {\"cores\": 257}}"),
	    CONFIG_ERANGE);
	ck_assert_ptr_nonnull(strstr(err, "'cpu.cores' must be an integer "
	    "from 1 to 256, not 257"));
	ck_assert_int_eq(load(&cfg, "{\"limits\": {\"max_message_bytes\": "
	    "{\"tensor\": \"4GiB\"}}}"), CONFIG_ERANGE);
	ck_assert_ptr_nonnull(strstr(err,
	    "limits.max_message_bytes.tensor"));
}
END_TEST

CHECK_TEST(errors, test_config_unknown_key_named)
{
	struct config	cfg;

	ck_assert_int_eq(load(&cfg, "{\"sokcet\": \"/x\"}"), CONFIG_EKEY);
	ck_assert_str_eq(err, "config 't.json': unknown key 'sokcet' (did "
	    "you mean 'socket'?)");
	ck_assert_int_eq(load(&cfg, "{\"cache\": {\"max_byte\": 1}}"),
	    CONFIG_EKEY);
	ck_assert_str_eq(err, "config 't.json': unknown key 'cache.max_byte' "
	    "(did you mean 'cache.max_bytes'?)");
	/* Nothing close: no guess. */
	ck_assert_int_eq(load(&cfg, "{\"frobnicate\": 1}"), CONFIG_EKEY);
	ck_assert_str_eq(err, "config 't.json': unknown key 'frobnicate'");
}
END_TEST

CHECK_TEST(core, test_config_byte_suffixes)
{
	struct config	cfg;

	ck_assert_int_eq(load(&cfg, "{\"cache\": {\"max_bytes\": "
	    "\"16GB\"}}"), 0);
	ck_assert_uint_eq(cfg.cache_max_bytes, 16000000000ULL);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, "{\"cache\": {\"max_bytes\": "
	    "\"16 GiB\"}}"), 0);
	ck_assert_uint_eq(cfg.cache_max_bytes, 16ULL << 30);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, "{\"cache\": {\"max_bytes\": "
	    "\"1t\"}}"), 0);
	ck_assert_uint_eq(cfg.cache_max_bytes, 1ULL << 40);
	config_release(&cfg);
	ck_assert_int_eq(load(&cfg, "{\"cache\": {\"max_bytes\": "
	    "\"16 gigs\"}}"), CONFIG_ETYPE);
	ck_assert_ptr_nonnull(strstr(err, "(suffixes: B, KiB, MiB, GiB, TiB "
	    "or K, M, G, T, powers of 1024; KB, MB, GB, TB, powers of 1000; "
	    "any case)"));
}
END_TEST

CHECK_TEST(errors, test_config_unknown_nested_key_named)
{
	struct config	cfg;

	ck_assert_int_eq(load(&cfg, "{\"limits\": {\"max_message_bytes\": "
	    "{\"contrl\": 5}}}"), CONFIG_EKEY);
	ck_assert_str_eq(err, "config 't.json': unknown key "
	    "'limits.max_message_bytes.contrl' (did you mean "
	    "'limits.max_message_bytes.control'?)");
	ck_assert_int_eq(load(&cfg, "{\"cpu\": {\"core\": 2}}"), CONFIG_EKEY);
	ck_assert_ptr_nonnull(strstr(err, "unknown key 'cpu.core'"));
}
END_TEST

/* A configuration refused with error and a message that holds want. */
struct refusal {
	const char	*json;
	int		 error;
	const char	*want;		/* NULL: any message */
};

static void
refusals_check(const struct refusal *r, size_t n)
{
	struct config	cfg;
	size_t		i;

	for (i = 0; i < n; i++) {
		ck_assert_msg(load(&cfg, r[i].json) == r[i].error,
		    "'%s': not error %d: %s", r[i].json, r[i].error, err);
		if (r[i].want != NULL)
			ck_assert_msg(strstr(err, r[i].want) != NULL,
			    "'%s': '%s' lacks '%s'", r[i].json, err,
			    r[i].want);
	}
}

/* The backend's choices are the backend table's names, not a list of the
 * config's: a name the table lacks is refused naming every one it has. */
CHECK_TEST(errors, test_config_backend_choices_from_table)
{
	struct config	cfg;
	char		err[512];
	const char	*j = "{\"backend\": \"gpu\"}";

	ck_assert_int_eq(config_load_string(&cfg, "t.json", j, strlen(j), NULL,
	    err, sizeof err), 0);
	ck_assert_int_eq(backend_config_check(&cfg, "t.json", err, sizeof err),
	    BACKEND_EOPEN);
	ck_assert_str_eq(err, "config 't.json': 'backend' must be one of: "
	    "cpu neuron; not 'gpu'");
	config_release(&cfg);
	j = "{\"backend\": \"neuron\"}";
	ck_assert_int_eq(config_load_string(&cfg, "t.json", j, strlen(j), NULL,
	    err, sizeof err), 0);
	ck_assert_int_eq(backend_config_check(&cfg, "t.json", err, sizeof err),
	    0);
	config_release(&cfg);
}

CHECK_TEST(errors, test_config_wrong_type_named)
{
	static const struct refusal	r[] = {
		{ "{\"cpu\": {\"cores\": \"2\"}}", CONFIG_ETYPE,
		    "'cpu.cores' must be a number, not a string" },
		{ "{\"socket\": 5}", CONFIG_ETYPE,
		    "'socket' must be a string" },
		{ "{\"cpu\": 4}", CONFIG_ETYPE, "'cpu' must be an object" },
		{ "{\"socket_mode\": 660}", CONFIG_ETYPE,
		    "'socket_mode' must be an octal" },
		{ "{\"access\": {\"allow_uids\": 0}}", CONFIG_ETYPE,
		    "'access.allow_uids' must be an array" },
		{ "[1, 2]", CONFIG_ETYPE, "top level must be an object" },
	};

	refusals_check(r, sizeof r / sizeof r[0]);
}
END_TEST

CHECK_TEST(errors, test_config_bad_values_named)
{
	static const struct refusal	r[] = {
		{ "{\"cpu\": {\"cores\": 1.5}}", CONFIG_ERANGE, NULL },
		{ "{\"cpu\": {\"cores\": -1}}", CONFIG_ERANGE, NULL },
		{ "{\"socket_mode\": \"0999\"}", CONFIG_ERANGE, NULL },
		{ "{\"state_dir\": \"relative/dir\"}", CONFIG_ERANGE,
		    "'state_dir' must be an absolute path" },
		{ "{\"log_level\": \"loud\"}", CONFIG_ERANGE, NULL },
		{ "{\"access\": {\"allow_uids\": [0, \"no-such-user-nkid\"]}}",
		    CONFIG_ERANGE, "'access.allow_uids[1]': unknown user "
		    "'no-such-user-nkid'" },
		{ "{\"limits\": {\"max_tensor_bytes\": \"12 parsecs\"}}",
		    CONFIG_ETYPE, NULL },
		{ "{\"socket\": \"/"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		    "aaaaaaaaaaaaaaaaaaaa\"}", CONFIG_ERANGE,
		    "longer than a unix socket path" },
	};

	refusals_check(r, sizeof r / sizeof r[0]);
}
END_TEST

CHECK_TEST(errors, test_config_bad_json_position)
{
	static const struct refusal	r[] = {
		{ "{\n  \"socket\": \"/x\",\n  oops\n}", CONFIG_ESYNTAX,
		    "invalid JSON at line 3" },
		{ "", CONFIG_ESYNTAX, NULL },
	};

	refusals_check(r, sizeof r / sizeof r[0]);
}
END_TEST

CHECK_TEST(errors, test_config_duplicate_key)
{
	static const struct refusal	r[] = {
		{ "{\"cpu\": {\"cores\": 1, \"cores\": 2}}", CONFIG_EKEY,
		    "duplicate key 'cpu.cores'" },
	};

	refusals_check(r, sizeof r / sizeof r[0]);
}
END_TEST

CHECK_TEST(errors, test_config_missing_file)
{
	struct config	cfg;

	ck_assert_int_eq(config_load(&cfg, "/nonexistent/nkid.json", NULL, err,
	    sizeof err), CONFIG_EOPEN);
	ck_assert_str_eq(err, "config '/nonexistent/nkid.json': cannot open: "
	    "No such file or directory");
}
END_TEST

CHECK_TEST(recovery, test_config_reload_keeps_restart_keys)
{
	struct config	cur, next;

	ck_assert_int_eq(load(&cur, "{\"socket\": \"/tmp/a.sock\", "
	    "\"cpu\": {\"cores\": 2}}"), 0);
	ck_assert_int_eq(load(&next, "{\"socket\": \"/tmp/b.sock\", "
	    "\"cpu\": {\"cores\": 3}, \"shutdown_grace_ms\": 5, "
	    "\"log_level\": \"warn\"}"), 0);
	ck_assert_int_eq(config_reload_merge(&cur, &next), 2);
	ck_assert_str_eq(next.socket, "/tmp/a.sock");
	ck_assert_uint_eq(next.cpu_cores, 2);
	ck_assert_uint_eq(next.shutdown_grace_ms, 5);
	config_release(&cur);
	config_release(&next);
}
END_TEST

/* access.cache_visibility: shared by default, owner on request, nothing
 * else, and live: a reload keeps the new value. */
CHECK_TEST(core, test_config_cache_visibility)
{
	struct config			cur, next;
	static const struct refusal	r[] = {
		{ "{\"access\": {\"cache_visibility\": \"private\"}}",
		    CONFIG_ERANGE, "'access.cache_visibility' must be one of: "
		    "shared owner" },
		{ "{\"access\": {\"cache_visibility\": 1}}", CONFIG_ETYPE,
		    NULL },
	};

	ck_assert_int_eq(load(&cur, "{}"), 0);
	ck_assert_str_eq(cur.cache_visibility, "shared");
	ck_assert_int_eq(load(&next, "{\"access\": {\"cache_visibility\": "
	    "\"owner\"}}"), 0);
	ck_assert_int_eq(config_reload_merge(&cur, &next), 1);
	ck_assert_str_eq(next.cache_visibility, "owner");
	config_release(&cur);
	config_release(&next);
	refusals_check(r, sizeof r / sizeof r[0]);
}
END_TEST

CHECK_TEST(core, test_config_copy_deep)
{
	struct config	a, b;

	ck_assert_int_eq(load(&a, "{\"access\": {\"allow_uids\": [5, 6]}}"),
	    0);
	config_copy(&b, &a);
	config_release(&a);
	ck_assert_uint_eq(b.n_allow_uids, 2);
	ck_assert_uint_eq(b.allow_uids[1], 6);
	ck_assert_str_eq(b.socket, "/run/nkid/nkid.sock");
	config_release(&b);
}
END_TEST

CHECK_TEST(errors, test_config_remote_reach_names_the_drop_in)
{
	char	why[1024];

	/* Refused: a reason, and no talk of the unit's restrictions. */
	ck_assert_int_eq(config_remote_url_reach("redis://127.0.0.1:1", 500,
	    why, sizeof why), -1);
	ck_assert_str_eq(why, "cannot connect to '127.0.0.1:1': Connection "
	    "refused");
	ck_assert_int_eq(config_remote_url_reach("unix:///nonexistent/r.sock",
	    500, why, sizeof why), -1);
	ck_assert_str_eq(why, "cannot connect to '/nonexistent/r.sock': No "
	    "such file or directory");
	/* What RestrictAddressFamilies= and PrivateNetwork= cause. */
	ck_assert_ptr_nonnull(strstr(config_remote_reach_hint(EAFNOSUPPORT),
	    "nkid-remote.conf"));
	ck_assert_ptr_nonnull(strstr(config_remote_reach_hint(ENETUNREACH),
	    "nkid-remote.conf"));
	ck_assert_ptr_nonnull(strstr(config_remote_reach_hint(EPERM),
	    "nkid-remote.conf"));
	ck_assert_str_eq(config_remote_reach_hint(ECONNREFUSED), "");
}
END_TEST
