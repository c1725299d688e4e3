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
    // A tooltip is shown text too: its bidi controls are shown as the text's are.
    else if (key === "title") node.setAttribute(key, visible(String(value)));
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
    this.loading = new Map();
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

  /// Shows nothing (a tab without a list is open).
  clear() {
    this.source = null;
    this.element.dataset.list = "";
    this.generation += 1;
    this.pages.clear();
    this.loading.clear();
    this.total = 0;
    this.selected = null;
    this.space.style.height = "0px";
    this.space.replaceChildren();
    $("f-count").textContent = "";
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

  /// Fetches a page (once: a page on its way is waited for, not asked again).
  load(page) {
    if (this.pages.has(page)) return Promise.resolve();
    if (!this.loading.has(page)) this.loading.set(page, this.fetchPage(page));
    return this.loading.get(page);
  }

  /// Scrolls to row `index` and selects it once its page has arrived (a click on a waterfall's
  /// span jumps here).
  async reveal(index) {
    const generation = this.generation;
    this.element.scrollTop = Math.max(0, index * ROW_HEIGHT - this.element.clientHeight / 2);
    await this.load(Math.floor(index / PAGE));
    if (generation === this.generation) this.select(index);
  }

  async fetchPage(page) {
    await Promise.resolve();
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
      // The row of the list shown, whatever tab is being opened meanwhile.
      const row = this.renderRow(item, this.element.dataset.list);
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
    this.onSelect(item, this.element.dataset.list);
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

/// The lists' filters.
const FILTERS = ["f-status", "f-kind", "f-tool-text", "f-direction", "f-method", "f-text"];

let current = null; // {connection, session, tab, base}
const list = new VirtualList($("list"), renderRow, showDetail);

function query(params) {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value) search.set(key, value);
  return search.toString();
}

function sourceFor(tab) {
  const base = current.base;
  if (tab === "waterfall") return (offset, limit) => get(`${base}/waterfall/turns?${query({ offset, limit })}`);
  if (tab === "findings") {
    return async (offset, limit) => {
      if (findings.base !== base) await loadFindings();
      if (!findings.list.length && current?.base === base) {
        $("detail").replaceChildren(el("p", { class: "hint" }, `acptap check finds nothing wrong in this session's connection${findings.silenced ? ` (${findings.silenced} finding(s) of rules your config silences)` : ""}.`));
      }
      return { total: findings.list.length, items: findings.list.slice(offset, offset + limit) };
    };
  }
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
  // Latency and info are panels; every other tab a list and its detail.
  const panel = tab === "latency" || tab === "info";
  $("split").hidden = panel;
  $("panel").hidden = !panel;
  $("session-view").dataset.tab = tab;
  // Following the newest rows means something for the lists that grow as a session records.
  $("follow").parentElement.hidden = panel || tab === "findings";
  if (!same) {
    sessionAxis = null;
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
  const mine = current;
  await loadHead(!same);
  // Another page was opened while the head was read: it draws itself.
  if (current !== mine) return;
  // The findings mark the rows of every list. Checking a long connection takes a while (2 s for
  // 360,000 lines), so they are read once the list's first rows are in, and the rows drawn
  // again when they arrive.
  const markFindings = () => {
    if (!same) refreshFindings();
  };
  if (panel) {
    list.clear();
    markFindings();
    $("panel").replaceChildren(el("p", { class: "hint" }, "loading…"));
    await (tab === "latency" ? showLatency() : showInfo()).catch((error) => $("panel").replaceChildren(el("p", { class: "bad" }, String(error.message))));
    return;
  }
  // The rows are drawn without their bars until the session's axis arrives.
  if (tab === "waterfall" && !sessionAxis) loadAxis().then(() => list.render());
  list.show(sourceFor(tab), tab);
  list.load(0).finally(markFindings);
  if (pendingReveal !== null) {
    const index = pendingReveal;
    pendingReveal = null;
    list.reveal(index);
  }
}

async function loadHead(first) {
  const here = current;
  const head = await get(here.base);
  // Another page was opened meanwhile: this answer is not its.
  if (current !== here) return false;
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

function renderRow(item, tab) {
  switch (tab) {
    case "waterfall":
      return waterfallRow(item);
    case "findings":
      return findingRow(item);
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
        findingBadge(findingsOfTurn(item.index)),
      );
    case "tools":
      return el("div", { class: `tool-row${item.status === "failed" ? " bad" : ""}` },
        el("span", { class: "c-kind" }, item.kind ?? ""),
        el("span", { class: "c-text" }, item.title ?? item.tool_call_id),
        el("span", { class: "c-paths" }, item.paths.join(" ")),
        el("span", { class: statusClass(item.status) }, item.status ?? "pending"),
        el("span", { class: "c-dur" }, duration(item.duration_us)),
      );
    case "permissions":
      return el("div", { class: `perm-row${item.outcome === "error" ? " bad" : ""}` },
        el("span", { class: "c-time" }, time(item.requested_at).slice(11)),
        el("span", { class: "c-text" }, permissionLabel(item)),
        el("span", { class: `decision ${decisionClass(item)}` }, item.option_kind ?? item.outcome ?? "undecided"),
        el("span", { class: "c-who" }, decider(item)),
        el("span", { class: "c-dur" }, duration(item.decision_us)),
      );
    default:
      return el("div", { class: `line-row dir-${item.direction}${item.error ? " bad" : ""}` },
        el("span", { class: "c-index" }, item.seq),
        el("span", { class: "c-dir" }, { c2a: "→ agent", a2c: "← agent", stderr: "stderr" }[item.direction] ?? item.direction),
        el("span", { class: "c-method" }, item.method ?? item.kind),
        item.error ? el("span", { class: "c-error" }, "error") : null,
        findingBadge(findingsOfLine(item.seq)),
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

async function showDetail(item, tab) {
  const pane = $("detail");
  pane.replaceChildren(el("p", { class: "hint" }, "loading…"));
  try {
    const base = current.base;
    let body;
    switch (tab) {
      case "turns":
        body = turnDetail(await get(`${base}/turns/${item.index}`));
        break;
      case "tools":
        body = toolCallDetail(await get(`${base}/tools/${encodeURIComponent(item.tool_call_id)}`));
        break;
      case "permissions":
        body = permissionDetail(item);
        break;
      case "waterfall":
        body = turnWaterfall(await get(`${base}/waterfall/turns/${item.index}`));
        break;
      case "findings":
        body = await findingDetail(item);
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
    findingsOfLine(line.seq).map((f) => el("p", { class: `finding sev-${cssName(f.severity)}` }, el("code", {}, f.rule), ` (${f.severity}): `, f.message, " ",
      el("a", { href: f.spec, target: "_blank", rel: "noopener noreferrer" }, "spec"))),
    text(shown, "json"),
  );
}

// ---------------------------------------------------------------------------------------------
// Where the time went: the waterfall. A session's turns are rows drawn on one time axis (its
// idle stretches, when no turn ran for a second or more, drawn narrow); a selected turn shows
// each of its spans (the turn, the model's stretches, tool calls, permission requests, other
// requests) on the turn's own axis. Bars are SVG rects with the report's classes (report.css);
// labels and titles are text nodes.

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined && value !== null) node.setAttribute(key, String(value));
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(visible(String(child))));
  }
  return node;
}

/// A recorded state as a class name, as the report makes it (`state_class`): only `a-z`, digits,
/// `_` and `-` kept.
const cssName = (state) => String(state ?? "").replace(/[^a-z0-9_-]/g, "") || "other";
const LANE_NAMES = { turn: "turn", model: "model", tool_call: "tool", permission: "permission", request: "request" };
const WIDTH = 1000;

/// A time axis: µs since the epoch to a position, with idle stretches drawn narrow, and the
/// window in view (zoom and pan).
class TimeAxis {
  constructor(start, end, idle = []) {
    this.start = start;
    this.end = Math.max(end, start + 1);
    this.idle = idle;
    const idleTotal = idle.reduce((sum, i) => sum + (i.end_us - i.start_us), 0);
    // An idle stretch is drawn as long as a fiftieth of the active time (at least 1 ms).
    this.shown = Math.max(1000, (this.end - this.start - idleTotal) / 50);
    this.saved = [];
    let saved = 0;
    for (const i of idle) {
      this.saved.push(saved);
      saved += i.end_us - i.start_us - Math.min(this.shown, i.end_us - i.start_us);
    }
    this.length = Math.max(1, this.end - this.start - saved);
    this.view = [0, this.length];
  }

  /// Where `us` is on the axis, before the window.
  at(us) {
    let lo = 0;
    let hi = this.idle.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.idle[mid].start_us <= us) lo = mid + 1;
      else hi = mid;
    }
    const k = lo - 1;
    if (k < 0) return us - this.start;
    const i = this.idle[k];
    const length = i.end_us - i.start_us;
    const shown = Math.min(this.shown, length);
    const idleAt = i.start_us - this.start - this.saved[k];
    if (us < i.end_us) return idleAt + ((us - i.start_us) / length) * shown;
    return us - this.start - this.saved[k] - (length - shown);
  }

  /// Where `us` is in a drawing `WIDTH` wide showing the window.
  x(us) {
    return ((this.at(us) - this.view[0]) / (this.view[1] - this.view[0])) * WIDTH;
  }

  zoom(factor, centre = 0.5) {
    const [a, b] = this.view;
    const span = Math.max((b - a) * factor, 10);
    const mid = a + (b - a) * centre;
    this.view = [mid - span * centre, mid - span * centre + span];
    this.clamp();
  }

  pan(fraction) {
    const shift = (this.view[1] - this.view[0]) * fraction;
    this.view = [this.view[0] + shift, this.view[1] + shift];
    this.clamp();
  }

  clamp() {
    const span = Math.min(this.view[1] - this.view[0], this.length);
    const a = Math.min(Math.max(this.view[0], 0), this.length - span);
    this.view = [a, a + span];
  }

  fit() {
    this.view = [0, this.length];
  }
}

