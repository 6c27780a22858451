// Edit before approving: a card's arguments in a text box; the person changes them and approves the
// call with the new ones. The server and the workflow check the edit (schema, deny rules, who may
// decide the edited call); the page only checks that it is a JSON object.
import { el, prettyArguments } from "./render.js";

// onEdit(argumentsObject, buttons) sends the edit; buttons are disabled while it is on its way.
export function editControls(approval, allowed, onEdit) {
  const box = el("details", "edit-box");
  box.append(el("summary", "edit-summary", "Edit the arguments, then approve"));
  const areaId = "edit-" + approval.request_id;
  const label = el("label", "edit-label", "New arguments (JSON); the tool runs with these and the model is told what changed");
  label.htmlFor = areaId;
  const area = el("textarea", "edit-arguments");
  area.id = areaId;
  area.rows = 6;
  area.spellcheck = false;
  area.value = prettyArguments(approval.arguments);
  const problem = el("p", "edit-problem");
  problem.hidden = true;
  const button = el("button", "button-edit primary", "Approve with these arguments");
  button.type = "button";
  button.disabled = !allowed;
  button.addEventListener("click", () => {
    let edited;
    try {
      edited = JSON.parse(area.value);
    } catch (err) {
      edited = undefined;
    }
    if (edited === null || typeof edited !== "object" || Array.isArray(edited)) {
      problem.textContent = "The arguments must be one JSON object.";
      problem.hidden = false;
      return;
    }
    problem.hidden = true;
    onEdit(edited, [button]);
  });
  box.append(label, area, problem, button);
  return box;
}
