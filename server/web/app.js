// The chat page: conversations kept in localStorage, the chat itself
// through POST /v1/chat/completions with stream: true on this origin.
import { renderMarkdown, copyText } from "./markdown.js";

const STORE = "vkllm.chat.v1"; // {conversations: [...], current: id}
const KEY = "vkllm.apiKey";

const $ = (id) => document.getElementById(id);
const ui = {
  list: $("conv-list"), messages: $("messages"), input: $("input"), send: $("send"), stop: $("stop"),
  model: $("model"), title: $("conv-title"), status: $("status"), settings: $("settings"),
  system: $("system"), temperature: $("temperature"), top_p: $("top_p"), max_tokens: $("max_tokens"),
  seed: $("seed"), sidebar: $("sidebar"), keyDialog: $("key-dialog"), keyInput: $("key-input"),
  top_k: $("top_k"), min_p: $("min_p"), repetition_penalty: $("repetition_penalty"),
  presence_penalty: $("presence_penalty"), frequency_penalty: $("frequency_penalty"), stop_strings: $("stop_strings"),
  search: $("search"),
};

// SETTINGS are a conversation's numeric sampler settings, each sent under
// its own name when set; stop_strings (one a line) is the other.
const SETTINGS = ["temperature", "top_p", "top_k", "min_p", "repetition_penalty", "presence_penalty",
  "frequency_penalty", "max_tokens", "seed"];
const noSettings = () => ({ system: "", stop_strings: "", ...Object.fromEntries(SETTINGS.map((k) => [k, null])) });

// saved is the JSON of each conversation as this tab last wrote or read
// it: a conversation whose JSON differs was changed here since.
const saved = new Map();
const key = (c) => JSON.stringify(cleanConversation(c));
let state; // {conversations, current}: read at the end of the storage section
let models = []; // ids from /v1/models, one per model
let loadError = null; // why the model list could not be had
let active = null; // the generation in flight: {conv, msg, controller}
// draft holds the settings typed while there is no conversation yet; the
// first one takes them.
const draft = noSettings();
let attachment = null; // {name, text}: a text file to send with the next message
let search = ""; // the conversation list's filter

// ---- storage ----

const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v, d = "") => (typeof v === "string" ? v : v === null || v === undefined ? d : String(v));

// cleanMeta keeps the numbers of a message's meta line and drops the rest.
function cleanMeta(m) {
  if (!m || typeof m !== "object") return undefined;
  const out = {};
  for (const k of ["completion", "prompt", "cached", "ttft", "tps"]) if (num(m[k]) !== null) out[k] = m[k];
  if (m.replay === true) out.replay = true;
  return Object.keys(out).length ? out : undefined;
}

// cleanConversation is x as the page can show it, whatever a store or an
// import held (or null when x is not a conversation at all): one bad
// record never breaks the page.
function cleanConversation(x) {
  if (!x || typeof x !== "object" || Array.isArray(x)) return null;
  const msgs = (Array.isArray(x.messages) ? x.messages : [])
    .filter((m) => m && typeof m === "object" && ["user", "assistant", "error"].includes(m.role))
    .map((m) => {
      const o = { role: m.role, content: str(m.content) };
      if (typeof m.model === "string") o.model = m.model;
      const meta = cleanMeta(m.meta);
      if (meta) o.meta = meta;
      if (m.stopped) o.stopped = true;
      return o;
    });
  const c = {
    id: str(x.id), title: str(x.title, "Imported chat") || "Imported chat", named: !!x.named, model: str(x.model),
    system: str(x.system), stop_strings: str(x.stop_strings), messages: msgs, created: num(x.created) ?? Date.now(),
  };
  for (const k of SETTINGS) c[k] = num(x[k]);
  return c;
}

function readStore() {
  try {
    const s = JSON.parse(localStorage.getItem(STORE));
    if (s && Array.isArray(s.conversations)) {
      const seen = new Set();
      const list = s.conversations.map(cleanConversation).filter((c) => c && c.id && !seen.has(c.id) && seen.add(c.id));
      return { conversations: list, current: typeof s.current === "string" ? s.current : null };
    }
  } catch (_) { /* a broken store starts afresh */ }
  return { conversations: [], current: null };
}

function load() {
  const s = readStore();
  saved.clear();
  for (const c of s.conversations) saved.set(c.id, key(c));
  return s;
}

