// acptap ui: every recorded string goes into the page as text (textContent), never as HTML.
const $ = (id) => document.getElementById(id);
let current = null;
let lines = [];

async function get(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  if (!response.ok) throw new Error(`${path}: ${response.status}`);
  return response.json();
}

function cell(row, text) {
  const td = document.createElement("td");
  td.textContent = text ?? "";
  row.appendChild(td);
}

async function showSessions() {
  const sessions = await get("/api/sessions");
  const filter = $("filter").value.toLowerCase();
  const body = $("session-rows");
  body.replaceChildren();
  for (const s of sessions) {
    if (filter && !`${s.agent} ${s.label ?? ""}`.toLowerCase().includes(filter)) continue;
    const row = document.createElement("tr");
    row.className = s.state;
    cell(row, s.session_id);
    cell(row, s.agent);
    cell(row, new Date(s.created_at / 1000).toISOString());
    cell(row, String(s.turns));
    cell(row, String(s.tool_calls));
    cell(row, s.state);
    row.addEventListener("click", () => openSession(s.session_id));
    body.appendChild(row);
  }
}

async function openSession(id) {
  current = id;
  lines = [];
  $("session").hidden = false;
  $("session-title").textContent = id;
  await loadMore();
}

async function loadMore() {
  if (!current) return;
  const from = lines.length ? lines[lines.length - 1].seq + 1 : 0;
  const page = await get(`/api/sessions/${encodeURIComponent(current)}/lines?from=${from}&limit=2000`);
  lines.push(...page.lines);
  renderLines();
}

function renderLines() {
  const direction = $("direction").value;
  const needle = $("search").value;
  const list = $("lines");
  list.replaceChildren();
  for (const line of lines) {
    if (direction && line.direction !== direction) continue;
    if (needle && !line.text.includes(needle)) continue;
    const item = document.createElement("li");
    item.className = line.direction;
    item.textContent = `${line.seq} ${line.direction} ${line.method ?? ""} ${line.text}`;
    list.appendChild(item);
  }
}

$("filter").addEventListener("input", showSessions);
$("direction").addEventListener("change", renderLines);
$("search").addEventListener("input", renderLines);
const events = new EventSource("/api/events");
events.addEventListener("changed", () => {
  $("status").textContent = "live";
  showSessions();
  loadMore();
});
showSessions();
