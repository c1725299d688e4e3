// acptap ui. Every recorded string goes into the page as a text node (`el` below), never as
// HTML: there is no innerHTML in this file. Text set without `el` (`textContent`) goes through
// `visible` as `el` does, so bidi controls show as ⟨U+202E⟩ everywhere.

const $ = (id) => document.getElementById(id);

/// An element with attributes and children; a string child becomes a text node.
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(visible(String(child))));
  }
  return node;
}

/// Text with its bidirectional controls shown as ⟨U+202E⟩: a recorded `‮gnp.exe` must not
/// read as `exe.png`.
const visible = (text) =>
  text.replace(/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/g, (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);

async function get(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`${response.status}: ${await response.text()}`);
  return response.json();
}

const time = (us) => (us ? new Date(us / 1000).toISOString().replace("T", " ").slice(0, 23) : "");
function duration(us) {
  if (us === null || us === undefined) return "";
  if (us < 1000) return `${us} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(1)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}
const statusClass = (s) => `status st-${["pending", "in_progress", "completed", "failed"].includes(s) ? s : "custom"}`;

// ---------------------------------------------------------------------------------------------
// A virtualised list: only the rows in view (and a few around) exist in the page; the rows are
// fetched a page at a time from an endpoint that answers {total, offset, items}.

const ROW_HEIGHT = 26;
const PAGE = 100;

class VirtualList {
  constructor(element, renderRow, onSelect) {
    this.element = element;
    this.space = element.querySelector(".vspace");
    this.renderRow = renderRow;
    this.onSelect = onSelect;
    this.pages = new Map();
    this.loading = new Set();
    this.total = 0;
    this.source = null;
    this.selected = null;
    this.generation = 0;
    element.addEventListener("scroll", () => {
      const atEnd = element.scrollTop + element.clientHeight >= element.scrollHeight - ROW_HEIGHT;
      if (!atEnd && this.following) $("follow").checked = false;
      this.render();
    });
    element.addEventListener("keydown", (event) => this.key(event));
  }

  get following() {
    return $("follow").checked;
  }

  /// Shows the list of `source(offset, limit)`, from its start; `name` says which (the tab).
  show(source, name) {
    this.source = source;
    this.element.dataset.list = name;
    this.generation += 1;
    this.pages.clear();
    this.loading.clear();
    this.total = 0;
    this.selected = null;
    this.element.scrollTop = 0;
    $("f-count").textContent = "";
    this.load(0);
  }

  /// Reads again what is in view (lines were recorded): the total grows, rows change state.
  refresh() {
    if (!this.source) return;
    this.generation += 1;
    this.pages.clear();
    this.loading.clear();
    const first = Math.floor(this.element.scrollTop / ROW_HEIGHT);
    const last = first + Math.ceil(this.element.clientHeight / ROW_HEIGHT);
    const wanted = new Set([Math.floor(first / PAGE), Math.floor(last / PAGE)]);
    if (this.following) wanted.add(Math.max(0, Math.floor((this.total - 1) / PAGE)));
    for (const page of wanted) this.load(page);
  }

  async load(page) {
    if (this.loading.has(page) || this.pages.has(page)) return;
    this.loading.add(page);
    this.element.setAttribute("aria-busy", "true");
    const generation = this.generation;
    try {
      const answer = await this.source(page * PAGE, PAGE);
      if (generation !== this.generation) return;
      this.pages.set(page, answer.items);
      const grew = answer.total !== this.total;
      this.total = answer.total;
      this.space.style.height = `${this.total * ROW_HEIGHT}px`;
      $("f-count").textContent = `${this.total.toLocaleString()} row(s)`;
      if (grew && this.following) {
        this.element.scrollTop = this.element.scrollHeight;
        const lastPage = Math.max(0, Math.floor((this.total - 1) / PAGE));
        if (!this.pages.has(lastPage)) this.load(lastPage);
      }
      this.render();
    } catch (error) {
      // The server's error may quote a recorded id.
      if (generation === this.generation) $("f-count").textContent = visible(String(error.message));
    } finally {
      this.loading.delete(page);
      // Tests (and assistive technology) wait for this: every page asked for has arrived.
      if (generation === this.generation && this.loading.size === 0) this.element.setAttribute("aria-busy", "false");
    }
  }

  item(index) {
    const page = this.pages.get(Math.floor(index / PAGE));
    return page ? page[index % PAGE] : undefined;
  }

  render() {
    const first = Math.max(0, Math.floor(this.element.scrollTop / ROW_HEIGHT) - 5);
    const last = Math.min(this.total, first + Math.ceil(this.element.clientHeight / ROW_HEIGHT) + 10);
    const rows = [];
    for (let index = first; index < last; index++) {
      const item = this.item(index);
      if (item === undefined) {
        this.load(Math.floor(index / PAGE));
        const placeholder = el("div", { class: "row loading" }, "…");
        // Positions are set through the CSSOM: the CSP refuses inline style attributes.
        placeholder.style.top = `${index * ROW_HEIGHT}px`;
        rows.push(placeholder);
        continue;
      }
      const row = this.renderRow(item);
      row.classList.add("row");
      if (index === this.selected) row.classList.add("selected");
      row.style.top = `${index * ROW_HEIGHT}px`;
      row.dataset.index = String(index);
      row.addEventListener("click", () => this.select(index));
      rows.push(row);
    }
    this.space.replaceChildren(...rows);
  }

  select(index) {
    const item = this.item(index);
    if (item === undefined) return;
    this.selected = index;
    this.render();
    this.onSelect(item);
  }

  key(event) {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    const next = Math.min(this.total - 1, Math.max(0, (this.selected ?? -1) + (event.key === "ArrowDown" ? 1 : -1)));
    const top = next * ROW_HEIGHT;
    if (top < this.element.scrollTop) this.element.scrollTop = top;
    if (top + ROW_HEIGHT > this.element.scrollTop + this.element.clientHeight) {
      this.element.scrollTop = top + ROW_HEIGHT - this.element.clientHeight;
    }
    this.select(next);
  }
}

// ---------------------------------------------------------------------------------------------
// The sessions page.

let sessions = [];

async function loadSessions() {
  sessions = await get("/api/sessions");
  renderSessions();
}

function renderSessions() {
  const needle = $("s-filter").value.toLowerCase();
  const since = Number($("s-since").value || 0);
  const state = $("s-state").value;
  const now = Date.now() * 1000;
  const rows = [];
  for (const s of sessions) {
    const words = `${s.agent} ${s.label ?? ""} ${s.session_id}`.toLowerCase();
    if (needle && !words.includes(needle)) continue;
    if (since && s.created_at < now - since * 1e6) continue;
    if (state && s.state !== state) continue;
    const href = `#/s/${s.connection_id}/${encodeURIComponent(s.session_id)}/turns`;
    rows.push(
      el("tr", { class: `state-${s.state}`, dataset: { session: s.session_id } },
        el("td", {}, el("a", { href }, s.session_id)),
        el("td", {}, s.agent),
        el("td", {}, s.label ?? ""),
        el("td", {}, time(s.created_at)),
        el("td", { class: "num" }, s.turns),
        el("td", { class: "num" }, s.tool_calls),
        el("td", { class: "num" }, s.permission_requests),
        el("td", { class: "state" }, s.state === "live" ? "● live" : s.state),
      ),
    );
  }
  $("session-rows").replaceChildren(...rows);
  $("s-count").textContent = `${rows.length} of ${sessions.length} session(s)`;
}

