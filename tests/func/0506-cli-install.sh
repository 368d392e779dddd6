#!/bin/sh
# `make install` puts nkictl's bash completion in bash-completion's
# directory and a man page whose command list is nkictl's own command
# table (generated at build time), which man renders without warnings. The
# completion completes commands, subcommands, options, directories, the
# command after `lock --`, and cache keys asked of nkid.
. "$(dirname "$0")/lib.sh"

D=$T/root
make -s -C "$TOP" install DESTDIR="$D" PREFIX=/usr/local >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log"; fail "make install failed"; }
COMP=$D/usr/share/bash-completion/completions/nkictl
MAN=$D/usr/local/share/man/man1/nkictl.1
[ -f "$COMP" ] || fail "no completion at /usr/share/bash-completion/completions/nkictl"
[ -f "$MAN" ] || fail "no man page"

# the man page: every command of the table, every one of its options
"$NKICTL" help --words | while read -r cmd; do
	grep -q "^\.SS \"$cmd\"$" "$MAN" || { echo "man: no $cmd"; exit 1; }
	"$NKICTL" help --words $cmd | while read -r opt value; do
		o=$(printf '%s' "$opt" | sed 's/-/\\\\-/g')
		grep -q "^\.B .*$o" "$MAN" || { echo "man: $cmd: no $opt"; exit 1; }
	done || exit 1
done >"$T/man.check" || fail "$(cat "$T/man.check")"
grep -q "@GENERATED@\|@VERSION@" "$MAN" && fail "the man page template was not filled"
if command -v groff >/dev/null; then
	groff -man -Tutf8 -ww -z "$MAN" >"$T/groff" 2>&1 || fail "groff failed: $(cat "$T/groff")"
	[ ! -s "$T/groff" ] || fail "the man page has warnings: $(cat "$T/groff")"
fi
MANWIDTH=100 man -l "$MAN" 2>/dev/null | grep -q "cache verify" || fail "man does not render it"

# the completion, with the nkictl of this tree and a nkid to ask for keys
trace_va 256,1024
start_nkid
"$NKICTL" --json compile "$T/va.nkir" >"$T/c.json" || fail "compile"
key=$(json_get "$T/c.json" "d['neff_key']")
mkdir -p "$T/outdir"
# complete WORD...: the completions of the last word, sorted, one a line
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _nkictl
		printf "%s\n" "${COMPREPLY[@]}" | sort' _ "$COMP" "$NKICTL" "$@"
}
[ "$(complete_words ca | tr '\n' ' ')" = "cache cancel " ] || fail "commands: $(complete_words ca)"
complete_words cache "" >"$T/sub"
for s in ls show stat pin unpin rm verify export import gc; do
	grep -qx "$s" "$T/sub" || fail "subcommand $s not completed: $(cat "$T/sub")"
done
[ "$(complete_words cache ls --no)" = "--no-signature" ] || fail "options: $(complete_words cache ls --no)"
[ "$(complete_words top - | tr '\n' ' ')" = "--batch --delay --help --iterations --json -b -d -h -n " ] ||
	fail "top's options: $(complete_words top -)"
(cd "$T" && complete_words run va.nkir -o outd) | grep -qx "outdir" || fail "-o DIR: no directory"
[ "$(complete_words lock -c 0 -- slee)" = sleep ] || fail "lock --: $(complete_words lock -c 0 -- slee)"
[ "$(complete_words -s "$SOCK" cache show "$(echo "$key" | cut -c1-3)")" = "$(echo "$key" | cut -c1-16)" ] ||
	fail "keys: $(complete_words -s "$SOCK" cache show "$(echo "$key" | cut -c1-3)")"
[ "$(complete_words -s "$SOCK" cache verify -k "")" = "$(echo "$key" | cut -c1-16)" ] || fail "verify -k KEY"
[ "$(complete_words --js)" = "--json" ] || fail "global options"
stop_nkid || fail "nkid exited non-zero"
echo ok
