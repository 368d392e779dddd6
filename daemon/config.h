/* config.h: nkid's configuration, read from JSON through one typed table of keys. */
#ifndef NKID_CONFIG_H
#define NKID_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define CONFIG_DEFAULT_PATH	"/etc/nkid/nkid.json"

enum config_err {
	CONFIG_OK = 0,
	CONFIG_EOPEN = -1,	/* cannot read the file */
	CONFIG_ESYNTAX = -2,	/* not JSON */
	CONFIG_EKEY = -3,	/* unknown or duplicate key */
	CONFIG_ETYPE = -4,	/* a value of the wrong JSON type */
	CONFIG_ERANGE = -5,	/* a value out of its bounds or not allowed */
};

/* The size classes of the per-method receive caps (docs/protocol.md). */
enum config_cap {
	CONFIG_CAP_CONTROL = 0,	/* Ping, Status, Jobs, Cache*, Lease, ... */
	CONFIG_CAP_KERNEL,	/* Compile, Warmup: IR, no tensors */
	CONFIG_CAP_TENSOR,	/* Run, Simulate, Benchmark, Profile */
	CONFIG_CAP_CHUNK,	/* one CacheImport chunk */
	CONFIG_CAP_COUNT,
};

struct config {
	char		*path;		/* file read; NULL: built-in defaults */

	char		*socket;
	uint32_t	 socket_mode;
	char		*socket_group;	/* "": nkid's own group */
	char		*state_dir;
	char		*cache_dir;
	char		*lock_dir;
	char		*backend;
	int		 log_level;
	uint32_t	 shutdown_grace_ms;

	uint32_t	 cpu_cores;
	/* Threads one run of the cpu backend's executor may use; 0: as
	 * many as the CPUs nkid may run on (sched_getaffinity). */
	uint32_t	 cpu_executor_threads;
	/* What Benchmark's nc_latency holds on the cpu backend: "model"
	 * (the NeuronCore model) or "cpu" (the executor's time). */
	char		*benchmark_latency;

	/* The neuron backend (docs/neuron.md). */
	char		*neuron_compiler;	/* "neuronx-cc" */
	char		*neuron_profiler;	/* "neuron-profile" */
	char		*neuron_runtime;	/* "libnrt.so.1" */
	char		*neuron_device_glob;	/* "/dev/neuron*" */
	char		*neuron_visible_cores;	/* "": all */
	char		*neuron_target;		/* "": from the host */
	char		*neuron_ls;		/* "neuron-ls" */
	uint32_t	 neuron_cores_per_device;
	uint32_t	 neuron_compile_timeout_ms;
	uint32_t	 neuron_kill_grace_ms;
	uint32_t	 neuron_log_max_bytes;

	uint32_t	*allow_uids;
	size_t		 n_allow_uids;
	uint32_t	*allow_gids;
	size_t		 n_allow_gids;
	uint32_t	*admin_gids;
	size_t		 n_admin_gids;
	uint32_t	 max_conn_per_uid;
	/* "shared": every client sees every cache entry; "owner": only
	 * those it stored or an administrator pinned (kernel_viewer). */
	char		*cache_visibility;

	uint64_t	 max_message_bytes[CONFIG_CAP_COUNT];
	uint64_t	 max_tensor_bytes;
	uint32_t	 max_tensors;
	uint64_t	 max_ir_bytes;
	uint32_t	 max_queue_per_core;

	uint32_t	 jobs_history;		/* finished jobs kept */
	uint32_t	 jobs_max_queued;	/* queued jobs, all cores */
	uint32_t	 jobs_max_per_client;	/* queued + running per pid */
	uint32_t	 lease_max_seconds;	/* longest lease */

	uint64_t	 cache_memory_bytes;
	uint64_t	 cache_max_bytes;	/* on disk */
	uint64_t	 cache_max_bundle_bytes; /* one CacheImport */
	/* pinned bytes per uid but admins; 0: cache_max_bytes / 4 */
	uint64_t	 cache_pin_quota;
	uint32_t	 cache_compile_workers;

