// The live page of a ptmp graph: fetch the state with its history once,
// then follow server-sent events, redrawing the graph and the tables on
// each update. No library: plain DOM and SVG.
"use strict";

const KEEP = 300; // samples of history, one per update
const NODE_W = 150, NODE_H = 58, ROW = 110, PAD = 28;
// Columns are this far apart when the page is wide enough, closer (down
// to COL_MIN) when it is not; past that the picture is scaled down to fit
// (to MIN_SCALE at most, then it scrolls).
const COL_MAX = 330, COL_MIN = 240, MIN_SCALE = 0.55;
const STUB = 110; // an edge to or from outside the picture: its arrow's length
const SVGNS = "http://www.w3.org/2000/svg";

let hist = { t: [], edges: {}, nodes: {} };
let prev = null; // the previous state, for loss seen since then
let updates = 0;
let lastUpdate = 0; // when a state last arrived (ms, performance.now())
let streamUp = false; // the event stream is connected

function el(name, attrs, parent) {
  const e = document.createElementNS(SVGNS, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (parent) parent.appendChild(e);
  return e;
}
function text(parent, x, y, s, cls, anchor) {
  const t = el("text", { x, y, class: cls || "", "text-anchor": anchor || "start" }, parent);
  t.textContent = s;
  return t;
}
function fmt(x) {
  if (x === null || x === undefined) return "–";
  if (x >= 1e9) return (x / 1e9).toFixed(1) + "G";
  if (x >= 1e6) return (x / 1e6).toFixed(1) + "M";
  if (x >= 1e4) return (x / 1e3).toFixed(1) + "k";
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}
function us(x) {
  if (x === null || x === undefined) return "–";
  return x >= 1000 ? (x / 1000).toFixed(1) + " ms" : x + " µs";
}
function push(arr, v) { arr.push(v); if (arr.length > KEEP) arr.shift(); }

// Layers by longest path from the nodes nothing feeds; a cycle (a sink's
// done port back to its source) is cut after as many passes as nodes.
function layout(st, room) {
  const idx = {}; st.nodes.forEach((n, i) => idx[n.name] = i);
  const layer = st.nodes.map(() => 0);
  const pairs = [];
  for (const e of st.edges)
    for (const f of e.from) for (const t of e.to)
      if (f.port !== "done" && t.port !== "done") pairs.push([idx[f.node], idx[t.node]]);
  for (let pass = 0; pass < st.nodes.length; pass++) {
    let moved = false;
    for (const [a, b] of pairs)
      if (layer[b] < layer[a] + 1 && layer[a] + 1 < st.nodes.length) { layer[b] = layer[a] + 1; moved = true; }
    if (!moved) break;
  }
  const cols = {};
  st.nodes.forEach((n, i) => (cols[layer[i]] = cols[layer[i]] || []).push(i));
  const ncols = Math.max(0, ...layer) + 1;
  // Room at the sides for arrows from and to outside the picture.
  const left = st.edges.some((e) => e.from.length === 0 && e.to.length > 0) ? STUB : 0;
  const right = st.edges.some((e) => e.to.length === 0 && e.from.length > 0) ? STUB : 0;
  const fixed = PAD * 4 + NODE_W + left + right;
  const COL = ncols > 1 ? Math.max(COL_MIN, Math.min(COL_MAX, (room - fixed) / (ncols - 1))) : COL_MAX;
  const key = (i) => [st.nodes[i].host, st.nodes[i].process, st.nodes[i].name].join("\u0000");
  const pos = [];
  let maxRow = 0;
  for (const c in cols) {
    cols[c].sort((a, b) => key(a) < key(b) ? -1 : 1);
    cols[c].forEach((i, r) => {
      pos[i] = { x: PAD * 2 + left + c * COL, y: PAD * 2 + 14 + r * ROW };
      maxRow = Math.max(maxRow, r);
    });
  }
  return { idx, pos, width: fixed + (ncols - 1) * COL, height: PAD * 4 + 14 + maxRow * ROW + NODE_H + 20 };
}

function portXY(st, lay, nodeName, portName, out) {
  const i = lay.idx[nodeName], n = st.nodes[i], p = lay.pos[i];
  const side = n.ports.filter((q) => (q.dir === "out") === out);
  const k = Math.max(0, side.findIndex((q) => q.name === portName));
  return { x: p.x + (out ? NODE_W : 0), y: p.y + NODE_H * (k + 1) / (side.length + 1) };
}

function bbox(points) {
  const xs = points.map((p) => p.x), ys = points.map((p) => p.y);
  return { x0: Math.min(...xs), y0: Math.min(...ys), x1: Math.max(...xs) + NODE_W, y1: Math.max(...ys) + NODE_H };
}

function edgeColour(e) {
  const p = prev && prev.edges.find((q) => q.id === e.id);
  const newLoss = p ? (e.lost - p.lost) + (e.errors - p.errors) > 0 : e.lost + e.errors > 0;
  if (newLoss) return "#e03131";
  return e.rate > 0 ? "#2f9e44" : "#9aa5b1";
}

function nodeFill(state) {
  return { running: "#d3f9d8", restarting: "#fff3bf", failed: "#ffc9c9", starting: "#d0ebff" }[state] || "#e9ecef";
}

function spark(values, cls, w, h) {
  const svg = el("svg", { width: w, height: h, viewBox: `0 0 ${w} ${h}` });
  const max = Math.max(1e-9, ...values);
  const n = values.length;
  if (n > 1) {
    const pts = values.map((v, i) => `${(i * (w - 2) / (n - 1) + 1).toFixed(1)},${(h - 2 - v / max * (h - 4)).toFixed(1)}`);
    el("polyline", { points: pts.join(" "), class: cls }, svg);
  }
  return svg;
}

// Messages lost per update, from the running totals (a total that fell,
// its process restarted, counts from zero again).
function increases(totals) {
  return totals.slice(1).map((v, i) => Math.max(0, v - totals[i]));
}

// The loss plot: red where messages were lost in the window, grey and
// flat while none were.
function lossSpark(totals, w, h) {
  const inc = increases(totals);
  const lost = inc.some((x) => x > 0);
  const svg = spark(inc, lost ? "sparklost" : "sparknone", w, h);
  svg.dataset.lost = lost ? "yes" : "no";
  return svg;
}

// What an edge's label says: its pattern and transport, then its rate
// (and loss), on two lines so that it fits between close columns.
function edgeLabel(e) {
  const lines = [`${e.pattern} ${e.transport}`];
  if (e.from.length === 0) lines.push("from outside");
  else if (e.to.length === 0) lines.push("to outside");
  lines.push(`${fmt(e.rate)}/s` + (e.lost ? ` · lost ${fmt(e.lost)}` : ""));
  return lines;
}

function label(svg, x, y, lines, id) {
  const t = text(svg, x, y - 4 - 11.5 * lines.length, "", "edgelabel", "middle");
  lines.forEach((line, k) => {
    const span = el("tspan", { x, dy: k ? "1.15em" : 0 }, t);
    span.textContent = line;
  });
  t.setAttribute("data-edge-label", id);
  return t;
}

function arrow(svg, e, d, colour, width) {
  el("path", { d, class: "edge", stroke: colour, "stroke-width": width.toFixed(2), "marker-end": "url(#arrow)",
    "data-edge": e.id, "data-rate": e.rate, "data-lost": e.lost }, svg);
}

function drawEdges(svg, st, lay) {
  for (const e of st.edges) {
    const colour = edgeColour(e);
    const width = 1.5 + Math.log10(1 + e.rate) * 1.2;
    let labelled = false; // a fan-in or fan-out carries the edge's label once
    for (const f of e.from) for (const t of e.to) {
      const a = portXY(st, lay, f.node, f.port, true), b = portXY(st, lay, t.node, t.port, false);
      const back = b.x <= a.x;
      const dx = Math.max(40, Math.abs(b.x - a.x) / 2);
      const d = back
        ? `M${a.x},${a.y} C${a.x + 60},${a.y + ROW * 0.8} ${b.x - 60},${b.y + ROW * 0.8} ${b.x},${b.y}`
        : `M${a.x},${a.y} C${a.x + dx},${a.y} ${b.x - dx},${b.y} ${b.x},${b.y}`;
      arrow(svg, e, d, colour, width);
      const mx = (a.x + b.x) / 2, my = (a.y + b.y) / 2 + (back ? ROW * 0.6 : 0);
      if (!labelled) label(svg, mx, my, edgeLabel(e), e.id);
      labelled = true;
    }
    // One side outside the picture (a `ptmp send` into an agent, say): a
    // short arrow from the edge of the picture, or out to it.
    if (e.from.length === 0) for (const t of e.to) {
      const b = portXY(st, lay, t.node, t.port, false), ax = b.x - STUB + 8;
      arrow(svg, e, `M${ax},${b.y} L${b.x},${b.y}`, colour, width);
      if (!labelled) label(svg, (ax + b.x) / 2, b.y, edgeLabel(e), e.id);
      labelled = true;
    }
    if (e.to.length === 0) for (const f of e.from) {
      const a = portXY(st, lay, f.node, f.port, true), bx = a.x + STUB - 8;
      arrow(svg, e, `M${a.x},${a.y} L${bx},${a.y}`, colour, width);
      if (!labelled) label(svg, (a.x + bx) / 2, a.y, edgeLabel(e), e.id);
      labelled = true;
    }
  }
}

// The width the picture has on the page.
function room() {
  const box = document.getElementById("graphbox");
  return Math.max(320, box.clientWidth || 0);
}

function draw(st) {
  const svg = document.getElementById("graph");
  const space = room();
  const lay = layout(st, space);
  // Too wide even with the columns close: scale it down to fit, within
  // reason (past that the box scrolls).
  const scale = Math.max(MIN_SCALE, Math.min(1, space / lay.width));
  svg.setAttribute("width", Math.floor(lay.width * scale));
  svg.setAttribute("height", Math.ceil(lay.height * scale));
  svg.setAttribute("viewBox", `0 0 ${lay.width} ${lay.height}`);
  svg.dataset.scale = scale.toFixed(3);
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  el("defs", {}, svg).innerHTML =
    '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" markerHeight="10" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#495057"/></marker>';
  // Hosts, then processes, as boxes around their nodes.
  const groups = (key) => {
    const g = {};
    st.nodes.forEach((n, i) => (g[n[key]] = g[n[key]] || []).push(lay.pos[i]));
    return g;
  };
  const hosts = groups("host");
  for (const h in hosts) {
    const b = bbox(hosts[h]);
    el("rect", { x: b.x0 - PAD, y: b.y0 - PAD - 14, width: b.x1 - b.x0 + 2 * PAD, height: b.y1 - b.y0 + 2 * PAD + 14, rx: 8, class: "hostbox" }, svg);
    // Where a scheduler runs the host's part: its node and job step.
    const at = (st.hosts || []).find((x) => x.name === h) || {};
    const where = at.node ? ` on node ${at.node}` + (at.step ? `, step ${at.step}` : "") : "";
    text(svg, b.x0 - PAD + 6, b.y0 - PAD - 2, "host " + h + where, "boxlabel");
  }
  const procs = groups("process");
  for (const p in procs) {
    const b = bbox(procs[p]);
    el("rect", { x: b.x0 - 10, y: b.y0 - 18, width: b.x1 - b.x0 + 20, height: b.y1 - b.y0 + 26, rx: 6, class: "procbox" }, svg);
    text(svg, b.x0 - 6, b.y0 - 6, "process " + p, "boxlabel");
  }
  // Edges under the nodes.
  drawEdges(svg, st, lay);
  st.nodes.forEach((n, i) => {
    const p = lay.pos[i];
    const g = el("g", { class: "node", "data-node": n.name, "data-state": n.state, "data-restarts": n.restarts,
      transform: `translate(${p.x},${p.y})` }, svg);
    el("rect", { width: NODE_W, height: NODE_H, rx: 5, class: "body", fill: nodeFill(n.state) }, g);
    text(g, 8, 17, n.name, "name");
    text(g, 8, 32, `${n.kind} · ${n.state}`, "sub");
    text(g, 8, 47, `in ${fmt(n.in_rate)}/s  out ${fmt(n.out_rate)}/s`, "sub");
    if (n.restarts > 0) text(g, NODE_W - 6, 17, `↻${n.restarts}`, "restarts", "end");
    for (const out of [false, true]) {
      const side = n.ports.filter((q) => (q.dir === "out") === out);
      side.forEach((q, k) => {
        const y = NODE_H * (k + 1) / (side.length + 1), x = out ? NODE_W : 0;
        el("circle", { cx: x, cy: y, r: 4, class: "port" }, g);
        // Port names outside the box, above the port; the plain "in" and
        // "out" of a one-port side go without saying.
        if (side.length > 1 || q.name !== (out ? "out" : "in"))
          text(g, out ? x + 6 : x - 6, y - 6, q.name, "portlabel", out ? "start" : "end");
      });
    }
  });
}

function tables(st) {
  const eb = document.querySelector("#edges tbody");
  eb.textContent = "";
  for (const e of st.edges) {
    const tr = eb.insertRow();
    tr.dataset.edge = e.id;
    const side = (v) => v.length ? v.map((r) => `${r.node}.${r.port}`).join(", ") : "(outside)";
    const cells = [e.id, `${side(e.from)} → ${side(e.to)}`, `${e.pattern} ${e.transport}`, fmt(e.rate), fmt(e.byte_rate),
      fmt(e.sent), fmt(e.received), fmt(e.lost), fmt(e.errors), fmt(e.stalls), fmt(e.readers_given_up || 0),
      fmt(e.curve_refused || 0), `${us(e.latency_us.p50)} / ${us(e.latency_us.p99)} / ${us(e.latency_us.max)}`];
    cells.forEach((c, k) => { const td = tr.insertCell(); td.textContent = c; if ((k === 7 && e.lost > 0) || (k === 10 && e.readers_given_up > 0) || (k === 11 && e.curve_refused > 0)) td.className = "lost"; });
    const h = hist.edges[e.id] || { rate: [], lost: [] };
    const td = tr.insertCell();
    td.appendChild(spark(h.rate, "spark", 160, 26));
    td.appendChild(lossSpark(h.lost, 60, 26));
  }
  const nb = document.querySelector("#nodes tbody");
  nb.textContent = "";
  for (const n of st.nodes) {
    const tr = nb.insertRow();
    [n.name, n.kind, n.process, n.host, n.state, n.restarts, fmt(n.in), fmt(n.out), fmt(n.in_rate), fmt(n.out_rate)]
      .forEach((c) => { tr.insertCell().textContent = c; });
    const h = hist.nodes[n.name] || { rate: [] };
    tr.insertCell().appendChild(spark(h.rate, "spark", 160, 26));
  }
}

function record(st) {
  // The graph was changed (`ptmp graph apply`): edge names may now mean
  // other edges, so their history and the loss compared with the previous
  // state start again, and removed nodes' history goes. The graph itself
  // is drawn afresh from each state anyway.
  if (prev && prev.structure !== st.structure) {
    hist.edges = {};
    const names = new Set(st.nodes.map((n) => n.name));
    for (const k of Object.keys(hist.nodes)) if (!names.has(k)) delete hist.nodes[k];
    prev = null;
  }
  push(hist.t, st.uptime_s);
  for (const e of st.edges) {
    const h = hist.edges[e.id] = hist.edges[e.id] || { rate: [], lost: [] };
    push(h.rate, e.rate); push(h.lost, e.lost);
  }
  for (const n of st.nodes) {
    const h = hist.nodes[n.name] = hist.nodes[n.name] || { rate: [] };
    push(h.rate, Math.max(n.in_rate, n.out_rate));
  }
}

function show(st) {
  document.getElementById("gname").textContent = st.graph;
  const restarts = st.processes.reduce((a, p) => a + p.restarts, 0);
  const lost = st.edges.reduce((a, e) => a + e.lost, 0);
  document.getElementById("summary").textContent =
    `host ${st.host} · ${st.nodes.length} nodes · ${st.edges.length} edges · ${st.processes.length} processes · restarts ${restarts} · lost ${fmt(lost)} · up ${Math.round(st.uptime_s)} s`;
  draw(st);
  tables(st);
  prev = st;
  updates += 1;
  document.body.dataset.updates = updates;
}

// The header's badge: "live" while states arrive (by the event stream, or
// the first from /api/state while it connects), "stale" when none came for
// a while, "reconnecting" when the stream broke, "connecting" (grey) before
// anything came.
const STALE_MS = 5000;
function badge() {
  const conn = document.getElementById("conn");
  const fresh = lastUpdate > 0 && performance.now() - lastUpdate < STALE_MS;
  let word, cls;
  if (fresh && (streamUp || updates <= 1)) [word, cls] = ["live", "up"];
  else if (lastUpdate === 0) [word, cls] = ["connecting", "wait"];
  else if (!streamUp) [word, cls] = ["reconnecting", "down"];
  else [word, cls] = [`stale ${Math.round((performance.now() - lastUpdate) / 1000)} s`, "down"];
  conn.textContent = word;
  conn.className = "conn " + cls;
  conn.dataset.state = cls;
}

// A monitor serving other hosts asks them for its token: taken from the
// address (#token=...), else asked for once and kept for this tab.
function token() {
  const m = location.hash.match(/token=([0-9A-Za-z]+)/);
  if (m) sessionStorage.setItem("ptmp-token", m[1]);
  return sessionStorage.getItem("ptmp-token") || "";
}

async function fetchState() {
  const headers = token() ? { Authorization: "Bearer " + token() } : {};
  let r = await fetch("/api/state", { cache: "no-store", headers });
  if (r.status === 401) {
    const t = window.prompt("This monitor asks for its token (the graph's run directory, file monitor-token):");
    if (t) sessionStorage.setItem("ptmp-token", t.trim());
    r = await fetch("/api/state", { cache: "no-store", headers: { Authorization: "Bearer " + token() } });
  }
  return r;
}

async function main() {
  try {
    const r = await fetchState();
    const st = await r.json();
    if (st.history) hist = st.history;
    show(st);
    lastUpdate = performance.now();
  } catch (e) { /* the event stream below retries */ }
  badge();
  const es = new EventSource(token() ? "/events?token=" + encodeURIComponent(token()) : "/events");
  es.onopen = () => { streamUp = true; badge(); };
  es.onerror = () => { streamUp = es.readyState === EventSource.OPEN; badge(); };
  es.addEventListener("state", (ev) => {
    const st = JSON.parse(ev.data);
    streamUp = true;
    lastUpdate = performance.now();
    record(st);
    show(st);
    badge();
  });
  setInterval(badge, 1000);
  // Redraw to the new width when the window changes.
  window.addEventListener("resize", () => { if (prev) draw(prev); });
}
main();
