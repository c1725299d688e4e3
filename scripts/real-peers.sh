#!/usr/bin/env bash
# The real-peer acceptance run: every agent of the testbed with every client, through every door of
# acptap. Not part of CI (the testbed is about 1 GB and takes 15 minutes to install); see
# docs/real-peers.md for what it checks and the table as last measured.
#
#   scripts/real-peers.sh TESTBED_DIR [OUT_DIR]
#
# TESTBED_DIR: an installed copy of ../shared/testbed (its README: copy it out, run setup.sh once).
# OUT_DIR: where captures, databases and logs go (default: a new temporary directory).
# Environment: ACPTAP (the binary; default target/release/acptap, else target/debug/acptap),
# AGENTS and CLIENTS (space-separated subsets), DOORS (a subset of
# "record policy as-agent as-client as-client-text cancel"), SESSION_TIMEOUT (seconds per run, default 150),
# JOBS (agents run at once, default 3).
#
# For each agent x client pair, one session of the testbed's `basic` scenario (a read, an `ls -la`, an
# edit and a `touch`, two of them asking permission; the client approves all), and then:
#   record        through `acptap run`: the session completes, the bytes are transparent (the
#                 testbed's check_transparent.py), the recording matches the captures line for line,
#                 with its sessions, turns, tool calls' final states and permission decisions
#                 (scripts/real_peers_verify.py), and `acptap check` finds no error
#   policy        the same session with a policy (scripts/real-peers-policy.toml) that allows reads,
#                 edits and `ls` inside the project and rejects the `touch` (the rest goes to the client): the
#                 policy answered, the agent took its answers (what it allowed ran, what it rejected
#                 did not complete),
#                 the recording is right and the bytes are transparent (the answered requests aside)
#   as-agent      the recording replayed as the agent (`acptap replay --as agent`) to each of the four
#                 clients: it completes (exit 0, or 1 with the divergences said: another client answers
#                 permission requests its own way) and no path of the recording's directories reaches
#                 the client; shown as completed/clients(exact)
#   as-client     the recording replayed as the client (`acptap replay --as client --cwd LIVE`) against
#                 the same agent in a fresh project: exit 0 (no divergence); as-client-text: with
#                 `--compare text` too
#   cancel        (acpx only: the one client here with a Ctrl-C) the `slow` scenario through `acptap run`,
#                 cancelled mid-turn: recorded right, then replayed as client with `--compare text`: exit 0
# and that no replay touched the recorded project. Prints one table; exit 0 iff every cell passed.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
TB="${1:?usage: scripts/real-peers.sh TESTBED_DIR [OUT_DIR]}"
TB="$(cd "$TB" && pwd)" || exit 2
[ -x "$TB/run_session.sh" ] || { echo "real-peers: $TB is not the testbed (no run_session.sh)" >&2; exit 2; }
OUT_ROOT="${2:-$(mktemp -d -t acptap-real-peers.XXXXXX)}"
mkdir -p "$OUT_ROOT" && OUT_ROOT="$(cd "$OUT_ROOT" && pwd)"
ACPTAP="${ACPTAP:-}"
if [ -z "$ACPTAP" ]; then
  for b in "$root/target/release/acptap" "$root/target/debug/acptap"; do [ -x "$b" ] && { ACPTAP="$b"; break; }; done
fi
[ -x "${ACPTAP:-}" ] || { echo "real-peers: no acptap binary; run cargo build --release or set ACPTAP" >&2; exit 2; }
# the binary is copied, so that a rebuild during the run changes nothing
cp "$ACPTAP" "$OUT_ROOT/acptap" && ACPTAP="$OUT_ROOT/acptap"
AGENTS=(${AGENTS:-claude codex gemini qwen opencode pi vibe fastagent kimi})
CLIENTS=(${CLIENTS:-acpx rust-yolo py-gemini py-example})
DOORS=" ${DOORS:-record policy as-agent as-client as-client-text cancel} "
export SESSION_TIMEOUT="${SESSION_TIMEOUT:-150}"
POLICY="$here/real-peers-policy.toml"
VERIFY="$here/real_peers_verify.py"
PY="${PYTHON:-python3}"
has() { [[ "$DOORS" == *" $1 "* ]]; }

