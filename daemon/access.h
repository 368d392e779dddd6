/* access.h: the access policy applied to each connection's kernel-verified credentials. */
#ifndef NKID_ACCESS_H
#define NKID_ACCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct config;

enum access_verdict {
	ACCESS_ALLOW = 0,
	ACCESS_EPOLICY = -1,	/* neither the uid nor a group is allowed */
	ACCESS_ECAP = -2,	/* the uid is at its connection cap */
};

/* A peer as SO_PEERCRED and SO_PEERGROUPS describe it. */
struct access_peer {
	uint32_t	 uid;
	uint32_t	 gid;
	uint32_t	 pid;
	const gid_t	*groups;	/* supplementary groups, may be NULL */
	size_t		 ngroups;
};

/*
 * Decide whether peer may connect: root, nkid's own uid (self_uid), a uid
 * in access.allow_uids, a member (primary or supplementary group) of the
 * socket's group (sock_gid) or of a group in access.allow_gids; and the
 * uid holds fewer than access.max_connections_per_uid connections
 * (uid_conns). Returns ACCESS_ALLOW or a negative verdict, with the
 * reason in why.
 */
int	access_peer_check(const struct config *cfg, uint32_t self_uid,
	    uint32_t sock_gid, const struct access_peer *peer,
	    unsigned uid_conns, char *why, size_t whylen);

/*
 * Nonzero if peer may administer the shared cache (remove entries, unpin
 * them): root, nkid's own uid (self_uid), or a member (primary or
 * supplementary group) of a group in access.admin_gids.
 */
int	access_peer_admin(const struct config *cfg, uint32_t self_uid,
	    const struct access_peer *peer);

#endif /* NKID_ACCESS_H */
