#!/bin/sh
# run.sh TARGET SECONDS [NEWDIR]: run the libFuzzer binary TARGET
# (build/tests/fuzz_NAME) on tests/fuzz/corpus/NAME, then on fresh inputs
# until SECONDS have passed, under ASan and UBSan. New inputs go to
# NEWDIR/NAME (kept, for make fuzz) or to a temporary directory. A crash,
# a leak, a hang (over 25 s on one input) or a memory blow-up (2 GiB) fails
# with the input saved in build/fuzz/crashes/ and the command that replays it.
set -eu
cd "$(dirname "$0")/../.."

t=$1 secs=$2
name=${t##*/fuzz_}
seeds=tests/fuzz/corpus/$name
[ -d "$seeds" ] || { echo "run.sh: no corpus '$seeds'" >&2; exit 2; }
out=$(dirname "$(dirname "$t")")/fuzz/crashes
mkdir -p "$out"
if [ $# -ge 3 ]; then
	new=$3/$name
	mkdir -p "$new"
	tmp=
else
	tmp=$(mktemp -d /tmp/nkid-fuzz-new.XXXXXX)
	new=$tmp
fi
trap '[ -z "$tmp" ] || rm -rf "$tmp"' EXIT

export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
rm -f "$out/$name-"*
rc=0
"$t" -max_total_time="$secs" -timeout=25 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/$name-" \
    "$new" "$seeds" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "run.sh: fuzz_$name failed ($rc); replay with: $t" \
	    "$(ls "$out/$name-"* 2>/dev/null | head -n 1)"
	exit 1
fi
