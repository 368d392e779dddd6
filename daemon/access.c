/* access.c: who may talk to nkid, decided from SO_PEERCRED credentials and the config. */
#include <stdio.h>

#include "daemon/access.h"
#include "daemon/config.h"

static int
access_gid_match(uint32_t gid, const struct access_peer *peer)
{
	size_t	i;

	if (peer->gid == gid)
		return (1);
	for (i = 0; i < peer->ngroups && peer->groups != NULL; i++) {
		if ((uint32_t)peer->groups[i] == gid)
			return (1);
	}
	return (0);
}

int
access_peer_check(const struct config *cfg, uint32_t self_uid,
    uint32_t sock_gid, const struct access_peer *peer, unsigned uid_conns,
    char *why, size_t whylen)
{
	size_t	i;
	int	ok = 0;

	if (peer->uid == 0 || peer->uid == self_uid)
		ok = 1;
	for (i = 0; !ok && i < cfg->n_allow_uids; i++) {
		if (cfg->allow_uids[i] == peer->uid)
			ok = 1;
	}
	if (!ok && access_gid_match(sock_gid, peer))
		ok = 1;
	for (i = 0; !ok && i < cfg->n_allow_gids; i++) {
		if (access_gid_match(cfg->allow_gids[i], peer))
			ok = 1;
	}
	if (!ok) {
		snprintf(why, whylen, "uid %u (gid %u) is not allowed by the "
		    "access policy (access.allow_uids, access.allow_gids, the "
		    "socket's group %u)", peer->uid, peer->gid, sock_gid);
		return (ACCESS_EPOLICY);
	}
	if (uid_conns >= cfg->max_conn_per_uid) {
		snprintf(why, whylen, "uid %u already has %u connections "
		    "(access.max_connections_per_uid)", peer->uid, uid_conns);
		return (ACCESS_ECAP);
	}
	return (ACCESS_ALLOW);
}

int
access_peer_admin(const struct config *cfg, uint32_t self_uid,
    const struct access_peer *peer)
{
	size_t	i;

	if (peer->uid == 0 || peer->uid == self_uid)
		return (1);
	for (i = 0; i < cfg->n_admin_gids; i++) {
		if (access_gid_match(cfg->admin_gids[i], peer))
			return (1);
	}
	return (0);
}