/// What a span's bar says when hovered.
function spanTitle(span, origin) {
  const end = span.end_us === null || span.end_us === undefined ? "never ended" : duration(span.end_us - span.start_us);
  const rule = span.rule ? ` (rule ${span.rule})` : "";
  return `${LANE_NAMES[span.lane] ?? span.lane}: ${span.label}: ${span.state}${rule}, ${end}, at +${duration(span.start_us - origin)}`;
}

/// A span's bar on `axis`, `y` and `height` in the drawing's units; `openUntil` ends an open one.
function spanBar(span, axis, y, height, openUntil, origin) {
  const open = span.end_us === null || span.end_us === undefined;
  const x0 = axis.x(span.start_us);
  const x1 = axis.x(open ? Math.max(openUntil, span.start_us) : span.end_us);
  const classes = ["wf-bar", `wf-${cssName(span.lane)}`, `wf-is-${cssName(span.state)}`];
  if (span.failed) classes.push("wf-failed");
  if (open) classes.push("wf-open");
  const attrs = { class: classes.join(" "), x: x0.toFixed(2), y, width: Math.max(x1 - x0, 1).toFixed(2), height };
  attrs["data-start-us"] = span.start_us;
  if (!open) attrs["data-end-us"] = span.end_us;
  return svg("rect", attrs, svg("title", {}, spanTitle(span, origin)));
}

