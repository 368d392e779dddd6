#!/bin/sh
# check.sh: run every test suite (unit, fuzz corpus, functional, python)
# and end with one summary line. Exit 0 only if nothing failed.
set -u
cd "$(dirname "$0")/.."

BUILD=${BUILD:-build}
export NKID="$PWD/$BUILD/bin/nkid" NKICTL="$PWD/$BUILD/bin/nkictl"
export PY="$PWD/.venv/bin/python" TOP="$PWD"
LOGDIR="$BUILD/test-logs"
rm -rf "$LOGDIR" && mkdir -p "$LOGDIR"

pass=0 fail=0 failed=""

# run NAME CMD...: one suite; its output goes to a log shown on failure.
run() {
	name=$1; shift
	log="$LOGDIR/$(echo "$name" | tr '/ ' '__').log"
	start=$(date +%s)
	if "$@" >"$log" 2>&1; then
		pass=$((pass + 1))
		printf 'PASS  %-44s %3ss\n' "$name" $(( $(date +%s) - start ))
	else
		fail=$((fail + 1)); failed="$failed $name"
		printf 'FAIL  %-44s %3ss  (log: %s)\n' "$name" $(( $(date +%s) - start )) "$log"
		tail -n 40 "$log" | sed 's/^/    | /'
	fi
}

for t in "$BUILD"/tests/check_*; do
	[ -x "$t" ] || continue
	run "unit/$(basename "$t")" "$t"
done

for t in "$BUILD"/tests/fuzz_*; do
	[ -x "$t" ] || continue
	corpus="tests/fuzz/corpus/${t##*/fuzz_}"
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	    run "fuzz/$(basename "$t")" "$t" "$corpus"
done

for t in tests/func/[0-9]*; do
	case "$t" in
	*.sh) run "func/$(basename "$t")" sh "$t" ;;
	*.py) run "func/$(basename "$t")" "$PY" "$t" ;;
	esac
done

if [ -d tests/python ]; then
	run "python/pytest" "$PY" -m pytest -q -x --tb=short tests/python
	grep -E '(passed|failed|error)' "$LOGDIR/python_pytest.log" | tail -n 1 | sed 's/^/      /'
fi

echo "check: $pass suites passed, $fail failed${failed:+:$failed}"
[ "$fail" -eq 0 ]