// merge folds the stored list (another tab's writes) into this tab's, per
// conversation: what this tab changed since it last saved is kept, what it
// did not is taken from the store, one deleted elsewhere and untouched
// here goes, one created elsewhere comes. It reports whether the list
// changed.
function merge() {
  const theirs = readStore().conversations;
  const byId = new Map(theirs.map((c) => [c.id, c]));
  const out = [];
  const mine = new Set();
  let changed = false;
  for (const c of state.conversations) {
    mine.add(c.id);
    const dirty = saved.get(c.id) !== key(c) || (active && active.conv === c);
    const t = byId.get(c.id);
    if (dirty) out.push(c);
    else if (t) {
      const same = key(t) === key(c);
      if (!same) changed = true;
      out.push(same ? c : t);
    } else if (!saved.has(c.id)) out.push(c); // never saved: new here
    else changed = true; // deleted in another tab
  }
  for (const t of theirs) {
    if (!mine.has(t.id) && !saved.has(t.id)) { out.push(t); changed = true; }
  }
  out.sort((a, b) => b.created - a.created);
  state.conversations = out;
  saved.clear();
  for (const t of theirs) saved.set(t.id, key(t));
  return changed;
}

function save() {
  try {
    merge();
    localStorage.setItem(STORE, JSON.stringify(state));
    saved.clear();
    for (const c of state.conversations) saved.set(c.id, key(c));
  } catch (e) {
    announce("Could not save the conversations: " + e.message);
  }
}

function newConversation() {
  const c = {
    id: crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + Math.random(),
    title: "New chat", named: false, model: ui.model.value || models[0] || "",
    ...noSettings(), messages: [], created: Date.now(),
  };
  if (!current()) { // the first: it takes what was typed before it
    Object.assign(c, draft);
    Object.assign(draft, noSettings());
  }
  state.conversations.unshift(c);
  state.current = c.id;
  save();
  return c;
}

function current() {
  return state.conversations.find((c) => c.id === state.current) || null;
}

state = load();

// ---- API ----

function headers() {
  const h = { "Content-Type": "application/json" };
  const k = localStorage.getItem(KEY);
  if (k) h.Authorization = "Bearer " + k;
  return h;
}

// askKey shows the API key dialog; it resolves to true when a key was saved.
function askKey() {
  return new Promise((resolve) => {
    const d = ui.keyDialog;
    ui.keyInput.value = "";
    const done = (ok) => {
      $("key-form").onsubmit = null;
      $("key-cancel").onclick = null;
      d.onclose = null;
      if (d.open) d.close();
      resolve(ok);
    };
    $("key-form").onsubmit = (e) => {
      e.preventDefault();
      const k = ui.keyInput.value.trim();
      if (!k) return;
      localStorage.setItem(KEY, k);
      $("forget-key").hidden = false;
      done(true);
    };
    $("key-cancel").onclick = () => done(false);
    d.onclose = () => done(false);
    d.showModal();
    ui.keyInput.focus();
  });
}

// api fetches path; on 401 it asks for the API key once and retries.
async function api(path, init = {}) {
  for (let tries = 0; ; tries++) {
    const r = await fetch(path, { ...init, headers: headers() });
    if (r.status !== 401 || tries > 0 || !(await askKey())) return r;
  }
}

// errorText is the message of a failed answer: its OpenAI error body, and
// when to retry.
async function errorText(r) {
  let msg = r.statusText;
  try {
    const body = await r.json();
    if (body && body.error && body.error.message) msg = body.error.message;
  } catch (_) { /* not JSON */ }
  let s = `Error ${r.status}: ${msg}`;
  const ra = r.headers.get("Retry-After");
  if (ra) s += ` (retry after ${ra} s)`;
  return s;
}

// modelIDs are the ids of a /v1/models list worth a place in the picker:
// NAME:QUANT is left out where NAME is the same file (its card's root),
// and NAME where several files share it (each NAME:QUANT is listed).
export function modelIDs(cards) {
  const ids = new Set(cards.map((m) => m.id));
  const files = new Map(); // NAME -> the ids of its NAME:QUANT cards
  for (const m of cards) {
    if (m.root && m.id !== m.root && !m.parent && ids.has(m.root)) files.set(m.root, [...(files.get(m.root) || []), m.id]);
  }
  return cards.filter((m) => {
    const f = files.get(m.root);
    if (!f || m.parent) return true;
    return m.id === m.root ? f.length === 1 : f.length > 1;
  }).map((m) => m.id);
}

