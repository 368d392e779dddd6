# bash completion of nkictl(1): commands, their options and the values
# options take (files, directories), cache keys from nkid, and the command
# after `nkictl lock --`. The words come from nkictl itself (`nkictl help
# --words`), so they follow its command table. Installed by `make install`
# into bash-completion's directory as "nkictl".

# _nkictl_keys NKICTL SOCKOPT...: the key prefixes `cache ls` prints.
_nkictl_keys()
{
	local ctl=$1
	shift
	"$ctl" "$@" --timeout 2 cache ls --no-signature 2>/dev/null |
	    awk 'NR > 1 && $1 != "no" { print $1 }'
}

_nkictl()
{
	local ctl=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
	local prev=${COMP_WORDS[COMP_CWORD-1]}
	local i=1 w cmd value nops=0 line
	local -a sock=()

	# nkictl's own options, before the command
	while [ "$i" -lt "$COMP_CWORD" ]; do
		w=${COMP_WORDS[i]}
		case $w in
		-s|--socket) sock=(-s "${COMP_WORDS[i+1]}"); i=$((i + 2)); continue ;;
		--socket=*) sock=(-s "${w#--socket=}") ;;
		--timeout) i=$((i + 2)); continue ;;
		-*) ;;
		*) break ;;
		esac
		i=$((i + 1))
	done
	if [ "$i" -ge "$COMP_CWORD" ]; then
		case $prev in
		-s|--socket) COMPREPLY=($(compgen -f -- "$cur")); return ;;
		--timeout) return ;;
		esac
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "-s --socket --json --timeout
			    --version -h --help" -- "$cur"))
		else
			COMPREPLY=($("$ctl" help --words 2>/dev/null |
			    awk '{ print $1 }' | sort -u | grep -- "^$cur"))
		fi
		return
	fi

	# the command: one word, or two for a group ("cache ls")
	cmd=${COMP_WORDS[i]}
	if "$ctl" help --words 2>/dev/null | grep -q "^$cmd "; then
		if [ $((i + 1)) -eq "$COMP_CWORD" ]; then
			COMPREPLY=($("$ctl" help --words 2>/dev/null |
			    sed -n "s/^$cmd \([a-z]*\)\$/\1/p" | grep -- "^$cur"))
			return
		fi
		i=$((i + 1))
		cmd="$cmd ${COMP_WORDS[i]}"
	fi

	# after `lock ... --`: the command to run
	if [ "$cmd" = lock ]; then
		for ((w = i + 1; w < COMP_CWORD; w++)); do
			if [ "${COMP_WORDS[w]}" = -- ]; then
				COMPREPLY=($(compgen -c -- "$cur" | sort -u))
				return
			fi
		done
	fi

	# the value of an option: a file, a directory, a key, or nothing
	value=$("$ctl" help --words $cmd 2>/dev/null |
	    awk -v o="$prev" '$1 == o && NF > 1 { print $2 }')
	case $value in
	"") ;;
	DIR) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	*FILE*|SOCKET) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	KEY) COMPREPLY=($(compgen -W "$(_nkictl_keys "$ctl" "${sock[@]}")" -- "$cur"))
		return ;;
	*) return ;;
	esac

	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$("$ctl" help --words $cmd 2>/dev/null |
		    awk '{ print $1 }')" -- "$cur"))
		return
	fi

	# operands: cache keys where the command takes them, else files
	for ((w = i + 1; w < COMP_CWORD; w++)); do
		line=${COMP_WORDS[w]}
		[[ $line == -* ]] || nops=$((nops + 1))
	done
	case $cmd in
	"cache show"|"cache pin"|"cache unpin"|"cache rm"|"cache push")
		COMPREPLY=($(compgen -W "$(_nkictl_keys "$ctl" "${sock[@]}")" -- "$cur")) ;;
	"cache export")
		if [ "$nops" -eq 0 ]; then
			COMPREPLY=($(compgen -f -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_nkictl_keys "$ctl" "${sock[@]}")" -- "$cur"))
		fi ;;
	help)
		COMPREPLY=($("$ctl" help --words 2>/dev/null | awk '{ print $1 }' |
		    sort -u | grep -- "^$cur")) ;;
	*)
		COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
}

complete -F _nkictl nkictl