# run_session AGENT CLIENT OUT PROXY_PREFIX [VAR=VALUE...]: one testbed session; its verdict is the exit status
run_session() {
  local agent=$1 client=$2 out=$3 prefix=$4; shift 4
  local acc=0
  # codex and Mistral Vibe fail the prompt when the client answers a permission request with an error
  case "$agent/$client" in codex/py-example|vibe/py-example) acc=1 ;; esac
  env AGENT="$agent" CLIENT="$client" SCENARIO="${SCENARIO:-basic}" PERMS="${PERMS:-approve-all}" OUT="$out" \
    ACCEPT_PROMPT_ERROR="$acc" "$@" "$TB/run_session.sh" "$prefix" > "$out.log" 2>&1
}

# tree_digest DIR: a digest of every file's path and bytes under DIR (the recorded project must not change)
tree_digest() { (cd "$1" && find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -c1-16); }

# recorded_session DB: the session a recording made (the first: a replay as client adds its live runs)
recorded_session() {
  "$ACPTAP" sessions --db "$1" --json 2>/dev/null \
    | "$PY" -c 'import json,sys; s=json.load(sys.stdin); print((s[-1] if isinstance(s,list) else s)["session_id"])' 2>/dev/null
}

# client_exit OUT: the client's exit status as the testbed's summary says ("?" without one)
client_exit() {
  local rc
  rc=$(grep -o '"client_rc": [0-9]*' "$1/summary.json" 2>/dev/null | grep -o '[0-9]*$')
  echo "${rc:-?}"
}

transparent() { [ "$(tail -1 "$1/transparency.txt" 2>/dev/null)" = "TRANSPARENT" ]; }

cell_record() {  # -> "ok" or a short reason
  local a=$1 c=$2 d="$OUT_ROOT/$1-$2"
  run_session "$a" "$c" "$d/rec" "$ACPTAP run --db $d/rec.db --label real-peers --" || { echo "session-failed"; return; }
  transparent "$d/rec" || { echo "not-transparent"; return; }
  "$PY" "$VERIFY" "$d/rec" "$d/rec.db" > "$d/verify.txt" 2>&1 || { echo "recording-differs"; return; }
  "$ACPTAP" check --db "$d/rec.db" --json last > "$d/check.json" 2> "$d/check.err"
  local rc=$?
  if [ $rc -ne 0 ]; then
    local rules
    rules=$("$PY" -c 'import json,sys
try: d=json.load(open(sys.argv[1]))
except Exception: print("check-failed"); sys.exit()
f=[x for r in d.get("results",[]) for x in r.get("findings",[]) if x.get("severity")=="error"]
print(",".join(sorted({x.get("rule","?") for x in f})) or "check-exit-%s" % sys.argv[2])' "$d/check.json" "$rc")
    local r undocumented=
    for r in ${rules//,/ }; do [[ " $(documented_deviations "$a") " == *" $r "* ]] || undocumented=1; done
    [ -z "$undocumented" ] && { echo "ok (deviates: $rules)"; return; }
    echo "check:$rules"; return
  fi
  echo ok
}

# The protocol deviations `acptap check` finds in an agent's own lines, each explained in
# docs/real-peers.md: a cell whose only findings are these passes.
documented_deviations() {
  case "$1" in
    qwen) echo "acp/unknown-method" ;;   # craft/drainMidTurnQueue: an extension method without the `_`
    opencode) echo "acp/capability-not-negotiated" ;;   # fs/write_text_file to a client that offered no fs
    vibe) echo "acp/unknown-session" ;;   # a usage_update for its session before it answers session/new
  esac
}

