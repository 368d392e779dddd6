#!/bin/sh
# nkid keeps its state only in directories that are its own: a state_dir
# another user owns, or one writable by others, stops nkid at start naming
# the directory and its owner; a cache's tmp/ that is a symbolic link is
# never followed (before, nkid as root emptied the directory it pointed
# to: "removed 2 leftover temp files"), and index.db is never opened
# through a link. Needs root (to chown to nobody); every path is the
# test's own.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || { echo "skip: needs root (chown to another uid)"; exit 77; }
id nobody >/dev/null 2>&1 || { echo "skip: no user nobody"; exit 77; }

# expect_refused DIR WHAT: nkid --state-dir DIR exits 1 at once, saying WHAT.
expect_refused() {
	timeout 10 "$NKID" -s "$T/r.sock" --state-dir "$1" >"$T/o" 2>&1 &&
	    fail "nkid started with state dir $1"
	grep -q "$2" "$T/o" || fail "$1: $(cat "$T/o")"
	[ ! -S "$T/r.sock" ] || fail "nkid listened with state dir $1"
}

mkdir "$T/foreign"
chown nobody "$T/foreign"
expect_refused "$T/foreign" "state_dir '$T/foreign': '$T/foreign' belongs to uid [0-9]* (nobody)"
mkdir -p "$T/deep/state"
chown nobody "$T/deep"
expect_refused "$T/deep/state" "'$T/deep' belongs to uid [0-9]* (nobody)"
mkdir "$T/open"
chmod 0777 "$T/open"
expect_refused "$T/open" "is writable by other users"
mkdir -p "$T/st2"
ln -s "$T/foreign" "$T/st2/cache"
expect_refused "$T/st2" "cache_dir '$T/st2/cache': .* belongs to uid [0-9]* (nobody)"

# tmp/ a link to a victim: nothing of the victim's removed, said why.
mkdir -p "$T/victim" "$T/state/cache"
echo a >"$T/victim/a"
echo b >"$T/victim/b"
ln -s "$T/victim" "$T/state/cache/tmp"
start_nkid
"$NKICTL" ping -n 1 >/dev/null || fail "nkid does not serve"
[ -f "$T/victim/a" ] && [ -f "$T/victim/b" ] || fail "the victim's files were removed"
grep -q "not a directory (a symbolic link?)" "$LOG" || fail "the link not reported: $(grep cache "$LOG")"
stop_nkid || fail "nkid exited non-zero"

# index.db a link to a victim file: never opened through it.
rm "$T/state/cache/tmp"
rm -f "$T/state/cache/index.db"*
echo victim >"$T/victim/db"
ln -s "$T/victim/db" "$T/state/cache/index.db"
start_nkid
"$NKICTL" ping -n 1 >/dev/null || fail "nkid does not serve"
[ "$(cat "$T/victim/db")" = victim ] || fail "the victim file was changed"
stop_nkid || fail "nkid exited non-zero"
echo ok