// The session's axis (read when the tab opens) and the lanes' place in a turn's row.
let sessionAxis = null;
const ROW_LANES = { turn: [1, 18], model: [3, 3], tool_call: [7, 5], permission: [12, 4], request: [16, 3] };

function waterfallRow(item) {
  const axis = sessionAxis;
  const track = svg("svg", { class: "waterfall wf-track", viewBox: `0 0 ${WIDTH} 20`, preserveAspectRatio: "none" });
  if (axis) {
    for (const span of item.spans) {
      const [y, height] = ROW_LANES[span.lane] ?? [1, 18];
      const bar = spanBar(span, axis, y, height, item.end_us, item.start_us);
      if (span.lane !== "turn" && span.target) {
        bar.addEventListener("click", (event) => {
          event.stopPropagation();
          jump(span.target);
        });
      }
      track.append(bar);
    }
  }
  const failed = item.spans.some((s) => s.failed);
  return el("div", { class: `wf-row${failed ? " bad" : ""}` },
    el("span", { class: "c-index" }, `#${item.index}`),
    el("span", { class: "c-dur" }, duration(item.end_us - item.start_us)),
    track,
    findingBadge(findingsOfTurn(item.index)),
  );
}

/// The axis drawn above the rows: times at the window's edges and the idle stretches in view.
function drawAxisNote() {
  const axis = sessionAxis;
  if (!axis) return;
  const idle = axis.answer?.idle ?? axis.idle;
  const inView = idle.filter((i) => axis.x(i.end_us) > 0 && axis.x(i.start_us) < WIDTH).length;
  $("wf-legend").textContent = `${idle.length} idle stretch(es) ${$("wf-compress").checked ? "compressed" : "at their length"}${inView ? `, ${inView} in view` : ""}`;
}

