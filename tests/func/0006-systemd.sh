#!/bin/sh
# The service as systemd runs it: make install into a DESTDIR lays out the
# documented tree, the units verify, the service is rated 2.0 or lower by
# systemd-analyze security, and a socket activated by
# systemd-socket-activate serves its very first call, with READY=1 and
# STOPPING=1 on NOTIFY_SOCKET and exit 0 after SIGTERM.
. "$(dirname "$0")/lib.sh"

D=$T/root
make -s -C "$TOP" install DESTDIR="$D" PREFIX=/usr/local >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; fail "make install failed"; }
for f in usr/local/sbin/nkid usr/local/bin/nkictl etc/nkid/nkid.json \
	lib/systemd/system/nkid.service lib/systemd/system/nkid.socket \
	usr/lib/sysusers.d/nkid.conf usr/lib/tmpfiles.d/nkid.conf \
	usr/local/share/man/man8/nkid.8 usr/local/share/man/man1/nkictl.1 \
	usr/local/share/doc/nkid/operations.md usr/local/bin/nkimodel \
	usr/local/share/doc/nkid/nkid-remote.conf; do
	[ -e "$D/$f" ] || fail "make install did not install /$f"
done
grep -q "ExecStart=/usr/local/sbin/nkid" "$D/lib/systemd/system/nkid.service" ||
	fail "ExecStart does not name the installed nkid"

# The config is the operator's: a second install leaves it alone.
echo '{ "log_level": "debug" }' >"$D/etc/nkid/nkid.json"
make -s -C "$TOP" install DESTDIR="$D" PREFIX=/usr/local >/dev/null 2>&1
grep -q debug "$D/etc/nkid/nkid.json" || fail "make install overwrote /etc/nkid/nkid.json"

# A DESTDIR is not an OS image: lend it the base targets and kill(1) that
# every real root has, so that verify judges our units and nothing else.
mkdir -p "$D/usr/lib/systemd/system" "$D/bin"
cp /lib/systemd/system/*.target "$D/usr/lib/systemd/system/"
cp /bin/kill "$D/bin/kill"
out=$(MANPATH="$D/usr/local/share/man" systemd-analyze verify --root="$D" \
	"$D/lib/systemd/system/nkid.service" "$D/lib/systemd/system/nkid.socket" 2>&1) ||
	fail "systemd-analyze verify failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify printed: $out"

# The drop-in that opens the network for a redis:// remote tier
# (docs/operations.md) verifies, and lifts exactly the three restrictions.
install -D -m 0644 "$D/usr/local/share/doc/nkid/nkid-remote.conf" \
	"$D/etc/systemd/system/nkid.service.d/remote.conf"
out=$(MANPATH="$D/usr/local/share/man" systemd-analyze verify --root="$D" \
	"$D/lib/systemd/system/nkid.service" 2>&1) ||
	fail "systemd-analyze verify with the drop-in failed: $out"
[ -z "$out" ] || fail "systemd-analyze verify with the drop-in printed: $out"
for l in PrivateNetwork=no IPAddressAllow=any "RestrictAddressFamilies=AF_INET AF_INET6"; do
	grep -qx "$l" "$D/etc/systemd/system/nkid.service.d/remote.conf" ||
		fail "the drop-in does not set $l"
done
rm -r "$D/etc/systemd/system"

score=$(systemd-analyze security --offline=true --root="$D" \
	"$D/lib/systemd/system/nkid.service" 2>&1 |
	sed -n 's/.*Overall exposure level for nkid.service: \([0-9.]*\).*/\1/p')
[ -n "$score" ] || fail "no security rating"
"$PY" -c "import sys; sys.exit(0 if float('$score') <= 2.0 else 1)" ||
	fail "security exposure $score > 2.0"

make -s -C "$TOP" uninstall DESTDIR="$D" PREFIX=/usr/local >/dev/null 2>&1
[ ! -e "$D/usr/local/sbin/nkid" ] || fail "uninstall left nkid"
[ -e "$D/etc/nkid/nkid.json" ] || fail "uninstall removed the operator's config"

# Socket activation, with a NOTIFY_SOCKET we read.
notify_listen "$T/notify.sock" "$T/notify.log"

systemd-socket-activate -l "$SOCK" -E NOTIFY_SOCKET="$T/notify.sock" \
	"$NKID" -s "$SOCK" --state-dir "$T/state" >>"$LOG" 2>&1 &
NKID_PID=$!
i=0; while [ ! -S "$SOCK" ] && [ $i -lt 50 ]; do i=$((i+1)); sleep 0.1; done
# The very first call reaches nkid through the passed socket.
"$NKICTL" --timeout 10 --json status >"$T/status.json" ||
	fail "first call on an activated socket failed"
[ "$(json_get "$T/status.json" "d['pid']")" = "$NKID_PID" ] ||
	fail "status pid is not the activated nkid's"
sleep 0.2
grep -q READY=1 "$T/notify.log" || fail "no READY=1"
rc=0; stop_nkid || rc=$?
[ $rc -eq 0 ] || fail "activated nkid exited $rc on SIGTERM"
sleep 0.2
grep -q STOPPING=1 "$T/notify.log" || fail "no STOPPING=1"
kill $LISTENER 2>/dev/null || true
echo ok
