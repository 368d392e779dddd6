/* ctl_cache_remote.c: the remote tier's figures (RemoteStat, in CacheStat and Status) as JSON and as text. */
#include <cjson/cJSON.h>

#include "ctl_cache_remote.h"

struct cJSON *
ctl_cache_remote_json(const Nkid__V1__RemoteStat *rs)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return (NULL);
	cJSON_AddStringToObject(o, "state", rs->state);
	cJSON_AddStringToObject(o, "url", rs->url);
	cJSON_AddStringToObject(o, "mode", rs->mode);
	cJSON_AddNumberToObject(o, "hits", (double)rs->hits);
	cJSON_AddNumberToObject(o, "misses", (double)rs->misses);
	cJSON_AddNumberToObject(o, "pushes", (double)rs->pushes);
	cJSON_AddNumberToObject(o, "rejected", (double)rs->rejected);
	cJSON_AddNumberToObject(o, "errors", (double)rs->errors);
	cJSON_AddNumberToObject(o, "locks_taken", (double)rs->locks_taken);
	cJSON_AddNumberToObject(o, "locks_waited", (double)rs->locks_waited);
	cJSON_AddNumberToObject(o, "skipped", (double)rs->skipped);
	cJSON_AddNumberToObject(o, "pulled_bytes", (double)rs->pulled_bytes);
	cJSON_AddNumberToObject(o, "pushed_bytes", (double)rs->pushed_bytes);
	cJSON_AddStringToObject(o, "last_error", rs->last_error);
	return (o);
}

void
ctl_cache_remote_print(struct ctl_ctx *ctx, const Nkid__V1__RemoteStat *rs)
{
	ctl_kv(ctx, "remote", "%s, %s, %s", rs->state, rs->url, rs->mode);
	ctl_kv(ctx, "", "%llu hits, %llu misses, %llu pushes, %llu rejected",
	    (unsigned long long)rs->hits, (unsigned long long)rs->misses,
	    (unsigned long long)rs->pushes, (unsigned long long)rs->rejected);
	ctl_kv(ctx, "", "%llu errors, %llu skipped, fleet locks %llu taken, "
	    "%llu waited", (unsigned long long)rs->errors,
	    (unsigned long long)rs->skipped,
	    (unsigned long long)rs->locks_taken,
	    (unsigned long long)rs->locks_waited);
	if (rs->last_error[0] != '\0')
		ctl_kv(ctx, "", "last error: %s", rs->last_error);
}