cell_policy() {
  local a=$1 c=$2 d="$OUT_ROOT/$1-$2"
  run_session "$a" "$c" "$d/pol" "$ACPTAP run --db $d/pol.db --policy $POLICY --label real-peers-policy --" \
    || { echo "session-failed"; return; }
  transparent "$d/pol" || { echo "not-transparent"; return; }
  "$PY" "$VERIFY" "$d/pol" "$d/pol.db" > "$d/pol-verify.txt" 2>&1 || { echo "recording-differs"; return; }
  # every request the policy allowed: its tool call completed; every one it rejected: its call did not
  "$PY" - "$d/pol.db" <<'PYEOF'
import sqlite3, sys
con = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
rows = con.execute("""SELECT p.tool_call_id, p.option_kind, t.status FROM permission_requests p
  LEFT JOIN tool_calls t ON t.connection_id = p.connection_id AND t.tool_call_id = p.tool_call_id
  WHERE p.connection_id = 1 AND p.decided_by = 'policy'""").fetchall()
asked = con.execute("SELECT count(*) FROM permission_requests WHERE connection_id = 1").fetchone()[0]
allowed = [r for r in rows if (r[1] or "").startswith("allow")]
# taken: the call ran (the agent reported it running or done; the client may still fail to run it,
# as the Python gemini example's terminal does); a rejected call never completed
def ran(call):
    return con.execute("""SELECT count(*) FROM tool_call_events e JOIN tool_calls t ON t.id = e.tool_call_row
      WHERE t.connection_id = 1 AND t.tool_call_id = ? AND e.status IN ('in_progress', 'completed')""", (call,)).fetchone()[0] > 0
bad = [r for r in allowed if not ran(r[0])] + [r for r in rows if r not in allowed and r[2] == "completed"]
if asked and not rows:
    print("policy-answered-none"); sys.exit(1)
if bad:
    print("answer-not-taken:" + ",".join(f"{b[0]}={b[1]}/{b[2]}" for b in bad)); sys.exit(1)
print(f"ok {len(allowed)}+{len(rows) - len(allowed)}/{asked}")
PYEOF
}

cell_as_agent() {  # -> "N/M" replays that completed (exit 0, or 1 with its divergences said) with no leak
  local a=$1 c=$2 d="$OUT_ROOT/$1-$2" pass=0 exact=0 total=0 c2 r rc
  for c2 in "${CLIENTS[@]}"; do
    total=$((total + 1)); r="$d/as-agent-$c2"
    AGENT_CUSTOM_CMD="bash -c 'exec $ACPTAP replay $(cat "$d/sid") --as agent --db $d/rec.db 2> $r.replay.err'" \
      run_session custom "$c2" "$r" "" CHECK=0
    # the replayer's exit status, as its shim recorded it
    rc=$("$PY" -c 'import json,sys
rc="?"
for l in open(sys.argv[1]):
    r=json.loads(l)
    if r.get("event")=="exit": rc=r.get("rc")
print(rc)' "$r/agent_side.jsonl" 2>/dev/null || echo "?")
    # a path of the recording's own directories (its project, its home) that reached the client
    # (a name cut short by a streamed chunk, kimi-cli's `ReadFile: .../rec/pr`, names neither)
    local leaked
    leaked=$(grep -oE "$d/rec/(proj|home)" "$r/client_side.jsonl" 2>/dev/null | head -1)
    # a client that kills the replayer once its turn is over (no exit record): what the summary said
    if [ "$rc" = "?" ]; then
      case "$(grep -v '^ ' "$r.replay.err" 2>/dev/null | tail -1)" in
        "no divergence") rc=0 ;; *" divergence"|*" divergences") rc=1 ;;
      esac
    fi
    case "$rc" in
      0|1) if [ -z "$leaked" ]; then pass=$((pass + 1)); [ "$rc" = 0 ] && exact=$((exact + 1)); fi ;;
    esac
    echo "$c2 rc=$rc${leaked:+ recorded-path-reached-the-client}: $(grep -v '^ ' "$r.replay.err" 2>/dev/null | tail -1)" >> "$d/as-agent.txt"
  done
  echo "$pass/$total($exact)"
}

cell_cancel() {  # acpx only (the one client here with a Ctrl-C): a cancelled turn, recorded and replayed as client
  local a=$1 c=$2 d="$OUT_ROOT/$1-$2"
  [ "$c" = acpx ] || { echo "n/a"; return; }
  # Ctrl-C 2 s after the first session/update (the start-up of the slowest agents takes 5-45 s)
  SCENARIO=slow run_session "$a" acpx "$d/cancel" "$ACPTAP run --db $d/cancel.db --label real-peers-cancel --" \
    EXPECT_STOP=cancelled INTERRUPT_AFTER=900 INTERRUPT_AFTER_UPDATE=2 \
    || { echo "session-failed"; return; }
  transparent "$d/cancel" || { echo "not-transparent"; return; }
  "$PY" "$VERIFY" "$d/cancel" "$d/cancel.db" > "$d/cancel-verify.txt" 2>&1 || { echo "recording-differs"; return; }
  local sid r="$d/cancel-as-client"
  sid=$(recorded_session "$d/cancel.db")
  SCENARIO=slow CLIENT_CUSTOM_CMD="$ACPTAP replay $sid --as client --db $d/cancel.db --cwd $r/proj --compare text -- @LAUNCH@" \
    run_session "$a" custom "$r" "" CHECK=0
  local rc
  rc=$(client_exit "$r")
  if [ "$rc" = 0 ]; then echo ok; else echo "replay-exit-$rc"; fi
}

