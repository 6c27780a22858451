// The conversation's two switches: auto-approve and close.
const $ = (id) => document.getElementById(id);
let hooks = null;
let switching = false; // a switch is on its way: a refresh meanwhile must not flip the box back

export function setupControls(options) {
  hooks = options;
  $("auto-approve-toggle").addEventListener("change", switchAutoApprove);
  $("close-button").addEventListener("click", closeConversation);
}

// The two switches: hidden once the conversation is closed; auto-approve shows the workflow's own
// setting, so it is only offered while a worker can say what that setting is.
export function renderControls(detail) {
  $("conversation-controls").hidden = detail.turn_status === "closed";
  const toggle = $("auto-approve-toggle");
  if (!switching) toggle.checked = Boolean(detail.auto_approve);
  toggle.disabled = !detail.worker_online;
}

async function switchAutoApprove() {
  const toggle = $("auto-approve-toggle");
  const path = `/api/conversations/${encodeURIComponent(hooks.selected())}/auto-approve`;
  switching = true;
  const result = await hooks.api(path, { json: { enabled: toggle.checked } }).finally(() => {
    switching = false;
  });
  if (!result.ok) {
    toggle.checked = !toggle.checked;
    return hooks.toast(hooks.errorMessage(result), true);
  }
  hooks.toast(toggle.checked ? "auto-approve is on" : "auto-approve is off");
  hooks.refresh(hooks.selected());
}

// Closing cancels every waiting approval: the first click arms the button, the second closes.
async function closeConversation() {
  const button = $("close-button");
  if (!button.dataset.armed) {
    button.dataset.armed = "yes";
    button.textContent = "Click again to close (waiting approvals are canceled)";
    return;
  }
  button.disabled = true;
  const result = await hooks.api(`/api/conversations/${encodeURIComponent(hooks.selected())}/close`, { method: "POST" });
  button.disabled = false;
  if (!result.ok) return hooks.toast(hooks.errorMessage(result), true);
  hooks.toast("conversation closed");
  hooks.refresh(hooks.selected());
}