async function loadModels() {
  let r;
  loadError = null;
  try {
    r = await api("/v1/models");
    if (!r.ok) {
      loadError = "Could not list the models: " + (await errorText(r));
    } else {
      const body = await r.json();
      models = modelIDs(Array.isArray(body.data) ? body.data.filter((m) => m && typeof m.id === "string") : []);
      if (!models.length) loadError = "The server lists no models.";
    }
  } catch (e) {
    loadError = "Could not reach the server: " + e.message;
  }
  if (loadError) {
    announce(loadError);
    renderMessages();
    return;
  }
  ui.model.replaceChildren(...models.map((id) => {
    const o = document.createElement("option");
    o.value = o.textContent = id;
    return o;
  }));
  renderSettings();
}

// ---- generation ----

// requestMessages is what the server sees of c: the system prompt, then
// the user and assistant turns (error notes are the page's own).
function requestMessages(c) {
  const out = [];
  if (c.system.trim()) out.push({ role: "system", content: c.system });
  for (const m of c.messages) {
    if (m.role === "user" || (m.role === "assistant" && m.content)) out.push({ role: m.role, content: m.content });
  }
  return out;
}

async function generate(c) {
  c.model = ui.model.value || c.model;
  const body = { model: c.model, messages: requestMessages(c), stream: true,
    stream_options: { include_usage: true } };
  const msg = { role: "assistant", content: "", model: c.model };
  c.messages.push(msg);
  for (const k of SETTINGS) {
    if (c[k] !== null && c[k] !== undefined && c[k] !== "") body[k] = Number(c[k]);
  }
  const stops = stopList(c.stop_strings);
  if (stops.length) body.stop = stops;
  const controller = new AbortController();
  active = { conv: c, msg, controller, pieces: 0, tFirst: 0 };
  setBusy(true);
  renderMessages();
  const t0 = performance.now();
  let tFirst = 0;
  let usage = null;
  let finished = false; // [DONE] or a finish_reason arrived
  const fail = (text) => {
    if (!msg.content) c.messages.splice(c.messages.indexOf(msg), 1);
    c.messages.push({ role: "error", content: text });
  };
  try {
    const r = await api("/v1/chat/completions", { method: "POST", body: JSON.stringify(body), signal: controller.signal });
    if (!r.ok) {
      fail(await errorText(r));
    } else {
      const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let cut;
        while ((cut = buf.indexOf("\n\n")) >= 0) {
          const ev = buf.slice(0, cut);
          buf = buf.slice(cut + 2);
          for (const line of ev.split("\n")) {
            if (!line.startsWith("data:")) continue;
            const data = line.slice(5).trim();
            if (data === "[DONE]") { finished = true; continue; }
            const chunk = JSON.parse(data);
            if (chunk.error) {
              finished = true;
              fail("Error: " + (chunk.error.message || "the server reported an error"));
              continue;
            }
            if (chunk.usage) usage = chunk.usage;
            for (const ch of chunk.choices || []) {
              if (ch.delta && ch.delta.content) {
                if (!tFirst) tFirst = active.tFirst = performance.now();
                active.pieces++; // a content chunk is a token, or a few
                msg.content += ch.delta.content;
                paint(msg);
              }
              if (ch.finish_reason) { finished = true; msg.finish = ch.finish_reason; }
            }
          }
        }
      }
      if (!finished) fail("The connection to the server was lost before the answer ended.");
    }
  } catch (e) {
    if (controller.signal.aborted) {
      msg.stopped = true;
      if (!msg.content) c.messages.splice(c.messages.indexOf(msg), 1); // nothing to keep or send back
    } else if (msg.content || tFirst) {
      fail("The connection to the server was lost mid-answer: " + e.message);
    } else {
      fail("Could not reach the server: " + e.message);
    }
  }
  const tEnd = performance.now();
  if (usage) {
    const cached = usage.prompt_tokens_details ? usage.prompt_tokens_details.cached_tokens : 0;
    // The inference cache replays a finished answer and reports its whole
    // prompt as cached; a computed answer always computes its last prompt
    // token. A replay's speed is the network's, not the model's.
    const replay = usage.prompt_tokens > 0 && cached === usage.prompt_tokens;
    msg.meta = cleanMeta({
      completion: usage.completion_tokens, prompt: usage.prompt_tokens, cached,
      ttft: tFirst ? tFirst - t0 : null, replay,
      tps: !replay && tFirst && usage.completion_tokens > 1 && tEnd > tFirst
        ? (usage.completion_tokens - 1) / ((tEnd - tFirst) / 1000) : null,
    });
  } else if (tFirst) {
    msg.meta = { ttft: tFirst - t0 };
  }
  active = null;
  setBusy(false);
  save();
  renderMessages();
  announce(msg.stopped ? "Stopped." : "Answer complete.");
}

