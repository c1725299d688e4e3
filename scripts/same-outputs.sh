#!/usr/bin/env bash
# Every output acptap writes from the shared samples, into one folder, so that two builds can be
# compared byte for byte (issue 28: a redesign with the behaviour unchanged).
#
#   scripts/same-outputs.sh ACPTAP SAMPLES OUT
#   diff -r OUT_BEFORE OUT_AFTER && echo identical
#
# Each sample is imported at a fixed start into a database of its own and into one shared
# database; then the database's rows (sqlite3 .dump), show, tools, sessions, stats, search, check,
# redact, every export format but OTLP over the network, the HTML report and diff of each pair of
# samples are written. Exit statuses are kept beside each output.
set -u
acptap=$(realpath "$1"); samples=$(realpath "$2"); out=$3
mkdir -p "$out"; out=$(realpath "$out")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
: >"$work/config.toml"
export ACPTAP_CONFIG="$work/config.toml" NO_COLOR=1 TZ=UTC
cd "$work"

run() { # NAME CMD...: stdout to NAME, stderr to NAME.err, exit status to NAME.rc
  local name=$1; shift
  "$@" >"$out/$name" 2>"$out/$name.err"; echo $? >"$out/$name.rc"
}

shared="$work/all.db"
for sample in "$samples"/*.jsonl; do
  name=$(basename "$sample" .jsonl)
  db="$work/$name.db"
  run "$name.import" "$acptap" import --db "$db" --start 2026-11-24T12:00:00Z "$sample"
  "$acptap" import --db "$shared" --start 2026-11-24T12:00:00Z --label "$name" "$sample" >/dev/null 2>&1
  sqlite3 "$db" .dump >"$out/$name.dump.sql"
  session=$("$acptap" sessions --db "$db" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["session_id"])')
  run "$name.show" "$acptap" show --db "$db" "$session"
  run "$name.show.json" "$acptap" show --db "$db" --json "$session"
  run "$name.tools" "$acptap" tools --db "$db" "$session"
  run "$name.tools.json" "$acptap" tools --db "$db" --json "$session"
  run "$name.check" "$acptap" check --db "$db" "$session"
  run "$name.check.json" "$acptap" check --db "$db" --json --junit "$out/$name.check.junit.xml" "$session"
  run "$name.check-file" "$acptap" check "$sample"
  run "$name.redact" "$acptap" redact --check "$sample"
  run "$name.redact.json" "$acptap" redact --check --json "$sample"
  for format in jsonl trace otlp-json; do
    run "$name.export.$format" "$acptap" export --db "$db" --format "$format" "$session"
  done
  run "$name.export.otlp-json-content" "$acptap" export --db "$db" --format otlp-json --tool-content "$session"
  run "$name.report" "$acptap" report --db "$db" -o "$out/$name.report.html" "$session"
done

run all.sessions "$acptap" sessions --db "$shared"
run all.sessions.json "$acptap" sessions --db "$shared" --json
run all.stats "$acptap" stats --db "$shared"
run all.stats.json "$acptap" stats --db "$shared" --json
run all.tools "$acptap" tools --db "$shared"
run all.tools.json "$acptap" tools --db "$shared" --json
run all.check "$acptap" check --db "$shared"
run all.search.project "$acptap" search --db "$shared" project
run all.search.edit.json "$acptap" search --db "$shared" --tool edit --json
run all.search.path "$acptap" search --db "$shared" --path '**/*.txt'
sqlite3 "$shared" .dump >"$out/all.dump.sql"
ids=$("$acptap" sessions --db "$shared" --json | python3 -c 'import json,sys; print(" ".join(s["session_id"] for s in json.load(sys.stdin)))')
for a in $ids; do for b in $ids; do
  [ "$a" = "$b" ] && continue
  run "diff.$a.$b" "$acptap" diff --db "$shared" "$a" "$b"
  run "diff.$a.$b.json" "$acptap" diff --db "$shared" --json "$a" "$b"
done; done
# The paths of this run's folders, and the importing process's id and identity (recorded on each
# connection row), are not the build's doing.
grep -rlF -e "$work" -e "$out" "$out" | xargs -r sed -i -e "s#$work#WORK#g" -e "s#$out#OUT#g"
sed -i -E -e "s/^(INSERT INTO connections VALUES\([0-9]+,'[^']*','[^']*',[^,]*,[^,]*,)[0-9]+,/\1PID,/" \
  -e "s/'[0-9a-f-]{36}:[0-9]+'/'PROCESS'/" "$out"/*.dump.sql