// ---------------------------------------------------------------------------------------------
// One session: its head, downloads, and a list per tab with a detail pane.

let current = null; // {connection, session, tab, base}
const list = new VirtualList($("list"), renderRow, showDetail);

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) search.set(key, value);
  return search.toString();
}

function sourceFor(tab) {
  const base = current.base;
  return (offset, limit) => {
    const filters =
      tab === "tools"
        ? { status: $("f-status").value, kind: $("f-kind").value, q: $("f-tool-text").value }
        : tab === "lines"
          ? { direction: $("f-direction").value, method: $("f-method").value, q: $("f-text").value }
          : {};
    return get(`${base}/${tab}?${query({ offset, limit, ...filters })}`);
  };
}

async function openSession(connection, session, tab) {
  const base = `/api/sessions/${connection}/${encodeURIComponent(session)}`;
  const same = current && current.base === base;
  current = { connection, session, tab, base };
  $("sessions-view").hidden = true;
  $("session-view").hidden = false;
  for (const a of document.querySelectorAll("#tabs a")) {
    a.href = `#/s/${connection}/${encodeURIComponent(session)}/${a.dataset.tab}`;
    a.classList.toggle("active", a.dataset.tab === tab);
  }
  for (const span of document.querySelectorAll("#filters [data-for]")) span.hidden = span.dataset.for !== tab;
  if (!same) {
    $("session-head").replaceChildren();
    $("detail").replaceChildren(el("p", { class: "hint" }, "Select a row."));
    // What came before the first turn (a resume or load and the history it replayed) is shown
    // until a row is selected.
    get(`${base}/opening`).then((opening) => {
      if (current?.base !== base || !opening.items.length || $("detail").querySelector(":not(.hint)")) return;
      $("detail").replaceChildren(
        el("p", { class: "hint" }, "Select a row."),
        el("div", { class: "turn opening" }, el("h3", {}, "Before the first turn"), el("div", { class: "items" }, opening.items.map(itemDetail))),
      );
    });
  }
  $("list").setAttribute("aria-busy", "true");
  await loadHead(!same);
  list.show(sourceFor(tab), tab);
}