async function loadAxis() {
  if (!current) return;
  const base = current.base;
  const answer = await get(`${base}/waterfall`);
  if (current?.base !== base) return;
  sessionAxis = new TimeAxis(answer.start_us, answer.end_us, $("wf-compress").checked ? answer.idle : []);
  sessionAxis.answer = answer;
  drawAxisNote();
}

function waterfallControl(action) {
  if (current?.tab !== "waterfall" || !sessionAxis) return;
  action(sessionAxis);
  drawAxisNote();
  list.render();
}

/// A turn's spans, one row each, on the turn's own axis; a click on a row jumps to its row.
function turnWaterfall(turn) {
  // A span recorded after the turn's answer (a late update) widens the axis rather than
  // leaving the picture.
  const axis = new TimeAxis(turn.start_us, Math.max(turn.end_us, ...turn.spans.map((s) => s.end_us ?? s.start_us)));
  const chart = el("div", { class: "wf-chart", tabindex: "0" });
  const draw = () => {
    const rows = turn.spans.map((span) => {
      const track = svg("svg", { class: "waterfall wf-track", viewBox: `0 0 ${WIDTH} 14`, preserveAspectRatio: "none" },
        spanBar(span, axis, 1, 12, turn.end_us, turn.start_us));
      const row = el("div", {
        class: `wf-span lane-${cssName(span.lane)}${span.failed ? " bad" : ""}${span.target ? " link" : ""}`,
        dataset: { lane: span.lane, start: span.start_us, end: span.end_us ?? "", target: span.target ? JSON.stringify(span.target) : "" },
        onclick: () => jump(span.target),
      },
        el("span", { class: "wf-lane" }, LANE_NAMES[span.lane] ?? span.lane),
        el("span", { class: "wf-label" }, span.label),
        el("span", { class: "wf-state" }, span.rule ? `${span.state}: ${span.rule}` : span.state),
        el("span", { class: "c-dur" }, span.end_us === null || span.end_us === undefined ? "open" : duration(span.end_us - span.start_us)),
        track,
      );
      return row;
    });
    chart.replaceChildren(el("div", { class: "wf-span wf-head" }, el("span", {}, "lane"), el("span", {}, "what"), el("span", {}, "state"), el("span", {}, "took"), ruler(axis, turn.start_us)), ...rows);
  };
  chart.addEventListener("wheel", (event) => {
    if (!event.ctrlKey && !event.shiftKey) return;
    event.preventDefault();
    if (event.ctrlKey) axis.zoom(event.deltaY > 0 ? 1.25 : 0.8);
    else axis.pan(event.deltaY > 0 ? 0.1 : -0.1);
    draw();
  });
  draw();
  const button = (label, title, action) => el("button", { type: "button", title, onclick: () => { action(); draw(); } }, label);
  const findings = findingsOfTurn(turn.index);
  return el("div", { class: "turn-waterfall", dataset: { turn: turn.index } },
    el("h3", {}, `Turn ${turn.index} `, el("span", { class: "dur" }, duration(turn.end_us - turn.start_us)), " ",
      button("−", "zoom out (or Ctrl + wheel)", () => axis.zoom(1.5)),
      button("+", "zoom in (or Ctrl + wheel)", () => axis.zoom(1 / 1.5)),
      button("fit", "the whole turn", () => axis.fit())),
    turn.cut ? el("p", { class: "warn" }, `${turn.cut} span(s) after the first 5,000 are not drawn`) : null,
    findings.length ? el("p", { class: "bad" }, `${findings.length} finding(s) of acptap check in this turn (Findings tab)`) : null,
    chart,
    el("p", { class: "hint" }, "A click on a row opens it in its list. Model: the turn's time when no tool call, permission request or other request was open (1 ms at least)."),
  );
}

/// Times at five places across the window, from `origin`.
function ruler(axis, origin) {
  const marks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const at = axis.view[0] + (axis.view[1] - axis.view[0]) * f;
    const mark = el("span", {}, `+${duration(Math.round(at))}`);
    mark.style.left = `${f * 100}%`;
    return mark;
  });
  return el("div", { class: "wf-ruler" }, marks);
}

