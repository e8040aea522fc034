// A small Markdown renderer for untrusted model output. It builds DOM
// nodes with createElement and textContent only: nothing the model writes
// is ever parsed as HTML, so "<img onerror=…>" or "<script>" shows as text.
//
// Supported: ATX headings, paragraphs, fenced code blocks (with a copy
// button, highlighted by highlight.js), bullet and numbered lists (nested by indentation), block
// quotes, GitHub tables, horizontal rules, and inline `code`, **bold**,
// *emphasis*, ~~strike~~ and [links](https://…) (http, https and mailto
// only). An unclosed code fence runs to the end, so a streaming answer
// renders as it will when complete.

import { highlight } from "./highlight.js";

// renderMarkdown replaces root's children with src rendered.
export function renderMarkdown(src, root) {
  const lines = String(src).replace(/\r\n?/g, "\n").split("\n");
  root.replaceChildren(...blocks(lines));
}

const fenceRe = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)/;
const headingRe = /^ {0,3}(#{1,6})(?:\s+(.*?))?(?:\s+#+)?\s*$/;
const hrRe = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const listRe = /^( *)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const quoteRe = /^ {0,3}> ?(.*)$/;
const tableSepRe = /^\s*\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}

function isBlockStart(lines, i) {
  const l = lines[i];
  return fenceRe.test(l) || headingRe.test(l) || hrRe.test(l) || listRe.test(l) ||
    quoteRe.test(l) || isTableStart(lines, i);
}

function isTableStart(lines, i) {
  return lines[i].includes("|") && i + 1 < lines.length && lines[i + 1].includes("-") &&
    tableSepRe.test(lines[i + 1]);
}

function blocks(lines) {
  const out = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (/^\s*$/.test(line)) {
      i++;
    } else if ((m = fenceRe.exec(line))) {
      const fence = m[1];
      const body = [];
      for (i++; i < lines.length && !lines[i].trimStart().startsWith(fence); i++) body.push(lines[i]);
      i++; // the closing fence, when there is one
      out.push(codeBlock(body.join("\n"), m[2]));
    } else if ((m = headingRe.exec(line))) {
      // The page's own headings are h1/h2: a model's "#" is an h3.
      const h = el("h" + Math.min(6, m[1].length + 2), "md-h" + m[1].length);
      inline(m[2] || "", h);
      out.push(h);
      i++;
    } else if (hrRe.test(line)) {
      out.push(el("hr"));
      i++;
    } else if (isTableStart(lines, i)) {
      i = table(lines, i, out);
    } else if (quoteRe.test(line)) {
      const body = [];
      for (; i < lines.length && (m = quoteRe.exec(lines[i])); i++) body.push(m[1]);
      const q = el("blockquote");
      q.append(...blocks(body));
      out.push(q);
    } else if (listRe.test(line)) {
      i = list(lines, i, out);
    } else {
      const para = [line.trim()];
      for (i++; i < lines.length && !/^\s*$/.test(lines[i]) && !isBlockStart(lines, i); i++) {
        para.push(lines[i].trim());
      }
      const p = el("p");
      inline(para.join("\n"), p);
      out.push(p);
    }
  }
  return out;
}

// list reads the list starting at lines[i] into out; it returns the index
// of the first line after it. An item's continuation lines are those
// indented past its marker; they are rendered as blocks (nested lists).
function list(lines, i, out) {
  const first = listRe.exec(lines[i]);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const ls = el(ordered ? "ol" : "ul");
  if (ordered) {
    const start = parseInt(first[2], 10);
    if (start !== 1) ls.start = start;
  }
  while (i < lines.length) {
    const m = listRe.exec(lines[i]);
    if (!m || m[1].length !== indent || /\d/.test(m[2]) !== ordered) break;
    const body = [m[3]];
    const width = m[1].length + m[2].length + 1;
    for (i++; i < lines.length; i++) {
      const l = lines[i];
      if (/^\s*$/.test(l)) {
        // A blank line continues the item only when indented text follows.
        if (i + 1 < lines.length && leading(lines[i + 1]) > indent) { body.push(""); continue; }
        break;
      }
      if (leading(l) <= indent) break;
      body.push(l.slice(Math.min(leading(l), width)));
    }
    const li = el("li");
    if (body.length === 1) inline(body[0], li);
    else li.append(...blocks(body));
    ls.append(li);
    while (i < lines.length && /^\s*$/.test(lines[i]) && i + 1 < lines.length &&
      listRe.test(lines[i + 1]) && leading(lines[i + 1]) === indent) i++;
  }
  out.push(ls);
  return i;
}

function leading(s) {
  return s.length - s.trimStart().length;
}