async function loadHead(first) {
  const head = await get(current.base);
  const s = head.session;
  const changed = current.lines !== head.lines || current.state !== s.state;
  current.lines = head.lines;
  current.state = s.state;
  if (!changed && !first) return false;
  $("where").textContent = visible(` › ${s.session_id}`);
  const pair = (name, value) => [el("dt", {}, name), el("dd", {}, value)];
  $("session-head").replaceChildren(
    ...pair("session", s.session_id),
    ...pair("agent", s.agent),
    ...(head.protocol ? pair("protocol", head.protocol) : []),
    ...pair("cwd", s.cwd ?? "?"),
    ...pair("started", `${time(s.created_at)} UTC`),
    ...pair("state", s.state === "live" ? "● live" : `${s.state}${s.exit_code !== null ? `, exit ${s.exit_code}` : ""}${s.complete || s.state !== "ended" ? "" : `, INCOMPLETE: ${s.lost_messages} line(s) not recorded`}`),
    ...pair("recorded", `${s.turns} turn(s), ${s.tool_calls} tool call(s), ${s.permission_requests} permission request(s), ${head.lines} line(s)`),
    ...(s.label ? pair("label", s.label) : []),
  );
  $("top").classList.toggle("live", s.state === "live");
  if (first) {
    $("follow").checked = s.state === "live";
    // The filters offer what this session has (a custom tool kind included).
    get(`${current.base}/facets`).then((facets) => {
      const choices = (id, any, values) =>
        $(id).replaceChildren(el("option", { value: "" }, any), ...values.map(([value, label]) => el("option", { value }, label)));
      choices("f-method", "any method", facets.methods.map(([method, count]) => [method, `${method} (${count})`]));
      choices("f-kind", "any kind", facets.kinds.map((kind) => [kind, kind]));
      choices("f-status", "any status", facets.statuses.map((status) => [status, status]));
    });
    const download = (file, label, extra = "") => el("a", { href: `${current.base}/download/${file}${extra}`, download: "" }, label);
    // The report is paged like `acptap report` (1,000 turns a file): one link, and a choice of
    // page when there is more than one.
    const report = download("report.html", "HTML report", "?page=1");
    const pages = [];
    for (let page = 1; page <= head.report_pages && head.report_pages > 1; page++) {
      const first = (page - 1) * 1000 + 1;
      pages.push(el("option", { value: page }, `turns ${first}–${Math.min(page * 1000, s.turns)}`));
    }
    const choice = pages.length
      ? el("select", { id: "report-page", title: "which turns the report holds", oninput: (event) => {
          report.href = `${current.base}/download/report.html?page=${event.target.value}`;
        } }, pages)
      : null;
    $("downloads").replaceChildren(
      el("span", { class: "hint" }, "download: "),
      el("span", {}, report, choice ? " " : null, choice),
      download("transcript.jsonl", "transcript (JSONL)"),
      download("trace.ndjson", "trace (conductor NDJSON)"),
      download("otlp.json", "OpenTelemetry (OTLP/JSON)"),
    );
  }
  return true;
}

