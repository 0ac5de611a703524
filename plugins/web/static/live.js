// Live view of a session page: follows the server's event stream from the page's length on. Items arrive as HTML
// the server rendered (every piece of content escaped there); text deltas arrive as JSON and are added as text.
"use strict";
(function () {
  const log = document.getElementById("log");
  if (!log) return;
  const session = log.dataset.session;
  const length = document.getElementById("length");
  let seen = Number(log.dataset.length || "0");
  const source = new EventSource(`/s/${encodeURIComponent(session)}/live?from=${seen}`);
  function streaming(key, reasoning) {
    const id = `live-${key}-${reasoning ? "r" : "t"}`;
    let node = document.getElementById(id);
    if (!node) {
      node = document.createElement("li");
      node.id = id;
      node.className = "item streaming" + (reasoning ? " reasoning" : "");
      node.dataset.key = key;
      node.appendChild(document.createElement("pre"));
      log.appendChild(node);
    }
    return node.firstChild;
  }
  source.addEventListener("delta", (message) => {
    const delta = JSON.parse(message.data);
    streaming(delta.key, delta.reasoning).appendChild(document.createTextNode(delta.text));
    seen = Math.max(seen, delta.seq + 1);
    if (length) length.textContent = String(seen);
  });
  source.addEventListener("waiting", (message) => {  // what the running turn waits on: approvals, questions
    const waiting = document.getElementById("waiting");
    if (waiting) waiting.innerHTML = message.data;
  });
  source.addEventListener("item", (message) => {
    const template = document.createElement("template");
    template.innerHTML = message.data;
    const item = template.content.firstElementChild;
    if (!item || document.getElementById(item.id)) return;
    if (item.classList.contains("assistant")) {  // the whole message replaces its streamed text
      const key = `${item.dataset.turn}-${item.dataset.step}`;
      log.querySelectorAll(`li.streaming[data-key="${key}"]`).forEach((node) => node.remove());
    }
    log.appendChild(item);
    seen = Math.max(seen, Number(item.dataset.seq) + 1);
    if (length) length.textContent = String(seen);
  });
})();