/// Opens the row a span stands for: its tab, scrolled to it and selected.
async function jump(target) {
  if (!target || !current) return;
  let index;
  if (target.tab === "turns") {
    index = target.index - 1;
  } else {
    const where = new URLSearchParams({ tab: target.tab });
    if (target.tab === "tools") where.set("tool_call_id", target.tool_call_id);
    else where.set("seq", String(target.request_seq ?? target.seq));
    index = (await get(`${current.base}/locate?${where}`)).index;
    if (!current) return;
  }
  // The index is the unfiltered list's.
  for (const id of FILTERS) $(id).value = "";
  $("follow").checked = false;
  pendingReveal = index;
  const hash = `#/s/${current.connection}/${encodeURIComponent(current.session)}/${target.tab}`;
  if (location.hash === hash) route();
  else location.hash = hash;
}
let pendingReveal = null;

// ---------------------------------------------------------------------------------------------
// What went wrong: acptap check's findings (read once a session opens, again when it records),
// on the Findings tab and as a mark on the rows of the turns and lines they concern.

let findings = { base: null, list: [], bySeq: new Map(), byTurn: new Map() };
let findingsAsked = null; // {base, at} of the read on its way, if one is

/// Reads the findings again (not more than one read at a time, nor more often than every 2 s
/// while a session records), then marks the rows in view.
function refreshFindings() {
  // The page may have left the session (the first rows arrived after a click elsewhere).
  if (!current) return;
  const base = current.base;
  if (findingsAsked && findingsAsked.base === base && (findingsAsked.pending || Date.now() - findingsAsked.at < 2000)) return;
  findingsAsked = { base, at: Date.now(), pending: true };
  loadFindings()
    .catch(() => {})
    .finally(() => {
      if (findingsAsked?.base === base) findingsAsked.pending = false;
      if (current?.base === base && !$("split").hidden) list.render();
    });
}

async function loadFindings() {
  const base = current.base;
  const answer = await get(`${base}/findings`);
  if (current?.base !== base) return;
  const bySeq = new Map();
  const byTurn = new Map();
  for (const f of answer.findings) {
    if (!bySeq.has(f.seq)) bySeq.set(f.seq, []);
    bySeq.get(f.seq).push(f);
    // A finding's turn is its own session's (or, for a line that names none, this one's).
    if (f.turn !== null && f.turn !== undefined && (f.session_id === current.session || f.session_id === null)) {
      if (!byTurn.has(f.turn)) byTurn.set(f.turn, []);
      byTurn.get(f.turn).push(f);
    }
  }
  findings = { base, list: answer.findings, silenced: answer.silenced, bySeq, byTurn };
}

const findingsOfTurn = (index) => (findings.base === current?.base ? findings.byTurn.get(index) ?? [] : []);
const findingsOfLine = (seq) => (findings.base === current?.base ? findings.bySeq.get(seq) ?? [] : []);

/// A mark on a row: how many findings, the worst one's rule in its title.
function findingBadge(list) {
  if (!list.length) return null;
  const worst = list.find((f) => f.severity === "error") ?? list.find((f) => f.severity === "warning") ?? list[0];
  return el("span", { class: `c-finding sev-${cssName(worst.severity)}`, title: list.map((f) => `${f.rule}: ${f.message}`).join("\n") },
    `⚠ ${worst.rule}${list.length > 1 ? ` +${list.length - 1}` : ""}`);
}

function findingRow(f) {
  return el("div", { class: `finding-row sev-${cssName(f.severity)}` },
    el("span", { class: "c-sev" }, f.severity),
    el("span", { class: "c-rule" }, f.rule),
    el("span", { class: "c-index" }, `line ${f.seq}`),
    el("span", { class: "c-count" }, f.turn ? `turn ${f.turn}` : ""),
    el("span", { class: "c-text" }, f.message),
  );
}

async function findingDetail(f) {
  const line = await get(`${current.base}/lines/${f.seq}`);
  return el("div", { class: "finding" },
    el("h3", {}, el("span", { class: `sev-${cssName(f.severity)}` }, f.severity), " ", el("code", {}, f.rule)),
    el("p", {}, f.message),
    el("dl", { class: "meta" },
      ...field("rule", f.summary),
      ...field("spec", el("a", { href: f.spec, target: "_blank", rel: "noopener noreferrer" }, f.spec)),
      ...field("line", f.seq),
      ...field("turn", f.turn),
      ...field("direction", f.direction),
    ),
    lineDetail(line),
  );
}

