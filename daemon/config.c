/* config.c: the typed table of configuration keys, the JSON reader, reload merge. */
#include <sys/param.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <math.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "daemon/config.h"
#include "daemon/errstr.h"
#include "daemon/log.h"
#include "daemon/xmalloc.h"

#define KiB	(1024ULL)
#define MiB	(1024ULL * KiB)
#define GiB	(1024ULL * MiB)

/* Largest config file accepted: a config is a page of text. */
#define CONFIG_MAX_FILE	(1024 * 1024)
/* A key's dotted path in messages; an array element's adds "[N]". */
#define CONFIG_PATH_LEN	512

enum config_type {
	CFG_STRING,	/* any string */
	CFG_PATH,	/* absolute path */
	CFG_OPTPATH,	/* absolute path, or "" for none */
	CFG_SOCKPATH,	/* absolute path that fits sockaddr_un */
	CFG_MODE,	/* octal string, "0660" */
	CFG_U32,	/* integer in [min, max] */
	CFG_BYTES,	/* integer, or a string with a KiB/MiB/GiB suffix */
	CFG_LEVEL,	/* log level name */
	CFG_CHOICE,	/* one of choices, blank-separated */
	CFG_UIDS,	/* array of uids or user names */
	CFG_GIDS,	/* array of gids or group names */
	CFG_LISTEN,	/* "", HOST:PORT or an absolute unix socket path */
};

/* How a key's value is held in struct config, by its type. */
enum config_store {
	CFG_STORE_STR,		/* char *, owned: the string types */
	CFG_STORE_U32,		/* uint32_t: CFG_MODE, CFG_U32 */
	CFG_STORE_U64,		/* uint64_t: CFG_BYTES */
	CFG_STORE_LEVEL,	/* int: CFG_LEVEL */
	CFG_STORE_IDS,		/* uint32_t *, owned, and a size_t count at
				 * count_off: CFG_UIDS, CFG_GIDS */
};

#define CFG_F_RESTART	0x1	/* takes effect only at start */

struct config_key {
	const char		*path;
	enum config_type	 type;
	size_t			 off;
	size_t			 count_off;	/* CFG_UIDS, CFG_GIDS */
	uint64_t		 min;
	uint64_t		 max;
	const char		*def_str;
	uint64_t		 def_num;
	const char		*choices;
	int			 flags;
};

#define F(field)	offsetof(struct config, field)
#define FCAP(c)		(offsetof(struct config, max_message_bytes) + \
			    (c) * sizeof(uint64_t))

