/* ctl_cache_remote.h: the remote tier's figures as `nkictl status` and `nkictl cache stat` show them. */
#ifndef NKID_CTL_CACHE_REMOTE_H
#define NKID_CTL_CACHE_REMOTE_H

#include "nkid.pb-c.h"
#include "ctl.h"

/* rs as a JSON object; NULL when out of memory. */
struct cJSON *ctl_cache_remote_json(const Nkid__V1__RemoteStat *rs);
/* rs as "remote  up, URL, MODE" and two lines of counters (ctl_kv). */
void	 ctl_cache_remote_print(struct ctl_ctx *ctx,
	    const Nkid__V1__RemoteStat *rs);

#endif /* NKID_CTL_CACHE_REMOTE_H */