// ---------------------------------------------------------------------------------------------
// Latency per method and per tool kind: what `acptap stats SESSION --by-method --json` prints.

const BOUNDS = ["<1 ms", "<10 ms", "<100 ms", "<1 s", "<10 s", "<60 s", "≥60 s"];

function histogram(counts) {
  const top = Math.max(1, ...counts);
  return svg("svg", { class: "histogram", viewBox: `0 0 ${counts.length * 8} 16`, preserveAspectRatio: "none" },
    counts.map((n, i) => svg("rect", { x: i * 8 + 1, y: 16 - (n / top) * 16, width: 6, height: (n / top) * 16 }, svg("title", {}, `${BOUNDS[i] ?? i}: ${n}`))));
}

const us = (value) =>
  value === null || value === undefined ? el("td", { class: "num" }, "–") : el("td", { class: "num", dataset: { us: value }, title: `${value} µs` }, duration(value));

function latencyTable(rows, first, name) {
  return el("table", { class: "sessions latency", id: name },
    el("thead", {}, el("tr", {}, ...[first, ...(name === "lat-methods" ? ["dir"] : []), "count", "failed", name === "lat-methods" ? "unanswered" : "unfinished", "p50", "p99", "max", "total", "distribution"].map((h) => el("th", {}, h)))),
    el("tbody", {}, rows.map((r) =>
      el("tr", { class: r.failed ? "bad" : "", dataset: { key: name === "lat-methods" ? `${r.method} ${r.direction}` : r.kind } },
        el("td", {}, name === "lat-methods" ? r.method : r.kind),
        name === "lat-methods" ? el("td", {}, { c2a: "→ agent", a2c: "← agent" }[r.direction] ?? r.direction) : null,
        el("td", { class: "num" }, r.count),
        el("td", { class: "num" }, r.failed),
        el("td", { class: "num" }, name === "lat-methods" ? r.unanswered : r.unfinished),
        us(r.p50_us), us(r.p99_us), us(r.max_us), us(r.total_us),
        el("td", {}, histogram(r.histogram)),
      ))),
  );
}

async function showLatency() {
  const base = current.base;
  const latency = await get(`${base}/latency`);
  if (current?.base !== base || current.tab !== "latency") return;
  $("panel").replaceChildren(
    el("p", { class: "hint" }, "Each request's time from the request to its response, by method and by who sent it; each tool call's from its first report to completed or failed. The failed first, then the slowest (p99). The same figures as ",
      el("code", {}, "acptap stats SESSION --by-method --json"), "."),
    el("h3", {}, "Requests"),
    latency.methods.length ? latencyTable(latency.methods, "method", "lat-methods") : el("p", { class: "hint" }, "No request was answered."),
    el("h3", {}, "Tool calls"),
    latency.tools.length ? latencyTable(latency.tools, "tool kind", "lat-tools") : el("p", { class: "hint" }, "No tool call ended."),
  );
}

// ---------------------------------------------------------------------------------------------
// Session info: who talked, which protocol version, what each side offered.

const valueText = (v) => (typeof v === "string" ? v : JSON.stringify(v));

function capabilityTable(caps, id) {
  return caps.length
    ? el("table", { class: "sessions caps", id }, el("tbody", {}, caps.map((c) => el("tr", { dataset: { path: c.path } }, el("td", {}, el("code", {}, c.path)), el("td", {}, valueText(c.value))))))
    : el("p", { class: "hint", id }, "none");
}

const nameAndVersion = (info) => (info ? [info.title ?? info.name ?? "?", info.version ? ` ${info.version}` : ""].join("") : "not said");