function stop() {
  if (active) active.controller.abort();
}

function setBusy(busy) {
  ui.send.disabled = busy;
  ui.stop.hidden = !busy;
  ui.send.hidden = busy;
}

// paint re-renders a streaming message once per animation frame.
let paintQueued = false;
function paint(msg) {
  if (paintQueued) return;
  paintQueued = true;
  requestAnimationFrame(() => {
    paintQueued = false;
    const node = ui.messages.querySelector(".msg.streaming .content");
    if (node && active && active.msg === msg) {
      renderAnswer(msg.content, node, true);
      const live = ui.messages.querySelector(".msg.streaming .meta.live");
      const secs = (performance.now() - active.tFirst) / 1000;
      if (live && active.pieces > 1 && secs > 0) {
        live.textContent = `${active.pieces} tokens · ${((active.pieces - 1) / secs).toFixed(1)} tok/s`;
      }
      ui.messages.scrollTop = ui.messages.scrollHeight;
    }
  });
}

async function send(text) {
  let c = current() || newConversation();
  if (active || !text.trim()) return;
  if (!c.named && c.messages.length === 0) c.title = text.trim().split("\n")[0].slice(0, 48);
  c.model = ui.model.value || c.model;
  if (attachment) { // the file goes first, fenced, as context for the question
    const fence = "`".repeat(Math.max(3, ...[...attachment.text.matchAll(/`+/g)].map((m) => m[0].length + 1)));
    text = `File ${attachment.name}:\n${fence}\n${attachment.text}\n${fence}\n\n${text}`;
    setAttachment(null);
  }
  c.messages.push({ role: "user", content: text });
  save();
  renderList();
  renderSettings();
  await generate(c);
}

// regenerate drops the last answer (and any error note after the last
// user message) and asks again.
async function regenerate(c) {
  if (active) return;
  let i = c.messages.length;
  while (i > 0 && c.messages[i - 1].role !== "user") i--;
  c.messages.length = i;
  await generate(c);
}

// editAndRegenerate replaces user message i and everything after it.
async function editAndRegenerate(c, i, text) {
  if (active || !text.trim()) return;
  c.messages.length = i;
  c.messages.push({ role: "user", content: text });
  save();
  await generate(c);
}

// stopList is the stop strings of a settings box: one a line, blank lines
// left out.
function stopList(s) {
  return String(s || "").split("\n").filter((x) => x !== "");
}

// setAttachment shows (or, with null, removes) the file to send next.
function setAttachment(a) {
  attachment = a;
  $("attachment").hidden = !a;
  $("attachment-name").textContent = a ? `Attached: ${a.name} (${a.text.length} characters)` : "";
}

// ---- rendering ----

// splitThink parts a thinking model's answer (Qwen3, DeepSeek-R1) into
// its reasoning, between <think> and </think> at the start, and the
// answer after it. open is true while the reasoning is still streaming.
export function splitThink(text) {
  const m = /^\s*<think>([\s\S]*?)(<\/think>|$)/.exec(text);
  if (!m) return { think: null, answer: text, open: false };
  return { think: m[1].trim(), answer: text.slice(m[0].length).replace(/^\s+/, ""), open: !m[2] };
}

// renderAnswer renders an assistant's text into node: the reasoning of a
// thinking model folded in a <details>, the answer as Markdown.
function renderAnswer(text, node, streaming) {
  const { think, answer, open } = splitThink(text);
  if (think === null) {
    renderMarkdown(text, node);
    return;
  }
  const prev = node.querySelector(":scope > details.think");
  const d = document.createElement("details");
  d.className = "think";
  d.open = !!(prev && prev.open); // a reader's choice survives the repaint
  const sum = document.createElement("summary");
  sum.textContent = open && streaming ? "Thinking…" : "Reasoning";
  const body = document.createElement("div");
  body.className = "think-body";
  renderMarkdown(think, body);
  d.append(sum, body);
  const rest = document.createElement("div");
  rest.className = "answer";
  renderMarkdown(answer, rest);
  node.replaceChildren(d, rest);
}

function announce(text) {
  ui.status.textContent = text;
}

function renderAll() {
  renderList();
  renderSettings();
  renderMessages();
}

// matches reports whether conversation c has q (lower case) in its title
// or a message.
function matches(c, q) {
  return !q || c.title.toLowerCase().includes(q) || c.messages.some((m) => m.content.toLowerCase().includes(q));
}

function renderList() {
  const q = search.trim().toLowerCase();
  ui.list.replaceChildren(...state.conversations.filter((c) => matches(c, q)).map((c) => {
    const li = document.createElement("li");
    li.dataset.id = c.id;
    if (c.id === state.current) li.className = "current";
    const open = document.createElement("button");
    open.type = "button";
    open.className = "conv-open";
    open.textContent = c.title;
    if (c.id === state.current) open.setAttribute("aria-current", "true");
    open.onclick = () => switchTo(c.id);
    const ren = document.createElement("button");
    ren.type = "button";
    ren.className = "conv-rename";
    ren.textContent = "Rename";
    ren.setAttribute("aria-label", "Rename " + c.title);
    ren.onclick = () => startRename(li, c);
    const del = document.createElement("button");
    del.type = "button";
    del.className = "conv-delete";
    del.textContent = "Delete";
    del.setAttribute("aria-label", "Delete " + c.title);
    del.onclick = () => {
      if (!del.classList.contains("armed")) {
        del.classList.add("armed");
        del.textContent = "Delete?";
        del.setAttribute("aria-label", "Confirm: delete " + c.title);
        return;
      }
      remove(c.id);
    };
    del.onblur = () => {
      del.classList.remove("armed");
      del.textContent = "Delete";
      del.setAttribute("aria-label", "Delete " + c.title);
    };
    li.append(open, ren, del);
    return li;
  }));
}

function startRename(li, c) {
  const input = document.createElement("input");
  input.value = c.title;
  input.setAttribute("aria-label", "New name for " + c.title);
  li.replaceChildren(input);
  input.focus();
  input.select();
  let done = false;
  const finish = (keep) => {
    if (done) return;
    done = true;
    if (keep && input.value.trim()) {
      c.title = input.value.trim();
      c.named = true;
      save();
    }
    renderList();
    renderSettings();
  };
  input.onkeydown = (e) => {
    if (e.key === "Enter") { e.preventDefault(); finish(true); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); finish(false); }
  };
  input.onblur = () => finish(true);
}

function switchTo(id) {
  state.current = id;
  save();
  closeSidebar();
  renderAll();
  ui.input.focus();
}

function remove(id) {
  if (active && active.conv.id === id) stop();
  state.conversations = state.conversations.filter((c) => c.id !== id);
  if (state.current === id) state.current = state.conversations[0] ? state.conversations[0].id : null;
  save();
  renderAll();
}

function renderSettings() {
  const c = current();
  ui.title.textContent = c ? c.title : "vkllm";
  document.title = c ? c.title + " · vkllm" : "vkllm chat";
  const from = c || draft;
  ui.system.value = from.system;
  ui.stop_strings.value = from.stop_strings || "";
  for (const k of SETTINGS) ui[k].value = from[k] !== null && from[k] !== undefined ? from[k] : "";
  if (c && c.model && models.includes(c.model)) ui.model.value = c.model;
}

function metaText(m) {
  const parts = [];
  if (m.completion !== undefined) parts.push(`${m.completion} tokens`);
  if (m.replay) parts.push("from the inference cache");
  else if (m.tps) parts.push(`${m.tps.toFixed(1)} tok/s`);
  if (m.ttft !== null && m.ttft !== undefined) parts.push(`TTFT ${Math.round(m.ttft)} ms`);
  if (m.prompt !== undefined) parts.push(`prompt ${m.prompt} tokens, ${m.cached ?? 0} cached`);
  return parts.join(" · ");
}

// loadErrorBox says why the model list failed, with a Retry button.
function loadErrorBox() {
  const box = document.createElement("div");
  box.className = "msg error load-error";
  box.setAttribute("role", "alert");
  const p = document.createElement("p");
  p.className = "content";
  p.textContent = loadError;
  const b = document.createElement("button");
  b.type = "button";
  b.className = "retry";
  b.textContent = "Retry";
  b.onclick = () => { loadError = null; renderMessages(); loadModels(); };
  box.append(p, b);
  return box;
}

function renderMessages() {
  const c = current();
  if (!c || c.messages.length === 0) {
    const p = document.createElement("p");
    p.className = "empty";
    p.textContent = models.length ? "Ask something." : "Loading models…";
    ui.messages.replaceChildren(loadError ? loadErrorBox() : p);
    return;
  }
  const lastAnswer = c.messages.length - 1;
  ui.messages.replaceChildren(...c.messages.map((m, i) => {
    const box = document.createElement("article");
    box.className = "msg";
    box.dataset.role = m.role;
    box.dataset.index = i;
    const who = document.createElement("h2");
    who.className = "who";
    who.textContent = m.role === "user" ? "You" : m.role === "error" ? "Error" : "Assistant" + (m.model ? " · " + m.model : "");
    const content = document.createElement("div");
    content.className = "content";
    if (m.role === "assistant") {
      renderAnswer(m.content, content, active && active.msg === m);
      if (active && active.msg === m) box.classList.add("streaming");
    } else {
      content.textContent = m.content;
    }
    if (m.role === "error") {
      box.classList.add("error");
      box.setAttribute("role", "alert");
    }
    box.append(who, content);
    if (active && active.msg === m) {
      const live = document.createElement("p");
      live.className = "meta live";
      box.append(live);
    }
    if (m.meta || m.stopped) {
      const meta = document.createElement("p");
      meta.className = "meta";
      meta.textContent = [m.stopped ? "stopped" : "", m.meta ? metaText(m.meta) : ""].filter(Boolean).join(" · ");
      box.append(meta);
    }
    if (!active) {
      const actions = document.createElement("div");
      actions.className = "actions";
      if (m.role !== "error" && m.content) {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "copy-msg";
        b.textContent = "Copy";
        b.setAttribute("aria-label", "Copy this message");
        b.onclick = async () => {
          const ok = await copyText(m.content);
          b.textContent = ok ? "Copied" : "Copy failed";
          setTimeout(() => (b.textContent = "Copy"), 1500);
        };
        actions.append(b);
      }
      if (m.role === "user") {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "edit";
        b.textContent = "Edit";
        b.setAttribute("aria-label", "Edit this message and regenerate from it");
        b.onclick = () => startEdit(box, c, i);
        actions.append(b);
      }
      if (i === lastAnswer && m.role !== "user") {
        const b = document.createElement("button");
        b.type = "button";
        b.className = "regenerate";
        b.textContent = "Regenerate";
        b.onclick = () => regenerate(c);
        actions.append(b);
      }
      if (actions.children.length) box.append(actions);
    }
    return box;
  }));
  if (loadError) ui.messages.prepend(loadErrorBox());
  ui.messages.scrollTop = ui.messages.scrollHeight;
}

function startEdit(box, c, i) {
  const ta = document.createElement("textarea");
  ta.className = "edit-box";
  ta.value = c.messages[i].content;
  ta.setAttribute("aria-label", "Edit message");
  const ok = document.createElement("button");
  ok.type = "button";
  ok.className = "save-edit";
  ok.textContent = "Save & regenerate";
  const cancel = document.createElement("button");
  cancel.type = "button";
  cancel.textContent = "Cancel";
  const actions = document.createElement("div");
  actions.className = "actions";
  actions.append(ok, cancel);
  box.querySelector(".content").replaceWith(ta);
  box.querySelector(".actions").replaceWith(actions);
  ok.onclick = () => editAndRegenerate(c, i, ta.value);
  cancel.onclick = () => renderMessages();
  ta.onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); ok.click(); }
    if (e.key === "Escape") { e.preventDefault(); e.stopPropagation(); renderMessages(); }
  };
  ta.focus();
}

// ---- import / export ----

function exportJSON() {
  const blob = new Blob([JSON.stringify({ version: 1, conversations: state.conversations }, null, 2)],
    { type: "application/json" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = "vkllm-conversations.json";
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// importJSON adds the conversations of an export; it returns how many.
export function importJSON(text) {
  const data = JSON.parse(text);
  const list = Array.isArray(data) ? data : data && data.conversations;
  if (!Array.isArray(list)) throw new Error("no conversations array");
  const known = new Set(state.conversations.map((c) => c.id));
  let n = 0;
  for (const x of list) {
    if (!x || !Array.isArray(x.messages)) throw new Error("a conversation without messages");
    const c = cleanConversation(x);
    if (!c.id || known.has(c.id)) c.id = crypto.randomUUID ? crypto.randomUUID() : String(Date.now()) + n;
    known.add(c.id);
    state.conversations.push(c);
    n++;
  }
  if (!state.current && state.conversations.length) state.current = state.conversations[0].id;
  save();
  renderAll();
  return n;
}

// ---- wiring ----

$("composer").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = ui.input.value;
  if (!text.trim() || active) return;
  ui.input.value = "";
  send(text);
});
ui.input.addEventListener("keydown", (e) => {
  if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
    e.preventDefault();
    $("composer").requestSubmit();
  }
});
document.addEventListener("keydown", (e) => {
  if (e.key !== "Escape") return;
  if (ui.sidebar.classList.contains("open")) { e.preventDefault(); closeSidebar(); $("toggle-sidebar").focus(); return; }
  if (active) { e.preventDefault(); stop(); }
});
ui.stop.onclick = stop;
$("new-chat").onclick = () => {
  closeSidebar();
  if (!active) { newConversation(); renderAll(); ui.input.focus(); }
};
$("export").onclick = exportJSON;
$("import").onclick = () => $("import-file").click();
$("import-file").onchange = async (e) => {
  const f = e.target.files[0];
  e.target.value = "";
  if (!f) return;
  try {
    announce(`Imported ${importJSON(await f.text())} conversations.`);
  } catch (err) {
    announce("Import failed: " + err.message);
    alert("Import failed: " + err.message);
  }
};
$("forget-key").hidden = !localStorage.getItem(KEY);
$("forget-key").onclick = () => { localStorage.removeItem(KEY); $("forget-key").hidden = true; };
// The drawer (phone width): ☰ opens it; its ✕, a tap outside it, Esc,
// choosing a conversation and "+ New chat" close it.
function closeSidebar() {
  ui.sidebar.classList.remove("open");
  $("scrim").hidden = true;
  $("toggle-sidebar").setAttribute("aria-expanded", "false");
}
$("toggle-sidebar").onclick = () => {
  const open = ui.sidebar.classList.toggle("open");
  $("scrim").hidden = !open;
  $("toggle-sidebar").setAttribute("aria-expanded", String(open));
  if (open) $("close-sidebar").focus();
};
$("close-sidebar").onclick = () => { closeSidebar(); $("toggle-sidebar").focus(); };
$("scrim").onclick = closeSidebar;
// Another tab changed the conversations: take its changes.
window.addEventListener("storage", (e) => {
  if (e.key !== STORE && e.key !== null) return;
  if (!merge()) return;
  if (!current() && !active) state.current = state.conversations[0] ? state.conversations[0].id : null;
  if (active) renderList();
  else renderAll();
});
$("toggle-settings").onclick = () => {
  ui.settings.hidden = !ui.settings.hidden;
  $("toggle-settings").setAttribute("aria-expanded", String(!ui.settings.hidden));
};
ui.model.onchange = () => { const c = current(); if (c) { c.model = ui.model.value; save(); } };
for (const k of ["system", "stop_strings"]) {
  ui[k].onchange = () => {
    const c = current();
    (c || draft)[k] = ui[k].value;
    if (c) save();
  };
}
ui.search.addEventListener("input", () => { search = ui.search.value; renderList(); });
$("attach").onclick = () => $("attach-file").click();
$("attachment-remove").onclick = () => { setAttachment(null); ui.input.focus(); };
$("attach-file").onchange = async (e) => {
  const f = e.target.files[0];
  e.target.value = "";
  if (!f) return;
  if (f.size > 1 << 20) {
    announce(`${f.name} is over 1 MiB; attach a smaller text file.`);
    alert(`${f.name} is over 1 MiB; attach a smaller text file.`);
    return;
  }
  const text = await f.text();
  if (text.includes("\u0000")) {
    announce(`${f.name} is not a text file.`);
    alert(`${f.name} is not a text file.`);
    return;
  }
  setAttachment({ name: f.name, text });
  ui.input.focus();
};
for (const k of SETTINGS) {
  ui[k].onchange = () => {
    const c = current();
    (c || draft)[k] = ui[k].value === "" || !Number.isFinite(Number(ui[k].value)) ? null : Number(ui[k].value);
    if (c) save();
  };
}

if (!state.current && state.conversations.length) state.current = state.conversations[0].id;
renderAll();
loadModels().then(() => renderMessages());