function renderRow(item) {
  switch (current.tab) {
    case "turns":
      return el("div", { class: `turn-row${item.error ? " bad" : ""}` },
        el("span", { class: "c-index" }, `#${item.index}`),
        el("span", { class: "c-time" }, time(item.started_at).slice(11)),
        el("span", { class: "c-text" }, item.prompt),
        el("span", { class: "c-count" }, item.tool_calls ? `${item.tool_calls} tool(s)` : ""),
        el("span", { class: "c-count bad" }, item.failed ? `${item.failed} failed` : ""),
        el("span", { class: "c-count" }, item.permissions ? `${item.permissions} perm.` : ""),
        el("span", { class: "c-stop" }, item.stop_reason ?? (item.error ? "error" : "…")),
        el("span", { class: "c-dur" }, duration(item.duration_us)),
      );
    case "tools":
      return el("div", { class: "tool-row" },
        el("span", { class: "c-kind" }, item.kind ?? ""),
        el("span", { class: "c-text" }, item.title ?? item.tool_call_id),
        el("span", { class: "c-paths" }, item.paths.join(" ")),
        el("span", { class: statusClass(item.status) }, item.status ?? "pending"),
        el("span", { class: "c-dur" }, duration(item.duration_us)),
      );
    case "permissions":
      return el("div", { class: "perm-row" },
        el("span", { class: "c-time" }, time(item.requested_at).slice(11)),
        el("span", { class: "c-text" }, permissionLabel(item)),
        el("span", { class: `decision ${decisionClass(item)}` }, item.option_kind ?? item.outcome ?? "undecided"),
        el("span", { class: "c-who" }, decider(item)),
        el("span", { class: "c-dur" }, duration(item.decision_us)),
      );
    default:
      return el("div", { class: `line-row dir-${item.direction}` },
        el("span", { class: "c-index" }, item.seq),
        el("span", { class: "c-dir" }, { c2a: "→ agent", a2c: "← agent", stderr: "stderr" }[item.direction] ?? item.direction),
        el("span", { class: "c-method" }, item.method ?? item.kind),
        el("span", { class: "c-text mono" }, item.preview),
      );
  }
}

/// What a permission request asks about: its own title (v2), else its tool call's.
const permissionLabel = (p) => p.title ?? p.tool_call_title ?? p.tool_call_id ?? "";
const decisionClass = (p) => (p.option_kind?.startsWith("allow") ? "allow" : p.option_kind?.startsWith("reject") ? "reject" : "");
function decider(p) {
  if (!p.decided_by) return p.outcome === "cancelled" ? "cancelled" : "waiting";
  return p.decided_by === "policy" ? `policy${p.policy_rule ? `: ${p.policy_rule}` : ""}` : p.decided_by;
}

// ---------------------------------------------------------------------------------------------
// The detail pane.

async function showDetail(item) {
  const pane = $("detail");
  pane.replaceChildren(el("p", { class: "hint" }, "loading…"));
  try {
    const base = current.base;
    let body;
    switch (current.tab) {
      case "turns":
        body = turnDetail(await get(`${base}/turns/${item.index}`));
        break;
      case "tools":
        body = toolCallDetail(await get(`${base}/tools/${encodeURIComponent(item.tool_call_id)}`));
        break;
      case "permissions":
        body = permissionDetail(item);
        break;
      default:
        body = lineDetail(await get(`${base}/lines/${item.seq}`));
    }
    pane.replaceChildren(body);
  } catch (error) {
    pane.replaceChildren(el("p", { class: "bad" }, String(error.message)));
  }
}

const text = (value, cls = "text") => el("pre", { class: cls }, value ?? "");
const json = (value) => JSON.stringify(value, null, 2);
const field = (name, value) => (value === null || value === undefined || value === "" ? [] : [el("dt", {}, name), el("dd", {}, value)]);