	/* Where GET /metrics is served: "" (off unless systemd passes a
	 * socket named "metrics"), HOST:PORT or a unix socket path. */
	char		*metrics_listen;
	uint32_t	 metrics_max_connections;	/* scrapers at once */
	/* The remote tier (docs/cache.md, "The remote tier"). */
	char		*remote_url;		/* "": none */
	char		*remote_user;		/* "": default user */
	char		*remote_password_file;	/* "": no AUTH */
	char		*remote_mode;		/* off, read, read-write */
	uint32_t	 remote_timeout_ms;
	uint64_t	 remote_max_entry_bytes;
	uint32_t	 remote_ttl_days;
	char		*remote_hmac_key_file;
	uint32_t	 remote_lock_ms;
	/* The fast path (docs/protocol.md, "Fast path"); 0 clients: off. */
	uint32_t	 fastpath_max_clients_per_uid;
	uint64_t	 fastpath_max_frame_bytes;
	uint32_t	 fastpath_max_inflight;
	uint32_t	 remote_lock_wait_ms;	/* another host's lock */
};

/* Where remote.url points, parsed (config_remote_url_parse). */
struct config_remote_url {
	char		 host[256];	/* "" for a unix socket */
	unsigned	 port;
	char		 path[108];	/* the unix socket, "" for TCP */
	unsigned	 db;
};

/* Command-line settings that override the file (NULL: not given). They
 * are applied again on every reload. */
struct config_override {
	const char	*socket;
	const char	*state_dir;
};

/*
 * Open path for reading if it is a regular file, without waiting on a
 * FIFO (O_NONBLOCK while it is checked) or taking a terminal: the fd
 * (close-on-exec, blocking), or -1 with errno set (EINVAL: not a regular
 * file). For every file nkid opens by a path its config names.
 */
int	 config_file_open(const char *path);
/*
 * Fill *cfg with the built-in defaults, then, if path is not NULL, the
 * values of the JSON file at path, then the overrides (ov may be NULL).
 * On failure returns a negative config_err, writes a message naming the
 * file and the JSON path of the culprit into err ("config 'f.json':
 * unknown key 'server.sokcet'") and leaves *cfg empty. On success the
 * caller releases *cfg with config_release.
 */
int	 config_load(struct config *cfg, const char *path,
	    const struct config_override *ov, char *err, size_t errlen);
/* Like config_load, from a string in memory; name is used in messages. */
int	 config_load_string(struct config *cfg, const char *name,
	    const char *json, size_t len, const struct config_override *ov,
	    char *err, size_t errlen);
/* Free what config_load allocated; *cfg is zeroed. */
void	 config_release(struct config *cfg);
/* Deep copy of src into *dst (released with config_release). */
void	 config_copy(struct config *dst, const struct config *src);

/*
 * Prepare next to replace cur on reload: log each key that changed; keys
 * that only take effect at start (socket, directories, backend, cores) are
 * reset in next to cur's value with a warning. Returns the number of keys
 * that changed and take effect now.
 */
int	 config_reload_merge(const struct config *cur, struct config *next);

/* Print every key and its effective value, one per line ("key = value"),
 * to the stdio stream f (a FILE *). */
void	 config_dump(const struct config *cfg, void *f);

/*
 * Parse a remote.url: "redis://HOST[:PORT][/DB]" (HOST a name, an IPv4
 * address or [an IPv6 address]; PORT 6379 and DB 0 by default) or
 * "unix:///PATH[?db=DB]". Returns 0, or -1 with the reason in err.
 */
int	 config_remote_url_parse(const char *url, struct config_remote_url *u,
	    char *err, size_t errlen);
/*
 * Can this process reach remote.url: resolve it, open a socket and connect
 * within timeout_ms (nothing is sent). Returns 0, or -1 with why in why:
 * the errno text and, when the error is one a unit's network restrictions
 * cause, how to lift them (config_remote_reach_hint). Blocks.
 */
int	 config_remote_url_reach(const char *url, unsigned timeout_ms,
	    char *why, size_t whylen);
/* "" or, for an errno that nkid.service's network restrictions cause
 * (EAFNOSUPPORT, EPERM, ENETUNREACH...), static text naming the drop-in
 * that lifts them, starting with "; ". */
const char *config_remote_reach_hint(int errnum);
/*
 * Is s a metrics.listen value: "" (off), an absolute path that fits a unix
 * socket address, or HOST:PORT with PORT from 1 to 65535 (HOST a name or
 * an IPv4 address, [IPv6] in brackets, or empty for every address)?
 */
int	 config_listen_valid(const char *s);

/* The receive cap in bytes for a size class. */
uint64_t config_cap_bytes(const struct config *cfg, enum config_cap cap);
/* A static description of a config_err. */
const char *config_strerror(int err);

#endif /* NKID_CONFIG_H */
