// The console's only script: it keeps profile statuses fresh and copies
// snippets. Every page works without it.
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

document.addEventListener("DOMContentLoaded", () => {
  copyButtons();
  statuses();
});