/* Every key nkid knows, sorted by JSON path. docs/config.md mirrors it. */
static const struct config_key config_keys[] = {
	{ "access.admin_gids", CFG_GIDS, F(admin_gids), F(n_admin_gids),
	  0, UINT32_MAX - 1, NULL, 0, NULL, 0 },
	{ "access.allow_gids", CFG_GIDS, F(allow_gids), F(n_allow_gids),
	  0, UINT32_MAX - 1, NULL, 0, NULL, 0 },
	{ "access.allow_uids", CFG_UIDS, F(allow_uids), F(n_allow_uids),
	  0, UINT32_MAX - 1, NULL, 0, NULL, 0 },
	{ "access.cache_visibility", CFG_CHOICE, F(cache_visibility), 0, 0, 0,
	  "shared", 0, "shared owner", 0 },
	{ "access.max_connections_per_uid", CFG_U32, F(max_conn_per_uid), 0,
	  1, 65536, NULL, 128, NULL, 0 },
	/* One of the backend table's names: backend_config_check. */
	{ "backend", CFG_STRING, F(backend), 0, 0, 0, "cpu", 0, NULL,
	  CFG_F_RESTART },
	{ "benchmark.latency", CFG_CHOICE, F(benchmark_latency), 0, 0, 0,
	  "model", 0, "model cpu", 0 },
	{ "cache.compile_workers", CFG_U32, F(cache_compile_workers), 0,
	  1, 256, NULL, 2, NULL, 0 },
	{ "cache.max_bundle_bytes", CFG_BYTES, F(cache_max_bundle_bytes), 0,
	  1 * MiB, 64 * 1024 * GiB, NULL, 16 * GiB, NULL, 0 },
	{ "cache.max_bytes", CFG_BYTES, F(cache_max_bytes), 0,
	  1 * MiB, 64 * 1024 * GiB, NULL, 16 * GiB, NULL, 0 },
	{ "cache.max_memory_bytes", CFG_BYTES, F(cache_memory_bytes), 0,
	  1 * MiB, 1024 * GiB, NULL, 128 * MiB, NULL, 0 },
	{ "cache.max_pinned_bytes_per_uid", CFG_BYTES, F(cache_pin_quota), 0,
	  0, 64 * 1024 * GiB, NULL, 0, NULL, 0 },
	{ "cache_dir", CFG_PATH, F(cache_dir), 0, 0, 0, "/var/cache/nkid", 0,
	  NULL, CFG_F_RESTART },
	{ "cpu.cores", CFG_U32, F(cpu_cores), 0, 1, 256, NULL, 1, NULL,
	  CFG_F_RESTART },
	{ "cpu.executor_threads", CFG_U32, F(cpu_executor_threads), 0, 0, 64,
	  NULL, 0, NULL, CFG_F_RESTART },
	{ "fastpath.max_clients_per_uid", CFG_U32,
	  F(fastpath_max_clients_per_uid), 0, 0, 65536, NULL, 64, NULL,
	  CFG_F_RESTART },
	{ "fastpath.max_frame_bytes", CFG_BYTES, F(fastpath_max_frame_bytes),
	  0, 4 * KiB, 192 * KiB, NULL, 128 * KiB, NULL, CFG_F_RESTART },
	{ "fastpath.max_inflight", CFG_U32, F(fastpath_max_inflight), 0, 1,
	  1024, NULL, 64, NULL, CFG_F_RESTART },
	{ "jobs.history", CFG_U32, F(jobs_history), 0, 0, 1000000, NULL, 1000,
	  NULL, 0 },
	{ "jobs.max_queued", CFG_U32, F(jobs_max_queued), 0, 1, 10000000,
	  NULL, 65536, NULL, 0 },
	{ "jobs.max_queued_per_client", CFG_U32, F(jobs_max_per_client), 0,
	  1, 1000000, NULL, 1024, NULL, 0 },
	{ "leases.max_seconds", CFG_U32, F(lease_max_seconds), 0, 1,
	  31 * 86400, NULL, 86400, NULL, 0 },
	{ "limits.max_ir_bytes", CFG_BYTES, F(max_ir_bytes), 0,
	  1 * KiB, 1 * GiB, NULL, 64 * MiB, NULL, 0 },
	{ "limits.max_message_bytes.chunk", CFG_BYTES,
	  FCAP(CONFIG_CAP_CHUNK), 0, 64 * KiB, 256 * MiB, NULL, 16 * MiB,
	  NULL, 0 },
	{ "limits.max_message_bytes.control", CFG_BYTES,
	  FCAP(CONFIG_CAP_CONTROL), 0, 4 * KiB, 64 * MiB, NULL, 1 * MiB,
	  NULL, 0 },
	{ "limits.max_message_bytes.kernel", CFG_BYTES,
	  FCAP(CONFIG_CAP_KERNEL), 0, 64 * KiB, 1 * GiB, NULL, 64 * MiB,
	  NULL, 0 },
	{ "limits.max_message_bytes.tensor", CFG_BYTES,
	  FCAP(CONFIG_CAP_TENSOR), 0, 64 * KiB, 2 * GiB - 1, NULL, 1 * GiB,
	  NULL, 0 },
	{ "limits.max_queue_per_core", CFG_U32, F(max_queue_per_core), 0,
	  1, 1000000, NULL, 1024, NULL, 0 },
	{ "limits.max_tensor_bytes", CFG_BYTES, F(max_tensor_bytes), 0,
	  1 * KiB, 1024 * GiB, NULL, 1 * GiB, NULL, 0 },
	{ "limits.max_tensors", CFG_U32, F(max_tensors), 0, 1, 4096, NULL, 256,
	  NULL, 0 },
	{ "lock_dir", CFG_PATH, F(lock_dir), 0, 0, 0, "/run/nkid/lock", 0,
	  NULL, CFG_F_RESTART },
	{ "log_level", CFG_LEVEL, F(log_level), 0, 0, 0, "info", 0, NULL, 0 },
	{ "metrics.listen", CFG_LISTEN, F(metrics_listen), 0, 0, 0, "", 0,
	  NULL, CFG_F_RESTART },
	{ "metrics.max_connections", CFG_U32, F(metrics_max_connections), 0,
	  1, 4096, NULL, 16, NULL, CFG_F_RESTART },
	{ "neuron.compile_timeout_ms", CFG_U32, F(neuron_compile_timeout_ms),
	  0, 100, 86400000, NULL, 1800000, NULL, CFG_F_RESTART },
	{ "neuron.compiler", CFG_STRING, F(neuron_compiler), 0, 0, 0,
	  "neuronx-cc", 0, NULL, CFG_F_RESTART },
	{ "neuron.cores_per_device", CFG_U32, F(neuron_cores_per_device), 0,
	  1, 64, NULL, 2, NULL, CFG_F_RESTART },
	{ "neuron.device_glob", CFG_STRING, F(neuron_device_glob), 0, 0, 0,
	  "/dev/neuron*", 0, NULL, CFG_F_RESTART },
	{ "neuron.kill_grace_ms", CFG_U32, F(neuron_kill_grace_ms), 0, 0,
	  600000, NULL, 5000, NULL, CFG_F_RESTART },
	{ "neuron.log_max_bytes", CFG_U32, F(neuron_log_max_bytes), 0, 1024,
	  64 * MiB, NULL, 256 * KiB, NULL, CFG_F_RESTART },
	{ "neuron.ls", CFG_STRING, F(neuron_ls), 0, 0, 0, "neuron-ls", 0,
	  NULL, CFG_F_RESTART },
	{ "neuron.profiler", CFG_STRING, F(neuron_profiler), 0, 0, 0,
	  "neuron-profile", 0, NULL, CFG_F_RESTART },
	{ "neuron.runtime_library", CFG_STRING, F(neuron_runtime), 0, 0, 0,
	  "libnrt.so.1", 0, NULL, CFG_F_RESTART },
	{ "neuron.target", CFG_STRING, F(neuron_target), 0, 0, 0, "", 0,
	  NULL, CFG_F_RESTART },
	{ "neuron.visible_cores", CFG_STRING, F(neuron_visible_cores), 0, 0,
	  0, "", 0, NULL, CFG_F_RESTART },
	{ "remote.hmac_key_file", CFG_OPTPATH, F(remote_hmac_key_file), 0, 0,
	  0, "", 0, NULL, CFG_F_RESTART },
	{ "remote.lock_ms", CFG_U32, F(remote_lock_ms), 0, 100, 3600000, NULL,
	  10000, NULL, CFG_F_RESTART },
	{ "remote.lock_wait_ms", CFG_U32, F(remote_lock_wait_ms), 0, 100,
	  86400000, NULL, 60000, NULL, CFG_F_RESTART },
	{ "remote.max_entry_bytes", CFG_BYTES, F(remote_max_entry_bytes), 0,
	  1 * KiB, 512 * MiB, NULL, 64 * MiB, NULL, CFG_F_RESTART },
	{ "remote.mode", CFG_CHOICE, F(remote_mode), 0, 0, 0, "off", 0,
	  "off read read-write", CFG_F_RESTART },
	{ "remote.password_file", CFG_OPTPATH, F(remote_password_file), 0, 0,
	  0, "", 0, NULL, CFG_F_RESTART },
	{ "remote.timeout_ms", CFG_U32, F(remote_timeout_ms), 0, 10, 60000,
	  NULL, 500, NULL, CFG_F_RESTART },
	{ "remote.ttl_days", CFG_U32, F(remote_ttl_days), 0, 1, 3650, NULL, 30,
	  NULL, CFG_F_RESTART },
	{ "remote.url", CFG_STRING, F(remote_url), 0, 0, 0, "", 0, NULL,
	  CFG_F_RESTART },
	{ "remote.user", CFG_STRING, F(remote_user), 0, 0, 0, "", 0, NULL,
	  CFG_F_RESTART },
	{ "shutdown_grace_ms", CFG_U32, F(shutdown_grace_ms), 0, 0, 600000,
	  NULL, 1000, NULL, 0 },
	{ "socket", CFG_SOCKPATH, F(socket), 0, 0, 0, "/run/nkid/nkid.sock", 0,
	  NULL, CFG_F_RESTART },
	{ "socket_group", CFG_STRING, F(socket_group), 0, 0, 0, "", 0, NULL,
	  CFG_F_RESTART },
	{ "socket_mode", CFG_MODE, F(socket_mode), 0, 0, 07777, "0660", 0,
	  NULL, CFG_F_RESTART },
	{ "state_dir", CFG_PATH, F(state_dir), 0, 0, 0, "/var/lib/nkid", 0,
	  NULL, CFG_F_RESTART },
};
#define CONFIG_NKEYS	(sizeof config_keys / sizeof config_keys[0])

