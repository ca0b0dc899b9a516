// The delayq dashboard: topics with live counts, a chart of throughput and
// lateness from the store's counts, jobs per topic and state, one job's details, and the actions
// an operator needs. Plain JavaScript against the /v1 API; no
// libraries, so it works with no internet access.
"use strict";

const STATES = ["ready", "delayed", "waiting", "reserved", "dead", "done"];
const $ = (sel) => document.querySelector(sel);
// `counts`: the chosen topic's jobs per state, for the state tabs.
// `limits`: every limited topic's limit, by topic; `limitTopic`: the topic
// whose limit the form edits; `cursors`: the cursors of the list's pages
// up to the one shown, `next`: the next page's ("" at the end); `selected`: the ids of the jobs checked in the list; `stats`: every
// topic's counts, by topic.
const state = { topic: null, jobState: "ready", timer: null, counts: {}, stats: new Map(),
  limits: new Map(),
  limitTopic: null, cursors: [""], next: "", selected: new Set() };

function token() { return localStorage.getItem("delayq-token") || ""; }

async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json" };
  if (token()) headers["Authorization"] = "Bearer " + token();
  const res = await fetch(path, { ...options, headers });
  if (res.status === 401) {
    const t = prompt("This delayq server needs its bearer token:");
    if (t) { localStorage.setItem("delayq-token", t.trim()); return api(path, options); }
  }
  const text = await res.text();
  const body = (res.headers.get("Content-Type") || "").startsWith("application/json")
    ? JSON.parse(text) : text;
  if (!res.ok) throw new Error(body.message || ("HTTP " + res.status));
  return body;
}

const post = (path, body = {}) => api(path, { method: "POST", body: JSON.stringify(body) });
const put = (path, body) => api(path, { method: "PUT", body: JSON.stringify(body) });
const del = (path) => api(path, { method: "DELETE" });

// A topic, job id or schedule name as one segment of a path. The browser
// resolves a segment "." or ".." (even written %2E) before it sends the
// request, so such a name cannot be reached from a page: say so.
function part(name) {
  if (name === "." || name === "..") {
    throw new Error("'" + name + "' cannot be used in a URL from a browser; " +
      "use the command line or the API");
  }
  return encodeURIComponent(name);
}

// A form's number field into the body: left out when empty, a number when it
// is a whole number, else the text as typed, for the server to say what is
// wrong with it.
function numberField(body, name, text) {
  const t = text.trim();
  if (t === "") return;
  body[name] = /^-?[0-9]+$/.test(t) && Number.isSafeInteger(Number(t)) ? Number(t) : t;
}

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "data") Object.assign(e.dataset, v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : String(c));
  return e;
}

function toast(text, bad) {
  const t = $("#toast");
  t.textContent = text;
  t.style.background = bad ? "#d64545" : "#141a2a";
  t.hidden = false;
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => { t.hidden = true; }, 3000);
}

async function act(label, fn) {
  try { await fn(); toast(label); } catch (e) { toast(e.message, true); }
  await refresh();
}

function relative(iso) {
  const ms = Date.parse(iso) - Date.now();
  const a = Math.abs(ms);
  const text = a < 1000 ? a + "ms" : a < 60e3 ? (a / 1e3).toFixed(1) + "s"
    : a < 3600e3 ? Math.round(a / 60e3) + "m" : (a / 3600e3).toFixed(1) + "h";
  return ms > 0 ? "in " + text : text + " ago";
}

function preview(job) {
  if (job.payload !== undefined) {
    const p = job.payload.replace(/\s+/g, " ");
    return p.length > 80 ? p.slice(0, 80) + "…" : p;
  }
  return "(" + Math.floor(job.payload_base64.length * 3 / 4) + " bytes, binary)";
}

// --- Topics -----------------------------------------------------------------

