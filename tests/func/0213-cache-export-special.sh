#!/bin/sh
# nkictl cache export writes only regular files: a FIFO, a symbolic link
# (here to a character device) and a directory at FILE are refused and left
# as they were, before anything is written and with no temp file left; an
# existing regular file is replaced; `-` writes the checked bundle to
# standard output. (Before, export renamed its temp file over whatever was
# at FILE: as root, /dev/null became a regular file.) Everything lives in
# the test's own directory; /dev/null is only the target of a link.
. "$(dirname "$0")/lib.sh"

trace_va 128,64
start_nkid
"$NKICTL" compile "$T/va.nkir" >/dev/null || fail "compile"

mkdir "$T/out"
mkfifo "$T/out/fifo"
ln -s /dev/null "$T/out/null-link"
mkdir "$T/out/dir"
for f in fifo null-link dir; do
	! "$NKICTL" cache export "$T/out/$f" >"$T/o" 2>"$T/e" || fail "export to the $f succeeded"
	grep -q "a bundle replaces only a regular file" "$T/e" || fail "$f: $(cat "$T/e")"
done
[ -p "$T/out/fifo" ] || fail "the FIFO was replaced"
[ -L "$T/out/null-link" ] && [ "$(readlink "$T/out/null-link")" = /dev/null ] ||
    fail "the link was replaced"
[ -d "$T/out/dir" ] || fail "the directory was replaced"
[ "$(ls "$T/out" | wc -l)" = 3 ] || fail "left behind: $(ls "$T/out")"
# Offline too.
! "$NKICTL" cache export "$T/out/fifo" --offline --state-dir "$T/state" 2>"$T/e" ||
    fail "offline export to the FIFO succeeded"

# A regular file is replaced.
echo old >"$T/out/b.nkb"
"$NKICTL" cache export "$T/out/b.nkb" | grep -q "exported 1" || fail "export to a file"
[ "$(head -c 8 "$T/out/b.nkb")" = NKIDBDL1 ] || fail "not a bundle"

# Standard output: the same checked bundle, the summary on stderr.
TMPDIR=$T "$NKICTL" cache export - >"$T/out/stdout.nkb" 2>"$T/e" || fail "export to -: $(cat "$T/e")"
grep -q "exported 1 entry to standard output" "$T/e" || fail "summary: $(cat "$T/e")"
cmp -s "$T/out/b.nkb" "$T/out/stdout.nkb" || [ "$(head -c 8 "$T/out/stdout.nkb")" = NKIDBDL1 ] ||
    fail "standard output is not a bundle"
mkdir -p "$T/fresh/cache"
"$NKICTL" cache import "$T/out/stdout.nkb" --state-dir "$T/fresh" | grep -q "imported 1" ||
    fail "the bundle from standard output does not import"
! ls "$T"/nkictl-export.* >/dev/null 2>&1 || fail "a temp file left in TMPDIR"
echo ok
