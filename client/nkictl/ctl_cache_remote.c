/* ctl_cache_remote.c: the remote tier's figures (RemoteStat, in CacheStat and Status) as JSON and as text. */
#include <stdio.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "ctl_cache_remote.h"

/* The figures of a RemoteStat in its JSON object. */
static const char *const ctl_cache_remote_keys[] = {
	"state", "url", "mode", "hits", "misses", "pushes", "rejected",
	"errors", "locks_taken", "locks_waited", "skipped", "pulled_bytes",
	"pushed_bytes", "last_error", "last_error_unix_ms", NULL
};

struct cJSON *
ctl_cache_remote_json(const Nkid__V1__RemoteStat *rs)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	ctl_json_fields(o, &rs->base, ctl_cache_remote_keys);
	return (o);
}

void
ctl_cache_remote_print(struct ctl_ctx *ctx, const Nkid__V1__RemoteStat *rs)
{
	char		 when[64];
	struct tm	 tm;
	time_t		 t, now;

	ctl_kv(ctx, "remote", "%s, %s, %s", rs->state, rs->url, rs->mode);
	ctl_kv(ctx, "", "%llu hit%s, %llu miss%s, %llu push%s, %llu rejected",
	    (unsigned long long)rs->hits, rs->hits == 1 ? "" : "s",
	    (unsigned long long)rs->misses, rs->misses == 1 ? "" : "es",
	    (unsigned long long)rs->pushes, rs->pushes == 1 ? "" : "es",
	    (unsigned long long)rs->rejected);
	ctl_kv(ctx, "", "%llu error%s, %llu skipped, fleet locks %llu taken, "
	    "%llu waited", (unsigned long long)rs->errors,
	    rs->errors == 1 ? "" : "s",
	    (unsigned long long)rs->skipped,
	    (unsigned long long)rs->locks_taken,
	    (unsigned long long)rs->locks_waited);
	if (rs->last_error[0] == '\0')
		return;
	when[0] = '\0';
	t = (time_t)(rs->last_error_unix_ms / 1000);
	now = time(NULL);
	if (rs->last_error_unix_ms != 0 && localtime_r(&t, &tm) != NULL)
		snprintf(when, sizeof when, " (at %02d:%02d:%02d, %lld s ago)",
		    tm.tm_hour, tm.tm_min, tm.tm_sec,
		    (long long)(now > t ? now - t : 0));
	ctl_kv(ctx, "", "last error: %s%s", rs->last_error, when);
}