#define FIELD(cfg, k, type)	((type *)((char *)(cfg) + (k)->off))
#define CFIELD(cfg, k, type)	((const type *)((const char *)(cfg) + (k)->off))

struct config_ctx {
	const char	*name;
	char		*err;
	size_t		 errlen;
};

static const char *config_errs[] = {
	"success",
	"cannot read config file",
	"invalid JSON",
	"unknown or duplicate key",
	"value of the wrong type",
	"value out of bounds",
};

const char *
config_strerror(int err)
{
	return (ERRSTR(config_errs, err));
}

uint64_t
config_cap_bytes(const struct config *cfg, enum config_cap cap)
{
	assert(cap >= 0 && cap < CONFIG_CAP_COUNT);
	return (cfg->max_message_bytes[cap]);
}

static int
config_fail(struct config_ctx *ctx, int code, const char *fmt, ...)
{
	char	msg[768];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ctx->err != NULL && ctx->errlen > 0)
		snprintf(ctx->err, ctx->errlen, "config '%s': %s", ctx->name,
		    msg);
	return (code);
}

static const struct config_key *
config_key_find(const char *path)
{
	size_t	i;

	for (i = 0; i < CONFIG_NKEYS; i++) {
		if (strcmp(config_keys[i].path, path) == 0)
			return (&config_keys[i]);
	}
	return (NULL);
}

/* The edit distance of a and b (Levenshtein), capped at 64 bytes each. */
static size_t
config_distance(const char *a, const char *b)
{
	size_t	la = strlen(a), lb = strlen(b), i, j, prev, cur, d[65];

	if (la > 64 || lb > 64)
		return (SIZE_MAX);
	for (j = 0; j <= lb; j++)
		d[j] = j;
	for (i = 1; i <= la; i++) {
		prev = d[0];
		d[0] = i;
		for (j = 1; j <= lb; j++) {
			cur = d[j];
			d[j] = a[i - 1] == b[j - 1] ? prev :
			    1 + MIN(prev, MIN(d[j], d[j - 1]));
			prev = cur;
		}
	}
	return (d[lb]);
}