async function showInfo() {
  const base = current.base;
  const info = await get(`${base}/info`);
  if (current?.base !== base || current.tab !== "info") return;
  const modes = info.modes?.availableModes ?? info.modes?.available_modes ?? [];
  $("panel").replaceChildren(
    el("div", { class: "info-grid" },
      el("div", {},
        el("h3", {}, "Client"),
        el("dl", { class: "meta", id: "info-client" },
          ...field("name", nameAndVersion(info.client)),
          ...field("protocol offered", info.protocol.client_offered === null ? null : valueText(info.protocol.client_offered))),
        el("h3", {}, "Client capabilities"),
        capabilityTable(info.client_capabilities, "caps-client")),
      el("div", {},
        el("h3", {}, "Agent"),
        el("dl", { class: "meta", id: "info-agent" },
          ...field("name", nameAndVersion(info.agent)),
          ...field("protocol answered", info.protocol.agent_answered === null ? null : valueText(info.protocol.agent_answered))),
        el("h3", {}, "Agent capabilities"),
        capabilityTable(info.agent_capabilities, "caps-agent")),
    ),
    el("h3", {}, "Authentication methods"),
    info.auth_methods.length
      ? el("ul", { id: "info-auth" }, info.auth_methods.map((m) => el("li", {}, el("code", {}, valueText(m.id ?? "")), " ", m.name ?? "", m.description ? `: ${m.description}` : "")))
      : el("p", { class: "hint", id: "info-auth" }, "none"),
    el("h3", {}, "Modes"),
    modes.length
      ? el("ul", { id: "info-modes" }, modes.map((m) => el("li", { class: m.id === info.current_mode ? "chosen" : "" }, el("code", {}, valueText(m.id ?? "")), " ", m.name ?? "", m.description ? `: ${m.description}` : "", m.id === info.current_mode ? " (current)" : "")))
      : el("p", { class: "hint", id: "info-modes" }, "none advertised"),
    el("h3", {}, "Commands"),
    info.commands.length
      ? el("table", { class: "sessions", id: "info-commands" }, el("tbody", {}, info.commands.map((c) => el("tr", {}, el("td", {}, el("code", {}, `/${valueText(c.name ?? "")}`)), el("td", {}, c.description ?? "")))))
      : el("p", { class: "hint", id: "info-commands" }, "none advertised"),
    info.initialize_seq !== null && info.initialize_seq !== undefined
      ? el("p", { class: "hint" }, el("a", { href: "#", onclick: (event) => { event.preventDefault(); jump({ tab: "lines", seq: info.initialize_seq }); } }, "the initialize request"))
      : null,
  );
}

// ---------------------------------------------------------------------------------------------
// Two sessions compared: `acptap diff --json A B`, and their latency side by side.

async function loadDiff(a, b) {
  $("where").textContent = " › diff";
  sessions = await get("/api/sessions");
  const option = (s) => el("option", { value: `${s.connection_id}/${encodeURIComponent(s.session_id)}` }, `${s.session_id} · ${s.agent} · ${time(s.created_at)}`);
  for (const [id, chosen] of [["d-a", a], ["d-b", b]]) {
    $(id).replaceChildren(el("option", { value: "" }, "choose a session"), ...sessions.map(option));
    $(id).value = chosen ?? "";
  }
  if (!a || !b) {
    $("d-summary").textContent = "Choose two sessions.";
    $("d-body").replaceChildren();
    return;
  }
  const [ac, as] = a.split("/");
  const [bc, bs] = b.split("/");
  const where = new URLSearchParams({ a_connection: ac, a_session: decodeURIComponent(as), b_connection: bc, b_session: decodeURIComponent(bs) });
  let answer;
  $("d-summary").textContent = "comparing…";
  const asked = location.hash;
  try {
    answer = await get(`/api/diff?${where}`);
    // Another pair was chosen meanwhile: its answer is the one to show.
    if (location.hash !== asked) return;
  } catch (error) {
    if (location.hash !== asked) return;
    $("d-summary").textContent = visible(String(error.message));
    $("d-body").replaceChildren();
    return;
  }
  const d = answer.diff;
  $("d-summary").textContent = visible(d.same ? "The same conversation (acptap diff finds no difference)." : `${d.differences.length} difference(s)`);
  $("d-body").replaceChildren(
    el("table", { class: "sessions", id: "d-differences" },
      el("thead", {}, el("tr", {}, el("th", {}, "turn"), el("th", {}, "what"), el("th", {}, `A: ${d.a}`), el("th", {}, `B: ${d.b}`))),
      el("tbody", {}, d.differences.map((x) =>
        el("tr", {}, el("td", { class: "num" }, x.turn), el("td", {}, x.what), el("td", {}, text(json(x.a), "json")), el("td", {}, text(json(x.b), "json"))))),
    ),
    el("h3", {}, "Latency, A → B"),
    latencyDeltas(answer.latency.a.methods, answer.latency.b.methods, (r) => `${r.method} ${r.direction}`, "d-lat-methods"),
    latencyDeltas(answer.latency.a.tools, answer.latency.b.tools, (r) => r.kind, "d-lat-tools"),
  );
}

