// More time for a waiting request: the card lists the extensions so far (who, by how much) and
// offers a duration and an Extend button. The server and the workflow decide who may extend (the
// same people who may decide the request); a refusal is shown on the card.
import { el, shownEl } from "./render.js";

export const DURATIONS = [
  ["1h", 3600],
  ["12h", 43200],
  ["1d", 86400],
  ["7d", 604800],
];

// 43200 -> "12h", 90 -> "1m 30s": the largest whole units, as the CLI writes them.
export function duration(seconds) {
  const units = [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]];
  let left = Math.round(seconds);
  const parts = [];
  for (const [unit, size] of units) {
    if (left >= size) {
      parts.push(`${Math.floor(left / size)}${unit}`);
      left %= size;
    }
  }
  return parts.join(" ") || "0s";
}

function extensionList(extensions) {
  const list = el("ul", "extensions");
  for (const ext of extensions) {
    const reason = ext.reason ? ` (${ext.reason})` : "";
    const text = `Extended by ${ext.by}: +${duration(ext.seconds)}, ${new Date(ext.at).toLocaleString()}${reason}`;
    list.append(shownEl("li", "extension", text));
  }
  return list;
}

// doors: { api(path, options), name() -> decider name or null, refresh() }.
export function extendControls(approval, doors) {
  const box = el("div", "extend-box");
  if (approval.extensions && approval.extensions.length) box.append(extensionList(approval.extensions));
  const selectId = "extend-" + approval.request_id;
  const label = el("label", "extend-label", "More time");
  label.htmlFor = selectId;
  const select = el("select", "extend-by");
  select.id = selectId;
  for (const [text, seconds] of DURATIONS) {
    const option = el("option", null, text);
    option.value = String(seconds);
    select.append(option);
  }
  select.value = "43200";
  const button = el("button", "button-extend", "Extend");
  button.type = "button";
  const problem = el("p", "extend-problem");
  problem.setAttribute("role", "alert");
  problem.hidden = true;
  button.addEventListener("click", async () => {
    button.disabled = true;
    problem.hidden = true;
    const body = { seconds: Number(select.value) };
    const name = doors.name();
    if (name) body.name = name;
    const path = `/api/approvals/${encodeURIComponent(approval.request_id)}/extend`;
    const result = await doors.api(path, { json: body });
    button.disabled = false;
    if (!result.ok) {
      const message = (result.body && result.body.error && result.body.error.message) || `request failed (${result.status})`;
      problem.replaceChildren(shownEl("span", null, `Not extended: ${message}`));
      problem.hidden = false;
    }
    doors.refresh();
  });
  box.append(label, select, button, problem);
  return box;
}