cell_as_client() {  # $3: extra replay words
  local a=$1 c=$2 extra=$3 name=$4 d="$OUT_ROOT/$1-$2"
  local r="$d/$name"
  CLIENT_CUSTOM_CMD="$ACPTAP replay $(cat "$d/sid") --as client --db $d/rec.db --cwd $r/proj $extra -- @LAUNCH@" \
    run_session "$a" custom "$r" "" CHECK=0
  local rc
  rc=$(client_exit "$r")
  if [ "$rc" = 0 ]; then echo ok; else echo "exit-$rc"; fi
}

# one agent's row of the table, into $OUT_ROOT/AGENT.rows ("FAIL" at the end of a failed line)
agent_rows() {
  local a=$1 c d rec pol asa asc asct can before bad n v
  for c in "${CLIENTS[@]}"; do
    d="$OUT_ROOT/$a-$c"; mkdir -p "$d"
    rec=- pol=- asa=- asc=- asct=- can=- bad=
    has record && rec=$(cell_record "$a" "$c")
    has policy && pol=$(cell_policy "$a" "$c")
    # the recorded session, named once: a replay as client records its live run in the same database
    [ -s "$d/rec.db" ] && recorded_session "$d/rec.db" > "$d/sid"
    if [ -s "$d/sid" ]; then
      before=$(tree_digest "$d/rec/proj")
      has as-agent && asa=$(cell_as_agent "$a" "$c")
      has as-client && asc=$(cell_as_client "$a" "$c" "" as-client)
      has as-client-text && asct=$(cell_as_client "$a" "$c" "--compare text" as-client-text)
      [ "$(tree_digest "$d/rec/proj")" = "$before" ] || asa="$asa,project-touched"
    fi
    has cancel && can=$(cell_cancel "$a" "$c")
    for v in "$rec" "$pol" "$asc" "$asct" "$can"; do case "$v" in -|n/a|ok|ok\ *) ;; *) bad=FAIL ;; esac; done
    case "$asa" in -) ;; */*) n=${asa%%(*}; [ "${n%%/*}" = "${n##*/}" ] || bad=FAIL ;; *) bad=FAIL ;; esac
    printf '%-9s %-10s %-24s %-16s %-10s %-10s %-10s %-8s %s\n' "$a" "$c" "$rec" "$pol" "$asa" "$asc" "$asct" "$can" "$bad" >> "$OUT_ROOT/$a.rows"
    printf '| %s | %s | %s | %s | %s | %s | %s | %s |%s\n' "$a" "$c" "$rec" "$pol" "$asa" "$asc" "$asct" "$can" "${bad:+ **FAIL** |}" >> "$OUT_ROOT/$a.md"
  done
}

# JOBS agents at a time (each waits mostly on its agent's start-up and the mock model)
JOBS="${JOBS:-3}"
for a in "${AGENTS[@]}"; do
  rm -f "$OUT_ROOT/$a.rows" "$OUT_ROOT/$a.md"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do sleep 1; done
  agent_rows "$a" &
done
wait
printf '%-9s %-10s %-24s %-16s %-10s %-10s %-10s %-8s\n' AGENT CLIENT RECORD POLICY AS-AGENT AS-CLIENT +TEXT CANCEL
for a in "${AGENTS[@]}"; do cat "$OUT_ROOT/$a.rows"; done
{
  echo '| agent | client | record | policy | as agent | as client | + text | cancel |'
  echo '|---|---|---|---|---|---|---|---|'
  for a in "${AGENTS[@]}"; do cat "$OUT_ROOT/$a.md"; done
} > "$OUT_ROOT/table.md"
fail=0; cat "$OUT_ROOT"/*.rows | grep -q 'FAIL$' && fail=1
echo "real-peers: $([ $fail -eq 0 ] && echo PASS || echo FAIL) (acptap $("$ACPTAP" --version | cut -d' ' -f2); details under $OUT_ROOT, the table as Markdown in $OUT_ROOT/table.md)"
exit $fail