function latencyDeltas(a, b, key, id) {
  const keys = [...new Set([...a.map(key), ...b.map(key)])];
  const byKey = (rows) => new Map(rows.map((r) => [key(r), r]));
  const [ma, mb] = [byKey(a), byKey(b)];
  const delta = (x, y) => (x === undefined || y === undefined ? el("td", {}, "") : el("td", { class: `num ${y > x ? "bad" : y < x ? "ok" : ""}`, dataset: { us: y - x } }, `${y >= x ? "+" : "−"}${duration(Math.abs(y - x))}`));
  return el("table", { class: "sessions latency", id },
    el("thead", {}, el("tr", {}, ...[id === "d-lat-methods" ? "method" : "tool kind", "A count", "A p50", "A p99", "B count", "B p50", "B p99", "Δ p50", "Δ p99"].map((h) => el("th", {}, h)))),
    el("tbody", {}, keys.map((k) => {
      const [x, y] = [ma.get(k), mb.get(k)];
      const cell = (r, f) => (r ? us(r[f]) : el("td", {}, "–"));
      return el("tr", { dataset: { key: k } }, el("td", {}, k),
        el("td", { class: "num" }, x?.count ?? 0), cell(x, "p50_us"), cell(x, "p99_us"),
        el("td", { class: "num" }, y?.count ?? 0), cell(y, "p50_us"), cell(y, "p99_us"),
        delta(x?.p50_us, y?.p50_us), delta(x?.p99_us, y?.p99_us));
    })),
  );
}

for (const id of ["d-a", "d-b"]) {
  $(id).addEventListener("input", () => {
    const [a, b] = [$("d-a").value, $("d-b").value];
    location.hash = a && b ? `#/diff/${a}/${b}` : "#/diff";
  });
}
$("wf-in").addEventListener("click", () => waterfallControl((a) => a.zoom(1 / 1.5)));
$("wf-out").addEventListener("click", () => waterfallControl((a) => a.zoom(1.5)));
$("wf-left").addEventListener("click", () => waterfallControl((a) => a.pan(-0.25)));
$("wf-right").addEventListener("click", () => waterfallControl((a) => a.pan(0.25)));
$("wf-fit").addEventListener("click", () => waterfallControl((a) => a.fit()));
$("wf-compress").addEventListener("input", async () => {
  if (current?.tab !== "waterfall") return;
  await loadAxis();
  list.render();
});
$("list").addEventListener("wheel", (event) => {
  if (current?.tab !== "waterfall" || (!event.ctrlKey && !event.shiftKey)) return;
  event.preventDefault();
  // Zoom about the pointer: where it is across the track.
  const track = event.target.closest?.(".wf-track") ?? $("list").querySelector(".wf-track");
  const box = track?.getBoundingClientRect();
  const centre = box && box.width ? Math.min(1, Math.max(0, (event.clientX - box.left) / box.width)) : 0.5;
  waterfallControl((a) => (event.ctrlKey ? a.zoom(event.deltaY > 0 ? 1.25 : 0.8, centre) : a.pan(event.deltaY > 0 ? 0.1 : -0.1)));
}, { passive: false });

// ---------------------------------------------------------------------------------------------
// Routing (#/ and #/s/CONNECTION/SESSION/TAB) and live refresh.

async function route() {
  const match = location.hash.match(/^#\/s\/(\d+)\/([^/]+)\/(\w+)$/);
  const diff = location.hash.match(/^#\/diff(?:\/(\d+\/[^/]+)\/(\d+\/[^/]+))?$/);
  $("policy-view").hidden = true;
  $("diff-view").hidden = true;
  if (diff) {
    current = null;
    $("session-view").hidden = true;
    $("sessions-view").hidden = true;
    $("diff-view").hidden = false;
    await loadDiff(diff[1], diff[2]);
  } else if (match) {
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
for (const id of FILTERS) {
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
      // The page may leave the session while it reads: then nothing more is done here.
      const here = current;
      if ((await loadHead(false)) && current === here) {
        refreshFindings();
        if (here.tab === "waterfall") await loadAxis();
        if (current !== here) return;
        if (here.tab === "latency") await showLatency();
        else if (here.tab === "info") await showInfo();
        else list.refresh();
      }
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
