// Undo on a decided write_file card: asks to restore what the write replaced. The undo is a request
// of its own (it appears in the inbox to be approved); a refusal says why, and when the file changed
// since, shows its three states (before, as written, now) as text.
import { el, shownEl } from "./render.js";

export function undoable(approval) {
  return approval.tool_name === "write_file" && ["allow", "always_allow", "edit"].includes(approval.decision) && approval.outcome === "ran";
}

// doors: { api(path, options), name() -> who asks or null, refresh() }.
export function undoControl(approval, doors) {
  const box = el("div", "undo-box");
  const button = el("button", "button-undo", "Undo this change");
  button.type = "button";
  const said = el("div", "undo-result");
  said.setAttribute("role", "status");
  button.addEventListener("click", async () => {
    button.disabled = true;
    const name = doors.name();
    const path = `/api/approvals/${encodeURIComponent(approval.request_id)}/undo`;
    const result = await doors.api(path, { json: name ? { name } : {} });
    if (result.ok) {
      said.replaceChildren(shownEl("p", "undo-asked", `Undo asked as ${result.body.undo_request_id}: approve it to restore the file.`));
    } else {
      const error = (result.body && result.body.error) || {};
      said.replaceChildren(shownEl("p", "undo-refused", `Not undone: ${error.message || `request failed (${result.status})`}`));
      if (error.three_way) said.append(shownEl("pre", "undo-three-way", error.three_way, true));
      button.disabled = false;
    }
    doors.refresh();
  });
  box.append(button, said);
  return box;
}
