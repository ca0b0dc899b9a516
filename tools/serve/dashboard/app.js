// The delayq dashboard: topics with live counts, a chart of throughput and
// lateness from the store's counts, jobs per topic and state, one job's details, and the actions
// an operator needs. Plain JavaScript against the /v1 API; no
// libraries, so it works with no internet access.
"use strict";

const STATES = ["ready", "delayed", "reserved", "dead", "done"];
const $ = (sel) => document.querySelector(sel);
// `counts`: the chosen topic's jobs per state, for the state tabs.
const state = { topic: null, jobState: "ready", timer: null, counts: {} };

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
  $("#no-topics").hidden = topics.length > 0;
  for (const t of topics) {
    const name = el("td", {}, t.topic);
    if (t.paused) name.append(el("span", { class: "badge" }, "paused"));
    const limit = limits.get(t.topic);
    if (limit) {
      name.append(el("span", { class: "badge limit", title: "topic limit" }, limit.text));
    }
    if (t.topic === state.topic) state.counts = t;
    const row = el("tr", { data: { topic: t.topic } }, name);
    for (const s of ["delayed", "ready", "reserved", "dead", "done"]) {
      const cell = el("td", { class: "n " + s + (s === "dead" && t.dead > 0 ? " hot" : "") },
        el("a", { href: "#", onclick: (e) => { e.preventDefault(); openJobs(t.topic, s); } },
          t[s]));
      row.append(cell);
    }
    const actions = el("td", { class: "n" });
    if (t.dead > 0) {
      actions.append(el("button", { data: { action: "kick", topic: t.topic },
        onclick: () => act("kicked " + t.dead + " dead job(s) of " + t.topic,
          () => post("/v1/topics/" + encodeURIComponent(t.topic) + "/kick")) }, "kick dead"));
      actions.append(el("button", { class: "danger", data: { action: "purge", topic: t.topic },
        onclick: () => confirm("Delete the " + t.dead + " dead job(s) of " + t.topic + "?") &&
          act("purged the dead jobs of " + t.topic,
            () => post("/v1/topics/" + encodeURIComponent(t.topic) + "/purge",
              { state: "dead" })) }, "purge dead"));
    }
    const verb = t.paused ? "resume" : "pause";
    actions.append(el("button", { data: { action: verb, topic: t.topic },
      onclick: () => act(verb + "d " + t.topic,
        () => post("/v1/topics/" + encodeURIComponent(t.topic) + "/" + verb)) }, verb));
    row.append(actions);
    body.append(row);
  }
}

// --- Schedules ----------------------------------------------------------------

function renderSchedules(schedules) {
  $("#schedules-card").hidden = schedules.length === 0;
  const body = $("#schedules tbody");
  body.replaceChildren();
  for (const s of schedules) {
    const name = encodeURIComponent(s.name);
    const spec = s.spec + (s.time_zone !== "UTC" ? " (" + s.time_zone + ")" : "");
    const next = s.next_run ? s.next_run + " (" + relative(s.next_run) + ")" : "never";
    body.append(el("tr", { data: { schedule: s.name } },
      el("td", { class: "mono" }, s.name), el("td", { class: "mono" }, spec),
      el("td", {}, s.topic), el("td", {}, next), el("td", {}, s.missed),
      el("td", { class: "n" }, el("button", { class: "danger",
        data: { action: "unschedule", schedule: s.name },
        onclick: () => confirm("Delete schedule " + s.name + "? Its jobs stay.") &&
          act("deleted schedule " + s.name,
            () => api("/v1/schedules/" + name, { method: "DELETE" })) }, "delete"))));
  }
}

// --- Jobs of a topic --------------------------------------------------------

function openJobs(topic, jobState) {
  state.topic = topic;
  state.jobState = jobState;
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
  const { jobs } = await api("/v1/topics/" + encodeURIComponent(state.topic) +
    "/jobs?state=" + state.jobState + "&limit=100");
  const body = $("#jobs tbody");
  body.replaceChildren();
  $("#no-jobs").hidden = jobs.length > 0;
  for (const job of jobs) {
    const id = encodeURIComponent(job.id);
    const when = job.state === "reserved" ? "lease ends " + relative(job.deadline)
      : job.state === "dead" ? "died " + relative(job.finished_at)
      : job.state === "done" ? "done " + relative(job.finished_at)
      : "due " + relative(job.run_at);
    const actions = el("td", { class: "n" });
    if (job.state === "dead") {
      actions.append(el("button", { data: { action: "retry", id: job.id },
        onclick: () => act("retrying " + job.id, () => post("/v1/jobs/" + id + "/retry")) },
        "retry"));
    }
    if (job.state === "delayed") {
      actions.append(el("button", { data: { action: "promote", id: job.id },
        onclick: () => act("running " + job.id + " now",
          () => post("/v1/jobs/" + id + "/promote")) }, "run now"));
    }
    actions.append(el("button", { class: "danger", data: { action: "cancel", id: job.id },
      onclick: () => confirm("Cancel job " + job.id + "?") &&
        act("cancelled " + job.id, () => api("/v1/jobs/" + id, { method: "DELETE" })) },
      "cancel"));
    body.append(el("tr", { data: { id: job.id } },
      el("td", { class: "mono" }, el("a", { href: "#",
        onclick: (e) => { e.preventDefault(); showJob(job.id); } }, job.id)),
      el("td", {}, job.attempts + "/" + job.max_attempts),
      el("td", {}, when),
      el("td", { class: "mono" }, preview(job)),
      el("td", { class: "err" }, job.last_error || ""),
      actions));
  }
}

// --- One job ------------------------------------------------------------------

async function showJob(id) {
  let job;
  try { job = await api("/v1/jobs/" + encodeURIComponent(id)); }
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
  const { events } = await api("/v1/jobs/" + encodeURIComponent(id) + "/history");
  $("#job-history").replaceChildren(...(events.length ? events.map((e) =>
    el("li", { data: { event: e.event } }, el("b", {}, e.event), " ", e.at,
      " (" + relative(e.at) + ")", e.attempts ? ", attempt " + e.attempts : "",
      e.error ? ": " + e.error : "")) : [el("li", { class: "muted" }, "none seen")]));
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

// --- Refresh loop -----------------------------------------------------------

async function refresh() {
  try {
    const countsPath = "/v1/counts?minutes=" + CHART_MINUTES +
      (state.topic ? "&topic=" + encodeURIComponent(state.topic) : "");
    const [{ topics }, { limits }, { schedules }, counts] = await Promise.all([
      api("/v1/topics"), api("/v1/limits"), api("/v1/schedules"), api(countsPath)]);
    // A Map, not an object: a topic may be named "__proto__" or "constructor".
    renderTopics(topics, new Map(limits.map((l) => [l.topic, l])));
    renderSchedules(schedules);
    drawChart(counts);
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