/// One item of a turn (or of what came before the first turn), as `show` has it.
function itemDetail(item) {
  switch (item.type) {
    case "agent_text":
      return el("div", { class: "row say" }, el("span", { class: "who" }, "agent"), text(item.text));
    case "thought":
      return el("div", { class: "row thought" }, el("span", { class: "who" }, "thought"), text(item.text));
    case "user_text":
      return el("div", { class: "row say" }, el("span", { class: "who" }, "user"), text(item.text));
    case "plan":
      return el("div", { class: "row plan" }, el("span", { class: "who" }, "plan"), el("ul", {}, item.entries.map((e) => el("li", {}, e))));
    case "state":
      return el("div", { class: "row state" }, el("span", { class: "who" }, "state"), item.state, item.stop_reason ? ` (${item.stop_reason})` : "");
    case "terminal":
      return el("div", { class: "row terminal" }, terminalDetail(item));
    case "tool_call":
      return el("div", { class: "row tool" }, toolCallDetail(item));
    case "permission":
      return el("div", { class: "row perm" }, permissionDetail(item));
    case "elicitation":
      return el("div", { class: "row elicitation" }, elicitationDetail(item));
    case "request":
      return el("div", { class: "row request" },
        el("span", { class: "who" }, item.from), el("code", {}, item.method), item.about ? `: ${item.about}` : "",
        item.answer ? ` → ${item.answer}` : "", " ", el("span", { class: "meta" }, `line ${item.seq}`));
    default:
      return el("div", { class: "row" }, text(json(item), "json"));
  }
}

/// A terminal's end: its exit code or signal, or that it still runs.
function terminalEnd(t) {
  if (t.exit_code !== null && t.exit_code !== undefined) return `exit ${t.exit_code}`;
  if (t.signal) return `signal ${t.signal}`;
  return t.exited ? "exited" : "running";
}

function terminalDetail(t) {
  return el("div", { class: "terminal", dataset: { terminal: t.terminal_id } },
    el("div", { class: "line" }, "terminal ", el("code", {}, t.terminal_id), ": ", el("strong", {}, t.command ?? "?"), " ",
      el("span", { class: statusClass(t.exit_code === 0 ? "completed" : t.exited ? "failed" : "in_progress") }, terminalEnd(t))),
    el("dl", { class: "meta" },
      ...field("cwd", t.cwd),
      ...field("output", `${t.output_bytes} byte(s)`),
    ),
    t.output ? el("details", { class: "payload" }, el("summary", {}, "output"), text(t.output, "json")) : null,
  );
}

function elicitationDetail(e) {
  const answer = e.action === null || e.action === undefined ? "no answer" : e.error ? `error: ${e.error}` : `${e.action} by ${e.answered_by ?? "?"}`;
  return el("div", { class: "elicitation" },
    el("div", { class: "line" }, `elicitation (${e.mode ?? "?"}) `, el("strong", {}, e.message), " → ",
      el("span", { class: `decision ${e.action === "accept" ? "allow" : e.action ? "reject" : ""}` }, answer)),
    el("dl", { class: "meta" },
      ...field("url", e.url),
      ...field("completed", e.completed ? "yes" : null),
      ...field("tool call", e.tool_call_id),
      ...field("line", e.seq),
    ),
    e.content ? el("details", { class: "payload" }, el("summary", {}, "accepted"), text(json(e.content), "json")) : null,
  );
}

function turnDetail(turn) {
  const items = turn.items.map(itemDetail);
  return el("div", { class: "turn" },
    el("h3", {}, `Turn ${turn.index} `, el("span", { class: "stop" }, turn.stop_reason ?? (turn.error ? "error" : "unfinished")), " ", el("span", { class: "dur" }, duration(turn.duration_us)), turn.cancel_requested ? el("span", { class: "warn" }, " · cancel requested") : null),
    el("div", { class: "row prompt" }, el("span", { class: "who" }, "prompt"), text(turn.prompt)),
    turn.error ? el("div", { class: "row error" }, el("span", { class: "who" }, "error"), text(turn.error)) : null,
    el("div", { class: "items" }, items),
  );
}

function toolCallDetail(call) {
  const others = (call.content ?? []).filter((c) => c.type !== "diff");
  return el("div", { class: "tool-call", dataset: { toolCall: call.tool_call_id } },
    el("div", { class: "line" },
      el("span", { class: "kind" }, call.kind ?? ""), " ",
      el("strong", {}, call.title ?? call.tool_call_id), " ",
      el("span", { class: statusClass(call.status) }, call.status ?? "pending"), " ",
      el("span", { class: "dur" }, duration(call.duration_us)),
    ),
    el("dl", { class: "meta" },
      ...field("id", call.tool_call_id),
      ...field("paths", (call.locations ?? []).map((l) => l.path).filter(Boolean).join(", ")),
      ...field("updates", call.update_count),
      ...field("first seen", time(call.first_seen_at)),
    ),
    (call.diffs ?? []).map(diffTable),
    others.length ? el("details", { class: "payload" }, el("summary", {}, "content"), text(json(others), "json")) : null,
    call.raw_input !== null && call.raw_input !== undefined ? el("details", { class: "payload" }, el("summary", {}, "arguments (rawInput)"), text(json(call.raw_input), "json")) : null,
    call.raw_output !== null && call.raw_output !== undefined ? el("details", { class: "payload" }, el("summary", {}, "result (rawOutput)"), text(json(call.raw_output), "json")) : null,
    (call.permissions ?? []).map(permissionDetail),
  );
}

