#!/usr/bin/env bash
# Where the recorder's time goes, per line, for each of acptap-bench's recording workloads
# (docs/performance.md, "Where a recorded line's time goes").
#
#   bench/breakdown.sh [ACPTAP_DIR]     (default: target/release; needs valgrind and perf)
#
# 1. Instructions (valgrind --tool=callgrind, repeatable whatever the machine is doing):
#    `acptap import` of the workload's lines, which is the recorder's own path (redact, parse,
#    observe, store) without the pipes; each part's inclusive count divided by the lines.
# 2. CPU time by thread (perf record -e cpu-clock, one CPU): `acptap run -- cat LINES`, the
#    proxy recording the stream, split into the recorder thread (user and kernel: the kernel part
#    is its WAL writes), the checkpointer thread (copying the WAL into the database) and the
#    forwarding threads.
set -euo pipefail
dir=${1:-target/release}
acptap=$(realpath "$dir/acptap")
bench=$(realpath "$dir/acptap-bench")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"

# name size count (counts: enough lines for stable figures, few enough for callgrind)
workloads=("64B 64 20000" "1KiB 1024 20000" "4KiB 4096 5000" "1MiB 1048576 20")

inclusive() { # ANNOTATION SYMBOL -> instructions
    awk -v sym="$2" 'index($0, sym) && !found { gsub(",", "", $1); print $1; found = 1 }' "$1"
}

instructions() { # NAME TRANSCRIPT LINES
    rm -f db.sqlite* cg.out
    valgrind --tool=callgrind --callgrind-out-file=cg.out "$acptap" import --db db.sqlite "$2" \
        >/dev/null 2>valgrind.err
    callgrind_annotate --inclusive=yes --threshold=100 cg.out >cg.txt 2>/dev/null
    local parse redact observe store
    parse=$(inclusive cg.txt "acptap::protocol::message::parse_line_for_facts")
    # (A build before issue 31 read every line with parse_line.)
    [ -n "$parse" ] || parse=$(inclusive cg.txt "acptap::protocol::message::parse_line ")
    redact=$(inclusive cg.txt "acptap::record::redact::Redactor::redact")
    observe=$(inclusive cg.txt "acptap::protocol::state::SessionState::observe")
    store=$(inclusive cg.txt "acptap::record::store::Store::write_batch ")
    awk -v n="$1" -v lines="$3" -v p="${parse:-0}" -v r="${redact:-0}" -v o="${observe:-0}" -v s="${store:-0}" \
        'BEGIN { printf "%-12s %10.0f %10.0f %10.0f %10.0f %10.0f\n", n, r/lines, p/lines, o/lines, s/lines, (r+p+o+s)/lines }'
}

echo "instructions per line (callgrind, acptap import)"
printf "%-12s %10s %10s %10s %10s %10s\n" WORKLOAD REDACTION PARSING STATE STATEMENTS TOTAL
for w in "${workloads[@]}"; do
    read -r name size count <<<"$w"
    "$bench" stream --size "$size" --count "$count" --transcript -o "$name.jsonl"
    instructions "$name" "$name.jsonl" "$count"
done
"$bench" session --turns 1000 -o tools.jsonl >/dev/null
instructions "tools" tools.jsonl "$(wc -l <tools.jsonl)"

echo
echo "CPU µs per line by thread (perf -e cpu-clock, acptap run -- cat LINES, all on CPU 0)"
printf "%-12s %8s %10s %10s %12s %11s %8s\n" WORKLOAD LINES RECORDER "(KERNEL)" CHECKPOINTS FORWARDING TOTAL
for w in "${workloads[@]}"; do
    read -r name size count <<<"$w"
    count=$((count * 10))
    if [ "$size" -ge 1048576 ]; then count=300; fi
    "$bench" stream --size "$size" --count "$count" -o "$name.lines"
    rm -f db.sqlite*
    perf record -q -o perf.data -e cpu-clock -- taskset -c 0 "$acptap" run --db db.sqlite -- cat "$name.lines" \
        </dev/null >/dev/null 2>perf.err
    # For cpu-clock, the event count is nanoseconds.
    perf report -i perf.data --sort comm,dso --stdio 2>/dev/null | awk -v n="$name" -v lines="$count" '
        /Event count/ { ns = $NF }
        /^ +[0-9.]+%/ {
            p = $1; sub("%", "", p); comm = $2; dso = $3
            if (comm == "cat") { agent += p; next }
            if (comm ~ /^acptap-recorde/) { rec += p; if (dso ~ /kernel/) reck += p }
            else if (comm ~ /^acptap-checkpo/) chk += p
            else fwd += p
        }
        END {
            us = ns / 1000 / lines / 100
            printf "%-12s %8d %10.2f %10.2f %12.2f %11.2f %8.2f\n", n, lines, rec*us, reck*us, chk*us, fwd*us, (rec+chk+fwd)*us
        }'
done
