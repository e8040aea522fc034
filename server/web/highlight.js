// A small syntax highlighter for the code blocks of model answers, written
// for this page (no third-party code: the page works offline and loads
// nothing from elsewhere, and its CSP allows only its own scripts). It
// marks keywords, strings, comments and numbers of the languages models
// write most; any other language shows as plain text. Like markdown.js it
// builds nodes with textContent only: code is never parsed as HTML.

const C_LIKE = "break case const continue default do else enum extern for goto if return sizeof static struct switch typedef union void volatile while";
const KEYWORDS = {
  c: C_LIKE + " auto char double float int long register short signed unsigned inline bool true false NULL nullptr class namespace new delete private protected public template this throw try catch using virtual",
  go: "break case chan const continue default defer else fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota",
  js: "async await break case catch class const continue debugger default delete do else export extends false finally for from function if import in instanceof let new null of return static super switch this throw true try typeof undefined var void while yield interface type enum implements",
  java: "abstract boolean break byte case catch char class const continue default do double else enum extends final finally float for if implements import instanceof int interface long new null package private protected public return short static super switch this throw throws true false try void volatile while var record",
  py: "and as assert async await break class continue def del elif else except False finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield match case self",
  rust: "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod move mut pub ref return self Self static struct super trait true type unsafe use where while",
  sh: "if then else elif fi for while until do done case esac function in return export local readonly set unset echo exit",
  sql: "select from where and or not insert into values update set delete create table drop alter index join left right inner outer on group by order having limit as null is in like distinct union all primary key",
};
const ALIASES = {
  "c++": "c", cpp: "c", cc: "c", h: "c", hpp: "c", cs: "c", csharp: "c",
  golang: "go", javascript: "js", jsx: "js", ts: "js", tsx: "js", typescript: "js", mjs: "js", json: "js",
  kotlin: "java", scala: "java", python: "py", python3: "py", rs: "rust",
  bash: "sh", shell: "sh", zsh: "sh", console: "sh",
};
const HASH_COMMENTS = new Set(["py", "sh"]);

const sets = {};
function keywords(lang) {
  if (!sets[lang]) sets[lang] = new Set(KEYWORDS[lang].split(" ").map((w) => (lang === "sql" ? w.toLowerCase() : w)));
  return sets[lang];
}

// language is the highlighter's name for a fence's language, or "".
export function language(lang) {
  const l = String(lang || "").toLowerCase();
  const n = ALIASES[l] || l;
  return KEYWORDS[n] ? n : "";
}

function tokenRe(lang) {
  const comment = HASH_COMMENTS.has(lang) ? String.raw`#[^\n]*` : lang === "sql" ? String.raw`--[^\n]*` : String.raw`\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)`;
  const str = String.raw`"""[\s\S]*?(?:"""|$)|"(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|` + "`[^`]*`?";
  const num = String.raw`\b(?:0[xX][0-9a-fA-F_]+|\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?)\b`;
  return new RegExp(`(${comment})|(${str})|(${num})|([A-Za-z_$][\\w$]*)`, "g");
}

// highlight fills code (a <code> element) with text, its keywords,
// strings, comments and numbers in spans of class hl-kw, hl-str, hl-com
// and hl-num; for a language it does not know, with the text alone.
export function highlight(code, text, lang) {
  const l = language(lang);
  if (!l) {
    code.textContent = text;
    return;
  }
  const kw = keywords(l);
  const re = tokenRe(l);
  const nodes = [];
  let last = 0;
  const span = (cls, s) => {
    const e = document.createElement("span");
    e.className = cls;
    e.textContent = s;
    return e;
  };
  for (let m; (m = re.exec(text)) !== null;) {
    if (m[0] === "") { re.lastIndex++; continue; }
    let node = null;
    if (m[1]) node = span("hl-com", m[1]);
    else if (m[2]) node = span("hl-str", m[2]);
    else if (m[3]) node = span("hl-num", m[3]);
    else if (kw.has(l === "sql" ? m[4].toLowerCase() : m[4])) node = span("hl-kw", m[4]);
    if (!node) continue;
    if (m.index > last) nodes.push(document.createTextNode(text.slice(last, m.index)));
    nodes.push(node);
    last = m.index + m[0].length;
  }
  if (last < text.length) nodes.push(document.createTextNode(text.slice(last)));
  code.replaceChildren(...nodes);
}