// `limits`: the limited topics' limits, by topic.
function renderTopics(topics, limits) {
  const body = $("#topics tbody");
  body.replaceChildren();
  state.stats = new Map();
  $("#no-topics").hidden = topics.length > 0;
  for (const t of topics) {
    const topicPath = () => "/v1/topics/" + part(t.topic);
    const name = el("td", {}, t.topic);
    if (t.paused) name.append(el("span", { class: "badge" }, "paused"));
    const limit = limits.get(t.topic);
    if (limit) {
      name.append(el("span", { class: "badge limit", title: "topic limit" }, limit.text));
    }
    state.stats.set(t.topic, t);
    if (t.topic === state.topic) state.counts = t;
    const row = el("tr", { data: { topic: t.topic } }, name);
    for (const s of ["delayed", "ready", "waiting", "reserved", "dead", "done"]) {
      const cell = el("td", { class: "n " + s + (s === "dead" && t.dead > 0 ? " hot" : "") },
        el("a", { href: "#", onclick: (e) => { e.preventDefault(); openJobs(t.topic, s); } },
          t[s]));
      row.append(cell);
    }
    const actions = el("td", { class: "n" });
    if (t.dead > 0) {
      actions.append(el("button", { data: { action: "kick", topic: t.topic },
        onclick: () => act("kicked " + t.dead + " dead job(s) of " + t.topic,
          () => post(topicPath() + "/kick")) }, "kick dead"));
      actions.append(el("button", { class: "danger", data: { action: "purge", topic: t.topic },
        onclick: () => confirm("Delete the " + t.dead + " dead job(s) of " + t.topic + "?") &&
          act("purged the dead jobs of " + t.topic,
            () => post(topicPath() + "/purge", { state: "dead" })) }, "purge dead"));
    }
    actions.append(el("button", { data: { action: "limit", topic: t.topic },
      onclick: () => openLimit(t.topic) }, "limit"));
    const verb = t.paused ? "resume" : "pause";
    actions.append(el("button", { data: { action: verb, topic: t.topic },
      onclick: () => act(verb + "d " + t.topic, () => post(topicPath() + "/" + verb)) }, verb));
    row.append(actions);
    body.append(row);
  }
}

// --- A topic's limit ----------------------------------------------------------

// The form lives outside the topics table, so a refresh leaves what the
// operator typed alone.
function openLimit(topic) {
  const limit = state.limits.get(topic);
  const f = $("#limit-form").elements;
  state.limitTopic = topic;
  $("#limit-topic").textContent = topic;
  f.rate.value = limit ? limit.rate : "";
  f.burst.value = limit ? limit.burst : "";
  f.concurrency.value = limit ? limit.concurrency : "";
  const period = String(limit ? limit.period_ms : 1000);
  const select = f.period_ms;
  select.querySelectorAll("option[data-custom]").forEach((o) => o.remove());
  if (![...select.options].some((o) => o.value === period)) {
    select.append(el("option", { value: period, data: { custom: "" } }, period + " ms"));
  }
  select.value = period;
  $("#limit-clear").hidden = !limit;
  showError("#limit-error", null);
  $("#limit-card").hidden = false;
  f.rate.focus();
}

function showError(sel, message) {
  $(sel).textContent = message || "";
  $(sel).hidden = !message;
}

// Runs one change a form asked for: on success closes the form's card and
// refreshes; on failure leaves the form as typed and shows the server's word.
async function submit(card, errorSel, label, fn) {
  try {
    await fn();
  } catch (e) {
    showError(errorSel, e.message);
    return;
  }
  $(card).hidden = true;
  toast(label);
  await refresh();
}