/* The key closest to path, if it is close enough to be meant, or NULL. */
static const char *
config_key_guess(const char *path)
{
	const char	*best = NULL;
	size_t		 i, dist, bestd = SIZE_MAX;

	for (i = 0; i < CONFIG_NKEYS; i++) {
		dist = config_distance(path, config_keys[i].path);
		if (dist < bestd) {
			bestd = dist;
			best = config_keys[i].path;
		}
	}
	return (bestd <= 1 + strlen(path) / 5 ? best : NULL);
}

/* Is path a section, that is a proper prefix of some key at a dot? */
static int
config_is_section(const char *path)
{
	size_t	i, len = strlen(path);

	for (i = 0; i < CONFIG_NKEYS; i++) {
		if (strncmp(config_keys[i].path, path, len) == 0 &&
		    config_keys[i].path[len] == '.')
			return (1);
	}
	return (0);
}

static const char *
config_json_type(const cJSON *v)
{
	if (cJSON_IsString(v))
		return ("a string");
	if (cJSON_IsNumber(v))
		return ("a number");
	if (cJSON_IsBool(v))
		return ("a boolean");
	if (cJSON_IsNull(v))
		return ("null");
	if (cJSON_IsArray(v))
		return ("an array");
	if (cJSON_IsObject(v))
		return ("an object");
	return ("an unknown value");
}

/* Integral JSON number in [min, max]. */
static int
config_number(struct config_ctx *ctx, const char *path, const cJSON *v,
    uint64_t min, uint64_t max, uint64_t *out)
{
	double	d;

	if (!cJSON_IsNumber(v))
		return (config_fail(ctx, CONFIG_ETYPE,
		    "'%s' must be a number, not %s", path, config_json_type(v)));
	d = v->valuedouble;
	if (!isfinite(d) || d != floor(d) || d < (double)min ||
	    d > (double)max)
		return (config_fail(ctx, CONFIG_ERANGE,
		    "'%s' must be an integer from %llu to %llu, not %.17g",
		    path, (unsigned long long)min, (unsigned long long)max, d));
	*out = (uint64_t)d;
	return (0);
}

/* The multiplier of a byte count's suffix ("" and "B": 1), 0 if none. */
static uint64_t
config_bytes_suffix(const char *sfx)
{
	static const struct {
		const char	*name;
		uint64_t	 mult;
	} sfxs[] = {
		{ "", 1 }, { "b", 1 },
		{ "k", KiB }, { "kib", KiB }, { "kb", 1000ULL },
		{ "m", MiB }, { "mib", MiB }, { "mb", 1000000ULL },
		{ "g", GiB }, { "gib", GiB }, { "gb", 1000000000ULL },
		{ "t", 1024 * GiB }, { "tib", 1024 * GiB },
		{ "tb", 1000000000000ULL },
	};
	size_t	i;

	for (i = 0; i < sizeof sfxs / sizeof sfxs[0]; i++) {
		if (strcasecmp(sfx, sfxs[i].name) == 0)
			return (sfxs[i].mult);
	}
	return (0);
}

static int
config_bytes(struct config_ctx *ctx, const char *path, const cJSON *v,
    uint64_t min, uint64_t max, uint64_t *out)
{
	const char		*s;
	char			*end;
	unsigned long long	 n;
	uint64_t		 mult = 1;

	if (!cJSON_IsString(v))
		return (config_number(ctx, path, v, min, max, out));
	s = v->valuestring;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (end == s || errno != 0 || *s == '-')
		goto bad;
	while (*end == ' ')
		end++;
	if ((mult = config_bytes_suffix(end)) == 0)
		goto bad;
	if (n > UINT64_MAX / mult)
		goto range;
	n *= mult;
	if (n < min || n > max)
		goto range;
	*out = n;
	return (0);
bad:
	return (config_fail(ctx, CONFIG_ETYPE,
	    "'%s' must be a byte count such as 1048576 or \"64MiB\", not "
	    "\"%s\" (suffixes: B, KiB, MiB, GiB, TiB or K, M, G, T, powers of "
	    "1024; KB, MB, GB, TB, powers of 1000; any case)", path, s));
range:
	return (config_fail(ctx, CONFIG_ERANGE,
	    "'%s' must be from %llu to %llu bytes, not \"%s\"", path,
	    (unsigned long long)min, (unsigned long long)max, s));
}

