// The console's only script: it keeps profile statuses fresh, copies
// snippets and runs the live view. Every other page works without it.
"use strict";

function copyButtons() {
  for (const button of document.querySelectorAll("button[data-copy]")) {
    button.addEventListener("click", async () => {
      const field = document.getElementById(button.dataset.copy);
      if (!field) return;
      try {
        await navigator.clipboard.writeText(field.value);
      } catch {
        field.select();
        document.execCommand("copy");
      }
      const label = button.textContent;
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = label; }, 1500);
    });
  }
}

// Statuses: every element with data-status-of names a profile; its text is
// the profile's status, polled every few seconds. A page marked
// data-reload reloads when its profile's status changes, so its actions
// follow (except the page that shows a launch's token, which says so).
function statuses() {
  const marks = [...document.querySelectorAll("[data-status-of]")];
  if (marks.length === 0) return;
  const ids = [...new Set(marks.map((m) => m.dataset.statusOf))].slice(0, 50);
  const query = ids.map((id) => "id=" + encodeURIComponent(id)).join("&");
  const poll = async () => {
    try {
      const res = await fetch("/app/profiles/status?" + query, { headers: { Accept: "application/json" }, credentials: "same-origin" });
      if (!res.ok) return;
      const seen = await res.json();
      for (const m of marks) {
        const s = seen[m.dataset.statusOf];
        if (s === undefined || s === m.textContent) continue;
        m.textContent = s;
        m.dataset.state = s;
        if (m.dataset.reload === "true" && !document.getElementById("cdp-url")) {
          location.reload();
          return;
        }
      }
    } catch {
      // The next poll tries again.
    }
  };
  for (const m of marks) m.dataset.state = m.textContent;
  setInterval(poll, 3000);
}

// Live view: frames of the browser's page arrive on a WebSocket and are
// shown in the picture; with input allowed, clicks, scrolling and keys on
// the picture go back, in the page's CSS pixels.
function liveView() {
  const screen = document.getElementById("live-screen");
  if (!screen) return;
  const state = document.getElementById("live-state");
  const input = screen.dataset.input === "true";
  const url = new URL(screen.dataset.live, location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  const ws = new WebSocket(url);
  let meta = null;
  let frames = 0;
  const say = (text) => { if (state) state.textContent = text; };
  ws.addEventListener("message", (ev) => {
    const m = JSON.parse(ev.data);
    if (m.type === "ready") say("Connected. Waiting for the page to draw…");
    if (m.type === "frame") {
      meta = m.meta;
      screen.src = "data:image/jpeg;base64," + m.data;
      frames++;
      screen.dataset.frames = String(frames);
      if (frames === 1) say("Live.");
    }
  });
  ws.addEventListener("close", (ev) => say("The live view ended" + (ev.reason ? ": " + ev.reason : ".")));
  if (!input) return;
  const send = (m) => { if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(m)); };
  const at = (ev) => {
    const r = screen.getBoundingClientRect();
    const w = meta ? meta.deviceWidth : screen.naturalWidth;
    const h = meta ? meta.deviceHeight : screen.naturalHeight;
    return { x: ((ev.clientX - r.left) / r.width) * w, y: ((ev.clientY - r.top) / r.height) * h };
  };
  const buttons = ["left", "middle", "right"];
  const mods = (ev) => (ev.altKey ? 1 : 0) | (ev.ctrlKey ? 2 : 0) | (ev.metaKey ? 4 : 0) | (ev.shiftKey ? 8 : 0);
  screen.addEventListener("mousedown", (ev) => {
    ev.preventDefault();
    screen.focus();
    send({ type: "mouse", event: "mousePressed", ...at(ev), button: buttons[ev.button] || "left", clickCount: ev.detail || 1, modifiers: mods(ev) });
  });
  screen.addEventListener("mouseup", (ev) => {
    send({ type: "mouse", event: "mouseReleased", ...at(ev), button: buttons[ev.button] || "left", clickCount: ev.detail || 1, modifiers: mods(ev) });
  });
  let lastMove = 0;
  screen.addEventListener("mousemove", (ev) => {
    const now = Date.now();
    if (now - lastMove < 50) return;
    lastMove = now;
    send({ type: "mouse", event: "mouseMoved", ...at(ev), button: "none", clickCount: 0, modifiers: mods(ev) });
  });
  screen.addEventListener("wheel", (ev) => {
    ev.preventDefault();
    send({ type: "wheel", ...at(ev), deltaX: ev.deltaX, deltaY: ev.deltaY, modifiers: mods(ev) });
  }, { passive: false });
  screen.addEventListener("contextmenu", (ev) => ev.preventDefault());
  screen.addEventListener("keydown", (ev) => {
    if (ev.key === "Tab" && !ev.ctrlKey) return; // keeps the keyboard able to leave the picture
    ev.preventDefault();
    send({ type: "key", event: "keyDown", key: ev.key, code: ev.code, text: ev.key.length === 1 ? ev.key : "", modifiers: mods(ev) });
  });
  screen.addEventListener("keyup", (ev) => {
    if (ev.key === "Tab" && !ev.ctrlKey) return;
    send({ type: "key", event: "keyUp", key: ev.key, code: ev.code, modifiers: mods(ev) });
  });
}

document.addEventListener("DOMContentLoaded", () => {
  copyButtons();
  statuses();
  liveView();
});