$("#limit-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const topic = state.limitTopic;
  const f = e.target.elements;
  const body = {};
  numberField(body, "rate", f.rate.value);
  numberField(body, "period_ms", f.period_ms.value);
  numberField(body, "burst", f.burst.value);
  numberField(body, "concurrency", f.concurrency.value);
  submit("#limit-card", "#limit-error", "limited " + topic,
    () => put("/v1/topics/" + part(topic) + "/limit", body));
});
$("#limit-clear").addEventListener("click", () => {
  const topic = state.limitTopic;
  if (!confirm("Remove the limit of " + topic + "?")) return;
  submit("#limit-card", "#limit-error", "cleared the limit of " + topic,
    () => del("/v1/topics/" + part(topic) + "/limit"));
});
$("#limit-close").addEventListener("click", () => { $("#limit-card").hidden = true; });

// --- Schedules ----------------------------------------------------------------

function renderSchedules(schedules) {
  $("#no-schedules").hidden = schedules.length > 0;
  $("#schedules").hidden = schedules.length === 0;
  const body = $("#schedules tbody");
  body.replaceChildren();
  for (const s of schedules) {
    const spec = s.spec + (s.time_zone !== "UTC" ? " (" + s.time_zone + ")" : "");
    const next = s.next_run ? s.next_run + " (" + relative(s.next_run) + ")" : "never";
    body.append(el("tr", { data: { schedule: s.name } },
      el("td", { class: "mono" }, s.name), el("td", { class: "mono" }, spec),
      el("td", {}, s.topic), el("td", {}, next), el("td", {}, s.missed),
      el("td", { class: "n" },
        el("button", { data: { action: "edit-schedule", schedule: s.name },
          onclick: () => openSchedule(s) }, "edit"),
        el("button", { class: "danger", data: { action: "unschedule", schedule: s.name },
          onclick: () => confirm("Delete schedule " + s.name + "? Its jobs stay.") &&
            act("deleted schedule " + s.name,
              () => del("/v1/schedules/" + part(s.name))) }, "delete"))));
  }
}

const SCHEDULE_TEXT = ["name", "spec", "time_zone", "topic", "missed", "backoff"];
const SCHEDULE_NUMBERS = ["jitter_ms", "priority", "ttr_ms", "max_attempts"];

// The form for a new schedule (no `s`) or for `s` as stored. A binary
// payload cannot be typed: it is kept as it is.
function openSchedule(s) {
  const f = $("#schedule-form").elements;
  for (const k of [...SCHEDULE_TEXT, ...SCHEDULE_NUMBERS]) {
    f[k].value = s && s[k] !== undefined ? s[k] : "";
  }
  if (!s) f.time_zone.value = "UTC";
  f.name.readOnly = !!s;
  state.binaryPayload = s ? s.payload_base64 : undefined;
  f.payload.value = s && s.payload !== undefined ? s.payload : "";
  f.payload.disabled = state.binaryPayload !== undefined;
  if (state.binaryPayload !== undefined) f.payload.value = "(binary payload, kept as it is)";
  $("#schedule-title").textContent = s ? "Schedule " + s.name : "New schedule";
  showError("#schedule-error", null);
  $("#schedule-card").hidden = false;
  (s ? f.spec : f.name).focus();
}

$("#schedule-form").addEventListener("submit", (e) => {
  e.preventDefault();
  const f = e.target.elements;
  const name = f.name.value.trim();
  const body = {};
  for (const k of SCHEDULE_TEXT) {
    if (k !== "name" && f[k].value.trim() !== "") body[k] = f[k].value.trim();
  }
  for (const k of SCHEDULE_NUMBERS) numberField(body, k, f[k].value);
  if (state.binaryPayload !== undefined) body.payload_base64 = state.binaryPayload;
  else body.payload = f.payload.value;
  submit("#schedule-card", "#schedule-error", "saved schedule " + name, () => {
    if (!name) throw new Error("a schedule needs a name");
    return put("/v1/schedules/" + part(name), body);
  });
});
$("#schedule-add").addEventListener("click", () => openSchedule(null));
$("#schedule-close").addEventListener("click", () => { $("#schedule-card").hidden = true; });

// --- Jobs of a topic --------------------------------------------------------