static int
config_id(struct config_ctx *ctx, const char *path, const cJSON *v, int group,
    uint32_t *out)
{
	char		 buf[16384];
	struct passwd	 pw, *pwp;
	struct group	 gr, *grp;
	uint64_t	 n;
	int		 error;

	if (cJSON_IsNumber(v)) {
		if ((error = config_number(ctx, path, v, 0, UINT32_MAX - 1,
		    &n)) != 0)
			return (error);
		*out = (uint32_t)n;
		return (0);
	}
	if (!cJSON_IsString(v))
		return (config_fail(ctx, CONFIG_ETYPE,
		    "'%s' must be a %s name or number, not %s", path,
		    group ? "group" : "user", config_json_type(v)));
	if (group) {
		if (getgrnam_r(v->valuestring, &gr, buf, sizeof buf, &grp) !=
		    0 || grp == NULL)
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s': unknown group '%s'", path, v->valuestring));
		*out = grp->gr_gid;
	} else {
		if (getpwnam_r(v->valuestring, &pw, buf, sizeof buf, &pwp) !=
		    0 || pwp == NULL)
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s': unknown user '%s'", path, v->valuestring));
		*out = pwp->pw_uid;
	}
	return (0);
}

static int
config_string_set(struct config_ctx *ctx, const struct config_key *k,
    struct config *cfg, const char *path, const cJSON *v)
{
	const char	*s, *c, *e;
	char		**dst = FIELD(cfg, k, char *);
	size_t		 len;

	if (!cJSON_IsString(v))
		return (config_fail(ctx, CONFIG_ETYPE,
		    "'%s' must be a string, not %s", path, config_json_type(v)));
	s = v->valuestring;
	len = strlen(s);
	if (k->type == CFG_PATH || k->type == CFG_SOCKPATH ||
	    (k->type == CFG_OPTPATH && s[0] != '\0')) {
		if (s[0] != '/')
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s' must be an absolute path, not '%s'", path, s));
		if (k->type == CFG_SOCKPATH &&
		    len + 5 >= sizeof(((struct sockaddr_un *)0)->sun_path))
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s' is longer than a unix socket path may be "
			    "(%zu bytes)", path,
			    sizeof(((struct sockaddr_un *)0)->sun_path) - 6));
	}
	if (k->type == CFG_CHOICE) {
		for (c = k->choices; *c != '\0'; c = e) {
			e = c + strcspn(c, " ");
			if ((size_t)(e - c) == len && strncmp(c, s, len) == 0)
				break;
			while (*e == ' ')
				e++;
		}
		if (*c == '\0')
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s' must be one of: %s; not '%s'", path,
			    k->choices, s));
	}
	if (k->type == CFG_LISTEN && !config_listen_valid(s))
		return (config_fail(ctx, CONFIG_ERANGE,
		    "'%s' must be \"\" (off), HOST:PORT (PORT from 1 to 65535, "
		    "[ADDRESS]:PORT for IPv6) or an absolute unix socket path "
		    "shorter than %zu bytes, not '%s'", path,
		    sizeof(((struct sockaddr_un *)0)->sun_path), s));
	free(*dst);
	*dst = xstrdup(s);
	return (0);
}

static enum config_store
config_key_store(const struct config_key *k)
{
	static const enum config_store	store[] = {
		[CFG_STRING] = CFG_STORE_STR,	[CFG_PATH] = CFG_STORE_STR,
		[CFG_OPTPATH] = CFG_STORE_STR,	[CFG_SOCKPATH] = CFG_STORE_STR,
		[CFG_MODE] = CFG_STORE_U32,	[CFG_U32] = CFG_STORE_U32,
		[CFG_BYTES] = CFG_STORE_U64,	[CFG_LEVEL] = CFG_STORE_LEVEL,
		[CFG_CHOICE] = CFG_STORE_STR,	[CFG_UIDS] = CFG_STORE_IDS,
		[CFG_GIDS] = CFG_STORE_IDS,	[CFG_LISTEN] = CFG_STORE_STR,
	};

	return (store[k->type]);
}

static int
config_value_set(struct config_ctx *ctx, const struct config_key *k,
    struct config *cfg, const char *path, const cJSON *v)
{
	char		 ipath[CONFIG_PATH_LEN + 24], *end;
	const cJSON	*item;
	uint32_t	*ids, **idp;
	size_t		 n, i;
	uint64_t	 num;
	unsigned long	 mode;
	int		 error, level;