/// A diff as the report shows it: old and new line numbers, sign, text; folded runs.
function diffTable(d) {
  const rows = d.rows.map((row) =>
    row.row === "fold"
      ? el("tr", { class: "fold" }, el("td", { class: "ln" }), el("td", { class: "ln" }), el("td", { class: "sign" }), el("td", { class: "code" }, `⋯ ${row.count} unchanged line(s)`))
      : el("tr", { class: row.class }, el("td", { class: "ln" }, row.old ?? ""), el("td", { class: "ln" }, row.new ?? ""), el("td", { class: "sign" }, row.sign), el("td", { class: "code" }, row.text)),
  );
  return el("details", { class: "diff", open: d.open },
    el("summary", {}, "diff ", el("code", {}, d.path), d.new_file ? " (new file)" : "", " ", el("span", { class: "del" }, `−${d.removed}`), " ", el("span", { class: "add" }, `+${d.added}`)),
    el("table", { class: "diff" }, el("tbody", {}, rows)),
  );
}

function permissionDetail(p) {
  const options = (p.options ?? []).map((o) =>
    el("li", { class: o.optionId === p.option_id ? "chosen" : "" }, o.name ?? o.optionId, " ", el("span", { class: "okind" }, o.kind ?? "")),
  );
  return el("div", { class: "permission" },
    el("div", { class: "line" }, "permission ", el("strong", {}, permissionLabel(p)), " → ", el("span", { class: `decision ${decisionClass(p)}` }, p.option_kind ?? p.outcome ?? "undecided")),
    p.description ? el("p", { class: "meta" }, p.description) : null,
    options.length ? el("ul", { class: "options" }, options) : null,
    el("dl", { class: "meta" },
      ...field("subject", p.subject_summary),
      ...field("tool call", p.title ? (p.tool_call_title ?? p.tool_call_id) : null),
      ...field("decided by", decider(p)),
      ...field("rule", p.policy_rule),
      ...field("policy said", p.policy_decision ? `${p.policy_decision}${p.policy_shadow ? " (shadow: not applied)" : ""}` : null),
      ...field("why", p.policy_reason),
      ...field("policy hash", p.policy_hash),
      ...field("waited", duration(p.decision_us)),
      ...field("asked", time(p.requested_at)),
      ...field("line", p.request_seq),
    ),
  );
}

function lineDetail(line) {
  let shown = line.text;
  try {
    shown = json(JSON.parse(line.text));
  } catch {
    // not JSON: shown as it is
  }
  return el("div", { class: "line-detail" },
    el("dl", { class: "meta" },
      ...field("seq", line.seq),
      ...field("direction", line.direction),
      ...field("kind", line.kind),
      ...field("method", line.method),
      ...field("id", line.rpc_id),
      ...field("answers line", line.reply_to_seq),
      ...field("time", time(line.ts)),
      ...field("size", `${line.size} bytes${line.truncated ? " (truncated in the recording)" : ""}${line.cut ? " (cut at 1 MiB here)" : ""}`),
      ...field("line ending", line.line_ending ? "\\n" : "none (the stream ended without one)"),
      ...field("origin", line.origin),
    ),
    text(shown, "json"),
  );
}

// ---------------------------------------------------------------------------------------------
// Routing (#/ and #/s/CONNECTION/SESSION/TAB) and live refresh.