// A list shows one page of PAGE_SIZE jobs. `cursors` holds the cursor of
// every page from the first to the one shown (the first's is ""), so
// "previous" goes back the way it came and a refresh reloads the same page.
const PAGE_SIZE = 100;

function openJobs(topic, jobState) {
  if (topic !== state.topic || jobState !== state.jobState) {
    state.cursors = [""];
    state.selected.clear();
    showSummary(null);
  }
  state.topic = topic;
  state.jobState = jobState;
  state.counts = state.stats.get(topic) || {};
  refreshJobs();
}

async function refreshJobs() {
  if (!state.topic) return;
  $("#jobs-card").hidden = false;
  $("#jobs-topic").textContent = state.topic;
  const nav = $("#states");
  nav.replaceChildren(...STATES.map((s) => el("button", {
    class: s === state.jobState ? "on" : "", data: { state: s },
    onclick: () => openJobs(state.topic, s) },
    s + (state.counts[s] !== undefined ? " " + state.counts[s] : ""))));
  const cursor = state.cursors[state.cursors.length - 1];
  const { jobs, next_cursor: next } = await api("/v1/topics/" + part(state.topic) +
    "/jobs?state=" + state.jobState + "&limit=" + PAGE_SIZE +
    (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
  state.next = next || "";
  // What is no longer listed is no longer selected: an action acts on
  // what the operator sees.
  const listed = new Set(jobs.map((j) => j.id));
  for (const id of [...state.selected]) if (!listed.has(id)) state.selected.delete(id);
  const body = $("#jobs tbody");
  body.replaceChildren();
  $("#no-jobs").hidden = jobs.length > 0;
  for (const job of jobs) {
    const jobPath = () => "/v1/jobs/" + part(job.id);
    // A store may not know when a job finished (finished_at null).
    const finished = job.finished_at ? " " + relative(job.finished_at) : "";
    const when = job.state === "reserved" ? "lease ends " + relative(job.deadline)
      : job.state === "dead" ? "died" + finished
      : job.state === "done" ? "done" + finished
      : job.state === "waiting" ? "waits for other jobs"
      : "due " + relative(job.run_at);
    const actions = el("td", { class: "n" });
    if (job.state === "dead") {
      actions.append(el("button", { data: { action: "retry", id: job.id },
        onclick: () => act("retrying " + job.id, () => post(jobPath() + "/retry")) },
        "retry"));
    }
    if (job.state === "delayed") {
      actions.append(el("button", { data: { action: "promote", id: job.id },
        onclick: () => act("running " + job.id + " now", () => post(jobPath() + "/promote")) },
        "run now"));
    }
    actions.append(el("button", { class: "danger", data: { action: "cancel", id: job.id },
      onclick: () => confirm("Cancel job " + job.id + "?") &&
        act("cancelled " + job.id, () => del(jobPath())) },
      "cancel"));
    const pick = el("input", { type: "checkbox", "aria-label": "select job " + job.id,
      onchange: (e) => { e.target.checked ? state.selected.add(job.id)
        : state.selected.delete(job.id); renderSelection(); } });
    pick.checked = state.selected.has(job.id);
    body.append(el("tr", { data: { id: job.id } },
      el("td", { class: "pick" }, pick),
      el("td", { class: "mono" }, el("a", { href: "#",
        onclick: (e) => { e.preventDefault(); showJob(job.id); } }, job.id)),
      el("td", {}, job.attempts + "/" + job.max_attempts),
      el("td", {}, when),
      el("td", { class: "mono" }, preview(job)),
      el("td", { class: "err" }, job.last_error || ""),
      actions));
  }
  const total = state.counts[state.jobState];
  const first = (state.cursors.length - 1) * PAGE_SIZE;
  $("#jobs-shown").textContent = jobs.length === 0 ? "" : "showing " +
    (first + 1) + " to " + (first + jobs.length) +
    (total !== undefined && total > jobs.length ? " of " + total : "");
  $("#next-page").hidden = !state.next;
  $("#previous-page").hidden = state.cursors.length <= 1;
  renderSelection();
}

// The select-all box and the bulk buttons, from the selection.
function renderSelection() {
  const boxes = [...document.querySelectorAll("#jobs tbody td.pick input")];
  const n = state.selected.size;
  const all = $("#select-all");
  all.checked = n > 0 && n === boxes.length;
  all.indeterminate = n > 0 && n < boxes.length;
  $("#selected-count").textContent = n ? n + " selected" : "";
  $("#bulk-retry").hidden = state.jobState !== "dead";
  $("#bulk-promote").hidden = state.jobState !== "delayed";
  for (const b of document.querySelectorAll("#bulk button")) b.disabled = n === 0;
}

$("#select-all").addEventListener("change", (e) => {
  for (const row of document.querySelectorAll("#jobs tbody tr")) {
    const box = row.querySelector("td.pick input");
    box.checked = e.target.checked;
    if (box.checked) state.selected.add(row.dataset.id);
    else state.selected.delete(row.dataset.id);
  }
  renderSelection();
});

$("#next-page").addEventListener("click", () => {
  if (!state.next) return;
  state.cursors.push(state.next);
  state.selected.clear();
  refreshJobs().catch((e) => toast(e.message, true));
});
$("#previous-page").addEventListener("click", () => {
  if (state.cursors.length > 1) state.cursors.pop();
  state.selected.clear();
  refreshJobs().catch((e) => toast(e.message, true));
});

// The bulk actions: what the confirmation asks, what the summary says, and
// the server's bulk route (POST /v1/bulk/ACTION with the ids).
const BULK = {
  retry: { ask: "Retry", did: "retried", route: "retry" },
  promote: { ask: "Run now", did: "ran now", route: "promote" },
  delete: { ask: "Delete", did: "deleted", route: "cancel" },
};
// The most ids one bulk request may carry.
const BULK_MAX = 10000;

// Sends the selected ids in one request (more only past BULK_MAX) and lists
// each one that failed with the server's reason.
async function bulk(action) {
  const spec = BULK[action];
  const ids = [...state.selected];
  if (ids.length === 0) return;
  if (!confirm(spec.ask + " the " + ids.length + " selected job(s) of " + state.topic + "?")) {
    return;
  }
  const failures = [];
  let done = 0;
  for (let i = 0; i < ids.length; i += BULK_MAX) {
    const chunk = ids.slice(i, i + BULK_MAX);
    try {
      const reply = await post("/v1/bulk/" + spec.route, { ids: chunk });
      done += reply.done;
      for (const e of reply.errors) failures.push([e.id, e.message]);
    } catch (e) {
      for (const id of chunk) failures.push([id, e.message]);
    }
  }
  state.selected.clear();
  showSummary(spec.did + " " + done + " of " + ids.length +
    " job(s)" + (failures.length ? "; " + failures.length + " failed:" : ""), failures);
  await refresh();
}

for (const action of Object.keys(BULK)) {
  $("#bulk-" + action).addEventListener("click", () => bulk(action));
}

// The last bulk action's outcome, until the next one or another list.
function showSummary(text, failures = []) {
  const box = $("#bulk-summary");
  box.hidden = !text;
  box.className = "summary" + (failures.length ? " bad" : "");
  box.dataset.failed = String(failures.length);
  $("#bulk-summary-text").textContent = text || "";
  $("#bulk-failures").replaceChildren(...failures.map(([id, message]) =>
    el("li", { data: { id } }, el("span", { class: "mono" }, id), ": ", message)));
}
$("#bulk-summary-close").addEventListener("click", () => showSummary(null));

// --- One job ------------------------------------------------------------------

async function showJob(id) {
  let job;
  try { job = await api("/v1/jobs/" + part(id)); }
  catch (e) { toast(e.message, true); return; }
  $("#job-card").hidden = false;
  $("#job-id").textContent = job.id;
  const fields = [
    ["topic", job.topic], ["state", job.state], ["priority", job.priority],
    ["attempts", job.attempts + " of " + job.max_attempts],
    ["time to run", job.ttr_ms + " ms"], ["backoff", job.backoff],
    ["enqueued", job.enqueued_at + " (" + relative(job.enqueued_at) + ")"],
    ["due", job.run_at + " (" + relative(job.run_at) + ")"],
    ["lease ends", job.deadline ? job.deadline + " (" + relative(job.deadline) + ")" : "—"],
    [job.state === "dead" ? "died" : "finished",
      job.finished_at ? job.finished_at + " (" + relative(job.finished_at) + ")" : "—"],
    ["last error", job.last_error || "—"]];
  if (job.state === "done") {
    fields.push(["result", job.result !== undefined ? job.result
      : "base64: " + job.result_base64]);
  }
  $("#job-fields").replaceChildren(...fields.flatMap(([k, v]) =>
    [el("dt", {}, k), el("dd", {}, v)]));
  $("#job-payload").textContent = job.payload !== undefined ? job.payload
    : "base64: " + job.payload_base64;
  showFlow(job);
  showBatch(job.id);
  const { events } = await api("/v1/jobs/" + part(id) + "/history");
  $("#job-history").replaceChildren(...(events.length ? events.map((e) =>
    el("li", { data: { event: e.event } }, el("b", {}, e.event), " ", e.at,
      " (" + relative(e.at) + ")", e.attempts ? ", attempt " + e.attempts : "",
      e.error ? ": " + e.error : "", e.who ? " by " + e.who : ""))
    : [el("li", { class: "muted" }, "none in the log")]));
}

// --- Flows and batches ------------------------------------------------------

// How deep and how wide the tree of what a job waits for is drawn: a fan-in
// of 10,000 children shows its first ones and says how many more.
const FLOW_DEPTH = 3;
const FLOW_WIDTH = 20;

// The jobs `job` waits for (its `after`), each with its state and, in
// turn, what it waits for; a dependency no longer in the store is "gone"
// (acknowledged and not kept, or cancelled).
async function flowNodes(ids, depth) {
  const shown = ids.slice(0, FLOW_WIDTH);
  const items = await Promise.all(shown.map(async (id) => {
    let dep = null;
    try { dep = await api("/v1/jobs/" + part(id)); } catch (e) { /* gone */ }
    const stateName = dep ? dep.state : "gone";
    const item = el("li", { data: { id } },
      el("a", { href: "#", onclick: (e) => { e.preventDefault(); showJob(id); } }, id),
      el("span", { class: "state " + stateName }, stateName));
    if (dep && dep.after && dep.after.length) {
      item.append(depth < FLOW_DEPTH ? el("ul", {}, ...await flowNodes(dep.after, depth + 1))
        : el("span", { class: "muted" }, " waits for " + dep.after.length + " more"));
    }
    return item;
  }));
  if (ids.length > shown.length) {
    items.push(el("li", { class: "muted" }, "and " + (ids.length - shown.length) + " more"));
  }
  return items;
}

async function showFlow(job) {
  const after = job.after || [];
  $("#job-flow").hidden = after.length === 0;
  // The job and what it waits for that is still to run, parents first
  // (POST /v1/jobs/{id}/cancel-flow); done and dead jobs stay.
  $("#cancel-flow").onclick = () =>
    confirm("Cancel " + job.id + " and every job it waits for that is still to run?") &&
    act("cancelled the flow of " + job.id, async () => {
      const { cancelled } = await post("/v1/jobs/" + part(job.id) + "/cancel-flow");
      $("#job-card").hidden = true;
      toast("cancelled " + cancelled.length + " job(s): " + cancelled.join(", "));
    });
  $("#flow-tree").replaceChildren();
  if (after.length) $("#flow-tree").replaceChildren(...await flowNodes(after, 1));
}

// A batch's completion job has the batch's id: its card shows the batch's
// progress (GET /v1/batches/{id}); any other job has no batch of that id.
async function showBatch(id) {
  let batch = null;
  try { batch = await api("/v1/batches/" + part(id)); } catch (e) { /* none */ }
  $("#job-batch").hidden = !batch;
  if (!batch) return;
  const width = (n) => (batch.total ? 100 * n / batch.total : 0) + "%";
  $("#batch-progress").replaceChildren(
    el("div", { class: "bar" },
      ...["done", "dead", "cancelled"].map((k) =>
        el("span", { class: k, style: "width:" + width(batch[k]) }))),
    el("span", {}, batch.done + " done, " + batch.dead + " dead, " + batch.cancelled +
      " cancelled, " + batch.pending + " pending of " + batch.total +
      (batch.closed ? " (closed)" : " (open: more jobs may join)")));
}

// --- Chart ------------------------------------------------------------------

// The last hour from the store's counts (GET /v1/counts), the same from any
// server and there on the first load: per minute, jobs done, attempts
// failed and deliveries later than a second, every topic or the chosen one.
const CHART_MINUTES = 60;
const LATE_BUCKET = 3;  // lateness buckets from this one are over 1 s

function chartRows(counts) {
  const end = Date.parse(counts.now);
  const first = Math.floor(end / 60000) * 60000 - (CHART_MINUTES - 1) * 60000;
  const rows = [];
  for (let i = 0; i < CHART_MINUTES; i++) {
    rows.push({ t: first + i * 60000, done: 0, failed: 0, late: 0 });
  }
  for (const m of counts.minutes) {
    const i = Math.round((Date.parse(m.minute) - first) / 60000);
    if (i < 0 || i >= CHART_MINUTES) continue;
    rows[i].done += m.done;
    rows[i].failed += m.failed;
    rows[i].late += m.lateness.slice(LATE_BUCKET).reduce((a, b) => a + b, 0);
  }
  return rows;
}

function polyline(points, cls) {
  const p = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  p.setAttribute("points", points.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" "));
  p.setAttribute("class", cls);
  return p;
}

function svg(tag, attrs, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function drawChart(counts) {
  const rows = chartRows(counts);
  const chart = $("#chart");
  chart.replaceChildren();
  const H = 180, L = 40, R = 760, T = 10, B = 160;
  const max = Math.max(1, ...rows.map((r) => Math.max(r.done, r.failed, r.late)));
  for (let g = 0; g <= 4; g++) {
    const y = B - (B - T) * g / 4;
    chart.append(svg("line", { x1: L, x2: R, y1: y, y2: y, class: "grid" }));
    chart.append(svg("text", { x: L - 4, y: y + 3, "text-anchor": "end", class: "axis" },
      (max * g / 4).toFixed(max < 8 ? 1 : 0)));
  }
  const x = (i) => L + (R - L) * i / (rows.length - 1);
  const y = (v) => B - (B - T) * v / max;
  for (const key of ["done", "failed", "late"]) {
    chart.append(polyline(rows.map((r, i) => [x(i), y(r[key])]), key));
  }
  const total = rows.reduce((a, r) => a + r.done, 0);
  chart.append(svg("text", { x: L, y: H - 4, class: "axis" },
    "last " + CHART_MINUTES + " minutes, per minute" +
    (state.topic ? " (" + state.topic + ")" : " (every topic)") + ": " + total + " done"));
  chart.dataset.done = String(total);
}

// --- Workers: who holds which lease -----------------------------------------

// The most leases the card shows at once (one page of GET /v1/workers).
const WORKERS_SHOWN = 200;
// The cursors of the pages of leases up to the one shown ("" for the
// first), and the next page's ("" at the end).
const workerPages = { cursors: [""], next: "" };

// The live leases, grouped by holder (the longest held first in each); a
// holder's name shows on its first row.
function renderWorkers(leases) {
  const sorted = [...leases].sort((a, b) => a.holder < b.holder ? -1
    : a.holder > b.holder ? 1 : String(a.reserved_at).localeCompare(String(b.reserved_at)));
  const counts = new Map();
  for (const l of sorted) counts.set(l.holder, (counts.get(l.holder) || 0) + 1);
  const body = $("#workers tbody");
  body.replaceChildren();
  let last = null;
  for (const l of sorted) {
    const first = l.holder !== last;
    last = l.holder;
    body.append(el("tr", { data: { holder: l.holder, id: l.id } },
      el("td", { class: "mono" }, first ? (l.holder || "(unnamed)") +
        " (" + counts.get(l.holder) + ")" : ""),
      el("td", {}, l.topic),
      el("td", { class: "mono" }, el("a", { href: "#",
        onclick: (e) => { e.preventDefault(); showJob(l.id); } }, l.id)),
      el("td", {}, l.reserved_at ? relative(l.reserved_at) : "?"),
      el("td", {}, relative(l.deadline)),
      el("td", { class: "n" }, l.attempts + "/" + l.max_attempts)));
  }
  const page = workerPages.cursors.length;
  $("#no-workers").hidden = sorted.length > 0;
  $("#workers-shown").textContent = sorted.length === 0 ? ""
    : counts.size + " holder(s), " + sorted.length + " lease(s)" +
      (page > 1 || workerPages.next ? ", page " + page : "");
  $("#workers-next").hidden = !workerPages.next;
  $("#workers-previous").hidden = page <= 1;
}

async function refreshWorkers() {
  const cursor = workerPages.cursors[workerPages.cursors.length - 1];
  let reply;
  try {
    reply = await api("/v1/workers?limit=" + WORKERS_SHOWN +
      (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
  } catch (e) {
    if (!cursor) throw e;
    // A page that is no longer there: start again at the first.
    workerPages.cursors = [""];
    reply = await api("/v1/workers?limit=" + WORKERS_SHOWN);
  }
  workerPages.next = reply.next_cursor;
  renderWorkers(reply.leases);
}

$("#workers-next").addEventListener("click", () => {
  if (!workerPages.next) return;
  workerPages.cursors.push(workerPages.next);
  refreshWorkers().catch((e) => toast(e.message, true));
});
$("#workers-previous").addEventListener("click", () => {
  if (workerPages.cursors.length > 1) workerPages.cursors.pop();
  refreshWorkers().catch((e) => toast(e.message, true));
});

// --- Refresh loop -----------------------------------------------------------

async function refresh() {
  try {
    const countsPath = "/v1/counts?minutes=" + CHART_MINUTES +
      (state.topic ? "&topic=" + encodeURIComponent(state.topic) : "");
    const [{ topics }, { limits }, { schedules }, counts] = await Promise.all([
      api("/v1/topics"), api("/v1/limits"), api("/v1/schedules"), api(countsPath)]);
    // A Map, not an object: a topic may be named "__proto__" or "constructor".
    state.limits = new Map(limits.map((l) => [l.topic, l]));
    renderTopics(topics, state.limits);
    renderSchedules(schedules);
    drawChart(counts);
    await refreshWorkers();
    await refreshJobs();
    $("#status").textContent = "updated " + new Date().toLocaleTimeString();
    document.body.dataset.loaded = "true";
  } catch (e) {
    $("#status").textContent = "error: " + e.message;
  }
}

function schedule() {
  clearInterval(state.timer);
  const ms = parseInt($("#refresh").value, 10);
  if (ms > 0) state.timer = setInterval(refresh, ms);
}

$("#refresh").addEventListener("change", schedule);
$("#find").addEventListener("submit", (e) => {
  e.preventDefault();
  const id = $("#find-id").value.trim();
  if (id) showJob(id);
});
$("#job-close").addEventListener("click", () => { $("#job-card").hidden = true; });
refresh();
schedule();