	if (config_key_store(k) == CFG_STORE_STR)
		return (config_string_set(ctx, k, cfg, path, v));
	switch (k->type) {
	case CFG_MODE:
		if (!cJSON_IsString(v))
			return (config_fail(ctx, CONFIG_ETYPE,
			    "'%s' must be an octal string such as \"0660\", "
			    "not %s", path, config_json_type(v)));
		errno = 0;
		mode = strtoul(v->valuestring, &end, 8);
		if (*v->valuestring == '\0' || *end != '\0' || errno != 0 ||
		    mode > k->max)
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s' must be an octal mode from 0000 to 7777, "
			    "not \"%s\"", path, v->valuestring));
		*FIELD(cfg, k, uint32_t) = (uint32_t)mode;
		return (0);
	case CFG_U32:
		if ((error = config_number(ctx, path, v, k->min, k->max,
		    &num)) != 0)
			return (error);
		*FIELD(cfg, k, uint32_t) = (uint32_t)num;
		return (0);
	case CFG_BYTES:
		return (config_bytes(ctx, path, v, k->min, k->max,
		    FIELD(cfg, k, uint64_t)));
	case CFG_LEVEL:
		if (!cJSON_IsString(v))
			return (config_fail(ctx, CONFIG_ETYPE,
			    "'%s' must be a string, not %s", path,
			    config_json_type(v)));
		if ((level = log_level_from_name(v->valuestring)) < 0)
			return (config_fail(ctx, CONFIG_ERANGE,
			    "'%s' must be one of: error warn info debug; "
			    "not '%s'", path, v->valuestring));
		*FIELD(cfg, k, int) = level;
		return (0);
	case CFG_UIDS:
	case CFG_GIDS:
		if (!cJSON_IsArray(v))
			return (config_fail(ctx, CONFIG_ETYPE,
			    "'%s' must be an array, not %s", path,
			    config_json_type(v)));
		n = (size_t)cJSON_GetArraySize(v);
		ids = xcalloc(n, sizeof *ids);
		i = 0;
		cJSON_ArrayForEach(item, v) {
			snprintf(ipath, sizeof ipath, "%s[%zu]", path, i);
			if ((error = config_id(ctx, ipath, item,
			    k->type == CFG_GIDS, &ids[i])) != 0) {
				free(ids);
				return (error);
			}
			i++;
		}
		idp = FIELD(cfg, k, uint32_t *);
		free(*idp);
		*idp = ids;
		*(size_t *)((char *)cfg + k->count_off) = n;
		return (0);
	default:
		break;
	}
	return (config_fail(ctx, CONFIG_ETYPE, "'%s': unsupported key type",
	    path));
}

static void
config_defaults(struct config *cfg)
{
	const struct config_key	*k;
	size_t			 i;

	memset(cfg, 0, sizeof *cfg);
	for (i = 0; i < CONFIG_NKEYS; i++) {
		k = &config_keys[i];
		switch (config_key_store(k)) {
		case CFG_STORE_STR:
			*FIELD(cfg, k, char *) = xstrdup(k->def_str);
			break;
		case CFG_STORE_U32:
			*FIELD(cfg, k, uint32_t) = k->type == CFG_MODE ?
			    (uint32_t)strtoul(k->def_str, NULL, 8) :
			    (uint32_t)k->def_num;
			break;
		case CFG_STORE_U64:
			*FIELD(cfg, k, uint64_t) = k->def_num;
			break;
		case CFG_STORE_LEVEL:
			*FIELD(cfg, k, int) = log_level_from_name(k->def_str);
			break;
		case CFG_STORE_IDS:
			break;
		}
	}
}

static int
config_walk(struct config_ctx *ctx, struct config *cfg, const cJSON *obj,
    const char *prefix)
{
	const struct config_key	*k;
	const cJSON		*v, *w;
	const char		*guess;
	char			 path[CONFIG_PATH_LEN];
	int			 error;

	cJSON_ArrayForEach(v, obj) {
		if (v->string == NULL)
			continue;
		if (*prefix != '\0')
			snprintf(path, sizeof path, "%s.%s", prefix, v->string);
		else
			snprintf(path, sizeof path, "%s", v->string);
		for (w = obj->child; w != v; w = w->next) {
			if (w->string != NULL && strcmp(w->string, v->string) ==
			    0)
				return (config_fail(ctx, CONFIG_EKEY,
				    "duplicate key '%s'", path));
		}
		if ((k = config_key_find(path)) != NULL) {
			if ((error = config_value_set(ctx, k, cfg, path, v)) !=
			    0)
				return (error);
			continue;
		}
		if (!config_is_section(path) &&
		    (guess = config_key_guess(path)) != NULL)
			return (config_fail(ctx, CONFIG_EKEY,
			    "unknown key '%s' (did you mean '%s'?)", path,
			    guess));
		if (!config_is_section(path))
			return (config_fail(ctx, CONFIG_EKEY,
			    "unknown key '%s'", path));
		if (!cJSON_IsObject(v))
			return (config_fail(ctx, CONFIG_ETYPE,
			    "'%s' must be an object, not %s", path,
			    config_json_type(v)));
		if ((error = config_walk(ctx, cfg, v, path)) != 0)
			return (error);
	}
	return (0);
}

static void
config_override_apply(struct config *cfg, const struct config_override *ov)
{
	if (ov == NULL)
		return;
	if (ov->socket != NULL) {
		free(cfg->socket);
		cfg->socket = xstrdup(ov->socket);
	}
	if (ov->state_dir != NULL) {
		free(cfg->state_dir);
		free(cfg->cache_dir);
		free(cfg->lock_dir);
		cfg->state_dir = xstrdup(ov->state_dir);
		cfg->cache_dir = xasprintf("%s/cache", ov->state_dir);
		cfg->lock_dir = xasprintf("%s/lock", ov->state_dir);
	}
}

