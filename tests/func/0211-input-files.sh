#!/bin/sh
# nkictl never blocks on what it is told to read: a FIFO (or any file that
# is not a regular file) given as a kernel or an input is refused at once.
. "$(dirname "$0")/lib.sh"

"$PY" -m nkid.trace examples.vector_add:vector_add --shape 4,4 --shape 4,4 \
	-o "$T/k.nkir" >/dev/null 2>&1 || fail "cannot trace vector_add"
"$PY" -c "import numpy as np, sys; np.save(sys.argv[1], np.ones((4, 4), np.float32))" \
	"$T/a.npy" || fail "cannot write a.npy"
mkfifo "$T/fifo"
start_nkid
for args in "$T/k.nkir -i x=$T/fifo -i y=$T/a.npy" "$T/fifo -i x=$T/a.npy -i y=$T/a.npy"; do
	rc=0
	# shellcheck disable=SC2086
	timeout 10 "$NKICTL" run $args >"$T/out" 2>&1 || rc=$?
	[ $rc -ne 124 ] || fail "nkictl run $args blocked on a FIFO"
	[ $rc -ne 0 ] || fail "nkictl run $args succeeded"
	grep -q "not a regular file" "$T/out" || fail "no clear error: $(cat "$T/out")"
done
stop_nkid || fail "nkid exited non-zero"
echo ok
