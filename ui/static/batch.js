// Batch decisions: tick waiting calls in the inbox, then approve or deny them in one action. The
// bar lists every call the action covers; each call gets its own decision and its own result.
import { el, shownEl } from "./render.js";

const selected = new Map();
let hooks = null;
let lastResults = null; // the last action's results, shown until the next selection

const $ = (id) => document.getElementById(id);

export function setupBatch(options) {
  hooks = options;
  $("batch-allow").addEventListener("click", () => send("allow"));
  $("batch-deny").addEventListener("click", () => send("deny"));
  $("batch-clear").addEventListener("click", () => {
    selected.clear();
    lastResults = null;
    for (const box of document.querySelectorAll(".batch-select")) box.checked = false;
    render();
  });
}

// The tick box of one waiting card; its state survives the card being redrawn.
export function selectionBox(approval) {
  const label = el("label", "batch-pick", " Select for a batch decision");
  const box = el("input", "batch-select");
  box.type = "checkbox";
  box.checked = selected.has(approval.request_id);
  box.addEventListener("change", () => {
    lastResults = null;
    if (box.checked) selected.set(approval.request_id, approval);
    else selected.delete(approval.request_id);
    render();
  });
  label.prepend(box);
  return label;
}

// Calls that stopped waiting leave the selection: an action never covers what it does not show.
export function keepWaiting(pending) {
  const waiting = new Map(pending.filter((a) => a.status === "pending").map((a) => [a.request_id, a]));
  for (const id of [...selected.keys()]) {
    if (!waiting.has(id)) selected.delete(id);
    else selected.set(id, waiting.get(id));
  }
  render();
}

function callText(approval) {
  return `${approval.tool_name} ${JSON.stringify(approval.arguments)} (arguments ${approval.args_hash})`;
}

function render() {
  const results = selected.size === 0 ? lastResults : null;
  const bar = $("batch-bar");
  bar.hidden = selected.size === 0 && !results;
  const sent = results ? results.filter((r) => r.status === "sent").length : 0;
  $("batch-count").textContent = results
    ? `Last batch: ${sent} sent, ${results.length - sent} refused`
    : `${selected.size} call${selected.size === 1 ? "" : "s"} selected`;
  for (const id of ["batch-allow", "batch-deny"]) $(id).hidden = Boolean(results);
  $("batch-allow").textContent = `Allow these ${selected.size}`;
  $("batch-deny").textContent = `Deny these ${selected.size}`;
  for (const id of ["batch-allow", "batch-deny"]) $(id).disabled = selected.size === 0;
  const items = results
    ? results.map((r) => {
        const item = shownEl("li", "batch-result batch-" + r.status, `${r.status}: ${r.request_id}`);
        if (r.error) item.append(shownEl("span", "batch-error", ` (${r.error.message})`));
        item.dataset.requestId = r.request_id;
        return item;
      })
    : [...selected.values()].map((a) => {
        const item = shownEl("li", "batch-call", callText(a));
        item.dataset.requestId = a.request_id;
        return item;
      });
  $("batch-calls").replaceChildren(...items);
}

async function send(decision) {
  const covered = [...selected.values()];
  if (!covered.length) return;
  for (const id of ["batch-allow", "batch-deny"]) $(id).disabled = true;
  const body = {
    decision,
    items: covered.map((a) => ({ request_id: a.request_id, args_hash: a.args_hash })),
  };
  const name = hooks.deciderName();
  if (name) body.name = name;
  const result = await hooks.api("/api/approvals/decisions", { json: body });
  if (!result.ok) {
    hooks.toast(hooks.errorMessage(result), true);
    render();
    return;
  }
  selected.clear();
  const refused = result.body.results.filter((r) => r.status !== "sent").length;
  hooks.toast(`${decision}: ${result.body.results.length - refused} sent, ${refused} refused`, refused > 0);
  lastResults = result.body.results;
  render();
  hooks.refresh();
}