/* What one key alone cannot say: the remote tier's keys together. */
static int
config_check(struct config_ctx *ctx, const struct config *cfg)
{
	struct config_remote_url	 u;
	char				 why[512];

	if (cfg->remote_url[0] != '\0' &&
	    config_remote_url_parse(cfg->remote_url, &u, why, sizeof why) != 0)
		return (config_fail(ctx, CONFIG_ERANGE, "'remote.url': %s",
		    why));
	if (cfg->remote_user[0] != '\0' &&
	    cfg->remote_password_file[0] == '\0')
		return (config_fail(ctx, CONFIG_ERANGE, "'remote.user' needs "
		    "'remote.password_file' (the user's password)"));
	if (strcmp(cfg->remote_mode, "off") == 0)
		return (0);
	if (cfg->remote_url[0] == '\0')
		return (config_fail(ctx, CONFIG_ERANGE, "'remote.mode' is "
		    "'%s': 'remote.url' must name the fleet's Redis",
		    cfg->remote_mode));
	if (cfg->remote_hmac_key_file[0] == '\0')
		return (config_fail(ctx, CONFIG_ERANGE, "'remote.mode' is "
		    "'%s': 'remote.hmac_key_file' must name the fleet key "
		    "(every pulled entry is authenticated with it)",
		    cfg->remote_mode));
	return (0);
}

/* Line and column of position pos in s. */
static void
config_position(const char *s, size_t pos, int *line, int *col)
{
	size_t	i;

	*line = 1;
	*col = 1;
	for (i = 0; i < pos && s[i] != '\0'; i++) {
		if (s[i] == '\n') {
			(*line)++;
			*col = 1;
		} else
			(*col)++;
	}
}

int
config_load_string(struct config *cfg, const char *name, const char *json,
    size_t len, const struct config_override *ov, char *err, size_t errlen)
{
	struct config_ctx	 ctx = { name, err, errlen };
	cJSON			*root;
	const char		*end = NULL;
	int			 error, line, col;

	assert(cfg != NULL && name != NULL && json != NULL);
	config_defaults(cfg);
	if ((root = cJSON_ParseWithLengthOpts(json, len, &end, 0)) == NULL) {
		config_position(json, end != NULL ? (size_t)(end - json) : 0,
		    &line, &col);
		error = config_fail(&ctx, CONFIG_ESYNTAX,
		    "invalid JSON at line %d, column %d", line, col);
		goto fail;
	}
	if (!cJSON_IsObject(root)) {
		error = config_fail(&ctx, CONFIG_ETYPE,
		    "the top level must be an object, not %s",
		    config_json_type(root));
		goto fail;
	}
	if ((error = config_walk(&ctx, cfg, root, "")) != 0 ||
	    (error = config_check(&ctx, cfg)) != 0)
		goto fail;
	cJSON_Delete(root);
	config_override_apply(cfg, ov);
	return (0);
fail:
	cJSON_Delete(root);
	config_release(cfg);
	return (error);
}