async function route() {
  const match = location.hash.match(/^#\/s\/(\d+)\/([^/]+)\/(\w+)$/);
  $("policy-view").hidden = true;
  if (match) {
    await openSession(Number(match[1]), decodeURIComponent(match[2]), match[3]);
  } else if (location.hash === "#/policy") {
    current = null;
    $("where").textContent = " › suggested policy";
    $("session-view").hidden = true;
    $("sessions-view").hidden = true;
    $("policy-view").hidden = false;
    await loadPolicy();
  } else {
    current = null;
    $("where").textContent = "";
    $("session-view").hidden = true;
    $("sessions-view").hidden = false;
    await loadSessions();
  }
}

// ---------------------------------------------------------------------------------------------
// The suggested policy: its rules with their evidence, the conflicts, what stays asked, the file.

function policyQuery() {
  const query = new URLSearchParams({ min_evidence: $("p-min").value });
  if ($("p-agent").value) query.set("agent", $("p-agent").value);
  return query.toString();
}

async function loadPolicy() {
  const query = policyQuery();
  const s = await get(`/api/policy/suggest?${query}`);
  $("p-download").href = `/api/policy/suggest/download?${query}`;
  const c = s.coverage;
  $("p-coverage").textContent = visible(
    `${s.rules.length} rule(s): it answers ${c.allowed} of your ${c.user_allows} allows, and none of your ${c.user_refusals} rejections or cancellations`,
  );
  const day = (us) => time(us).slice(0, 10);
  $("p-rules").tBodies[0].replaceChildren(
    ...s.rules.map((r) =>
      el("tr", { dataset: { rule: r.id } },
        el("td", {}, el("code", {}, r.id)),
        el("td", {}, describe(r.shape)),
        el("td", {}, r.evidence.allow_once),
        el("td", {}, r.evidence.allow_always),
        el("td", {}, r.evidence.sessions),
        el("td", { title: r.evidence.first_session }, day(r.evidence.first_at)),
        el("td", { title: r.evidence.last_session }, day(r.evidence.last_at)),
        el("td", {}, r.evidence.example),
      ),
    ),
  );
  $("p-conflicts").tBodies[0].replaceChildren(
    ...s.conflicts.map((k) =>
      el("tr", {},
        el("td", {}, describe(k.shape)),
        el("td", {}, k.evidence.allow_once + k.evidence.allow_always),
        el("td", {}, k.evidence.rejected),
        el("td", {}, k.evidence.cancelled),
        el("td", {}, k.evidence.example),
      ),
    ),
  );
  $("p-left").tBodies[0].replaceChildren(
    ...s.left_to_user.map((l) => el("tr", {}, el("td", {}, l.count), el("td", {}, l.why), el("td", {}, l.example))),
  );
  $("p-text").textContent = visible(s.policy);
}

/// A rule's shape in words, as the command line's report says it.
function describe(shape) {
  if (shape.type === "commands") return shape.prefixes.map((p) => `\`${p.join(" ")}\``).join(" + ");
  if (shape.type === "looks") return `${shape.kind} inside the project`;
  if (shape.dir === "") return `${shape.kind} of a file in the project's top directory`;
  return `${shape.kind} in ${shape.dir}/`;
}

for (const id of ["s-filter", "s-since", "s-state"]) $(id).addEventListener("input", renderSessions);
for (const id of ["p-min", "p-agent"]) $(id).addEventListener("input", loadPolicy);
for (const id of ["f-status", "f-kind", "f-tool-text", "f-direction", "f-method", "f-text"]) {
  $(id).addEventListener("input", () => current && list.show(sourceFor(current.tab), current.tab));
}
$("follow").addEventListener("change", () => list.refresh());
window.addEventListener("hashchange", route);

let refreshing = false;
async function changed() {
  if (refreshing) return;
  refreshing = true;
  try {
    if (current) {
      // Another session's lines change nothing here.
      if (await loadHead(false)) list.refresh();
    } else if (!$("policy-view").hidden) {
      await loadPolicy();
    } else {
      await loadSessions();
    }
  } finally {
    refreshing = false;
  }
}

const events = new EventSource("/api/events");
events.addEventListener("changed", () => {
  $("status").textContent = "connected";
  changed();
});
events.addEventListener("error", () => {
  $("status").textContent = "disconnected: is acptap ui still running?";
});
// The token has set the cookie: out of the address bar, so it is not kept in the history or
// copied with the URL.
if (new URLSearchParams(location.search).has("token")) {
  history.replaceState(null, "", location.pathname + location.hash);
}
route();