function cells(line) {
  let s = line.trim();
  if (s.startsWith("|")) s = s.slice(1);
  if (s.endsWith("|") && !s.endsWith("\\|")) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
}

function table(lines, i, out) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) =>
    c.startsWith(":") && c.endsWith(":") ? "center" : c.endsWith(":") ? "right" : c.startsWith(":") ? "left" : "");
  const wrap = el("div", "table-wrap");
  const t = el("table");
  const thead = el("thead");
  const tr = el("tr");
  head.forEach((c, k) => {
    const th = el("th");
    th.scope = "col";
    if (align[k]) th.style.textAlign = align[k];
    inline(c, th);
    tr.append(th);
  });
  thead.append(tr);
  const tbody = el("tbody");
  for (i += 2; i < lines.length && lines[i].includes("|") && !/^\s*$/.test(lines[i]); i++) {
    const row = el("tr");
    const cs = cells(lines[i]);
    head.forEach((_, k) => {
      const td = el("td");
      if (align[k]) td.style.textAlign = align[k];
      inline(cs[k] ?? "", td);
      row.append(td);
    });
    tbody.append(row);
  }
  t.append(thead, tbody);
  wrap.append(t);
  out.push(wrap);
  return i;
}

function codeBlock(text, lang) {
  const box = el("div", "code");
  const head = el("div", "code-head");
  head.append(el("span", "code-lang", lang || "text"));
  const copy = el("button", "copy", "Copy");
  copy.type = "button";
  copy.setAttribute("aria-label", "Copy code" + (lang ? " (" + lang + ")" : ""));
  copy.addEventListener("click", async () => {
    const ok = await copyText(text);
    copy.textContent = ok ? "Copied" : "Copy failed";
    setTimeout(() => (copy.textContent = "Copy"), 1500);
  });
  head.append(copy);
  const pre = el("pre");
  const code = el("code");
  highlight(code, text, lang);
  if (lang) code.dataset.lang = lang;
  pre.append(code);
  pre.tabIndex = 0; // a long line scrolls; the keyboard can reach it
  box.append(head, pre);
  return box;
}

// copyText writes text to the clipboard: the Clipboard API where the page
// is a secure context (localhost is), else a selected hidden textarea.
export async function copyText(text) {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch (_) { /* fall through */ }
  const ta = el("textarea");
  ta.value = text;
  ta.setAttribute("readonly", "");
  ta.style.position = "fixed";
  ta.style.opacity = "0";
  document.body.append(ta);
  ta.select();
  let ok = false;
  try { ok = document.execCommand("copy"); } catch (_) { ok = false; }
  ta.remove();
  return ok;
}

// inlineRe finds the next inline span: `code`, [text](url), **bold**,
// __bold__, *em*, _em_, ~~strike~~.
const inlineRe = new RegExp([
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/.source,
  /\[([^\]\n]+)\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"\n]*")?\s*\)/.source,
  /\*\*(?=\S)([\s\S]*?\S)\*\*/.source,
  /__(?=\S)([\s\S]*?\S)__(?!\w)/.source,
  /\*(?=[^\s*])([\s\S]*?[^\s*])\*/.source,
  /(?<!\w)_(?=[^\s_])([\s\S]*?[^\s_])_(?!\w)/.source,
  /~~(?=\S)([\s\S]*?\S)~~/.source,
].join("|"), "g");

const safeURL = /^(https?:\/\/|mailto:)/i;

// inline appends text with its inline spans rendered to parent.
function inline(text, parent) {
  let last = 0;
  inlineRe.lastIndex = 0;
  const matches = [...text.matchAll(inlineRe)];
  for (const m of matches) {
    if (m.index > last) parent.append(document.createTextNode(text.slice(last, m.index)));
    last = m.index + m[0].length;
    if (m[1] !== undefined) {
      parent.append(el("code", null, m[2]));
    } else if (m[3] !== undefined) {
      if (!safeURL.test(m[4])) {
        parent.append(document.createTextNode(m[0]));
        continue;
      }
      const a = el("a");
      a.href = m[4];
      a.rel = "noopener noreferrer nofollow";
      a.target = "_blank";
      inline(m[3], a);
      parent.append(a);
    } else {
      const [tag, body] = m[5] !== undefined ? ["strong", m[5]] : m[6] !== undefined ? ["strong", m[6]]
        : m[7] !== undefined ? ["em", m[7]] : m[8] !== undefined ? ["em", m[8]] : ["del", m[9]];
      const e = el(tag);
      inline(body, e);
      parent.append(e);
    }
  }
  if (last < text.length) parent.append(document.createTextNode(text.slice(last)));
}