int
config_file_open(const char *path)
{
	struct stat	sb;
	int		fd, fl, saved;

	/* O_NONBLOCK: opening a FIFO for reading must not wait for a
	 * writer (SIGHUP would stop the loop); then only a regular file. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)) ==
	    -1)
		return (-1);
	if (fstat(fd, &sb) == -1)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1)
		goto fail;
	return (fd);
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return (-1);
}

int
config_load(struct config *cfg, const char *path,
    const struct config_override *ov, char *err, size_t errlen)
{
	struct config_ctx	 ctx = { path, err, errlen };
	FILE			*f;
	char			*buf;
	size_t			 len;
	int			 error, fd;

	assert(cfg != NULL);
	if (path == NULL) {
		config_defaults(cfg);
		config_override_apply(cfg, ov);
		return (0);
	}
	memset(cfg, 0, sizeof *cfg);
	if ((fd = config_file_open(path)) == -1)
		return (config_fail(&ctx, CONFIG_EOPEN, "cannot open: %s",
		    errno == EINVAL ? "not a regular file" : strerror(errno)));
	if ((f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return (config_fail(&ctx, CONFIG_EOPEN, "cannot open: %s",
		    strerror(errno)));
	}
	buf = xmalloc(CONFIG_MAX_FILE + 1);
	len = fread(buf, 1, CONFIG_MAX_FILE + 1, f);
	if (ferror(f)) {
		error = config_fail(&ctx, CONFIG_EOPEN, "cannot read: %s",
		    strerror(errno));
		goto out;
	}
	if (len > CONFIG_MAX_FILE) {
		error = config_fail(&ctx, CONFIG_EOPEN,
		    "larger than %d bytes", CONFIG_MAX_FILE);
		goto out;
	}
	buf[len] = '\0';
	if ((error = config_load_string(cfg, path, buf, len, ov, err,
	    errlen)) == 0)
		cfg->path = xstrdup(path);
out:
	free(buf);
	fclose(f);
	return (error);
}

void
config_release(struct config *cfg)
{
	const struct config_key	*k;
	size_t			 i;

	for (i = 0; i < CONFIG_NKEYS; i++) {
		k = &config_keys[i];
		if (config_key_store(k) == CFG_STORE_STR)
			free(*FIELD(cfg, k, char *));
		else if (config_key_store(k) == CFG_STORE_IDS)
			free(*FIELD(cfg, k, uint32_t *));
	}
	free(cfg->path);
	memset(cfg, 0, sizeof *cfg);
}

void
config_copy(struct config *dst, const struct config *src)
{
	const struct config_key	*k;
	size_t			 i, n;

	memcpy(dst, src, sizeof *dst);
	dst->path = src->path != NULL ? xstrdup(src->path) : NULL;
	for (i = 0; i < CONFIG_NKEYS; i++) {
		k = &config_keys[i];
		switch (config_key_store(k)) {
		case CFG_STORE_STR:
			*FIELD(dst, k, char *) =
			    xstrdup(*CFIELD(src, k, char *));
			break;
		case CFG_STORE_IDS:
			n = *(const size_t *)((const char *)src + k->count_off);
			*FIELD(dst, k, uint32_t *) = xcalloc(n, sizeof(uint32_t));
			if (n > 0)
				memcpy(*FIELD(dst, k, uint32_t *),
				    *CFIELD(src, k, uint32_t *),
				    n * sizeof(uint32_t));
			break;
		default:
			break;
		}
	}
}

/* The value of key k in cfg as text. */
static void
config_value_format(const struct config *cfg, const struct config_key *k,
    char *buf, size_t len)
{
	const uint32_t	*ids;
	size_t		 n, i, off;

	switch (config_key_store(k)) {
	case CFG_STORE_STR:
		snprintf(buf, len, "'%s'", *CFIELD(cfg, k, char *));
		break;
	case CFG_STORE_U32:
		snprintf(buf, len, k->type == CFG_MODE ? "%04o" : "%u",
		    *CFIELD(cfg, k, uint32_t));
		break;
	case CFG_STORE_U64:
		snprintf(buf, len, "%llu",
		    (unsigned long long)*CFIELD(cfg, k, uint64_t));
		break;
	case CFG_STORE_LEVEL:
		snprintf(buf, len, "'%s'", log_level_name(*CFIELD(cfg, k,
		    int)));
		break;
	case CFG_STORE_IDS:
		ids = *CFIELD(cfg, k, uint32_t *);
		n = *(const size_t *)((const char *)cfg + k->count_off);
		off = (size_t)snprintf(buf, len, "[");
		for (i = 0; i < n && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s%u",
			    i == 0 ? "" : ", ", ids[i]);
		if (off < len)
			snprintf(buf + off, len - off, "]");
		break;
	}
}

/* A byte count as the config may write it: "16 GiB", or "1000 bytes". */
static void
config_bytes_format(uint64_t n, char *buf, size_t len)
{
	static const char *const units[] = { "TiB", "GiB", "MiB", "KiB" };
	uint64_t	mult = 1024 * GiB;
	size_t		i;

	for (i = 0; i < 4; i++, mult /= 1024) {
		if (n >= mult && n % mult == 0) {
			snprintf(buf, len, "%llu %s",
			    (unsigned long long)(n / mult), units[i]);
			return;
		}
	}
	snprintf(buf, len, "%llu bytes", (unsigned long long)n);
}

int
config_reload_merge(const struct config *cur, struct config *next)
{
	const struct config_key	*k;
	char			 a[512], b[512];
	size_t			 i;
	int			 changed = 0;
	struct config		 tmp;

	for (i = 0; i < CONFIG_NKEYS; i++) {
		k = &config_keys[i];
		config_value_format(cur, k, a, sizeof a);
		config_value_format(next, k, b, sizeof b);
		if (strcmp(a, b) == 0)
			continue;
		if (k->flags & CFG_F_RESTART) {
			log_warn("config: '%s' changed from %s to %s; it takes "
			    "effect after a restart", k->path, a, b);
			/* Put back the running value. */
			config_copy(&tmp, cur);
			if (config_key_store(k) == CFG_STORE_U32)
				*FIELD(next, k, uint32_t) =
				    *CFIELD(cur, k, uint32_t);
			else if (config_key_store(k) == CFG_STORE_U64)
				*FIELD(next, k, uint64_t) =
				    *CFIELD(cur, k, uint64_t);
			else {
				free(*FIELD(next, k, char *));
				*FIELD(next, k, char *) = *FIELD(&tmp, k,
				    char *);
				*FIELD(&tmp, k, char *) = xstrdup("");
			}
			config_release(&tmp);
			continue;
		}
		if (config_key_store(k) == CFG_STORE_U64) {
			config_bytes_format(*CFIELD(cur, k, uint64_t), a,
			    sizeof a);
			config_bytes_format(*CFIELD(next, k, uint64_t), b,
			    sizeof b);
		}
		log_info("config: '%s' changed from %s to %s", k->path, a, b);
		changed++;
	}
	return (changed);
}

void
config_dump(const struct config *cfg, void *fp)
{
	FILE	*f = fp;
	char	 buf[1024];
	size_t	 i;

	for (i = 0; i < CONFIG_NKEYS; i++) {
		config_value_format(cfg, &config_keys[i], buf, sizeof buf);
		fprintf(f, "%s = %s\n", config_keys[i].path, buf);
	}
}
